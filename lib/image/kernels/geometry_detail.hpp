// Private to geometry.cpp, geometry_transform.cpp, affine.cpp and
// affine_avx2.cpp: argument checks, row sizes and pixel copies the geometry
// ops share, affine.cpp's kernels, and the AVX2 bilinear and bicubic affine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/image.hpp>

namespace ringfeed::image::geometry_detail {

[[noreturn]] inline void bad(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string(op) + ": " + why);
}

inline void check_source(const char* op, image_view src) {
  if (src.channels != 1 && src.channels != 3) bad(op, "images have 1 or 3 channels, got " + std::to_string(src.channels));
  if (src.width < 0 || src.height < 0) bad(op, "negative image size");
}

inline std::size_t row_bytes(int width, int channels) {
  return static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
}

template <int C>
void copy_pixel(const std::uint8_t* in, std::uint8_t* out) {
  std::memcpy(out, in, C);
}

// An RGB pixel moved as one 4-byte load and store, as Pillow moves its
// 4-byte pixels: the extra byte read must exist (not the buffer's last
// pixel) and the extra byte written must be rewritten later (a pixel to its
// right in the same pass). Callers guarantee both; C == 1 copies one byte.
template <int C>
void copy_pixel_wide(const std::uint8_t* in, std::uint8_t* out) {
  if constexpr (C == 3) {
    std::uint32_t v;
    std::memcpy(&v, in, 4);
    std::memcpy(out, &v, 4);
  } else {
    out[0] = in[0];
  }
}

/// The pixels of the affine map `a` (output pixel centre to source point)
/// from `src` into `dst`, which holds the fill where no source pixel lands:
/// Pillow's ImagingTransformAffine with nearest, bilinear or bicubic
/// (affine.cpp). 1 or 3 channels, `src` not empty.
void affine_pixels(image_view src, const std::array<double, 6>& a, interpolation interp, mutable_image_view dst);
/// resize's nearest path: Pillow's ImagingScaleAffine for the scale `a`,
/// pixels outside the source zeroed (affine.cpp).
void nearest_resize(image_view src, const std::array<double, 6>& a, mutable_image_view dst);

// Row y of Pillow's bilinear affine of an RGB image (affine.cpp's
// generic_affine) on AVX2, four output pixels at a time from x = 0 while
// x + 4 <= width, written to `out` (the row) where all four pixels' corners
// lie inside the image. Returns how many groups it left, their first x in
// `left` (room for width / 4), for the caller's portable loop, as are the
// last width % 4 pixels (affine_avx2.cpp). Call only where
// affine_filter_simd().
int bilinear_row_rgb_avx2(image_view src, const std::array<double, 6>& a, int y, std::uint8_t* out, int width,
                          int* left);
/// Copies the first pixels of a run of `n` RGB pixels of the nearest affine
/// (affine.cpp's affine_fixed), all inside `src`, whose 16.16
/// coordinates start at (xx, yy) and step by (a0, a3), eight at a time on
/// AVX2; returns how many it copied (it leaves at least two). Call only
/// where affine_filter_simd() and offsets within `src` fit an int32.
int nearest_run_rgb_avx2(image_view src, std::uint32_t xx, std::uint32_t yy, std::uint32_t a0, std::uint32_t a3,
                         int n, std::uint8_t* out);
/// The same for the bicubic affine, four pixels at a time where all their
/// 4 × 4 taps lie inside the image (eight on AVX-512, the same bytes).
int bicubic_row_rgb_avx2(image_view src, const std::array<double, 6>& a, int y, std::uint8_t* out, int width,
                         int* left);
/// (dx, dy) when the inverse matrix `a` maps every output pixel centre to
/// the source pixel centre (x + dx, y + dy) exactly, in Pillow's double
/// arithmetic: a = (1, ±0, dx; ±0, 1, dy) with integer shifts, as
/// torchvision's matrix for an integer translate with angle, shear 0 and
/// scale 1 is (the augment policies' TranslateX/Y, a magnitude-0 shear).
/// Bilinear and bicubic weights are then 0 and 1: the pixels themselves.
std::optional<std::array<int, 2>> integer_shift(const std::array<double, 6>& a) noexcept;
/// Test hook: false sends integer shifts through the filters too.
void set_affine_shift_path(bool enabled) noexcept;
/// Whether the CPU has AVX2 and the test hook allows the AVX2 path.
bool affine_filter_simd() noexcept;
/// Test hook: false keeps the bilinear, bicubic and nearest affine on their
/// portable loops.
void set_affine_filter_simd(bool enabled) noexcept;
/// Test hook: false keeps the bicubic affine on AVX2 where the CPU has AVX-512.
void set_affine_avx512(bool enabled) noexcept;

}  // namespace ringfeed::image::geometry_detail
