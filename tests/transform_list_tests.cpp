// Transform lists: the spec grammar (round trips, errors with columns),
// compile() (the presets as lists equal the pipelines they were; the fused
// head equals the same ops run one by one), output kinds and shapes, and
// determinism across threads. Pixel parity with torchvision for every op is
// in tests/python/test_transforms.py (goldens committed).
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/image/torch_reference.hpp>
#include <ringfeed/image/transform_spec.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "image_test_data.hpp"

namespace img = ringfeed::image;
using ringfeed::output_spec;
namespace data = ringfeed::test::image_data;

namespace {

const char* const photo_names[] = {"astronaut.jpg", "brick_gray.jpg", "chelsea.jpg", "coffee_portrait.jpg",
                                   "hubble.jpg"};

std::vector<std::byte> photo(const std::string& name) { return data::read_file(data::dir() / "photos" / name); }

std::vector<std::byte> run(const img::pipeline& p, std::span<const std::byte> bytes, const img::sample_key& key,
                           img::output_shape* shape = nullptr) {
  img::pipeline_workspace ws;
  std::vector<std::byte> out;
  img::output_shape s;
  (void)p.apply_to(ws, bytes, "photo", key, out, s);
  if (shape != nullptr) *shape = s;
  return out;
}

// apply() into a slot of the pipeline's fixed output shape, as the loader
// calls it.
std::vector<std::byte> run_slot(const img::pipeline& p, std::span<const std::byte> bytes, const img::sample_key& key) {
  img::pipeline_workspace ws;
  std::vector<std::byte> out(p.fixed_shape().value().bytes());
  (void)p.apply(ws, bytes, "photo", key, out);
  return out;
}

// The same ops appended one by one: nothing fused with the decoder.
img::pipeline unfused(const img::transform_list& t) {
  img::pipeline p;
  p.set_mode(img::pipeline_mode::exact);
  for (std::size_t i = 0; i < t.ops().size(); ++i) p.append(t.ops()[i], static_cast<std::uint32_t>(i + 1));
  return p;
}

// A float32 NCHW output as `spec`: each value rounded to its dtype
// (float_to_half, float_to_bfloat16), placed in its layout.
std::vector<std::byte> as_output(const std::vector<std::byte>& f32, const img::output_shape& shape, output_spec spec) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * static_cast<std::size_t>(shape.width);
  const auto ch = static_cast<std::size_t>(shape.channels);
  const std::size_t es = spec.element_size();
  std::vector<std::byte> out(f32.size() / 4 * es);
  for (std::size_t c = 0; c < ch; ++c)
    for (std::size_t i = 0; i < plane; ++i) {
      float v;
      std::memcpy(&v, &f32[(c * plane + i) * 4], 4);
      const std::size_t at = spec.layout == ringfeed::layout::nchw ? c * plane + i : i * ch + c;
      const std::uint16_t half = spec.dtype == ringfeed::dtype::bfloat16 ? img::float_to_bfloat16(v)
                                                                         : img::float_to_half(v);
      std::memcpy(&out[at * es], es == 4 ? static_cast<const void*>(&v) : &half, es);
    }
  return out;
}

}  // namespace

TEST_CASE("the presets as lists compile to the pipelines they always were", "[transform_list]") {
  for (const auto mode : {img::pipeline_mode::exact, img::pipeline_mode::fast}) {
    img::pipeline train_old = img::pipeline::train(224, mode);
    img::pipeline val_old = img::pipeline::val(256, 224, mode);
    img::pipeline train_new = img::transform_list::train(224).compile(mode);
    img::pipeline val_new = img::transform_list::val(256, 224).compile(mode);
    REQUIRE(train_new.tail().empty());
    REQUIRE(val_new.tail().empty());
    for (auto* p : {&train_old, &val_old}) p->set_output(output_spec::float32_nchw());
    REQUIRE(train_new.output() == output_spec::float32_nchw());
    for (const char* name : photo_names) {
      const auto bytes = photo(name);
      for (std::uint64_t index : {0u, 7u, 123u}) {
        const img::sample_key key{42, 3, index};
        CHECK(run(train_new, bytes, key) == run(train_old, bytes, key));
        CHECK(run(val_new, bytes, key) == run(val_old, bytes, key));
      }
    }
  }
}

TEST_CASE("a fused head gives the pixels of the same ops run one by one", "[transform_list]") {
  const char* const specs[] = {
      "RandomResizedCrop(96, interpolation=bicubic); RandomHorizontalFlip(); ToTensor(); Normalize((0.5,), (0.25,))",
      "Resize(80); CenterCrop((64, 48)); RandomHorizontalFlip(0.5); PILToTensor()",
      "Resize((40, 60), interpolation=lanczos); RandomHorizontalFlip(0.7); RandomVerticalFlip(0.5)",
      "Resize(72, interpolation=hamming); CenterCrop(90)",  // the crop pads
  };
  for (const char* spec : specs) {
    const auto list = img::transform_list::parse(spec);
    const img::pipeline fused = list.compile(img::pipeline_mode::exact);
    REQUIRE(fused.tail().size() < list.ops().size());
    const img::pipeline plain = unfused(list);
    for (const char* name : photo_names) {
      const auto bytes = photo(name);
      for (std::uint64_t index = 0; index < 6; ++index) {
        INFO(spec << " on " << name << " sample " << index);
        img::output_shape a, b;
        const auto x = run(fused, bytes, {9, 1, index}, &a);
        const auto y = run(plain, bytes, {9, 1, index}, &b);
        REQUIRE(a == b);
        CHECK(x == y);
      }
    }
  }
}

TEST_CASE("trailing RandomErasing on the written output equals it on the tensor", "[transform_list]") {
  // compile() runs a list's trailing RandomErasing ops on the float output
  // in the slot; the unfused pipeline runs them on the float tensor and
  // converts after. Same draws, same values, in every float dtype and
  // layout: float32 NCHW's values rounded and placed.
  const char* const specs[] = {
      "RandomResizedCrop(48); RandomHorizontalFlip(); ToTensor(); Normalize((0.5,), (0.25,)); "
      "RandomErasing(p=0.8, value='random')",  // nothing left between the decoder and the output
      "Resize(64); CenterCrop(40); PILToTensor(); ConvertImageDtype(float32); Normalize((0.4, 0.5, 0.6), (0.2, 0.3, "
      "0.4)); RandomErasing(p=1, value=(0.1, 0.2, 0.3)); RandomErasing(p=0.5, scale=(0.1, 0.5))",
      "RandomResizedCrop(40); TrivialAugmentWide(); PILToTensor(); ConvertImageDtype(float32); "
      "Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)); RandomErasing(p=0.9)",  // after a tail op
      "CenterCrop(33); Grayscale(); ToTensor(); RandomErasing(p=1, value='random')",  // one channel
  };
  for (const char* spec : specs) {
    const auto list = img::transform_list::parse(spec);
    img::pipeline fused = list.compile(img::pipeline_mode::exact);
    REQUIRE(!fused.output_ops().empty());
    CHECK(!fused.device_convertible());
    img::pipeline plain = unfused(list);
    const std::string head(spec, std::string_view(spec).find("; RandomErasing"));
    img::pipeline without_erasing = img::transform_list::parse(head).compile(img::pipeline_mode::exact);
    using ringfeed::dtype;
    using ringfeed::layout;
    for (const auto out : {output_spec::float32_nchw(), output_spec::float16_nchw(),
                           output_spec{dtype::bfloat16, layout::nchw}, output_spec{dtype::float32, layout::nhwc},
                           output_spec{dtype::float16, layout::nhwc}, output_spec{dtype::bfloat16, layout::nhwc}}) {
      fused.set_output(out);
      plain.set_output(out);
      without_erasing.set_output(out);
      int erased = 0;
      for (const char* name : photo_names) {
        const auto bytes = photo(name);
        for (std::uint64_t index = 0; index < 6; ++index) {
          INFO(spec << " on " << name << " sample " << index << " as " << ringfeed::to_string(out));
          img::output_shape a, b;
          const auto x = run(fused, bytes, {9, 1, index}, &a);
          const auto y = run(plain, bytes, {9, 1, index}, &b);
          REQUIRE(a == b);
          CHECK(x == y);
          CHECK(run_slot(fused, bytes, {9, 1, index}) == x);  // apply(), into a batch slot
          if (out != output_spec::float32_nchw()) {
            fused.set_output(output_spec::float32_nchw());
            CHECK(x == as_output(run(fused, bytes, {9, 1, index}), a, out));
            fused.set_output(out);
          }
          erased += x != run(without_erasing, bytes, {9, 1, index});  // a box was erased
        }
      }
      CHECK(erased > 10);
    }
  }
  img::pipeline p = img::transform_list::parse("CenterCrop(8); ToTensor(); RandomErasing()").compile();
  CHECK_THROWS_WITH(p.append_on_output(img::transform_list::parse("Grayscale()").ops()[0], 9),
                    Catch::Matchers::Contains("cannot run on the output"));
  CHECK_THROWS_WITH(p.append(img::transform_list::parse("Grayscale()").ops()[0], 9),
                    Catch::Matchers::Contains("go before the output's ops"));
}

TEST_CASE("ToImage + RandomResizedCrop decode only the crop in fast mode, exact mode's bytes", "[transform_list]") {
  // fast mode draws the crop from the header's size and decodes that
  // region alone (scale 1), then torch's resize: exact mode's full decode,
  // crop and resize, byte for byte, into a batch slot and through apply_to
  const char* const specs[] = {
      "ToImage(); RandomResizedCrop(40, antialias=True); RandomHorizontalFlip(); ToDtype(dtype=float32, scale=True); "
      "Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))",
      "ToImage(); RandomResizedCrop((24, 31), scale=(0.01, 0.1), interpolation=bicubic, antialias=True)",
      "ToImage(); RandomResizedCrop(36, interpolation=nearest); v2.TrivialAugmentWide()",
  };
  struct torch2 {  // tensor bilinear and bicubic run under torch 2.x; the installed reference after
    img::torch_reference before = img::current_torch_reference();
    torch2() { img::set_torch_reference(img::torch_reference::parse("torch=2.14.1 cpu=AVX2")); }
    ~torch2() { img::set_torch_reference(before); }
  } const reference;
  for (const char* spec : specs) {
    const auto list = img::transform_list::parse(spec);
    const img::pipeline fast = list.compile(img::pipeline_mode::fast);
    const img::pipeline exact = list.compile(img::pipeline_mode::exact);
    for (const char* name : photo_names) {
      const auto bytes = photo(name);
      for (std::uint64_t index = 0; index < 8; ++index) {
        INFO(spec << " on " << name << " sample " << index);
        const auto want = run_slot(exact, bytes, {5, 0, index});
        CHECK(run_slot(fast, bytes, {5, 0, index}) == want);
        CHECK(run(fast, bytes, {5, 0, index}) == want);
      }
    }
  }
}

TEST_CASE("v2's ToDtype(float32, scale=True) is written by the output, as its op computes it", "[transform_list]") {
  // v2's ToDtype multiplies by float32(1 / 255) where ToTensor divides by
  // 255: fused into the output write (no float frame per sample), it must
  // still give the op's bits, not ToTensor's.
  const char* const specs[] = {
      "Resize(64); CenterCrop(40); PILToTensor(); ToDtype(dtype=float32, scale=True); "
      "Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))",  // v2's val recipe: nothing left as an op
      "ToImage(); RandomHorizontalFlip(); ToDtype(dtype=float32, scale=True)",  // from a uint8 tensor, no Normalize
      "RandomResizedCrop(40); ToImage(); ToDtype(dtype=float32, scale=True); Normalize((0.5,), (0.25,)); "
      "RandomErasing(p=0.9)",
      "CenterCrop(33); Grayscale(); PILToTensor(); ToDtype(dtype=float32, scale=True)",  // one channel
  };
  for (const char* spec : specs) {
    const auto list = img::transform_list::parse(spec);
    img::pipeline fused = list.compile(img::pipeline_mode::exact);
    for (const auto& op : fused.tail()) CHECK(op->name() != "ToDtype");
    CHECK(fused.last_frame().kind != img::frame_kind::tensor_f32);  // converted by the output write
    img::pipeline plain = unfused(list);
    using ringfeed::dtype;
    using ringfeed::layout;
    for (const auto out : {output_spec::float32_nchw(), output_spec::float16_nchw(),
                           output_spec{dtype::bfloat16, layout::nchw}, output_spec{dtype::float32, layout::nhwc},
                           output_spec{dtype::float16, layout::nhwc}, output_spec{dtype::bfloat16, layout::nhwc}}) {
      fused.set_output(out);
      plain.set_output(out);
      for (const char* name : photo_names) {
        const auto bytes = photo(name);
        for (std::uint64_t index = 0; index < 4; ++index) {
          INFO(spec << " on " << name << " sample " << index << " as " << ringfeed::to_string(out));
          img::output_shape a, b;
          const auto x = run(fused, bytes, {9, 1, index}, &a);
          REQUIRE(x == run(plain, bytes, {9, 1, index}, &b));
          REQUIRE(a == b);
        }
      }
    }
  }
  // ToTensor's division gives other bits: the output did not fall back to it.
  const auto bytes = photo(photo_names[0]);
  const auto v1 = img::transform_list::parse("Resize(64); CenterCrop(40); ToTensor()").compile();
  const auto v2 = img::transform_list::parse("Resize(64); CenterCrop(40); ToImage(); ToDtype(float32, scale=True)");
  CHECK(run(v1, bytes, {9, 1, 0}) != run(v2.compile(), bytes, {9, 1, 0}));
  // ToDtype passes a PIL image through; Normalize then refuses it, as torchvision does.
  CHECK_THROWS(img::transform_list::parse("Resize(64); ToDtype(float32, scale=True); Normalize((0.5,), (0.5,))")
                   .compile());
}

TEST_CASE("spec() reads back to the same list", "[transform_list]") {
  const std::string spec =
      "Compose([RandomApply([RandomAffine((-5, 5), translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(1, 2, 3, 4), "
      "interpolation=bilinear, fill=(1, 2, 3))], p=0.3), RandomChoice([CenterCrop(3), RandomCrop((4, 5), "
      "padding=(1, 2), padding_mode='symmetric')], p=[1, 3]), RandomOrder([RandomHorizontalFlip(), "
      "RandomVerticalFlip(0.25)]), AugMix(severity=5, chain_depth=2, alpha=0.5, all_ops=False, fill=[4, 5, 6]), "
      "ToTensor(), RandomErasing(value='random'), Normalize([0.1, 0.2, 0.3], [1, 2, 3])])";
  const auto a = img::transform_list::parse(spec);
  REQUIRE(a.ops().size() == 7);
  const auto b = img::transform_list::parse(a.spec());
  CHECK(b.spec() == a.spec());
  CHECK(a.infer().kind == img::frame_kind::tensor_f32);
}

TEST_CASE("every op has a builder function, the same op as its spec string", "[transform_list]") {
  using tl = img::transform_list;
  using img::interpolation;
  const std::pair<tl, const char*> cases[] = {
      {tl{}.pad({1, 2, 3, 4}, {5, 6, 7}, img::padding_mode::reflect),
       "Pad((1, 2, 3, 4), fill=(5, 6, 7), padding_mode=reflect)"},
      {tl{}.random_crop({32, 24}, std::array{4, 4, 4, 4}, true),
       "RandomCrop((24, 32), padding=4, pad_if_needed=True)"},
      {tl{}.color_jitter(0.4, 0.3, 0.2, 0.1), "ColorJitter(0.4, 0.3, 0.2, 0.1)"},
      {tl{}.grayscale(3), "Grayscale(num_output_channels=3)"},
      {tl{}.random_grayscale(0.2), "RandomGrayscale(p=0.2)"},
      {tl{}.gaussian_blur({5, 3}, {0.5, 1.5}), "GaussianBlur((5, 3), sigma=(0.5, 1.5))"},
      {tl{}.random_rotation({-10, 20}, interpolation::bilinear, true, std::array{3.0, 4.0}, {9}),
       "RandomRotation((-10, 20), interpolation=bilinear, expand=True, center=(3, 4), fill=9)"},
      {tl{}.random_affine({-5, 5}, std::array{0.1, 0.2}, std::array{0.9, 1.1}, std::array{1.0, 2.0, 3.0, 4.0},
                          interpolation::bicubic, {1, 2, 3}),
       "RandomAffine((-5, 5), translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(1, 2, 3, 4), interpolation=bicubic, "
       "fill=(1, 2, 3))"},
      {tl{}.random_posterize(5, 1), "RandomPosterize(5, p=1)"},
      {tl{}.random_solarize(128), "RandomSolarize(128)"},
      {tl{}.random_autocontrast(0.3), "RandomAutocontrast(0.3)"},
      {tl{}.random_equalize(), "RandomEqualize()"},
      {tl{}.random_adjust_sharpness(2.0, 0.7), "RandomAdjustSharpness(2, p=0.7)"},
      {tl{}.random_invert(), "RandomInvert()"},
      {tl{}.auto_augment(tl::augment_policy::svhn, interpolation::bilinear, std::vector<double>{1, 2, 3}),
       "AutoAugment(policy=AutoAugmentPolicy.SVHN, interpolation=bilinear, fill=(1, 2, 3))"},
      {tl{}.rand_augment(3, 5, 10), "RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=10)"},
      {tl{}.trivial_augment_wide(17, interpolation::bilinear),
       "TrivialAugmentWide(num_magnitude_bins=17, interpolation=bilinear)"},
      {tl{}.augmix(5, 2, 1, 0.5, false, interpolation::nearest, std::vector<double>{7}),
       "AugMix(severity=5, mixture_width=2, chain_depth=1, alpha=0.5, all_ops=False, interpolation=nearest, fill=7)"},
      {tl{}.random_choice(tl{}.center_crop({8, 8}).random_invert(1), {1, 3}),
       "RandomChoice([CenterCrop(8), RandomInvert(1)], p=[1, 3])"},
  };
  for (const auto& [built, spec] : cases) {
    INFO(spec);
    REQUIRE(built.ops().size() == 1);
    CHECK(built.spec() == tl::parse(spec).spec());
  }
  // and the builder checks its arguments as the grammar does
  CHECK_THROWS_AS(tl{}.augmix(0), std::invalid_argument);
  CHECK_THROWS_AS(tl{}.gaussian_blur({4, 4}), std::invalid_argument);
}

TEST_CASE("spec errors name the column and the reason", "[transform_list]") {
  using Catch::Matchers::Contains;
  const auto fails = [](const char* spec, const char* what) {
    INFO(spec);
    CHECK_THROWS_WITH(img::transform_list::parse(spec), Contains(what));
  };
  fails("Resize(3; CenterCrop(2)", "column 9: expected ',' or ')'");
  fails("Resize(3) CenterCrop(2)", "column 11: expected ';'");
  fails("Rezise(3)", "unsupported transform 'Rezise' (supported: ");
  fails("Resize(3, sizes=4)", "Resize has no argument 'sizes'");
  fails("Resize(size=3, size=4)", "given twice");
  fails("Resize(3, size=4)", "given twice");
  fails("CenterCrop(1, 2)", "CenterCrop takes at most 1 arguments, 2 given");
  fails("Resize()", "Resize(size): missing");
  fails("Resize('big')", "expected a number or a list of numbers, got a string");
  fails("Resize(3, interpolation=cubic)", "unknown value 'cubic' (supported: nearest, bilinear");
  fails("Normalize((0.5,), 'x')", "Normalize(std)");
  fails("RandomApply([3], p=0.5)", "expected transforms in the list, got a number");
  fails("Resize(1e999999)", "bad number");
  fails("Pad(1, fill='x", "unterminated string");
  fails(std::string(40, '[').c_str(), "expected a name");
  fails(("RandomApply(" + std::string(40, '[')).c_str(), "nested too deeply");
  fails("Compose(Resize(3))", "Compose takes one list of transforms");
  // nan passes a "< 0" test; torchvision takes it too and fails in uniform_ at the first image
  fails("ColorJitter( nan)", "single number, it must be non negative");
  fails("ColorJitter(hue=nan)", "single number, it must be non negative");
  fails("ColorJitter(hue=0.6)", "hue values should be between (-0.5, 0.5)");
  fails("ColorJitter(hue=inf)", "hue values should be between (-0.5, 0.5)");
}

TEST_CASE("infer() says which op cannot take what the one before gives", "[transform_list]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(img::transform_list::parse("Resize(8); Normalize((0.5,), (0.5,))").infer(),
                    Contains("transform 1 (Normalize): Normalize expects a float tensor"));
  CHECK_THROWS_WITH(img::transform_list::parse("ToTensor(); ToTensor()").infer(),
                    Contains("transform 1 (ToTensor): ToTensor expects a PIL image, but the transform before it "
                             "gives a float tensor"));
  // on a tensor: torch's interpolate, run under torch 2.x (the default
  // reference, torch 1.13, refuses all but nearest; test_tensor_geometry.py)
  CHECK_THROWS_WITH(img::transform_list::parse("ToTensor(); Resize(3)").compile(),
                    Contains("Resize: interpolation=bilinear on a tensor under torch 1.13"));
  CHECK_THROWS_WITH(img::transform_list::parse("ToTensor(); GaussianBlur(3)").compile(),
                    Contains("GaussianBlur expects a PIL image"));
  CHECK_THROWS_WITH(img::transform_list::parse("RandomApply([ToTensor()])").infer(), Contains("outcomes differ"));
}

TEST_CASE("the output is what the list ends with", "[transform_list]") {
  const auto shape_of = [](const char* spec) {
    const img::pipeline p = img::transform_list::parse(spec).compile();
    return std::pair{p.fixed_shape(), p.output()};
  };
  auto [s1, o1] = shape_of("Resize((20, 30)); PILToTensor()");
  REQUIRE(s1);
  CHECK(o1 == output_spec::uint8_nchw());
  CHECK((s1->channels == 3 && s1->height == 20 && s1->width == 30));
  auto [s2, o2] = shape_of("CenterCrop(5)");
  CHECK(o2 == output_spec::uint8_nhwc());
  auto [s3, o3] = shape_of("CenterCrop(5); ToTensor(); RandomErasing()");
  CHECK(o3 == output_spec::float32_nchw());
  auto [s4, o4] = shape_of("Resize(64)");
  CHECK(!s4);  // the size depends on the image: not a batch recipe

  img::pipeline p = img::transform_list::parse("CenterCrop(5); ToTensor(); RandomErasing()").compile();
  CHECK_THROWS_WITH(p.set_output(output_spec::uint8_nhwc()), Catch::Matchers::Contains("end with a float tensor"));
  p.set_output(output_spec::float16_nchw());
  const auto bytes = photo("chelsea.jpg");
  img::output_shape shape;
  CHECK(run(p, bytes, {1, 0, 0}, &shape).size() == 5 * 5 * 3 * 2);
}

TEST_CASE("a random list gives the same sample whatever thread runs it", "[transform_list][concurrency]") {
  const auto list = img::transform_list::parse(
      "RandomResizedCrop(48); RandomHorizontalFlip(); RandomApply([RandomRotation(30, interpolation=bilinear)], "
      "p=0.5); RandomChoice([RandomCrop(40), CenterCrop(40)]); ToTensor(); RandomErasing(p=0.5, value='random')");
  const img::pipeline p = list.compile(img::pipeline_mode::fast);
  const auto bytes = photo("grace_hopper.jpg");
  std::vector<std::vector<std::byte>> serial(16), threaded(16);
  for (std::uint64_t i = 0; i < 16; ++i) serial[i] = run(p, bytes, {5, 2, i});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::uint64_t i = static_cast<std::uint64_t>(t); i < 16; i += 4) threaded[i] = run(p, bytes, {5, 2, i});
    });
  for (auto& t : threads) t.join();
  CHECK(serial == threaded);
  // and samples differ from one another (the draws are per sample)
  CHECK(serial[0] != serial[1]);
}

TEST_CASE("hostile and tiny images through every kind of op: a clean error or an image", "[transform_list][hostile]") {
  // The decoders' fuzz corpora and the damaged files: each either decodes
  // and goes through the ops, or throws image_error / invalid_argument.
  // Under ASan + UBSan (the asan preset) this is the memory-safety check of
  // the new ops on odd sizes (1×1, 1×N, huge aspect ratios).
  const char* const lists[] = {
      "RandomResizedCrop(24); RandomHorizontalFlip(); TrivialAugmentWide(); ToTensor(); "
      "RandomErasing(p=1, value='random')",
      "AutoAugment(policy=svhn, interpolation=bilinear, fill=(1, 2, 3)); RandAugment(num_ops=4); CenterCrop(17)",
      "Pad(3, padding_mode=reflect); RandomCrop(5, pad_if_needed=True, padding_mode=symmetric); "
      "ColorJitter(0.4, 0.4, 0.4, 0.1); RandomGrayscale(0.5); GaussianBlur(3); RandomAffine(30, (0.2, 0.2), "
      "(0.8, 1.2), (5, 5, 5, 5), interpolation=bicubic); RandomRotation(45, expand=True); Resize((9, 7), "
      "interpolation=nearest)",
      "Grayscale(); RandomPosterize(3, p=1); RandomSolarize(100, p=1); RandomAutocontrast(p=1); "
      "RandomEqualize(p=1); RandomAdjustSharpness(3, p=1); RandomInvert(p=1); Resize((4, 4)); PILToTensor()",
      "AugMix(severity=10, mixture_width=4, chain_depth=3, fill=7); Grayscale(); "
      "AugMix(interpolation=nearest, alpha=0.3, all_ops=False); Resize((5, 3)); ToTensor()",
  };
  std::vector<std::filesystem::path> files;
  const auto root = data::dir().parent_path().parent_path();
  for (const auto& dir : {root / "data" / "image" / "bad", root / "fuzz" / "corpus" / "decode_jpeg",
                          root / "fuzz" / "corpus" / "decode_png", root / "fuzz" / "corpus" / "decode_bmp",
                          root / "fuzz" / "corpus" / "decode_pnm", root / "fuzz" / "corpus" / "decode_tiff",
                          root / "fuzz" / "corpus" / "decode_webp", root / "data" / "image" / "decode"})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() != ".ppm") files.push_back(e.path());
  REQUIRE(files.size() > 40);
  std::size_t ran = 0;
  for (const char* spec : lists) {
    for (const auto mode : {img::pipeline_mode::exact, img::pipeline_mode::fast}) {
      const img::pipeline p = img::transform_list::parse(spec).compile(mode);
      img::pipeline_workspace ws;
      for (const auto& f : files) {
        const auto bytes = data::read_file(f);
        for (std::uint64_t index = 0; index < 3; ++index) {
          std::vector<std::byte> out;
          img::output_shape shape;
          try {
            (void)p.apply_to(ws, bytes, f.filename().string(), {1, 0, index}, out, shape);
            CHECK(out.size() == shape.bytes());
            ++ran;
          } catch (const img::image_error&) {
          } catch (const std::invalid_argument&) {
          }
        }
      }
    }
  }
  CHECK(ran > 100);  // most of the corpus decodes: the ops did run
}

TEST_CASE("op signatures: one per op, and every written-out default changes nothing", "[transform_list][spec]") {
  using ringfeed::image::op_signatures;
  using ringfeed::image::transform_list;
  std::string names;
  for (const auto& s : op_signatures()) names += (names.empty() ? "" : ", ") + std::string(s.name);
  std::vector<std::string> sorted;
  for (const auto& s : op_signatures()) sorted.emplace_back(s.name);
  std::sort(sorted.begin(), sorted.end());
  std::string sorted_names;
  for (const auto& n : sorted) sorted_names += (sorted_names.empty() ? "" : ", ") + n;
  CHECK(sorted_names == transform_list::supported_ops());  // no op without a signature, none extra

  for (const auto& s : op_signatures()) {
    INFO(s.name);
    std::string required, spelled;
    for (const auto& p : s.params) {
      const bool needed = p.default_value.empty();
      CHECK(needed != p.example.empty());  // a required parameter has an example, an optional one a default
      const std::string arg = std::string(p.name) + "=" + std::string(needed ? p.example : p.default_value);
      if (needed) required += (required.empty() ? "" : ", ") + arg;
      spelled += (spelled.empty() ? "" : ", ") + arg;
    }
    const std::string bare = std::string(s.name) + "(" + required + ")";
    const std::string full = std::string(s.name) + "(" + spelled + ")";
    INFO(bare << " vs " << full);
    CHECK(transform_list::parse(bare).spec() == transform_list::parse(full).spec());
    // one positional argument more than the signature has is refused
    std::string too_many;
    for (std::size_t i = 0; i <= s.params.size(); ++i) too_many += (i ? ", " : "") + std::string("1");
    CHECK_THROWS_WITH(transform_list::parse(std::string(s.name) + "(" + too_many + ")"),
                      Catch::Contains("takes at most " + std::to_string(s.params.size()) + " arguments"));
  }
}

TEST_CASE("apply() with the header already read gives apply()'s bytes", "[transform_list]") {
  // A router that parsed the header (decode="gpu"'s, for an image it sends
  // to the CPU) hands it on instead of the pipeline reading it again.
  struct torch2 {  // the tensor RandomResizedCrop (the region decode) runs under torch 2.x
    img::torch_reference before = img::current_torch_reference();
    torch2() { img::set_torch_reference(img::torch_reference::parse("torch=2.14.1 cpu=AVX2")); }
    ~torch2() { img::set_torch_reference(before); }
  } const reference;
  const img::pipeline pipes[] = {
      img::pipeline::train(24, img::pipeline_mode::fast),
      img::pipeline::val(28, 24, img::pipeline_mode::fast),
      img::pipeline::train(24, img::pipeline_mode::exact),
      img::transform_list::parse("ToImage(); RandomResizedCrop(40, antialias=True); ToDtype(dtype=float32, scale=True)")
          .compile(img::pipeline_mode::fast),
  };
  std::vector<std::pair<std::string, std::vector<std::byte>>> files;
  for (const char* name : photo_names) files.emplace_back(name, photo(name));
  for (const char* name : {"gray.png", "exif6.jpg", "progressive.jpg"})
    files.emplace_back(name, data::read_file(data::dir() / "decode" / name));
  img::decoder d;
  img::pipeline_workspace ws;
  for (const img::pipeline& p : pipes) {
    for (const auto& [name, bytes] : files) {
      const img::image_info header = d.read_info(bytes, name);
      for (std::uint64_t index = 0; index < 3; ++index) {
        INFO(name << " sample " << index);
        const auto want = run_slot(p, bytes, {7, 0, index});
        std::vector<std::byte> got(want.size());
        (void)p.apply(ws, bytes, header, name, {7, 0, index}, got);
        CHECK(got == want);
      }
    }
  }
}
