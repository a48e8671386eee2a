// The affine kernels of the geometry ops, following Pillow 9.4's
// libImaging/Geometry.c: ImagingScaleAffine, affine_fixed (nearest in 16.16
// fixed point), ImagingTransformAffine's double fallback, and the generic
// transform with its bilinear and bicubic filters (AVX2 rows in
// affine_avx2.cpp), plus the row copy of an integer shift. affine, rotate
// and resize's nearest path (geometry_transform.cpp) run them.
//
// The arithmetic is Pillow's, operation for operation, in doubles (this
// file is compiled with -ffp-contract=off: a fused multiply-add would round
// differently from Pillow's separate multiply and add).
#include "geometry_detail.hpp"

#include <ringfeed/image/geometry.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

namespace ringfeed::image {

namespace {

using geometry_detail::copy_pixel;
using geometry_detail::copy_pixel_wide;
using geometry_detail::row_bytes;

// Pillow's COORD: -1 below 0, else truncation. Values past int's range are
// out of any image (Pillow's conversion gives INT_MIN there, also outside).
int coord(double v) {
  if (v < 0.0) return -1;
  if (!(v < 2147483648.0)) return -1;
  return static_cast<int>(v);
}

// Pillow's FLOOR.
int floor_int(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

// ImagingScaleAffine: no rotation terms; source positions accumulate in
// doubles from the first pixel's centre. Pixels outside the source keep
// what dst holds (the caller's fill), or with `zero_outside` are zeroed
// here (resize's fill 0, without a pass over the pixels it then copies).
//
// The kernels take the matrix and the output view by value: locals the
// compiler knows no pixel store can alias, so nothing reloads per pixel.
template <int C>
void scale_affine(image_view src, const std::array<double, 6> a, mutable_image_view dst, bool zero_outside = false) {
  const int ow = dst.width;
  thread_local std::vector<int> xintab;
  xintab.assign(static_cast<std::size_t>(ow), 0);
  int* const tab = xintab.data();
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  int xmin = ow;
  int xmax = 0;
  for (int x = 0; x < ow; ++x) {
    const int xin = coord(xo);
    if (xin >= 0 && xin < src.width) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
      tab[x] = xin;
    }
    xo += a[0];
  }
  const std::size_t row_size = row_bytes(ow, C);
  for (int y = 0; y < dst.height; ++y) {
    const int yi = coord(yo);
    std::uint8_t* out = dst.row(y);
    if (zero_outside) {
      if (yi < 0 || yi >= src.height || xmax <= xmin) {
        std::memset(out, 0, row_size);
      } else {
        std::memset(out, 0, row_bytes(xmin, C));
        std::memset(out + xmax * C, 0, row_bytes(ow - xmax, C));
      }
    }
    if (yi >= 0 && yi < src.height) {
      const std::uint8_t* in = src.row(yi);
      // Rows above the source's last may over-read into the next row.
      if (yi + 1 < src.height && xmax > xmin) {
        for (int x = xmin; x < xmax - 1; ++x)
          copy_pixel_wide<C>(in + static_cast<std::ptrdiff_t>(tab[x]) * C, out + x * C);
        copy_pixel<C>(in + static_cast<std::ptrdiff_t>(tab[xmax - 1]) * C, out + (xmax - 1) * C);
      } else {
        for (int x = xmin; x < xmax; ++x) copy_pixel<C>(in + static_cast<std::ptrdiff_t>(tab[x]) * C, out + x * C);
      }
    }
    yo += a[4];
  }
}

bool check_fixed(const std::array<double, 6>& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// Whether the AVX2 affine rows may run on `src`: they read a few bytes
// past a row's end, the next row's or the stride's (and check the last
// row themselves), so rows must not overlap.
bool simd_rows(image_view src) {
  return geometry_detail::affine_filter_simd() && src.stride >= static_cast<std::ptrdiff_t>(src.width) * 3;
}

// 16.16 fixed point as Pillow's FIX.
std::int32_t fix(double v) { return floor_int(v * 65536.0 + 0.5); }

// affine_fixed: nearest neighbour in 16.16 fixed point, steps accumulated
// in integers (wrapping as Pillow's int arithmetic does on x86).
template <int C>
void affine_fixed(image_view src, const std::array<double, 6> a, mutable_image_view dst) {
  const std::uint32_t a0 = static_cast<std::uint32_t>(fix(a[0]));
  const std::uint32_t a1 = static_cast<std::uint32_t>(fix(a[1]));
  const std::uint32_t a3 = static_cast<std::uint32_t>(fix(a[3]));
  const std::uint32_t a4 = static_cast<std::uint32_t>(fix(a[4]));
  std::uint32_t a2 = static_cast<std::uint32_t>(fix(a[2] + a[0] * 0.5 + a[1] * 0.5));
  std::uint32_t a5 = static_cast<std::uint32_t>(fix(a[5] + a[3] * 0.5 + a[4] * 0.5));
  const int w = src.width;
  const int h = src.height;
  const auto inside = [w, h](std::uint32_t px, std::uint32_t py) {
    const int xin = static_cast<std::int32_t>(px) >> 16;
    const int yin = static_cast<std::int32_t>(py) >> 16;
    return xin >= 0 && xin < w && yin >= 0 && yin < h;
  };
  // The wide copy's extra byte must exist: not past the view's last pixel.
  const std::uint8_t* const last = src.row(h - 1) + static_cast<std::ptrdiff_t>(w - 1) * C;
  // Runs of RGB pixels eight at a time on AVX2 where every byte offset in
  // the view fits an int32.
  const bool simd = C == 3 && simd_rows(src) && static_cast<double>(src.stride) * h < 2147483647.0;
  for (int y = 0; y < dst.height; ++y) {
    // check_fixed keeps every coordinate within ±32768 << 16: no step wraps,
    // so along a row the coordinates are linear and the pixels inside the
    // source form one run [x, end). Find its ends, then copy it unchecked.
    std::uint32_t xx = a2;
    std::uint32_t yy = a5;
    int x = 0;
    while (x < dst.width && !inside(xx, yy)) {
      xx += a0;
      yy += a3;
      ++x;
    }
    int end = dst.width;
    while (end > x && !inside(a2 + a0 * static_cast<std::uint32_t>(end - 1),
                              a5 + a3 * static_cast<std::uint32_t>(end - 1)))
      --end;
    std::uint8_t* out = dst.row(y);
    if constexpr (C == 3)
      if (simd && end - x >= 10) {
        const int done = geometry_detail::nearest_run_rgb_avx2(src, xx, yy, a0, a3, end - x, out + x * C);
        xx += a0 * static_cast<std::uint32_t>(done);
        yy += a3 * static_cast<std::uint32_t>(done);
        x += done;
      }
    for (; x < end; ++x) {
      const std::uint8_t* in =
          src.row(static_cast<std::int32_t>(yy) >> 16) + static_cast<std::ptrdiff_t>(static_cast<std::int32_t>(xx) >> 16) * C;
      if (x + 1 < end && in != last)
        copy_pixel_wide<C>(in, out + x * C);  // its extra byte: the next pixel's, written next
      else
        copy_pixel<C>(in, out + x * C);
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

// ImagingTransformAffine's double fallback (coordinates past ±32768).
template <int C>
void affine_float(image_view src, const std::array<double, 6> a, mutable_image_view dst) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < dst.height; ++y) {
    double xx = xo;
    double yy = yo;
    std::uint8_t* out = dst.row(y);
    for (int x = 0; x < dst.width; ++x) {
      const int xin = coord(xx);
      if (xin >= 0 && xin < src.width) {
        const int yin = coord(yy);
        if (yin >= 0 && yin < src.height)
          copy_pixel<C>(src.row(yin) + static_cast<std::ptrdiff_t>(xin) * C, out + x * C);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// Pillow's bilinear_filter8 / bilinear_filter32RGB at source point (xin,
// yin), already known to lie inside the image.
template <int C>
void bilinear_at(image_view src, double xin, double yin, std::uint8_t* out) {
  xin -= 0.5;
  yin -= 0.5;
  const int x = floor_int(xin);
  const int y = floor_int(yin);
  const double dx = xin - x;
  const double dy = yin - y;
  const int w = src.width;
  const int h = src.height;
  const std::ptrdiff_t x0 = static_cast<std::ptrdiff_t>(std::clamp(x, 0, w - 1)) * C;
  const std::ptrdiff_t x1 = static_cast<std::ptrdiff_t>(std::clamp(x + 1, 0, w - 1)) * C;
  const std::uint8_t* r0 = src.row(std::clamp(y, 0, h - 1));
  const bool has_r1 = y + 1 >= 0 && y + 1 < h;
  const std::uint8_t* r1 = has_r1 ? src.row(y + 1) : r0;
  for (int c = 0; c < C; ++c) {
    double v1 = r0[x0 + c] + (r0[x1 + c] - r0[x0 + c]) * dx;
    double v2 = v1;
    if (has_r1) v2 = r1[x0 + c] + (r1[x1 + c] - r1[x0 + c]) * dx;
    v1 = v1 + (v2 - v1) * dy;
    out[c] = static_cast<std::uint8_t>(static_cast<int>(v1));
  }
}

// Pillow's BICUBIC macro (a = -0.5 cubic convolution), in its order.
inline double cubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

// The first (horizontal) stage on four 8-bit samples: Pillow computes p2..p4
// from integers; those sums are exact, so forming them in int and converting
// once gives the same doubles with fewer conversions.
inline double cubic_u8(const std::uint8_t* r, std::ptrdiff_t step, double d) {
  const int v1 = r[0];
  const int v2 = r[step];
  const int v3 = r[2 * step];
  const int v4 = r[3 * step];
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return v2 + d * (p2 + d * (p3 + d * p4));
}

// Pillow's bicubic_filter8 / bicubic_filter32RGB: columns clamped, rows
// below the image repeat the previous row's value, result clipped.
template <int C>
void bicubic_at(image_view src, double xin, double yin, std::uint8_t* out) {
  xin -= 0.5;
  yin -= 0.5;
  int x = floor_int(xin);
  int y = floor_int(yin);
  const double dx = xin - x;
  const double dy = yin - y;
  --x;
  --y;
  const int w = src.width;
  const int h = src.height;
  const auto clip = [](double r) -> std::uint8_t {
    return r <= 0.0 ? 0 : r >= 255.0 ? 255 : static_cast<std::uint8_t>(static_cast<int>(r));
  };
  if (x >= 0 && x + 3 < w && y >= 0 && y + 3 < h) {
    // Inside: no clamping, every row present (the same arithmetic as below).
    const std::uint8_t* r0 = src.row(y) + static_cast<std::ptrdiff_t>(x) * C;
    const std::ptrdiff_t s = src.stride;
    for (int c = 0; c < C; ++c) {
      double v[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = cubic_u8(r0 + k * s + c, C, dx);
      }
      out[c] = clip(cubic(v[0], v[1], v[2], v[3], dy));
    }
    return;
  }
  std::ptrdiff_t xs[4];
  for (int k = 0; k < 4; ++k) xs[k] = static_cast<std::ptrdiff_t>(std::clamp(x + k, 0, w - 1)) * C;
  const std::uint8_t* rows[4];
  bool has[4];
  rows[0] = src.row(std::clamp(y, 0, h - 1));
  has[0] = true;
  for (int k = 1; k < 4; ++k) {
    has[k] = y + k >= 0 && y + k < h;
    rows[k] = has[k] ? src.row(y + k) : rows[0];
  }
  for (int c = 0; c < C; ++c) {
    double v[4];
    for (int k = 0; k < 4; ++k) {
      if (has[k]) {
        const std::uint8_t* r = rows[k] + c;
        v[k] = cubic(r[xs[0]], r[xs[1]], r[xs[2]], r[xs[3]], dx);
      } else {
        v[k] = v[k - 1];
      }
    }
    out[c] = clip(cubic(v[0], v[1], v[2], v[3], dy));
  }
}

// One output pixel of ImagingGenericTransform with affine_transform: its
// centre mapped through the matrix (no accumulation), then the filter; a
// point outside [0, w) × [0, h) keeps the fill.
template <int C, bool Bicubic>
[[gnu::always_inline]] inline void generic_pixel(image_view src, const std::array<double, 6>& a, int x, double yin,
                                                 std::uint8_t* out) {
  const double xin = x + 0.5;
  const double xx = a[0] * xin + a[1] * yin + a[2];
  const double yy = a[3] * xin + a[4] * yin + a[5];
  if (xx < 0.0 || xx >= src.width || yy < 0.0 || yy >= src.height) return;
  if constexpr (Bicubic)
    bicubic_at<C>(src, xx, yy, out + x * C);
  else
    bilinear_at<C>(src, xx, yy, out + x * C);
}

// ImagingGenericTransform with affine_transform, pixel by pixel.
template <int C, bool Bicubic>
void generic_affine(image_view src, const std::array<double, 6> a, mutable_image_view dst) {
  for (int y = 0; y < dst.height; ++y) {
    std::uint8_t* out = dst.row(y);
    const double yin = y + 0.5;
    for (int x = 0; x < dst.width; ++x) generic_pixel<C, Bicubic>(src, a, x, yin, out);
  }
}

// The same, four pixels at a time on AVX2 where all their taps are inside
// the image (geometry_detail's bilinear / bicubic_row_rgb_avx2: the same
// bytes); the groups it leaves and the last width % 4 pixels go pixel by
// pixel.
template <bool Bicubic>
void affine_rgb_simd(image_view src, const std::array<double, 6> a, mutable_image_view dst) {
  thread_local std::vector<int> left;
  left.resize(static_cast<std::size_t>(dst.width / 4) + 1);
  for (int y = 0; y < dst.height; ++y) {
    std::uint8_t* out = dst.row(y);
    const double yin = y + 0.5;
    const int n = Bicubic ? geometry_detail::bicubic_row_rgb_avx2(src, a, y, out, dst.width, left.data())
                          : geometry_detail::bilinear_row_rgb_avx2(src, a, y, out, dst.width, left.data());
    for (int i = 0; i < n; ++i)
      for (int x = left[static_cast<std::size_t>(i)]; x < left[static_cast<std::size_t>(i)] + 4; ++x)
        generic_pixel<3, Bicubic>(src, a, x, yin, out);
    for (int x = dst.width & ~3; x < dst.width; ++x) generic_pixel<3, Bicubic>(src, a, x, yin, out);
  }
}

std::atomic<bool> shift_path{true};

// An integer shift (geometry_detail::integer_shift): the filters would read
// each pixel with weights 1 and 0 and give it back, so rows are copied. The
// inside test is generic_pixel's: 0 <= x + dx + 0.5 < width, that is
// 0 <= x + dx < width for integers; other pixels keep the fill.
template <int C>
void shift_copy(image_view src, std::array<int, 2> d, mutable_image_view dst) {
  const long x_begin = std::max(0L, -static_cast<long>(d[0]));
  const long x_end = std::min(static_cast<long>(dst.width), static_cast<long>(src.width) - d[0]);
  if (x_begin >= x_end) return;
  const std::size_t n = row_bytes(static_cast<int>(x_end - x_begin), C);
  for (int y = 0; y < dst.height; ++y) {
    const long sy = static_cast<long>(y) + d[1];
    if (sy < 0 || sy >= src.height) continue;
    std::memcpy(dst.row(y) + x_begin * C, src.row(static_cast<int>(sy)) + (x_begin + d[0]) * C, n);
  }
}

template <int C>
void transform_affine(image_view src, const std::array<double, 6> a, interpolation interp, mutable_image_view dst) {
  if (interp != interpolation::nearest && shift_path.load(std::memory_order_relaxed))
    if (const auto d = geometry_detail::integer_shift(a)) return shift_copy<C>(src, *d, dst);
  const bool simd = C == 3 && simd_rows(src);
  if (interp == interpolation::bilinear)
    return simd ? affine_rgb_simd<false>(src, a, dst) : generic_affine<C, false>(src, a, dst);
  if (interp == interpolation::bicubic)
    return simd ? affine_rgb_simd<true>(src, a, dst) : generic_affine<C, true>(src, a, dst);
  if (a[1] == 0 && a[3] == 0) return scale_affine<C>(src, a, dst);
  const int ow = dst.width;
  const int oh = dst.height;
  if (check_fixed(a, 0, 0) && check_fixed(a, ow, oh) && check_fixed(a, 0, oh) && check_fixed(a, ow, 0))
    return affine_fixed<C>(src, a, dst);
  affine_float<C>(src, a, dst);
}

}  // namespace

namespace geometry_detail {

std::optional<std::array<int, 2>> integer_shift(const std::array<double, 6>& a) noexcept {
  // x + 0.5 (exact) times 1, plus ±0 times y + 0.5, plus an integer: exact
  // for shifts this small, and the filters' x − 0.5 is then an integer.
  constexpr double limit = 1 << 30;
  const auto integral = [](double v) { return std::fabs(v) < limit && std::trunc(v) == v; };
  if (a[0] != 1.0 || a[1] != 0.0 || a[3] != 0.0 || a[4] != 1.0 || !integral(a[2]) || !integral(a[5]))
    return std::nullopt;
  return std::array<int, 2>{static_cast<int>(a[2]), static_cast<int>(a[5])};
}

void set_affine_shift_path(bool enabled) noexcept { shift_path.store(enabled, std::memory_order_relaxed); }

void affine_pixels(image_view src, const std::array<double, 6>& a, interpolation interp, mutable_image_view dst) {
  if (src.channels == 1)
    transform_affine<1>(src, a, interp, dst);
  else
    transform_affine<3>(src, a, interp, dst);
}

void nearest_resize(image_view src, const std::array<double, 6>& a, mutable_image_view dst) {
  if (src.channels == 1)
    scale_affine<1>(src, a, dst, true);
  else
    scale_affine<3>(src, a, dst, true);
}

}  // namespace geometry_detail

}  // namespace ringfeed::image
