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
#include <cstring>

#include "image/resample_detail.hpp"

namespace ringfeed::image::detail {

namespace {

constexpr int precision_bits = 32 - 8 - 2;  // as resample.cpp
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

}  // namespace

namespace {
std::atomic<bool> simd_enabled{true};
}  // namespace

void set_resample_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }
bool resample_simd() noexcept { return simd_enabled.load(std::memory_order_relaxed); }

bool cpu_has_avx2() noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)

__attribute__((target("avx2"))) void horizontal_rgb_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride,
                                                         int src_left, int rows, const horizontal_taps& taps,
                                                         std::uint8_t* dst, std::ptrdiff_t dst_stride,
                                                         std::vector<std::uint8_t>& tile,
                                                         std::vector<std::uint8_t>& out_tile) {
  const int cols = taps.read_hi - taps.read_lo;
  // + 8: the last column's third 8-byte load, and the last pixel's 32-byte store.
  const std::size_t tile_size = static_cast<std::size_t>(cols) * lanes + 8;
  if (tile.size() < tile_size) tile.resize(tile_size);
  const std::size_t out_size = static_cast<std::size_t>(taps.count) * lanes + 8;
  if (out_tile.size() < out_size) out_tile.resize(out_size);
  std::uint8_t* const t = tile.data();
  std::uint8_t* const out = out_tile.data();
  const std::uint8_t* const first_col = src + static_cast<std::ptrdiff_t>(taps.read_lo - src_left) * 3;
  const __m256i bias = _mm256_set1_epi32(1 << (precision_bits - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

  for (int r0 = 0; r0 < rows; r0 += block_rows) {
    const int rb = std::min(block_rows, rows - r0);
    // Transpose. Rows in ascending order, so a row's spare bytes (its next
    // row's lane) are overwritten by that row; the last row of the block
    // moves exactly 3 bytes, its spare being the next column's first lane.
    for (int r = 0; r < block_rows; ++r) {
      std::uint8_t* to = t + r * 3;
      if (r >= rb) {
        for (int x = 0; x < cols; ++x) std::memset(to + static_cast<std::ptrdiff_t>(x) * lanes, 0, 3);
        continue;
      }
      const std::uint8_t* p = first_col + static_cast<std::ptrdiff_t>(r0 + r) * src_stride;
      if (r + 1 < block_rows) {
        move_rgb(to, lanes, p, 3, cols);
      } else {
        for (int x = 0; x < cols; ++x) std::memcpy(to + static_cast<std::ptrdiff_t>(x) * lanes, p + x * 3, 3);
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
      a0 = _mm256_srai_epi32(a0, precision_bits);
      a1 = _mm256_srai_epi32(a1, precision_bits);
      a2 = _mm256_srai_epi32(a2, precision_bits);
      const __m256i w01 = _mm256_packus_epi32(a0, a1);  // per 128-bit half: a0 4, a1 4
      const __m256i w22 = _mm256_packus_epi32(a2, a2);
      const __m256i b = _mm256_packus_epi16(w01, w22);  // dwords: a0 a1 a2 a2 | a0 a1 a2 a2
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + static_cast<std::ptrdiff_t>(i) * lanes),
                          _mm256_permutevar8x32_epi32(b, order));
    }
    // Pixel i of row r is at out[i * lanes + r * 3].
    for (int r = 0; r < rb; ++r) move_rgb(dst + (r0 + r) * dst_stride, 3, out + r * 3, lanes, taps.count);
  }
}

#else

void horizontal_rgb_avx2(const std::uint8_t*, std::ptrdiff_t, int, int, const horizontal_taps&, std::uint8_t*,
                         std::ptrdiff_t, std::vector<std::uint8_t>&, std::vector<std::uint8_t>&) {
  __builtin_trap();  // cpu_has_avx2() is false here: never called
}

#endif

}  // namespace ringfeed::image::detail
