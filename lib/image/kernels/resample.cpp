// Pillow 9.4's ImagingResample (src/libImaging/Resample.c), reproduced
// operation for operation where it decides the result: the filters, the
// coefficient computation in double (center, support, rounding of bounds,
// normalization by the sum), the conversion to PRECISION_BITS fixed point,
// the 1 << (PRECISION_BITS - 1) rounding bias, clip8, the horizontal pass into
// an 8-bit intermediate holding only the rows the vertical pass reads, and
// the skipping of a pass whose size and box are the identity.
//
// Free to differ (the sums are exact integers, so order does not matter):
// loop order and vectorization, and computing only an output window.
#include <ringfeed/image/resample.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/resample_detail.hpp"
#include "image/kernels/simd_clones.hpp"

namespace ringfeed::image {
namespace {

constexpr int precision_bits = 32 - 8 - 2;
constexpr std::int32_t rounding_bias = 1 << (precision_bits - 1);

// --- Pillow's filters ----------------------------------------------------------

double box_filter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // float constants, as Pillow
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos_filter(double x) {
  if (-3.0 <= x && x < 3.0) return sinc_filter(x) * sinc_filter(x / 3);
  return 0.0;
}

struct filter_def {
  double (*fn)(double);
  double support;
};

filter_def filter_of(resample_filter f) {
  switch (f) {
    case resample_filter::box: return {box_filter, 0.5};
    case resample_filter::bilinear: return {bilinear_filter, 1.0};
    case resample_filter::hamming: return {hamming_filter, 1.0};
    case resample_filter::bicubic: return {bicubic_filter, 2.0};
    case resample_filter::lanczos: return {lanczos_filter, 3.0};
  }
  throw std::invalid_argument("resample: unknown filter");
}

// --- one axis: bounds and coefficients (precompute_coeffs) --------------------

struct axis_geometry {
  int in_size;
  float in0;
  float in1;
  int out_size;
  double scale;
  double filterscale;
  double support;
  int ksize;

  axis_geometry(int in, float i0, float i1, int out, const filter_def& f)
      : in_size(in), in0(i0), in1(i1), out_size(out) {
    filterscale = scale = static_cast<double>(in1 - in0) / out_size;  // float difference, as Pillow
    if (filterscale < 1.0) filterscale = 1.0;
    support = f.support * filterscale;
    ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  }

  // Pillow's xmin and xmax - xmin for output pixel xx.
  void bounds(int xx, double& center, int& lo, int& len) const {
    center = in0 + (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    lo = xmin;
    len = xmax - xmin;
  }
};

/// Coefficients of output pixels [first, first + count) of one axis.
struct axis_plan {
  int first = 0;
  int count = 0;
  int ksize = 0;
  int read_lo = 0;  // input range the window reads
  int read_hi = 0;
  std::vector<std::int32_t> k;  // count × ksize, fixed point, zero-padded
  std::vector<int> lo;          // per output pixel
  std::vector<int> len;
  std::vector<double> weights;  // ksize scratch

  void compute(const axis_geometry& g, const filter_def& f, int first_out, int n) {
    first = first_out;
    count = n;
    ksize = g.ksize;
    const auto kn = static_cast<std::size_t>(n) * static_cast<std::size_t>(ksize);
    if (k.size() < kn) k.resize(kn);
    if (lo.size() < static_cast<std::size_t>(n)) {
      lo.resize(static_cast<std::size_t>(n));
      len.resize(static_cast<std::size_t>(n));
    }
    if (weights.size() < static_cast<std::size_t>(ksize)) weights.resize(static_cast<std::size_t>(ksize));
    const double ss = 1.0 / g.filterscale;
    read_lo = g.in_size;
    read_hi = 0;
    for (int i = 0; i < n; ++i) {
      const int xx = first_out + i;
      double center;
      int xmin;
      int xlen;
      g.bounds(xx, center, xmin, xlen);
      double ww = 0.0;
      for (int x = 0; x < xlen; ++x) {
        const double w = f.fn((x + xmin - center + 0.5) * ss);
        weights[static_cast<std::size_t>(x)] = w;
        ww += w;
      }
      std::int32_t* kk = k.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(ksize);
      for (int x = 0; x < xlen; ++x) {
        double w = weights[static_cast<std::size_t>(x)];
        if (ww != 0.0) w /= ww;
        // normalize_coeffs_8bpc
        kk[x] = w < 0 ? static_cast<std::int32_t>(-0.5 + w * (1 << precision_bits))
                      : static_cast<std::int32_t>(0.5 + w * (1 << precision_bits));
      }
      for (int x = std::max(xlen, 0); x < ksize; ++x) kk[x] = 0;
      lo[static_cast<std::size_t>(i)] = xmin;
      len[static_cast<std::size_t>(i)] = xlen;
      if (xlen > 0) {
        read_lo = std::min(read_lo, xmin);
        read_hi = std::max(read_hi, xmin + xlen);
      }
    }
    if (read_hi < read_lo) read_lo = read_hi = 0;
  }
};

inline std::uint8_t clip8(std::int32_t v) {
  v >>= precision_bits;  // arithmetic shift, as Pillow's table index
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// --- the two passes -------------------------------------------------------------
//
// Both passes are int32 multiply-adds (Pillow's precision needs 32 bits).
// x86-64's baseline (SSE2) has no packed 32-bit multiply, so the passes are
// also compiled for AVX2 and picked at load time (simd_clones.hpp); the
// integers are the same either way.
#define RINGFEED_RESAMPLE_CLONES RINGFEED_AVX2_CLONES

// Vertical: output rows from rows of `src` (row 0 = logical row src_top),
// each `bytes` wide. `acc` holds `bytes` accumulators.
RINGFEED_RESAMPLE_CLONES
void vertical_pass(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_top, int bytes,
                   const axis_plan& ay, std::uint8_t* dst, std::ptrdiff_t dst_stride, std::int32_t* acc) {
  const int ksize = ay.ksize;
  for (int i = 0; i < ay.count; ++i) {
    const std::int32_t* k = ay.k.data() + static_cast<std::ptrdiff_t>(i) * ksize;
    const int n = ay.len[static_cast<std::size_t>(i)];
    const std::uint8_t* first = src + static_cast<std::ptrdiff_t>(ay.lo[static_cast<std::size_t>(i)] - src_top) * src_stride;
    std::uint8_t* out = dst + i * dst_stride;
    int t = 0;
    if (n >= 2) {
      const std::uint8_t* r0 = first;
      const std::uint8_t* r1 = first + src_stride;
      const std::int32_t k0 = k[0];
      const std::int32_t k1 = k[1];
      for (int b = 0; b < bytes; ++b)
        acc[b] = rounding_bias + static_cast<std::int32_t>(r0[b]) * k0 + static_cast<std::int32_t>(r1[b]) * k1;
      t = 2;
    } else {
      for (int b = 0; b < bytes; ++b) acc[b] = rounding_bias;
    }
    for (; t + 1 < n; t += 2) {
      const std::uint8_t* r0 = first + t * src_stride;
      const std::uint8_t* r1 = r0 + src_stride;
      const std::int32_t k0 = k[t];
      const std::int32_t k1 = k[t + 1];
      for (int b = 0; b < bytes; ++b)
        acc[b] += static_cast<std::int32_t>(r0[b]) * k0 + static_cast<std::int32_t>(r1[b]) * k1;
    }
    if (t < n) {
      const std::uint8_t* r0 = first + t * src_stride;
      const std::int32_t k0 = k[t];
      for (int b = 0; b < bytes; ++b) acc[b] += static_cast<std::int32_t>(r0[b]) * k0;
    }
    for (int b = 0; b < bytes; ++b) out[b] = clip8(acc[b]);
  }
}

// Horizontal: rows of `src` (first pixel = logical column src_left) into
// `dst` rows of ax.count pixels. Pillow loops over output pixels and taps per
// row; here a block of `block_rows` rows is transposed into `tile` (source
// column-major, rows × channels contiguous per column, widened to int32), so
// every tap is one multiply-add over block_rows × C contiguous lanes, which
// the compiler vectorizes. The sums are the same integers as Pillow's.
template <int C>
[[gnu::always_inline]] inline void horizontal_tiled(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                      const axis_plan& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                      std::vector<std::int32_t>& tile) {
  constexpr int block_rows = 8;
  constexpr int lanes = block_rows * C;
  const int col0 = ax.read_lo;
  const int cols = ax.read_hi - ax.read_lo;
  const int ksize = ax.ksize;
  const auto tile_size = static_cast<std::size_t>(cols) * lanes;
  if (tile.size() < tile_size) tile.resize(tile_size);
  std::int32_t* const t = tile.data();
  for (int r0 = 0; r0 < rows; r0 += block_rows) {
    const int rb = std::min(block_rows, rows - r0);
    for (int r = 0; r < block_rows; ++r) {
      if (r < rb) {
        const std::uint8_t* p = src + (r0 + r) * src_stride + static_cast<std::ptrdiff_t>(col0 - src_left) * C;
        for (int x = 0; x < cols; ++x)
          for (int c = 0; c < C; ++c) t[x * lanes + r * C + c] = p[x * C + c];
      } else {
        for (int x = 0; x < cols; ++x)
          for (int c = 0; c < C; ++c) t[x * lanes + r * C + c] = 0;
      }
    }
    for (int i = 0; i < ax.count; ++i) {
      const std::int32_t* k = ax.k.data() + static_cast<std::ptrdiff_t>(i) * ksize;
      const int n = ax.len[static_cast<std::size_t>(i)];
      const std::int32_t* col = t + static_cast<std::ptrdiff_t>(ax.lo[static_cast<std::size_t>(i)] - col0) * lanes;
      std::int32_t acc[lanes];
      for (int j = 0; j < lanes; ++j) acc[j] = rounding_bias;
      for (int tap = 0; tap < n; ++tap) {
        const std::int32_t kt = k[tap];
        const std::int32_t* v = col + tap * lanes;
        for (int j = 0; j < lanes; ++j) acc[j] += v[j] * kt;
      }
      for (int r = 0; r < rb; ++r) {
        std::uint8_t* o = dst + (r0 + r) * dst_stride + i * C;
        for (int c = 0; c < C; ++c) o[c] = clip8(acc[r * C + c]);
      }
    }
  }
}

RINGFEED_RESAMPLE_CLONES
void horizontal_portable(int channels, const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                         const axis_plan& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                         std::vector<std::int32_t>& tile) {
  switch (channels) {
    case 1: horizontal_tiled<1>(src, src_stride, src_left, rows, ax, dst, dst_stride, tile); break;
    case 2: horizontal_tiled<2>(src, src_stride, src_left, rows, ax, dst, dst_stride, tile); break;
    case 3: horizontal_tiled<3>(src, src_stride, src_left, rows, ax, dst, dst_stride, tile); break;
    default: horizontal_tiled<4>(src, src_stride, src_left, rows, ax, dst, dst_stride, tile); break;
  }
}

// Scratch of the horizontal pass.
struct horizontal_scratch {
  std::vector<std::int32_t> tile;      // portable: transposed block of rows, widened
  std::vector<std::uint8_t> tile8;     // AVX2 RGB: the same in bytes
  std::vector<std::uint8_t> out_tile;  // AVX2 RGB: a block's clipped outputs
};

void horizontal_dispatch(int channels, const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                         const axis_plan& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride, horizontal_scratch& s) {
  if (channels == 3 && detail::resample_simd() && detail::cpu_has_avx2()) {
    const detail::horizontal_taps taps{ax.k.data(), ax.lo.data(), ax.len.data(), ax.count,
                                       ax.ksize,    ax.read_lo,   ax.read_hi};
    detail::horizontal_rgb_avx2(src, src_stride, src_left, rows, taps, dst, dst_stride, s.tile8, s.out_tile);
    return;
  }
  horizontal_portable(channels, src, src_stride, src_left, rows, ax, dst, dst_stride, s.tile);
}

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("resample: " + what); }

struct normalized_request {
  resample_box box;
  crop_box window;
  bool need_horizontal;
  bool need_vertical;
};

normalized_request normalize(const resample_request& rq) {
  if (rq.input.width < 1 || rq.input.height < 1) bad("empty input");
  if (rq.output.width < 1 || rq.output.height < 1) bad("height and width must be > 0");
  const resample_box box = rq.box.value_or(
      resample_box{0.0f, 0.0f, static_cast<float>(rq.input.width), static_cast<float>(rq.input.height)});
  // Pillow's _resize checks.
  if (box.x0 < 0 || box.y0 < 0) bad("box offset can't be negative");
  if (box.x1 > static_cast<float>(rq.input.width) || box.y1 > static_cast<float>(rq.input.height))
    bad("box can't exceed original image size");
  if (box.x1 - box.x0 < 0 || box.y1 - box.y0 < 0) bad("box can't be empty");
  const crop_box window = rq.window.empty() ? crop_box{0, 0, rq.output.height, rq.output.width} : rq.window;
  if (window.top < 0 || window.left < 0 || window.bottom() > rq.output.height || window.right() > rq.output.width)
    bad("window outside the output");
  // ImagingResampleInner: a pass whose size and box are the identity is skipped.
  const bool need_h = rq.output.width != rq.input.width || box.x0 != 0.0f ||
                      box.x1 != static_cast<float>(rq.output.width);
  const bool need_v = rq.output.height != rq.input.height || box.y0 != 0.0f ||
                      box.y1 != static_cast<float>(rq.output.height);
  return {box, window, need_h, need_v};
}

// The input pixels [lo, lo + len) that output pixels [first, first + count)
// of one axis read.
std::pair<int, int> source_span(int in_size, float in0, float in1, int out_size, const filter_def& f, int first,
                                int count) {
  const axis_geometry g(in_size, in0, in1, out_size, f);
  double center;
  int lo0, len0, lo1, len1;
  g.bounds(first, center, lo0, len0);
  g.bounds(first + count - 1, center, lo1, len1);
  return {lo0, std::max(lo0 + len0, lo1 + len1) - lo0};
}

}  // namespace

struct resampler::impl {
  axis_plan horizontal;
  axis_plan vertical;
  std::vector<std::uint8_t> temp;  // horizontal pass output
  std::vector<std::int32_t> acc;   // vertical accumulators
  horizontal_scratch scratch;      // horizontal pass
};

resampler::resampler() : m_impl(std::make_unique<impl>()) {}
resampler::~resampler() = default;
resampler::resampler(resampler&&) noexcept = default;
resampler& resampler::operator=(resampler&&) noexcept = default;

void resampler::resize(image_view src, mutable_image_view dst, resample_filter filter) {
  resample_request rq;
  rq.input = src.size();
  rq.output = dst.size();
  rq.filter = filter;
  resize(src, rq, dst);
}

crop_box resampler::source_region(const resample_request& rq) {
  const normalized_request n = normalize(rq);
  const filter_def f = filter_of(rq.filter);
  crop_box region{n.window.top, n.window.left, n.window.height, n.window.width};
  if (n.need_horizontal)
    std::tie(region.left, region.width) =
        source_span(rq.input.width, n.box.x0, n.box.x1, rq.output.width, f, n.window.left, n.window.width);
  if (n.need_vertical)
    std::tie(region.top, region.height) =
        source_span(rq.input.height, n.box.y0, n.box.y1, rq.output.height, f, n.window.top, n.window.height);
  return region;
}

void resampler::resize(image_view src, const resample_request& rq, mutable_image_view dst) {
  const normalized_request n = normalize(rq);
  const int channels = src.channels;
  if (channels < 1 || channels > 4 || dst.channels != channels) bad("src and dst need the same 1..4 channels");
  if (dst.width != n.window.width || dst.height != n.window.height) bad("dst is not the window's size");
  const filter_def f = filter_of(rq.filter);
  impl& s = *m_impl;

  // Rows and columns of the logical input read, and where src holds them.
  const auto check_holds = [&](int col_lo, int col_hi, int row_lo, int row_hi) {
    if (col_lo < rq.src_left || col_hi > rq.src_left + src.width || row_lo < rq.src_top ||
        row_hi > rq.src_top + src.height)
      bad("src lacks pixels the resize reads (columns " + std::to_string(col_lo) + ".." + std::to_string(col_hi) +
          ", rows " + std::to_string(row_lo) + ".." + std::to_string(row_hi) + ")");
  };
  const auto src_at = [&](int logical_col, int logical_row) {
    return src.row(logical_row - rq.src_top) + static_cast<std::ptrdiff_t>(logical_col - rq.src_left) * channels;
  };

  int row_lo = n.window.top;
  int row_hi = n.window.bottom();
  if (n.need_vertical) {
    s.vertical.compute(axis_geometry(rq.input.height, n.box.y0, n.box.y1, rq.output.height, f), f, n.window.top,
                       n.window.height);
    row_lo = s.vertical.read_lo;
    row_hi = s.vertical.read_hi;
  }
  const int out_bytes = n.window.width * channels;

  if (n.need_horizontal) {
    s.horizontal.compute(axis_geometry(rq.input.width, n.box.x0, n.box.x1, rq.output.width, f), f,
                         n.window.left, n.window.width);
    check_holds(s.horizontal.read_lo, s.horizontal.read_hi, row_lo, row_hi);
    const int rows = row_hi - row_lo;
    if (!n.need_vertical) {  // horizontal only: straight into dst
      horizontal_dispatch(channels, src_at(rq.src_left, row_lo), src.stride, rq.src_left, rows, s.horizontal,
                          dst.data, dst.stride, s.scratch);
      return;
    }
    const std::size_t temp_bytes = static_cast<std::size_t>(out_bytes) * static_cast<std::size_t>(rows);
    if (s.temp.size() < temp_bytes) s.temp.resize(temp_bytes);
    horizontal_dispatch(channels, src_at(rq.src_left, row_lo), src.stride, rq.src_left, rows, s.horizontal,
                        s.temp.data(), out_bytes, s.scratch);
    if (s.acc.size() < static_cast<std::size_t>(out_bytes)) s.acc.resize(static_cast<std::size_t>(out_bytes));
    vertical_pass(s.temp.data(), out_bytes, row_lo, out_bytes, s.vertical, dst.data, dst.stride, s.acc.data());
    return;
  }

  check_holds(n.window.left, n.window.right(), row_lo, row_hi);
  if (!n.need_vertical) {  // neither: a copy of the window
    for (int y = 0; y < n.window.height; ++y)
      std::memcpy(dst.row(y), src_at(n.window.left, n.window.top + y), static_cast<std::size_t>(out_bytes));
    return;
  }
  if (s.acc.size() < static_cast<std::size_t>(out_bytes)) s.acc.resize(static_cast<std::size_t>(out_bytes));
  vertical_pass(src_at(n.window.left, row_lo), src.stride, row_lo, out_bytes, s.vertical, dst.data, dst.stride,
                s.acc.data());
}

}  // namespace ringfeed::image
