// Pillow 9.4's ImagingResample (src/libImaging/Resample.c), the passes,
// reproduced operation for operation where they decide the result: the
// 1 << (PRECISION_BITS - 1) rounding bias, clip8, the horizontal pass into an
// 8-bit intermediate holding only the rows the vertical pass reads. What
// they run (the passes, bounds and fixed-point coefficients) comes from
// plan_resample (resample_plan.cpp), as the device resize's does.
//
// Free to differ (the sums are exact integers, so order does not matter):
// loop order and vectorization, and computing only an output window.
#include <ringfeed/image/resample.hpp>
#include <ringfeed/image/resample_plan.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/resample_detail.hpp"
#include "image/kernels/simd_clones.hpp"

namespace ringfeed::image {
namespace {

constexpr int precision_bits = resample_precision_bits;
constexpr std::int32_t rounding_bias = resample_rounding_bias;

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
                   const resample_axis& ay, std::uint8_t* dst, std::ptrdiff_t dst_stride, std::int32_t* acc) {
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
                      const resample_axis& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride,
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
                         const resample_axis& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride,
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
                         const resample_axis& ax, std::uint8_t* dst, std::ptrdiff_t dst_stride, horizontal_scratch& s) {
  if (channels == 3 && detail::resample_simd() && detail::cpu_has_avx2()) {
    const detail::horizontal_taps taps{ax.k.data(), ax.lo.data(), ax.len.data(), ax.count,
                                       ax.ksize,    ax.read_lo,   ax.read_hi};
    detail::horizontal_rgb_simd(src, src_stride, src_left, rows, taps, dst, dst_stride, s.tile8, s.out_tile);
    return;
  }
  horizontal_portable(channels, src, src_stride, src_left, rows, ax, dst, dst_stride, s.tile);
}

// The vertical pass: AVX2 where the rows are at least 16 bytes wide.
void vertical_dispatch(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_top, int bytes,
                       const resample_axis& ay, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                       std::vector<std::int32_t>& acc) {
  if (bytes >= 16 && detail::resample_simd() && detail::cpu_has_avx2()) {
    const detail::vertical_taps taps{ay.k.data(), ay.lo.data(), ay.len.data(), ay.count, ay.ksize};
    detail::vertical_avx2(src, src_stride, src_top, bytes, taps, dst, dst_stride, acc);
    return;
  }
  if (acc.size() < static_cast<std::size_t>(bytes)) acc.resize(static_cast<std::size_t>(bytes));
  vertical_pass(src, src_stride, src_top, bytes, ay, dst, dst_stride, acc.data());
}

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("resample: " + what); }

}  // namespace

struct resampler::impl {
  resample_plan plan;
  std::vector<std::uint8_t> temp;  // horizontal pass output
  std::vector<std::int32_t> acc;   // vertical: the portable pass's accumulators, AVX2's weight pairs
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

void resampler::resize(image_view src, const resample_request& rq, mutable_image_view dst) {
  impl& s = *m_impl;
  resample_plan& p = s.plan;
  plan_resample(rq, p);
  const int channels = src.channels;
  if (channels < 1 || channels > 4 || dst.channels != channels) bad("src and dst need the same 1..4 channels");
  if (dst.width != p.window.width || dst.height != p.window.height) bad("dst is not the window's size");

  // Rows and columns of the logical input read, and where src holds them.
  const crop_box reads = planned_reads(p);
  if (reads.left < rq.src_left || reads.right() > rq.src_left + src.width || reads.top < rq.src_top ||
      reads.bottom() > rq.src_top + src.height)
    bad("src lacks pixels the resize reads (columns " + std::to_string(reads.left) + ".." +
        std::to_string(reads.right()) + ", rows " + std::to_string(reads.top) + ".." + std::to_string(reads.bottom()) +
        ")");
  const auto src_at = [&](int logical_col, int logical_row) {
    return src.row(logical_row - rq.src_top) + static_cast<std::ptrdiff_t>(logical_col - rq.src_left) * channels;
  };
  const int row_lo = reads.top;
  const int rows = reads.height;
  const int out_bytes = p.window.width * channels;

  if (p.need_horizontal) {
    if (!p.need_vertical) {  // horizontal only: straight into dst
      horizontal_dispatch(channels, src_at(rq.src_left, row_lo), src.stride, rq.src_left, rows, p.horizontal,
                          dst.data, dst.stride, s.scratch);
      return;
    }
    const std::size_t temp_bytes = static_cast<std::size_t>(out_bytes) * static_cast<std::size_t>(rows);
    if (s.temp.size() < temp_bytes) s.temp.resize(temp_bytes);
    horizontal_dispatch(channels, src_at(rq.src_left, row_lo), src.stride, rq.src_left, rows, p.horizontal,
                        s.temp.data(), out_bytes, s.scratch);
    vertical_dispatch(s.temp.data(), out_bytes, row_lo, out_bytes, p.vertical, dst.data, dst.stride, s.acc);
    return;
  }

  if (!p.need_vertical) {  // neither: a copy of the window
    for (int y = 0; y < p.window.height; ++y)
      std::memcpy(dst.row(y), src_at(p.window.left, p.window.top + y), static_cast<std::size_t>(out_bytes));
    return;
  }
  vertical_dispatch(src_at(p.window.left, row_lo), src.stride, row_lo, out_bytes, p.vertical, dst.data, dst.stride,
                    s.acc);
}

}  // namespace ringfeed::image
