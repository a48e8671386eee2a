// torch_resize: torch's interpolate on tiny inputs whose results torch
// 2.14.1 printed (F.interpolate(..., align_corners=False)); the photo-sized
// parity is test_tensor_geometry.py's.
#include <catch2/catch.hpp>

#include <ringfeed/image/torch_resize.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "image/kernels/resample_detail.hpp"
#include "simd_switch.hpp"

namespace img = ringfeed::image;
namespace tr = ringfeed::image::torch_resize;

namespace {

std::vector<int> bytes(const img::image_buffer& b) {
  return {b.data(), b.data() + static_cast<std::size_t>(b.width()) * b.height() * b.channels()};
}

// a 5x5 grey ramp 0, 10, ..., 240
img::image_buffer ramp() {
  img::image_buffer b(5, 5, 1);
  for (int k = 0; k < 25; ++k) b.data()[k] = static_cast<std::uint8_t>(10 * k);
  return b;
}

}  // namespace

TEST_CASE("uint8 bilinear without antialias folds the border taps", "[torch_resize]") {
  img::image_buffer src(2, 1, 1), dst;
  src.data()[0] = 0;
  src.data()[1] = 255;
  tr::resize_u8(src.view(), {4, 1}, tr::mode::bilinear, false, dst);
  CHECK(bytes(dst) == std::vector<int>{0, 64, 191, 255});
  tr::resize_u8(src.view(), {4, 1}, tr::mode::bicubic, false, dst);
  CHECK(bytes(dst) == std::vector<int>{0, 58, 197, 255});
}

TEST_CASE("uint8 antialiased bilinear and nearest on a ramp", "[torch_resize]") {
  const img::image_buffer src = ramp();
  img::image_buffer dst;
  tr::resize_u8(src.view(), {3, 2}, tr::mode::bilinear, true, dst);
  CHECK(bytes(dst) == std::vector<int>{54, 70, 86, 154, 170, 186});
  tr::resize_u8(src.view(), {2, 3}, tr::mode::nearest, false, dst);
  CHECK(bytes(dst) == std::vector<int>{0, 20, 50, 70, 150, 170});
}

TEST_CASE("float antialiased bicubic on a ramp", "[torch_resize]") {
  std::vector<float> src(25), dst;
  for (int k = 0; k < 25; ++k) src[static_cast<std::size_t>(k)] = static_cast<float>(10 * k);
  tr::resize_f32(src.data(), 1, 5, 5, {3, 2}, tr::mode::bicubic, true, dst);
  const std::vector<double> want{46.37735366821289, 62.838897705078125, 79.30042266845703,
                                 160.69955444335938, 177.16111755371094, 193.62265014648438};
  // the 1e-6 on values scaled to [0, 1] (torch's sums may be fused)
  REQUIRE(dst.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(std::fabs(dst[k] - want[k]) / 255 <= 1e-6);
}

TEST_CASE("a size that does not change is copied", "[torch_resize]") {
  const img::image_buffer src = ramp();
  img::image_buffer dst;
  for (const auto m : {tr::mode::nearest, tr::mode::bilinear, tr::mode::bicubic}) {
    tr::resize_u8(src.view(), {5, 5}, m, true, dst);
    CHECK(bytes(dst) == bytes(src));
  }
  CHECK_THROWS_AS(tr::resize_u8(src.view(), {0, 5}, tr::mode::bilinear, true, dst), std::invalid_argument);
}

TEST_CASE("uint8 resize: the AVX2 passes give the portable loops' bytes", "[torch_resize]") {
  // RGB rows take the resampler's AVX2 kernel with torch's int16 weights and
  // precision, and every vertical pass its AVX2 loop (pmaddwd, 16 bytes at a
  // time, the rest scalar); with SIMD off, the plain loops. Crops (a stride
  // wider than the row), odd sizes, up and down, both filters, with and
  // without antialias, RGB and L.
  std::mt19937 gen(5);
  img::image_buffer big(203, 61, 3), gray(203, 61, 1);
  for (int k = 0; k < 203 * 61 * 3; ++k) big.data()[k] = static_cast<std::uint8_t>(gen());
  for (int k = 0; k < 203 * 61; ++k) gray.data()[k] = static_cast<std::uint8_t>(gen());
  const img::image_view whole = big.view(), grey = gray.view();
  for (const img::image_view src : {whole, whole.crop({3, 7, 55, 181}), grey, grey.crop({2, 5, 50, 77})})
    for (const img::size2 out : {img::size2{224, 40}, img::size2{37, 13}, img::size2{181, 99}, img::size2{9, 55}})
      for (const auto m : {tr::mode::bilinear, tr::mode::bicubic})
        for (const bool antialias : {true, false}) {
          img::image_buffer simd, plain;
          tr::resize_u8(src, out, m, antialias, simd);
          {
            const ringfeed::test::simd_off off(img::detail::set_resample_simd);
            tr::resize_u8(src, out, m, antialias, plain);
          }
          INFO(src.width << "x" << src.height << " to " << out.width << "x" << out.height << " mode "
                         << static_cast<int>(m) << (antialias ? " antialias" : ""));
          CHECK(bytes(simd) == bytes(plain));
        }
}
