// The batch conversion (uint8 NHWC → normalized float32/float16/bfloat16,
// NCHW or NHWC) that
// runs on the CPU without a device and is the device kernel's reference:
// checked against ToTensor + Normalize written out plainly, and against the
// per-sample write_output the decode workers use.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/image/pipeline.hpp>

namespace img = ringfeed::image;
using ringfeed::output_spec;

namespace {

std::vector<std::uint8_t> random_batch(std::size_t n, int h, int w, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n * static_cast<std::size_t>(h * w * 3));
  for (auto& x : v) x = static_cast<std::uint8_t>(rng());
  return v;
}

// torch: x = v / 255 (float32 true division); (x - mean) / std.
float reference_value(std::uint8_t v, int c, const img::normalize_params& p) {
  const float x = static_cast<float>(v) / 255.0f;
  return (x - p.mean[static_cast<std::size_t>(c)]) / p.std[static_cast<std::size_t>(c)];
}

}  // namespace

TEST_CASE("float32 NCHW equals (v/255 - mean)/std element by element", "[convert]") {
  for (auto [n, h, w] : {std::tuple{1, 1, 1}, std::tuple{3, 7, 5}, std::tuple{2, 224, 224}}) {
    const auto src = random_batch(static_cast<std::size_t>(n), h, w, 1);
    std::vector<float> dst(src.size());
    ringfeed::cuda::convert_batch_cpu(src.data(), static_cast<std::size_t>(n), h, w, output_spec::float32_nchw(),
                                      &img::imagenet_normalize, dst.data());
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int c = 0; c < 3; ++c) {
            const std::uint8_t v = src[static_cast<std::size_t>(((i * h + y) * w + x) * 3 + c)];
            const float got = dst[static_cast<std::size_t>(((i * 3 + c) * h + y) * w + x)];
            const float want = reference_value(v, c, img::imagenet_normalize);
            REQUIRE(std::memcmp(&got, &want, 4) == 0);
          }
  }
}

TEST_CASE("float16 NCHW is the float32 value rounded to nearest even", "[convert]") {
  const int n = 2, h = 9, w = 11;
  const auto src = random_batch(n, h, w, 2);
  std::vector<std::uint16_t> dst(src.size());
  ringfeed::cuda::convert_batch_cpu(src.data(), n, h, w, output_spec::float16_nchw(), &img::imagenet_normalize,
                                    dst.data());
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < h * w; ++p)
      for (int c = 0; c < 3; ++c) {
        const std::uint8_t v = src[static_cast<std::size_t>((i * h * w + p) * 3 + c)];
        REQUIRE(dst[static_cast<std::size_t>((i * 3 + c) * h * w + p)] ==
                img::float_to_half(reference_value(v, c, img::imagenet_normalize)));
      }
}

TEST_CASE("without normalize the values are v/255; uint8 is a copy", "[convert]") {
  const auto src = random_batch(1, 4, 4, 3);
  std::vector<float> f(src.size());
  ringfeed::cuda::convert_batch_cpu(src.data(), 1, 4, 4, output_spec::float32_nchw(), nullptr, f.data());
  for (int p = 0; p < 16; ++p) REQUIRE(f[static_cast<std::size_t>(p)] == static_cast<float>(src[static_cast<std::size_t>(p * 3)]) / 255.0f);
  std::vector<std::uint8_t> u(src.size());
  ringfeed::cuda::convert_batch_cpu(src.data(), 1, 4, 4, output_spec::uint8_nhwc(), nullptr, u.data());
  REQUIRE(u == src);
}

TEST_CASE("the batch conversion equals the decode workers' write_output", "[convert]") {
  const int h = 13, w = 17;
  auto src = random_batch(1, h, w, 4);
  const img::image_view view{src.data(), w, h, 3, static_cast<std::ptrdiff_t>(w) * 3};
  for (auto type : {ringfeed::dtype::float32, ringfeed::dtype::float16, ringfeed::dtype::bfloat16})
  for (auto order : {ringfeed::layout::nchw, ringfeed::layout::nhwc}) {
    const output_spec format{type, order};
    CAPTURE(ringfeed::to_string(format));
    const img::output_shape shape{3, h, w, format};
    std::vector<std::byte> per_sample(shape.bytes()), batch(shape.bytes());
    img::write_output(view, false, format, &img::imagenet_normalize, per_sample);
    ringfeed::cuda::convert_batch_cpu(src.data(), 1, h, w, format, &img::imagenet_normalize, batch.data());
    REQUIRE(per_sample == batch);
  }
}

TEST_CASE("bfloat16 is the float32 value rounded to nearest even, as torch rounds", "[convert]") {
  // c10::BFloat16's round_to_nearest_even, worked by hand: ties go to the
  // even neighbour, anything past the tie rounds up, a NaN is 0x7FC0.
  const auto bf = [](std::uint32_t bits) { return img::float_to_bfloat16(std::bit_cast<float>(bits)); };
  CHECK(bf(0x3F808000u) == 0x3F80u);  // tie, even below: down
  CHECK(bf(0x3F818000u) == 0x3F82u);  // tie, odd below: up
  CHECK(bf(0x3F808001u) == 0x3F81u);  // past the tie: up (truncation gives 0x3F80)
  CHECK(bf(0x3F80FFFFu) == 0x3F81u);
  CHECK(bf(0xBF80C000u) == 0xBF81u);  // negative values round by magnitude
  CHECK(bf(0x7F7FFFFFu) == 0x7F80u);  // the largest float rounds to infinity
  CHECK(bf(0x7FC00001u) == 0x7FC0u);

  const int n = 2, h = 5, w = 7;
  const auto src = random_batch(n, h, w, 5);
  std::vector<std::uint16_t> dst(src.size());
  ringfeed::cuda::convert_batch_cpu(src.data(), n, h, w, {ringfeed::dtype::bfloat16, ringfeed::layout::nchw},
                                    &img::imagenet_normalize, dst.data());
  int rounded_up = 0;
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < h * w; ++p)
      for (int c = 0; c < 3; ++c) {
        const std::uint8_t v = src[static_cast<std::size_t>((i * h * w + p) * 3 + c)];
        const auto bits = std::bit_cast<std::uint32_t>(reference_value(v, c, img::imagenet_normalize));
        const std::uint16_t got = dst[static_cast<std::size_t>((i * 3 + c) * h * w + p)];
        REQUIRE(got == img::float_to_bfloat16(std::bit_cast<float>(bits)));
        rounded_up += got != static_cast<std::uint16_t>(bits >> 16);
      }
  CHECK(rounded_up > 0);  // the batch has values where rounding is not truncation
}

TEST_CASE("NHWC outputs are the NCHW ones permuted", "[convert]") {
  const int n = 3, h = 6, w = 9;
  const auto src = random_batch(n, h, w, 6);
  for (auto type : {ringfeed::dtype::float32, ringfeed::dtype::float16, ringfeed::dtype::bfloat16}) {
    CAPTURE(ringfeed::to_string(type));
    const std::size_t es = ringfeed::element_size(type);
    std::vector<std::byte> planes(src.size() * es), interleaved(src.size() * es);
    ringfeed::cuda::convert_batch_cpu(src.data(), n, h, w, {type, ringfeed::layout::nchw}, &img::imagenet_normalize,
                                      planes.data());
    ringfeed::cuda::convert_batch_cpu(src.data(), n, h, w, {type, ringfeed::layout::nhwc}, &img::imagenet_normalize,
                                      interleaved.data());
    for (int i = 0; i < n; ++i)
      for (int p = 0; p < h * w; ++p)
        for (int c = 0; c < 3; ++c)
          REQUIRE(std::memcmp(&interleaved[static_cast<std::size_t>((i * h * w + p) * 3 + c) * es],
                              &planes[static_cast<std::size_t>((i * 3 + c) * h * w + p) * es], es) == 0);
  }
}
