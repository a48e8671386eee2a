// perf/bench/color_bench.cpp — ringfeed's colour and pixel ops
// (ringfeed/image/color.hpp), one thread, one op per iteration, on RGB crops
// of a committed photo (tests/data/image/photos/coffee_portrait.jpg,
// 375×500): `224x224` (its top-left 224×224) and `375x500` (all of it).
// Rows: `ringfeed/<op>/<params>/size:WxH`; items_per_second is images per
// second. perf/compare/color_baseline.py times the same ops, parameters and pixels
// with torchvision 0.14 on PIL images (Pillow 9.4; gaussian_blur through
// torch, one thread) under the same names with `pillow/` in front, and with
// `--ringfeed FILE` (this program's --benchmark_format=json output) prints
// the ratios:
//   build/default/perf/color_bench --benchmark_format=json --benchmark_repetitions=5 > /tmp/c.json
//   /usr/bin/python3 perf/compare/color_baseline.py --ringfeed /tmp/c.json
// The rows of whole transforms (`augmix/...`, the augment policies,
// ColorJitter, RandomResizedCrop, RandomCrop, the tensor ops) run that transform list
// alone (exact, through pipeline::apply_pixels), a new sample and so new
// draws every iteration; the baseline is the same torchvision transforms
// on the PIL crop (AugMix through its tensor kernels, as torchvision runs
// it). A tensor op that needs a tensor before it is timed with the op that
// makes one, on both sides (`to_tensor+normalize`).
#include <ringfeed/image/color.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/image/pipeline.hpp>

#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace img = ringfeed::image;
using ringfeed::perf::harness;

img::image_buffer load_photo() {
  const std::filesystem::path p = std::filesystem::path(__FILE__).parent_path().parent_path() / "tests" / "data" /
                                  "image" / "photos" / "coffee_portrait.jpg";
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  img::image_buffer out;
  img::decoder d;
  d.decode(std::as_bytes(std::span(bytes)), p.string(), out);
  return out;
}

const img::image_buffer& photo() {
  static const img::image_buffer b = load_photo();
  return b;
}

using op_fn = std::function<void(img::image_view, img::image_buffer&)>;

void run(benchmark::State& state, img::size2 size, const op_fn& op) {
  const img::image_view src = photo().view().crop({0, 0, size.height, size.width});
  img::image_buffer dst;
  ringfeed::perf::run_image_op(state, src, dst, op);
}

void run_spec(benchmark::State& state, img::size2 size, const std::string& spec) {
  const img::image_view src = photo().view().crop({0, 0, size.height, size.width});
  const img::pipeline p = img::transform_list::parse(spec).compile(img::pipeline_mode::exact);
  std::vector<std::byte> out(p.output_for(size)->bytes());
  img::pipeline_workspace ws;
  std::uint64_t index = 0;  // a new sample, so new draws, every iteration
  ringfeed::perf::run_image_op(state, src, out, [&](img::image_view s, std::vector<std::byte>& d) {
    (void)p.apply_pixels(ws, s, "photo", {0, 0, index++}, d);
  });
}

// Whole transforms by spec string; their torchvision twins are
// color_baseline.py's, under the same names.
std::vector<std::pair<const char*, const char*>> specs() {
  return {
      {"augmix/default", "AugMix()"},
      {"augmix/severity10_width1", "AugMix(severity=10, mixture_width=1)"},
      {"autoaugment/imagenet", "AutoAugment()"},
      {"autoaugment/cifar10", "AutoAugment(policy=cifar10)"},
      {"autoaugment/svhn", "AutoAugment(policy=svhn)"},
      {"randaugment/default", "RandAugment()"},
      {"randaugment/m9", "RandAugment(num_ops=2, magnitude=9)"},
      {"trivialaugmentwide", "TrivialAugmentWide()"},
      {"color_jitter/0.4_0.4_0.4_0.1", "ColorJitter(0.4, 0.4, 0.4, 0.1)"},
      {"random_resized_crop/176", "RandomResizedCrop(176)"},
      {"random_crop/200_pad4", "RandomCrop(200, padding=4)"},
      {"to_tensor", "ToTensor()"},
      {"pil_to_tensor", "PILToTensor()"},
      {"pil_to_tensor+convert_image_dtype", "PILToTensor(); ConvertImageDtype(float32)"},
      {"to_tensor+normalize", "ToTensor(); Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))"},
      {"to_tensor+random_erasing", "ToTensor(); RandomErasing(p=1)"},
  };
}

void register_all() {
  const std::vector<std::pair<std::string, op_fn>> ops = {
      {"adjust_brightness/1.3", [](auto s, auto& d) { img::adjust_brightness(s, 1.3, d); }},
      {"adjust_contrast/1.3", [](auto s, auto& d) { img::adjust_contrast(s, 1.3, d); }},
      {"adjust_saturation/1.3", [](auto s, auto& d) { img::adjust_saturation(s, 1.3, d); }},
      {"adjust_hue/0.1", [](auto s, auto& d) { img::adjust_hue(s, 0.1, d); }},
      {"adjust_sharpness/2.0", [](auto s, auto& d) { img::adjust_sharpness(s, 2.0, d); }},
      {"to_grayscale/1", [](auto s, auto& d) { img::to_grayscale(s, 1, d); }},
      {"to_grayscale/3", [](auto s, auto& d) { img::to_grayscale(s, 3, d); }},
      {"posterize/4", [](auto s, auto& d) { img::posterize(s, 4, d); }},
      {"solarize/128", [](auto s, auto& d) { img::solarize(s, 128, d); }},
      {"autocontrast", [](auto s, auto& d) { img::autocontrast(s, d); }},
      {"equalize", [](auto s, auto& d) { img::equalize(s, d); }},
      {"invert", [](auto s, auto& d) { img::invert(s, d); }},
      {"gaussian_blur/3x3/0.1", [](auto s, auto& d) { img::gaussian_blur(s, {3, 3}, {0.1, 0.1}, d); }},
      {"gaussian_blur/9x9/2.0", [](auto s, auto& d) { img::gaussian_blur(s, {9, 9}, {2.0, 2.0}, d); }},
      {"gaussian_blur/23x23/1.0", [](auto s, auto& d) { img::gaussian_blur(s, {23, 23}, {1.0, 1.0}, d); }},
  };
  for (const img::size2 size : {img::size2{224, 224}, img::size2{375, 500}}) {
    const std::string dims = std::to_string(size.width) + "x" + std::to_string(size.height);
    for (const auto& [name, fn] : ops) {
      const std::string full = "ringfeed/" + name + "/size:" + dims;
      harness(benchmark::RegisterBenchmark(full.c_str(), run, size, fn), benchmark::kMicrosecond);
    }
    for (const auto& [name, spec] : specs()) {
      const std::string full = std::string("ringfeed/") + name + "/size:" + dims;
      harness(benchmark::RegisterBenchmark(full.c_str(), run_spec, size, std::string(spec)), benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
