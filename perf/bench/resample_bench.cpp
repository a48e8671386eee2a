// perf/bench/resample_bench.cpp — ringfeed's Pillow-exact resampler
// (ringfeed/image/resample.hpp) on the sizes an ImageNet pipeline sees,
// RGB, bilinear (torchvision's default), one thread, one resize per
// iteration; items_per_second is images per second.
//
//   resize/from:WxH/to:WxH/pass:P   Image.resize of the whole image:
//     pass:both        both passes (Resize(256) of a 500×375 photo → 341×256)
//     pass:horizontal  only the width changes: the vertical pass is skipped
//                      (the resampler skips identity passes, as Pillow does)
//     pass:vertical    only the height changes
//   resize_window/.../window:224x224  Resize(256) + CenterCrop(224) computed
//                      as one windowed resize (val, exact mode): only the
//                      224×224 output pixels are made
//   resized_crop/from:WxH/box:WxH/to:224x224  RandomResizedCrop's resize of a
//                      centered box: area 1 (the whole image), ~0.5 and
//                      0.08 (the smallest crop: an upscale)
// The pixels are deterministic noise: resampling cost does not depend on
// content. No baseline here: Pillow's resize is measured with the same cases
// by perf/compare/compare_image.py (val.exact, train.exact).
#include <ringfeed/image/image.hpp>
#include <ringfeed/image/resample.hpp>
#include <ringfeed/random.hpp>
#include <ringfeed/image/pipeline.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "bench_support.hpp"

namespace {

namespace img = ringfeed::image;
using ringfeed::perf::harness;

std::string dims(img::size2 s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

img::image_buffer noise_image(img::size2 size) {
  img::image_buffer b(size.width, size.height, 3);
  ringfeed::splitmix64_rng rng(0x2E5A'3B1Eull);
  for (std::size_t i = 0; i < b.size_bytes(); i += 8) {
    const std::uint64_t v = rng.next();
    for (std::size_t k = 0; k < 8 && i + k < b.size_bytes(); ++k) b.data()[i + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
  return b;
}

void resize(benchmark::State& state, img::size2 from, img::resample_request request) {
  const img::image_buffer src = noise_image(from);
  const img::size2 out = request.window.empty() ? request.output
                                                : img::size2{request.window.width, request.window.height};
  img::image_buffer dst(out.width, out.height, 3);
  img::resampler r;
  const ringfeed::perf::cpu_meter cpu;
  try {
    for (auto _ : state) {
      r.resize(src.view(), request, dst.view());
      benchmark::DoNotOptimize(dst.data());
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());
  state.counters["out_mpix_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * out.width * out.height / 1e6, benchmark::Counter::kIsRate);
}

void add(const std::string& name, img::size2 from, const img::resample_request& request) {
  harness(benchmark::RegisterBenchmark(name.c_str(), resize, from, request), benchmark::kMicrosecond);
}

img::resample_request whole(img::size2 from, img::size2 to) {
  img::resample_request q;
  q.input = from;
  q.output = to;
  return q;
}

void register_all() {
  for (const img::size2 from : {img::size2{500, 375}, img::size2{1024, 768}}) {
    const img::size2 to = img::resized_size(from, 256);  // Resize(256)
    add("ringfeed/resize/from:" + dims(from) + "/to:" + dims(to) + "/pass:both", from, whole(from, to));
    const img::size2 h{to.width, from.height}, v{from.width, to.height};
    add("ringfeed/resize/from:" + dims(from) + "/to:" + dims(h) + "/pass:horizontal", from, whole(from, h));
    add("ringfeed/resize/from:" + dims(from) + "/to:" + dims(v) + "/pass:vertical", from, whole(from, v));
    img::resample_request val = whole(from, to);
    val.window = img::center_crop_box(to, {224, 224});
    add("ringfeed/resize_window/from:" + dims(from) + "/to:" + dims(to) + "/window:224x224", from, val);
  }
  const img::size2 from{500, 375};
  // Centered boxes of area 1, ~0.5 and 0.08 of the image, aspect ~1 (the
  // middle of RandomResizedCrop's ranges), resized to 224×224.
  for (const img::size2 box : {from, img::size2{306, 306}, img::size2{122, 122}}) {
    img::resample_request q = whole(from, {224, 224});
    const float x0 = static_cast<float>(from.width - box.width) / 2;
    const float y0 = static_cast<float>(from.height - box.height) / 2;
    q.box = img::resample_box{x0, y0, x0 + static_cast<float>(box.width), y0 + static_cast<float>(box.height)};
    add("ringfeed/resized_crop/from:" + dims(from) + "/box:" + dims(box) + "/to:224x224", from, q);
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
