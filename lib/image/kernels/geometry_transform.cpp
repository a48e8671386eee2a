// Resampling geometry ops: resize (Pillow's resampler, and its nearest
// path), affine and rotate: their argument checks, Image.rotate's matrix
// and quarter-turn transposes, and torchvision's _get_inverse_affine_matrix
// (v1's and v2's).
// The pixels are moved by affine.cpp's kernels (Pillow 9.4's
// libImaging/Geometry.c).
//
// The arithmetic is Pillow's, operation for operation, in doubles (this
// file is compiled with -ffp-contract=off: a fused multiply-add would round
// differently from Pillow's separate multiply and add).
#include <ringfeed/image/geometry.hpp>

#include "geometry_detail.hpp"
#include <ringfeed/image/resample.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringfeed::image {

namespace {

using geometry_detail::bad;
using geometry_detail::check_source;
using geometry_detail::copy_pixel;
using geometry_detail::copy_pixel_wide;
using geometry_detail::row_bytes;

// Paints the whole image `fill`: the first row by pixels, the others copied.
void fill_image(image_buffer& dst, fill_color fill) {
  const mutable_image_view o = dst.view();
  if (o.width == 0 || o.height == 0) return;
  const std::size_t n = row_bytes(o.width, o.channels);
  std::uint8_t* first = o.row(0);
  if (o.channels == 1) {
    std::memset(first, fill[0], n);
  } else {
    for (std::size_t i = 0; i < n; i += 3) std::memcpy(first + i, fill.data(), 3);
  }
  for (int y = 1; y < o.height; ++y) std::memcpy(o.row(y), first, n);
}

void checked_affine(const char* op, image_view src, const std::array<double, 6>& a, size2 out,
                    interpolation interp, fill_color fill, image_buffer& dst) {
  if (interp != interpolation::nearest && interp != interpolation::bilinear && interp != interpolation::bicubic)
    bad(op, "only nearest, bilinear and bicubic interpolation are supported (Pillow refuses box, hamming and lanczos)");
  if (out.width < 0 || out.height < 0) bad(op, "negative output size");
  for (const double v : a)
    if (!std::isfinite(v)) bad(op, "the matrix must be finite (an angle, scale or shear is NaN or infinite)");
  dst.reset(out.width, out.height, src.channels);
  fill_image(dst, fill);
  if (src.width == 0 || src.height == 0) return;
  geometry_detail::affine_pixels(src, a, interp, dst.view());
}

// Python's float % (the result takes the divisor's sign).
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}

// Python's round(x, 15): correctly rounded to 15 decimals (glibc's printf
// rounds exactly, as CPython's dtoa does), read back correctly rounded.
double round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

double radians(double deg) { return deg * (std::numbers::pi / 180.0); }

// Pillow's ROTATE_90 / ROTATE_180 / ROTATE_270 transposes. The quarter
// turns go in square tiles so that both images stay in cache.
template <int C>
void transpose(image_view src, int quarter_turns, image_buffer& dst) {
  const int w = src.width;
  const int h = src.height;
  if (quarter_turns == 2) {
    dst.reset(w, h, C);
    const mutable_image_view o = dst.view();
    for (int y = 0; y < h; ++y) {
      const std::uint8_t* in = src.row(y);
      std::uint8_t* out = o.row(h - 1 - y) + static_cast<std::ptrdiff_t>(w - 1) * C;
      for (int x = 0; x < w; ++x) copy_pixel<C>(in + x * C, out - x * C);
    }
    return;
  }
  dst.reset(h, w, C);
  const mutable_image_view o = dst.view();
  constexpr int tile = 32;
  // 90 (counter-clockwise): out[w-1-x][y] = in[y][x]; 270: out[x][h-1-y].
  // Pixels move as 4-byte words (copy_pixel_wide) except from the source's
  // last row (its extra byte may lie past the image) and into an output
  // row's last pixel. The extra byte written lands on the output pixel that
  // comes next along the row, written later: 90 walks y (= the output
  // column) upwards, 270 walks it downwards, tiles included.
  const bool ccw = quarter_turns == 1;
  const int tiles = (h + tile - 1) / tile;
  for (int t = 0; t < tiles; ++t) {
    const int y0 = (ccw ? t : tiles - 1 - t) * tile;
    const int y1 = std::min(h, y0 + tile);
    for (int x0 = 0; x0 < w; x0 += tile) {
      const int x1 = std::min(w, x0 + tile);
      for (int x = x0; x < x1; ++x) {
        if (ccw) {
          std::uint8_t* out = o.row(w - 1 - x);
          for (int y = y0; y < y1; ++y) {
            const std::uint8_t* in = src.row(y) + x * C;
            if (y < h - 1) copy_pixel_wide<C>(in, out + y * C);
            else copy_pixel<C>(in, out + y * C);
          }
        } else {
          std::uint8_t* out = o.row(x) + static_cast<std::ptrdiff_t>(h - 1) * C;
          for (int y = y1 - 1; y >= y0; --y) {
            const std::uint8_t* in = src.row(y) + x * C;
            if (y > 0 && y < h - 1) copy_pixel_wide<C>(in, out - y * C);
            else copy_pixel<C>(in, out - y * C);
          }
        }
      }
    }
  }
}

}  // namespace
void resize(image_view src, size2 out, interpolation interp, image_buffer& dst) {
  check_source("resize", src);
  if (out.width < 1 || out.height < 1)
    bad("resize", "height and width must be > 0, got " + std::to_string(out.width) + "x" + std::to_string(out.height));
  if (out == src.size()) return dst.assign(src);
  dst.reset(out.width, out.height, src.channels);
  if (src.width < 1 || src.height < 1) {
    // An empty crop (RandomResizedCrop's fallback can give a zero side):
    // Pillow's resample reads no source pixel, and each filter's sum is 0.
    std::memset(dst.data(), 0, dst.size_bytes());
    return;
  }
  if (interp == interpolation::nearest) {
    // Pillow's _resize: an AFFINE transform with a = (box w / out w, 0, 0,
    // 0, box h / out h, 0), box sides as C floats; fill=1 zeroes what it
    // does not copy.
    const std::array<double, 6> a{static_cast<double>(static_cast<float>(src.width)) / out.width, 0.0, 0.0,
                                  0.0, static_cast<double>(static_cast<float>(src.height)) / out.height, 0.0};
    geometry_detail::nearest_resize(src, a, dst.view());
    return;
  }
  resample_filter f = resample_filter::bilinear;
  switch (interp) {
    case interpolation::bilinear: f = resample_filter::bilinear; break;
    case interpolation::bicubic: f = resample_filter::bicubic; break;
    case interpolation::box: f = resample_filter::box; break;
    case interpolation::hamming: f = resample_filter::hamming; break;
    case interpolation::lanczos: f = resample_filter::lanczos; break;
    case interpolation::nearest: break;
  }
  thread_local resampler rs;
  rs.resize(src, dst.view(), f);
}

std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle,
                                            std::array<double, 2> translate, double scale,
                                            std::array<double, 2> shear) {
  if (!(scale > 0.0)) bad("affine", "scale should be positive, got " + std::to_string(scale));
  const double rot = radians(angle);
  const double sx = radians(shear[0]);
  const double sy = radians(shear[1]);
  const double cx = center[0];
  const double cy = center[1];
  const double tx = translate[0];
  const double ty = translate[1];
  // Rotation-scale-shear without the scale, as torchvision writes it.
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d, -b, 0.0, -c, a, 0.0};
  for (double& v : m) v = v / scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

std::array<double, 6> inverse_affine_matrix_v2(std::array<double, 2> center, double angle,
                                               std::array<double, 2> translate, double scale,
                                               std::array<double, 2> shear) {
  if (!(scale > 0.0)) bad("affine", "scale should be positive, got " + std::to_string(scale));
  const double rot = radians(angle);
  const double sx = radians(shear[0]);
  const double sy = radians(shear[1]);
  const double cx = center[0];
  const double cy = center[1];
  // v2's cached terms, in its order.
  const double cos_sy = std::cos(sy);
  const double tan_sx = std::tan(sx);
  const double rot_minus_sy = rot - sy;
  const double cx_plus_tx = cx + translate[0];
  const double cy_plus_ty = cy + translate[1];
  const double a = std::cos(rot_minus_sy) / cos_sy;
  const double b = -(a * tan_sx + std::sin(rot));
  const double c = std::sin(rot_minus_sy) / cos_sy;
  const double d = std::cos(rot) - c * tan_sx;
  std::array<double, 6> m{d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0};
  // matrix[2] += cx - matrix[0] * cx_plus_tx - matrix[1] * cy_plus_ty
  m[2] += cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
  m[5] += cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
  return m;
}

void affine(image_view src, const std::array<double, 6>& inverse_matrix, size2 out, interpolation interp,
            fill_color fill, image_buffer& dst) {
  check_source("affine", src);
  checked_affine("affine", src, inverse_matrix, out, interp, fill, dst);
}

void rotate(image_view src, double angle, interpolation interp, bool expand,
            std::optional<std::array<double, 2>> center, fill_color fill, image_buffer& dst) {
  check_source("rotate", src);
  if (interp != interpolation::nearest && interp != interpolation::bilinear && interp != interpolation::bicubic)
    bad("rotate", "only nearest, bilinear and bicubic interpolation are supported (Pillow refuses box, hamming and lanczos)");
  if (!std::isfinite(angle)) bad("rotate", "the angle must be finite");
  if (center && !(std::isfinite((*center)[0]) && std::isfinite((*center)[1])))
    bad("rotate", "the center must be finite");
  angle = py_mod(angle, 360.0);
  const int w = src.width;
  const int h = src.height;
  if (!center) {
    // Image.rotate's fast paths (filter and fill play no part).
    if (angle == 0) return dst.assign(src);
    int turns = 0;
    if (angle == 180) turns = 2;
    else if ((angle == 90 || angle == 270) && (expand || w == h)) turns = angle == 90 ? 1 : 3;
    if (turns != 0) return src.channels == 1 ? transpose<1>(src, turns, dst) : transpose<3>(src, turns, dst);
  }
  const std::array<double, 2> rc = center ? *center : std::array<double, 2>{w / 2.0, h / 2.0};
  const double r = -radians(angle);
  std::array<double, 6> m{round15(std::cos(r)), round15(std::sin(r)), 0.0, round15(-std::sin(r)), round15(std::cos(r)), 0.0};
  const auto apply = [&m](double x, double y) {
    return std::array<double, 2>{m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]};
  };
  // post_trans is (0, 0): -center - 0.
  const std::array<double, 2> t = apply(-rc[0] - 0, -rc[1] - 0);
  m[2] = t[0] + rc[0];
  m[5] = t[1] + rc[1];
  size2 out{w, h};
  if (expand) {
    double xmin = std::numeric_limits<double>::infinity();
    double xmax = -xmin;
    double ymin = xmin;
    double ymax = -xmin;
    const double corners[4][2] = {{0, 0}, {static_cast<double>(w), 0}, {static_cast<double>(w), static_cast<double>(h)},
                                  {0, static_cast<double>(h)}};
    for (const auto& p : corners) {
      const std::array<double, 2> q = apply(p[0], p[1]);
      xmin = std::min(xmin, q[0]);
      xmax = std::max(xmax, q[0]);
      ymin = std::min(ymin, q[1]);
      ymax = std::max(ymax, q[1]);
    }
    const double fw = std::ceil(xmax) - std::floor(xmin);
    const double fh = std::ceil(ymax) - std::floor(ymin);
    if (!(fw < 1 << 30) || !(fh < 1 << 30)) bad("rotate", "the expanded image would be too large");
    const int nw = static_cast<int>(fw);
    const int nh = static_cast<int>(fh);
    const std::array<double, 2> s = apply(-(nw - w) / 2.0, -(nh - h) / 2.0);
    m[2] = s[0];
    m[5] = s[1];
    out = {nw, nh};
  }
  checked_affine("rotate", src, m, out, interp, fill, dst);
}

}  // namespace ringfeed::image
