// The horizontal resample pass for RGB rows, written for AVX2.
//
// The portable pass (resample.cpp) leaves vectorization to the compiler,
// which for three channels interleaved spends most of its instructions
// rearranging bytes and clipping lane by lane. Here a block of 8 rows is
// transposed into a byte tile, source column-major (8 rows × 3 channels = 24
// bytes per column), so one tap of one output pixel is three widening
// multiply-adds on 8 lanes each; the three accumulators are shifted, clipped
// by saturating packs and stored as 24 bytes in the same order, and moved to
// their rows at the end of the block. The integers are Pillow's: same
// coefficients, same rounding bias, same shift and clip, and the sums are
// exact, so the order of the additions does not matter.
//
// Only this function is compiled for AVX2 (a target attribute, not a flag
// for the file), and only called where the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "image/kernels/resample_detail.hpp"

namespace ringfeed::image::detail {

namespace {

constexpr int block_rows = 8;
constexpr int lanes = block_rows * 3;

// Moves `n` RGB pixels from `from` (pixel stride `from_step`) to `to` (pixel
// stride `to_step`), all but the last as one 4-byte load and store: the
// spare byte is read from the next pixel (which exists) and written where
// the caller writes again afterwards.
inline void move_rgb(std::uint8_t* to, std::ptrdiff_t to_step, const std::uint8_t* from, std::ptrdiff_t from_step,
                     int n) {
  for (int i = 0; i + 1 < n; ++i, to += to_step, from += from_step) std::memcpy(to, from, 4);
  if (n > 0) std::memcpy(to, from, 3);
}

// 4x4 transposes of the dwords of a0..a3 and of b0..b3 (rows 0-3 and 4-7 of
// four pixels each), in place: afterwards a[k], b[k] hold pixel k's rows.
__attribute__((target("avx2"))) inline void transpose4x4(__m128i& a0, __m128i& a1, __m128i& a2, __m128i& a3) {
  const __m128i t0 = _mm_unpacklo_epi32(a0, a1);
  const __m128i t1 = _mm_unpacklo_epi32(a2, a3);
  const __m128i t2 = _mm_unpackhi_epi32(a0, a1);
  const __m128i t3 = _mm_unpackhi_epi32(a2, a3);
  a0 = _mm_unpacklo_epi64(t0, t1);
  a1 = _mm_unpackhi_epi64(t0, t1);
  a2 = _mm_unpacklo_epi64(t2, t3);
  a3 = _mm_unpackhi_epi64(t2, t3);
}

// Byte shuffles between 4 packed RGB pixels (12 bytes) and 4 dwords.
__attribute__((target("avx2"))) inline __m128i rgb_to_dwords() {
  return _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
}
__attribute__((target("avx2"))) inline __m128i dwords_to_rgb() {
  return _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
}

// Transposes 8 full rows x columns [x, x + 4) into the tile (4 columns of
// 24 bytes). Reads 16 bytes per row from column x: the caller keeps x + 6
// <= the columns the rows hold. Writes 4 spare bytes after the 4th column.
__attribute__((target("avx2"))) inline void tile_in_4(const std::uint8_t* const* row, int x, std::uint8_t* col) {
  const __m128i expand = rgb_to_dwords();
  const __m128i pack = dwords_to_rgb();
  __m128i a[8];
  for (int r = 0; r < 8; ++r)
    a[r] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[r] + x * 3)), expand);
  transpose4x4(a[0], a[1], a[2], a[3]);
  transpose4x4(a[4], a[5], a[6], a[7]);
  for (int k = 0; k < 4; ++k, col += lanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(col), _mm_shuffle_epi8(a[k], pack));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(col + 12), _mm_shuffle_epi8(a[4 + k], pack));
  }
}

// The inverse for 4 output pixels: out holds them pixel-major (24 bytes
// each); writes 12 bytes exactly to each of the rb rows at pixel i.
__attribute__((target("avx2"))) inline void tile_out_4(const std::uint8_t* out, std::uint8_t* const* row, int i,
                                                       int rb) {
  const __m128i expand = rgb_to_dwords();
  const __m128i pack = dwords_to_rgb();
  __m128i a[8];
  for (int k = 0; k < 4; ++k) {
    const std::uint8_t* px = out + k * lanes;
    a[k] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(px)), expand);
    a[4 + k] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(px + 12)), expand);
  }
  transpose4x4(a[0], a[1], a[2], a[3]);
  transpose4x4(a[4], a[5], a[6], a[7]);
  for (int r = 0; r < rb; ++r) {
    const __m128i v = _mm_shuffle_epi8(a[r], pack);
    std::uint8_t* to = row[r] + i * 3;
    _mm_storel_epi64(reinterpret_cast<__m128i*>(to), v);
    const int last = _mm_extract_epi32(v, 2);
    std::memcpy(to + 8, &last, 4);
  }
}

}  // namespace

namespace {
std::atomic<bool> simd_enabled{true};
}  // namespace

void set_resample_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }
bool resample_simd() noexcept { return simd_enabled.load(std::memory_order_relaxed); }

#if defined(__x86_64__) && defined(__GNUC__)

__attribute__((target("avx2"))) void horizontal_rgb_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride,
                                                         int src_left, int rows, const horizontal_taps& taps,
                                                         std::uint8_t* dst, std::ptrdiff_t dst_stride,
                                                         std::vector<std::uint8_t>& tile,
                                                         std::vector<std::uint8_t>& out_tile) {
  const int cols = taps.read_hi - taps.read_lo;
  // The tile's loads and stores stay within its columns (tile_in_4's spare
  // bytes land in the next column, which exists). out_tile: + 8 for the last
  // pixel's 32-byte store and tile_out_4's 16-byte loads at +12.
  const std::size_t tile_size = static_cast<std::size_t>(cols) * lanes;
  if (tile.size() < tile_size) tile.resize(tile_size);
  const std::size_t out_size = static_cast<std::size_t>(taps.count) * lanes + 8;
  if (out_tile.size() < out_size) out_tile.resize(out_size);
  std::uint8_t* const t = tile.data();
  std::uint8_t* const out = out_tile.data();
  const std::uint8_t* const first_col = src + static_cast<std::ptrdiff_t>(taps.read_lo - src_left) * 3;
  const __m256i bias = _mm256_set1_epi32(1 << (taps.precision - 1));
  const __m128i shift = _mm_cvtsi32_si128(taps.precision);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

  for (int r0 = 0; r0 < rows; r0 += block_rows) {
    const int rb = std::min(block_rows, rows - r0);
    // Transpose: 4 columns at a time with shuffles where all 8 rows exist
    // and 16-byte loads stay inside them, the rest pixel by pixel. Rows in
    // ascending order, so a row's spare bytes (its next row's lane) are
    // overwritten by that row; the last row of the block moves exactly 3
    // bytes, its spare being the next column's first lane.
    int done = 0;
    if (rb == block_rows) {
      const std::uint8_t* row[block_rows];
      for (int r = 0; r < block_rows; ++r) row[r] = first_col + static_cast<std::ptrdiff_t>(r0 + r) * src_stride;
      for (; done + 6 <= cols; done += 4) tile_in_4(row, done, t + static_cast<std::ptrdiff_t>(done) * lanes);
    }
    for (int r = 0; r < block_rows; ++r) {
      std::uint8_t* to = t + static_cast<std::ptrdiff_t>(done) * lanes + r * 3;
      const int n = cols - done;
      if (r >= rb) {
        for (int x = 0; x < n; ++x) std::memset(to + static_cast<std::ptrdiff_t>(x) * lanes, 0, 3);
        continue;
      }
      const std::uint8_t* p = first_col + static_cast<std::ptrdiff_t>(r0 + r) * src_stride + done * 3;
      if (r + 1 < block_rows) {
        move_rgb(to, lanes, p, 3, n);
      } else {
        for (int x = 0; x < n; ++x) std::memcpy(to + static_cast<std::ptrdiff_t>(x) * lanes, p + x * 3, 3);
      }
    }
    // Multiply-add, shift, clip, store pixel-major.
    for (int i = 0; i < taps.count; ++i) {
      const std::int32_t* k = taps.k + static_cast<std::ptrdiff_t>(i) * taps.ksize;
      const int n = taps.len[i];
      const std::uint8_t* v = t + static_cast<std::ptrdiff_t>(taps.lo[i] - taps.read_lo) * lanes;
      __m256i a0 = bias, a1 = bias, a2 = bias;
      for (int tap = 0; tap < n; ++tap, v += lanes) {
        const __m256i kt = _mm256_set1_epi32(k[tap]);
        const __m256i x0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v)));
        const __m256i x1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v + 8)));
        const __m256i x2 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v + 16)));
        a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(x0, kt));
        a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(x1, kt));
        a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(x2, kt));
      }
      // clip8: arithmetic shift, then saturate to [0, 255] (the values fit
      // int16 after the shift, so the two saturating packs are exact).
      a0 = _mm256_sra_epi32(a0, shift);
      a1 = _mm256_sra_epi32(a1, shift);
      a2 = _mm256_sra_epi32(a2, shift);
      const __m256i w01 = _mm256_packus_epi32(a0, a1);  // per 128-bit half: a0 4, a1 4
      const __m256i w22 = _mm256_packus_epi32(a2, a2);
      const __m256i b = _mm256_packus_epi16(w01, w22);  // dwords: a0 a1 a2 a2 | a0 a1 a2 a2
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + static_cast<std::ptrdiff_t>(i) * lanes),
                          _mm256_permutevar8x32_epi32(b, order));
    }
    // Pixel i of row r is at out[i * lanes + r * 3]: 4 pixels at a time
    // with shuffles, the rest pixel by pixel.
    std::uint8_t* row[block_rows];
    for (int r = 0; r < rb; ++r) row[r] = dst + (r0 + r) * dst_stride;
    int i = 0;
    for (; i + 4 <= taps.count; i += 4) tile_out_4(out + static_cast<std::ptrdiff_t>(i) * lanes, row, i, rb);
    for (int r = 0; r < rb; ++r)
      move_rgb(row[r] + i * 3, 3, out + static_cast<std::ptrdiff_t>(i) * lanes + r * 3, lanes, taps.count - i);
  }
}

#else

void horizontal_rgb_avx2(const std::uint8_t*, std::ptrdiff_t, int, int, const horizontal_taps&, std::uint8_t*,
                         std::ptrdiff_t, std::vector<std::uint8_t>&, std::vector<std::uint8_t>&) {
  std::abort();  // cpu_has_avx2() is false here: never called
}

#endif

}  // namespace ringfeed::image::detail
