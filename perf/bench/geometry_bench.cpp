// perf/bench/geometry_bench.cpp — ringfeed's geometry ops (ringfeed/image/
// geometry.hpp) one at a time on one thread, RGB, on a 224×224 and a
// 500×375 image (deterministic noise: the cost does not depend on content).
// items_per_second is images per second. The Pillow/torchvision twin is
// perf/compare/geometry_baseline.py: same case names, F.* on a PIL image; the ratio
// ringfeed / Pillow of the two items_per_second is the op's speed-up.
//
//   geometry/<case>/<W>x<H>, cases:
//     resize_{nearest,bilinear,bicubic,  to 0.7× each side
//       box,hamming,lanczos}
//     crop_inside / crop_outside          F.crop of (8, 8, H-16, W-16) /
//                                         (-8, -8, H, W) (zero fill)
//     hflip, vflip
//     pad4_{constant,edge,reflect,        RandomCrop(…, padding=4) style
//       symmetric}
//     affine_shear10_nearest              RandomAffine(0, shear=(10,10,0,0))
//     affine_all_bilinear                 angle 25, translate (2, 1), scale
//                                         1.3, shear (12, -7.5)
//     translate10_bilinear                the augment policies' TranslateX
//                                         (translate (10, 0), bilinear)
//     rotate17_{nearest,bilinear,bicubic} RandomRotation((17, 17))
//     rotate17_expand_bilinear
//     rotate90                            Pillow's transpose fast path
#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/image.hpp>
#include <ringfeed/random.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace img = ringfeed::image;
using ringfeed::perf::harness;

img::image_buffer noise_image(img::size2 size) {
  img::image_buffer b(size.width, size.height, 3);
  ringfeed::splitmix64_rng rng(0x6E0Dull);
  for (std::size_t i = 0; i < b.size_bytes(); i += 8) {
    const std::uint64_t v = rng.next();
    for (std::size_t k = 0; k < 8 && i + k < b.size_bytes(); ++k) b.data()[i + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
  return b;
}

using op_fn = std::function<void(img::image_view, img::image_buffer&)>;

void run(benchmark::State& state, img::size2 size, const op_fn& op) {
  const img::image_buffer src = noise_image(size);
  img::image_buffer dst;
  ringfeed::perf::run_image_op(state, src.view(), dst, op);
}

std::array<double, 2> centre(img::image_view s) { return {s.width * 0.5, s.height * 0.5}; }

void register_all() {
  using I = img::interpolation;
  const auto resize_to = [](I interp) {
    return [interp](img::image_view s, img::image_buffer& d) {
      img::resize(s, {s.width * 7 / 10, s.height * 7 / 10}, interp, d);
    };
  };
  const auto pad4 = [](img::padding_mode mode) {
    return [mode](img::image_view s, img::image_buffer& d) { img::pad(s, 4, 4, 4, 4, mode, {0, 0, 0}, d); };
  };
  const auto rotate17 = [](I interp, bool expand) {
    return [interp, expand](img::image_view s, img::image_buffer& d) {
      img::rotate(s, 17.0, interp, expand, std::nullopt, {0, 0, 0}, d);
    };
  };
  const std::vector<std::pair<std::string, op_fn>> cases{
      {"resize_nearest", resize_to(I::nearest)},
      {"resize_bilinear", resize_to(I::bilinear)},
      {"resize_bicubic", resize_to(I::bicubic)},
      {"resize_box", resize_to(I::box)},
      {"resize_hamming", resize_to(I::hamming)},
      {"resize_lanczos", resize_to(I::lanczos)},
      {"crop_inside", [](img::image_view s, img::image_buffer& d) { img::crop(s, {8, 8, s.height - 16, s.width - 16}, d); }},
      {"crop_outside", [](img::image_view s, img::image_buffer& d) { img::crop(s, {-8, -8, s.height, s.width}, d); }},
      {"hflip", [](img::image_view s, img::image_buffer& d) { img::hflip(s, d); }},
      {"vflip", [](img::image_view s, img::image_buffer& d) { img::vflip(s, d); }},
      {"pad4_constant", pad4(img::padding_mode::constant)},
      {"pad4_edge", pad4(img::padding_mode::edge)},
      {"pad4_reflect", pad4(img::padding_mode::reflect)},
      {"pad4_symmetric", pad4(img::padding_mode::symmetric)},
      {"affine_shear10_nearest",
       [](img::image_view s, img::image_buffer& d) {
         img::affine(s, img::inverse_affine_matrix(centre(s), 0.0, {0, 0}, 1.0, {10.0, 0.0}), s.size(), I::nearest,
                     {0, 0, 0}, d);
       }},
      {"affine_all_bilinear",
       [](img::image_view s, img::image_buffer& d) {
         img::affine(s, img::inverse_affine_matrix(centre(s), 25.0, {2, 1}, 1.3, {12.0, -7.5}), s.size(), I::bilinear,
                     {0, 0, 0}, d);
       }},
      {"translate10_bilinear",
       [](img::image_view s, img::image_buffer& d) {
         img::affine(s, img::inverse_affine_matrix(centre(s), 0.0, {10, 0}, 1.0, {0.0, 0.0}), s.size(), I::bilinear,
                     {0, 0, 0}, d);
       }},
      {"rotate17_nearest", rotate17(I::nearest, false)},
      {"rotate17_bilinear", rotate17(I::bilinear, false)},
      {"rotate17_bicubic", rotate17(I::bicubic, false)},
      {"rotate17_expand_bilinear", rotate17(I::bilinear, true)},
      {"rotate90", [](img::image_view s, img::image_buffer& d) {
         img::rotate(s, 90.0, I::nearest, true, std::nullopt, {0, 0, 0}, d);
       }},
  };
  for (const img::size2 size : {img::size2{224, 224}, img::size2{500, 375}}) {
    for (const auto& [name, op] : cases) {
      const std::string full =
          "geometry/" + name + "/" + std::to_string(size.width) + "x" + std::to_string(size.height);
      harness(benchmark::RegisterBenchmark(full.c_str(), run, size, op), benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
