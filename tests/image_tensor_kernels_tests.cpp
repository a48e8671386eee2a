// torchvision's tensor kernels (ringfeed/image/tensor_kernels.hpp), the
// parts Python's AugMix parity tests cannot reach: the affine's portable
// path gives the same bytes as its AVX2+FMA path (which tests/python/
// test_augmix.py checks against torchvision) on every size, channel count,
// interpolation and fill; torch_sum's cascade against exact sums where any
// order is exact and against a sum whose order shows; and bad arguments.
#include <catch2/catch.hpp>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/tensor_kernels.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "simd_switch.hpp"

namespace img = ringfeed::image;
namespace tk = ringfeed::image::tensor;

namespace {

img::image_buffer noise(int w, int h, int channels, std::uint32_t seed) {
  img::image_buffer b(w, h, channels);
  std::mt19937 gen(seed);
  for (int y = 0; y < h; ++y)
    for (int i = 0; i < w * channels; ++i) b.view().row(y)[i] = static_cast<std::uint8_t>(gen() & 0xFF);
  return b;
}

std::vector<std::uint8_t> bytes_of(const img::image_buffer& b) {
  std::vector<std::uint8_t> out;
  for (int y = 0; y < b.height(); ++y)
    out.insert(out.end(), b.view().row(y), b.view().row(y) + b.width() * b.channels());
  return out;
}

}  // namespace

TEST_CASE("the affine's portable and AVX2 paths give the same bytes", "[image][tensor]") {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> shear(-17, 17), angle(-30, 30), shift(-12, 12);
  std::size_t compared = 0;
  for (const img::size2 size : {img::size2{1, 1}, img::size2{2, 3}, img::size2{9, 4}, img::size2{17, 31},
                                img::size2{64, 48}, img::size2{101, 7}}) {
    for (const int channels : {1, 3}) {
      const img::image_buffer src = noise(size.width, size.height, channels, static_cast<std::uint32_t>(compared));
      for (int k = 0; k < 6; ++k) {
        const std::array<double, 2> corner{-size.width * 0.5, -size.height * 0.5};
        const std::array<double, 6> m =
            k % 3 == 0   ? img::inverse_affine_matrix(corner, 0.0, {0, 0}, 1.0, {shear(gen), 0.0})
            : k % 3 == 1 ? img::inverse_affine_matrix({0, 0}, angle(gen), {0, 0}, 1.0, {0, 0})
                         : img::inverse_affine_matrix({0, 0}, 0.0, {std::trunc(shift(gen)), 0}, 1.0, {0, 0});
        for (const bool bilinear : {true, false})
          for (const std::vector<double>& fill : {std::vector<double>{}, std::vector<double>{77}}) {
            img::image_buffer fast, portable;
            tk::affine(src.view(), m, bilinear, fill, fast);
            {
              const ringfeed::test::simd_off off(tk::set_affine_simd);
              tk::affine(src.view(), m, bilinear, fill, portable);
            }
            INFO(size.width << "x" << size.height << "x" << channels << " case " << k << " bilinear " << bilinear);
            CHECK(bytes_of(fast) == bytes_of(portable));
            ++compared;
          }
      }
    }
  }
  CHECK(compared == 6 * 2 * 6 * 2 * 2);
}

TEST_CASE("an affine with nothing moved keeps the image", "[image][tensor]") {
  const img::image_buffer src = noise(40, 30, 3, 3);
  img::image_buffer out;
  tk::affine(src.view(), img::inverse_affine_matrix({0, 0}, 0.0, {0, 0}, 1.0, {0, 0}), true, {}, out);
  CHECK(bytes_of(out) == bytes_of(src));
}

TEST_CASE("torch_sum follows torch's cascade", "[image][tensor]") {
  // integers whose every partial sum stays below 2^24: exact in any order
  std::vector<float> small(100003);
  double exact = 0;
  for (std::size_t i = 0; i < small.size(); ++i) exact += small[i] = static_cast<float>(i % 100);
  CHECK(tk::torch_sum(small.data(), static_cast<std::int64_t>(small.size())) == static_cast<float>(exact));
  // 2^24 then ones: a running sum loses every 1 (2^24 + 1 rounds back to
  // 2^24), an exact one keeps all; torch's cascade loses the ones that
  // share the big value's accumulator before its level closes. The values
  // are torch 1.13's, one thread: torch.ones(n); t[0] = 2**24; t.sum().
  for (const auto& [n, kept] : {std::pair{4096, 4080.0f}, std::pair{200006, 199990.0f}}) {
    std::vector<float> skewed(static_cast<std::size_t>(n), 1.0f);
    skewed[0] = 16777216.0f;
    INFO(n);
    CHECK(tk::torch_sum(skewed.data(), n) == 16777216.0f + kept);
  }
  CHECK(tk::torch_sum(small.data(), 0) == 0.0f);
}

TEST_CASE("tensor kernels refuse what torchvision refuses", "[image][tensor]") {
  const img::image_buffer rgba = noise(4, 4, 4, 1);
  img::image_buffer out;
  CHECK_THROWS_AS(tk::adjust_contrast(rgba.view(), 1.5, out), std::invalid_argument);
  const img::image_buffer rgb = noise(4, 4, 3, 2);
  const std::vector<double> two{1, 2}, big{300};
  const auto m = img::inverse_affine_matrix({0, 0}, 10.0, {0, 0}, 1.0, {0, 0});
  CHECK_THROWS_AS(tk::affine(rgb.view(), m, true, two, out), std::invalid_argument);
  CHECK_THROWS_AS(tk::affine(rgb.view(), m, true, big, out), std::invalid_argument);
}
