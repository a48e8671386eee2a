// gaussian_blur's two paths (ringfeed/image/color.hpp): the AVX2 path skips
// the kernel taps that cannot change a sum (zero weights; denormal weights
// once the sum has grown past 2^-93) to stay clear of the hardware's slow
// denormal assists. The colour goldens (image_color_tests) check the blur
// against torch on photos; here the AVX2 path must give the portable path's
// float sums, bit for bit, and so its bytes (every tap, in order) where
// the skipping matters most: small sigmas
// whose kernels hold denormal weights, on dark images whose sums stay tiny
// for many taps, on every remainder of the 64- and 8-float blocks, for RGB
// (oneDNN's fused order) and for L (slow_conv2d's rounded products).
#include <catch2/catch.hpp>

#include <ringfeed/image/color.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "image_test_data.hpp"
#include "simd_switch.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

enum class content { noise, dark, speck, black, white };

img::image_buffer picture(int w, int h, int channels, content c, std::mt19937& gen) {
  img::image_buffer b(w, h, channels);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = b.view().row(y);
    for (int i = 0; i < w * channels; ++i) {
      const std::uint32_t r = gen();
      switch (c) {
        case content::noise: row[i] = static_cast<std::uint8_t>(r & 0xFF); break;
        case content::dark: row[i] = (r % 50 == 0) ? static_cast<std::uint8_t>(1 + (r >> 8) % 3) : 0; break;
        case content::speck: row[i] = (y == h / 2 && i / channels == w / 2) ? 255 : 0; break;
        case content::black: row[i] = 0; break;
        case content::white: row[i] = 255; break;
      }
    }
  }
  return b;
}

// One blur's bytes and its float sums before rounding, as bit patterns (so
// that +0 and -0, or two NaNs, would not compare equal by value).
struct blurred {
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint32_t> sums;
};

blurred blur(const img::image_buffer& src, std::array<int, 2> k, std::array<double, 2> sigma, bool simd) {
  std::vector<float> sums;
  img::image_buffer dst;
  img::set_blur_sums(&sums);
  if (simd) {
    img::gaussian_blur(src.view(), k, sigma, dst);
  } else {
    const ringfeed::test::simd_off off(img::set_blur_simd);
    img::gaussian_blur(src.view(), k, sigma, dst);
  }
  img::set_blur_sums(nullptr);
  blurred b{data::packed(dst.view()), {}};
  for (const float f : sums) b.sums.push_back(std::bit_cast<std::uint32_t>(f));
  return b;
}

// Whether the 2-D kernel (ky[i] * kx[j], as the blur forms it) holds a
// denormal weight: the case the AVX2 path's skipping is about.
bool has_denormal_weight(std::array<int, 2> size, std::array<double, 2> sigma) {
  const std::vector<float> kx = img::gaussian_kernel1d(size[0], sigma[0]);
  const std::vector<float> ky = img::gaussian_kernel1d(size[1], sigma[1]);
  for (const float a : ky)
    for (const float b : kx)
      if (std::fpclassify(a * b) == FP_SUBNORMAL) return true;
  return false;
}

}  // namespace

TEST_CASE("the blur's AVX2 path gives the portable path's bytes", "[image][color]") {
  if (!ringfeed::test::cpu_has_avx2_fma()) {
    WARN("no AVX2 + FMA on this CPU: only the portable path exists here");
    return;
  }
  std::mt19937 gen(11);
  const std::vector<double> sigmas{0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9, 1.0, 1.2, 1.45, 2.0, 3.0};
  const std::vector<std::array<int, 2>> kernels{{23, 23}, {9, 9}, {3, 3}, {23, 5}, {1, 13}};
  // Widths × channels: below 8 floats, one 8-float block plus a tail, 64-
  // float blocks plus 8-float blocks plus a tail, and a 224-wide crop.
  const std::vector<img::size2> sizes{{7, 7}, {12, 23}, {67, 13}, {224, 12}};
  int compared = 0;
  int with_denormals = 0;
  for (const img::size2 size : sizes)
    for (const int channels : {3, 1})
      for (const content c : {content::noise, content::dark, content::speck, content::black, content::white}) {
        const img::image_buffer src = picture(size.width, size.height, channels, c, gen);
        for (const std::array<int, 2> k : kernels) {
          if (k[0] / 2 >= size.width || k[1] / 2 >= size.height) continue;
          const double sx = sigmas[gen() % sigmas.size()];
          const double sy = k[0] == k[1] ? sx : sigmas[gen() % sigmas.size()];
          const blurred fast = blur(src, k, {sx, sy}, true);
          const blurred portable = blur(src, k, {sx, sy}, false);
          INFO(size.width << "x" << size.height << "x" << channels << " content " << static_cast<int>(c)
                          << " kernel " << k[0] << "x" << k[1] << " sigma " << sx << ", " << sy);
          CHECK(fast.sums.size() == static_cast<std::size_t>(size.width * size.height * channels));
          CHECK(fast.sums == portable.sums);
          CHECK(fast.bytes == portable.bytes);
          ++compared;
          with_denormals += has_denormal_weight(k, {sx, sy}) ? 1 : 0;
        }
      }
  CHECK(compared > 100);
  CHECK(with_denormals > 30);  // the skipping is exercised
}

TEST_CASE("the blur's AVX2 path matches on every sigma of SimCLR's range", "[image][color]") {
  if (!ringfeed::test::cpu_has_avx2_fma()) {
    WARN("no AVX2 + FMA on this CPU: only the portable path exists here");
    return;
  }
  // torchvision's SimCLR recipe: GaussianBlur(23, sigma=(0.1, 2.0)). Two
  // images: a photo-like one with a black band, and a black one with two
  // white lines. Below the lines, some outputs sum only the kernel's far
  // rows, whose weights are tiny: their sums stay near 2^-100, where a
  // denormal tap still counts, and nothing larger comes after to hide a
  // tap wrongly skipped.
  std::mt19937 gen(5);
  img::image_buffer photo(48, 30, 3);
  img::image_buffer lines(70, 40, 3);
  for (int y = 0; y < photo.height(); ++y)
    for (int x = 0; x < photo.width() * 3; ++x)
      photo.view().row(y)[x] = x < 40 ? 0 : static_cast<std::uint8_t>((x * 7 + y * 13 + gen() % 9) & 0xFF);
  for (int y = 0; y < lines.height(); ++y)
    for (int x = 0; x < lines.width() * 3; ++x) lines.view().row(y)[x] = (y == 3 || y == 20) ? 255 : 0;
  for (const img::image_buffer* src : {&photo, &lines})
    for (double sigma = 0.1; sigma <= 2.0; sigma += 0.05) {
      const blurred fast = blur(*src, {23, 23}, {sigma, sigma}, true);
      const blurred portable = blur(*src, {23, 23}, {sigma, sigma}, false);
      INFO("image " << src->width() << "x" << src->height() << " sigma " << sigma);
      CHECK(fast.sums == portable.sums);
      CHECK(fast.bytes == portable.bytes);
    }
}
