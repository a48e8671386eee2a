// The resample passes written for AVX2 and AVX-512: the horizontal one for
// RGB rows, and the vertical one for rows of any channels (below).
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
// exact, so the order of the additions does not matter. On AVX-512 the
// blocks are 16 rows (48 lanes) and a tap three 16-lane multiply-adds.
//
// The vertical pass takes two rows at a time: their bytes as 16-bit pairs,
// each weight split into its top bits and its low 11 (both fit 16 bits),
// so a pair is two vpmaddwd whose sums recombine exactly, and the sums stay
// in registers across the taps (the portable pass keeps a row of int32
// accumulators in memory).
//
// Only these functions are compiled for AVX2 or AVX-512 (target
// attributes, not flags for the file), and only called where the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/resample_detail.hpp"

namespace ringfeed::image::detail {

namespace {

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

// Transposes 8 full rows x columns [x, x + 4) into the tile: 24 bytes at
// col + k * L for column x + k, exactly (the other rows' lanes of a tile of
// 16-row blocks are left alone). Reads 16 bytes per row from column x: the
// caller keeps x + 6 <= the columns the rows hold.
template <int L>
__attribute__((target("avx2"), always_inline)) inline void tile_in_4(const std::uint8_t* const* row, int x,
                                                                     std::uint8_t* col) {
  const __m128i expand = rgb_to_dwords();
  const __m128i pack = dwords_to_rgb();
  __m128i a[8];
  for (int r = 0; r < 8; ++r)
    a[r] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[r] + x * 3)), expand);
  transpose4x4(a[0], a[1], a[2], a[3]);
  transpose4x4(a[4], a[5], a[6], a[7]);
  for (int k = 0; k < 4; ++k, col += L) {
    const __m128i lo = _mm_shuffle_epi8(a[k], pack);      // rows 0-3: 12 bytes, then 4 zeros
    const __m128i hi = _mm_shuffle_epi8(a[4 + k], pack);  // rows 4-7
    _mm_storeu_si128(reinterpret_cast<__m128i*>(col), _mm_or_si128(lo, _mm_slli_si128(hi, 12)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(col + 16), _mm_srli_si128(hi, 4));
  }
}

// The inverse for 4 output pixels: out holds them pixel-major (L bytes
// each, 8 rows of them from out); writes 12 bytes exactly to each of the
// rb <= 8 rows at pixel i. Reads 4 bytes past the 4th pixel's 24.
template <int L>
__attribute__((target("avx2"), always_inline)) inline void tile_out_4(const std::uint8_t* out,
                                                                      std::uint8_t* const* row, int i, int rb) {
  const __m128i expand = rgb_to_dwords();
  const __m128i pack = dwords_to_rgb();
  __m128i a[8];
  for (int k = 0; k < 4; ++k) {
    const std::uint8_t* px = out + k * L;
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

// One block of R rows (8 or 16) into the tile: `cols` columns of R * 3
// bytes, source column-major. 4 columns at a time with shuffles where all
// R rows exist and 16-byte loads stay inside them, the rest pixel by
// pixel. Rows in ascending order, so a row's spare bytes (its next row's
// lane) are overwritten by that row; the last row of the block moves
// exactly 3 bytes, its spare being the next column's first lane.
template <int R>
__attribute__((target("avx2"), always_inline)) inline void build_tile(const std::uint8_t* first_col,
                                                                      std::ptrdiff_t src_stride, int r0, int rb,
                                                                      int cols, std::uint8_t* t) {
  constexpr int L = R * 3;
  int done = 0;
  if (rb == R) {
    const std::uint8_t* row[R];
    for (int r = 0; r < R; ++r) row[r] = first_col + static_cast<std::ptrdiff_t>(r0 + r) * src_stride;
    for (; done + 6 <= cols; done += 4)
      for (int h = 0; h < R; h += 8) tile_in_4<L>(row + h, done, t + static_cast<std::ptrdiff_t>(done) * L + h * 3);
  }
  for (int r = 0; r < R; ++r) {
    std::uint8_t* to = t + static_cast<std::ptrdiff_t>(done) * L + r * 3;
    const int n = cols - done;
    if (r >= rb) {
      for (int x = 0; x < n; ++x) std::memset(to + static_cast<std::ptrdiff_t>(x) * L, 0, 3);
      continue;
    }
    const std::uint8_t* p = first_col + static_cast<std::ptrdiff_t>(r0 + r) * src_stride + done * 3;
    if (r + 1 < R) {
      move_rgb(to, L, p, 3, n);
    } else {
      for (int x = 0; x < n; ++x) std::memcpy(to + static_cast<std::ptrdiff_t>(x) * L, p + x * 3, 3);
    }
  }
}

// A block's outputs (pixel i of row r at out[i * R * 3 + r * 3]) to the
// rb rows of dst from row r0: 4 pixels at a time with shuffles, the rest
// pixel by pixel.
template <int R>
__attribute__((target("avx2"), always_inline)) inline void emit_block(const std::uint8_t* out, int count,
                                                                      std::uint8_t* dst, std::ptrdiff_t dst_stride,
                                                                      int r0, int rb) {
  constexpr int L = R * 3;
  std::uint8_t* row[R];
  for (int r = 0; r < rb; ++r) row[r] = dst + (r0 + r) * dst_stride;
  int i = 0;
  for (; i + 4 <= count; i += 4)
    for (int h = 0; h < rb; h += 8)
      tile_out_4<L>(out + static_cast<std::ptrdiff_t>(i) * L + h * 3, row + h, i, std::min(8, rb - h));
  for (int r = 0; r < rb; ++r)
    move_rgb(row[r] + i * 3, 3, out + static_cast<std::ptrdiff_t>(i) * L + r * 3, L, count - i);
}

}  // namespace

namespace {
std::atomic<bool> simd_enabled{true};
}  // namespace

void set_resample_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }
bool resample_simd() noexcept { return simd_enabled.load(std::memory_order_relaxed); }

namespace {
std::atomic<bool> avx512_enabled{true};
}  // namespace

void set_resample_avx512(bool enabled) noexcept { avx512_enabled.store(enabled, std::memory_order_relaxed); }

void horizontal_rgb_simd(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                         const horizontal_taps& taps, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                         std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile) {
  if (cpu_has_avx512() && avx512_enabled.load(std::memory_order_relaxed))
    horizontal_rgb_avx512(src, src_stride, src_left, rows, taps, dst, dst_stride, tile, out_tile);
  else
    horizontal_rgb_avx2(src, src_stride, src_left, rows, taps, dst, dst_stride, tile, out_tile);
}

#if defined(__x86_64__) && defined(__GNUC__)

namespace {

// The tile and out_tile of R-row blocks: cols columns; count pixels + 8
// bytes (the last pixel's 32-byte store, tile_out_4's reads past it).
template <int R>
void size_scratch(const horizontal_taps& taps, std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile) {
  const std::size_t tile_size = static_cast<std::size_t>(taps.read_hi - taps.read_lo) * R * 3;
  if (tile.size() < tile_size) tile.resize(tile_size);
  const std::size_t out_size = static_cast<std::size_t>(taps.count) * R * 3 + 8;
  if (out_tile.size() < out_size) out_tile.resize(out_size);
}

// clip8 of 16 sums, stored as 16 bytes in lane order: the arithmetic
// shift, a max with 0, then vpmovusdb's unsigned saturation to 255. The
// zero-masking forms with every lane set: the plain ones pass GCC 12's
// headers an undefined vector, which -Wmaybe-uninitialized reports.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"), always_inline)) inline void store_clip8(std::uint8_t* o,
                                                                                               __m512i sums,
                                                                                               __m128i shift) {
  constexpr __mmask16 all = 0xffff;
  const __m512i shifted = _mm512_maskz_sra_epi32(all, sums, shift);
  const __m512i clipped = _mm512_maskz_max_epi32(all, shifted, _mm512_setzero_si512());
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm512_maskz_cvtusepi32_epi8(all, clipped));
}

}  // namespace

__attribute__((target("avx2"))) void horizontal_rgb_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride,
                                                         int src_left, int rows, const horizontal_taps& taps,
                                                         std::uint8_t* dst, std::ptrdiff_t dst_stride,
                                                         std::vector<std::uint8_t>& tile,
                                                         std::vector<std::uint8_t>& out_tile) {
  constexpr int R = 8, L = R * 3;
  const int cols = taps.read_hi - taps.read_lo;
  size_scratch<R>(taps, tile, out_tile);
  std::uint8_t* const t = tile.data();
  std::uint8_t* const out = out_tile.data();
  const std::uint8_t* const first_col = src + static_cast<std::ptrdiff_t>(taps.read_lo - src_left) * 3;
  const __m256i bias = _mm256_set1_epi32(1 << (taps.precision - 1));
  const __m128i shift = _mm_cvtsi32_si128(taps.precision);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

  for (int r0 = 0; r0 < rows; r0 += R) {
    const int rb = std::min(R, rows - r0);
    build_tile<R>(first_col, src_stride, r0, rb, cols, t);
    // Multiply-add, shift, clip, store pixel-major.
    for (int i = 0; i < taps.count; ++i) {
      const std::int32_t* k = taps.k + static_cast<std::ptrdiff_t>(i) * taps.ksize;
      const int n = taps.len[i];
      const std::uint8_t* v = t + static_cast<std::ptrdiff_t>(taps.lo[i] - taps.read_lo) * L;
      __m256i a0 = bias, a1 = bias, a2 = bias;
      for (int tap = 0; tap < n; ++tap, v += L) {
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
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + static_cast<std::ptrdiff_t>(i) * L),
                          _mm256_permutevar8x32_epi32(b, order));
    }
    emit_block<R>(out, taps.count, dst, dst_stride, r0, rb);
  }
}

// The same on AVX-512 in blocks of 16 rows: a tap is three 16-lane
// multiply-adds (a 512-bit vpmulld does twice the lanes of a 256-bit one
// in the same time), and the clip is a max with 0 and vpmovusdb's
// unsigned saturation, whose bytes come out in lane order.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) void horizontal_rgb_avx512(
    const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows, const horizontal_taps& taps,
    std::uint8_t* dst, std::ptrdiff_t dst_stride, std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile) {
  constexpr int R = 16, L = R * 3;
  const int cols = taps.read_hi - taps.read_lo;
  size_scratch<R>(taps, tile, out_tile);
  std::uint8_t* const t = tile.data();
  std::uint8_t* const out = out_tile.data();
  const std::uint8_t* const first_col = src + static_cast<std::ptrdiff_t>(taps.read_lo - src_left) * 3;
  const __m512i bias = _mm512_set1_epi32(1 << (taps.precision - 1));
  const __m128i shift = _mm_cvtsi32_si128(taps.precision);
  constexpr __mmask16 all = 0xffff;  // see store_clip8

  for (int r0 = 0; r0 < rows; r0 += R) {
    const int rb = std::min(R, rows - r0);
    build_tile<R>(first_col, src_stride, r0, rb, cols, t);
    for (int i = 0; i < taps.count; ++i) {
      const std::int32_t* k = taps.k + static_cast<std::ptrdiff_t>(i) * taps.ksize;
      const int n = taps.len[i];
      const std::uint8_t* v = t + static_cast<std::ptrdiff_t>(taps.lo[i] - taps.read_lo) * L;
      __m512i a0 = bias, a1 = bias, a2 = bias;
      for (int tap = 0; tap < n; ++tap, v += L) {
        const __m512i kt = _mm512_set1_epi32(k[tap]);
        const __m512i x0 = _mm512_maskz_cvtepu8_epi32(all, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v)));
        const __m512i x1 = _mm512_maskz_cvtepu8_epi32(all, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16)));
        const __m512i x2 = _mm512_maskz_cvtepu8_epi32(all, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 32)));
        a0 = _mm512_add_epi32(a0, _mm512_mullo_epi32(x0, kt));
        a1 = _mm512_add_epi32(a1, _mm512_mullo_epi32(x1, kt));
        a2 = _mm512_add_epi32(a2, _mm512_mullo_epi32(x2, kt));
      }
      std::uint8_t* o = out + static_cast<std::ptrdiff_t>(i) * L;
      store_clip8(o, a0, shift);
      store_clip8(o + 16, a1, shift);
      store_clip8(o + 32, a2, shift);
    }
    emit_block<R>(out, taps.count, dst, dst_stride, r0, rb);
  }
}

// --- the vertical pass ------------------------------------------------------

namespace {

constexpr int split_bits = 11;

// Taps t and t + 1's weights (b = 0 past the last tap) as two dwords of
// 16-bit halves: (hi_a, hi_b) and (lo_a, lo_b), hi = k >> 11 (|k| <= 2^22,
// so it fits int16) and lo = k & 2047.
inline void split_pair(std::int32_t a, std::int32_t b, std::int32_t* out) {
  const auto hi = [](std::int32_t k) { return static_cast<std::uint32_t>(static_cast<std::uint16_t>(k >> split_bits)); };
  const auto lo = [](std::int32_t k) { return static_cast<std::uint32_t>(k & ((1 << split_bits) - 1)); };
  out[0] = static_cast<std::int32_t>(hi(a) | hi(b) << 16);
  out[1] = static_cast<std::int32_t>(lo(a) | lo(b) << 16);
}

// The sums of 16 output bytes: bytes 0-3 and 8-11 in h0/l0, 4-7 and 12-15
// in h1/l1 (the order unpack{lo,hi}_epi16 leaves them in).
struct sums16 {
  __m256i h0, l0, h1, l1;
};

__attribute__((target("avx2"))) inline void add_rows(sums16& a, __m256i x0, __m256i x1, __m256i kh, __m256i kl) {
  const __m256i p0 = _mm256_unpacklo_epi16(x0, x1);
  const __m256i p1 = _mm256_unpackhi_epi16(x0, x1);
  a.h0 = _mm256_add_epi32(a.h0, _mm256_madd_epi16(p0, kh));
  a.l0 = _mm256_add_epi32(a.l0, _mm256_madd_epi16(p0, kl));
  a.h1 = _mm256_add_epi32(a.h1, _mm256_madd_epi16(p1, kh));
  a.l1 = _mm256_add_epi32(a.l1, _mm256_madd_epi16(p1, kl));
}

__attribute__((target("avx2"))) inline __m256i widen16(const std::uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// clip8 of 16 sums, as bytes in order: hi · 2^11 + lo + bias, the
// arithmetic shift, then saturating packs (exact: the shifted values fit
// int16, and packus clips them to [0, 255]).
__attribute__((target("avx2"))) inline __m128i finish16(const sums16& a, __m256i bias, __m128i shift) {
  const __m256i v0 = _mm256_sra_epi32(
      _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(a.h0, split_bits), a.l0), bias), shift);
  const __m256i v1 = _mm256_sra_epi32(
      _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(a.h1, split_bits), a.l1), bias), shift);
  const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(v0, v1), _mm256_setzero_si256());
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08));  // qwords 0 and 2: bytes 0-7, 8-15
}

// G groups of 16 bytes of one output row, from byte `at` of its n rows.
template <int G>
__attribute__((target("avx2"), always_inline)) inline void vertical_groups(const std::uint8_t* first,
                                                                        std::ptrdiff_t stride, int n,
                                                                        const std::int32_t* w, int at,
                                                                        std::uint8_t* out, __m256i bias,
                                                                        __m128i shift) {
  sums16 a[G];
  for (int g = 0; g < G; ++g) a[g] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                                      _mm256_setzero_si256()};
  const std::uint8_t* r = first + at;
  int t = 0;
  for (; t + 1 < n; t += 2, r += 2 * stride, w += 2) {
    const __m256i kh = _mm256_set1_epi32(w[0]);
    const __m256i kl = _mm256_set1_epi32(w[1]);
    for (int g = 0; g < G; ++g) add_rows(a[g], widen16(r + 16 * g), widen16(r + stride + 16 * g), kh, kl);
  }
  if (t < n) {
    const __m256i kh = _mm256_set1_epi32(w[0]);
    const __m256i kl = _mm256_set1_epi32(w[1]);
    for (int g = 0; g < G; ++g) add_rows(a[g], widen16(r + 16 * g), _mm256_setzero_si256(), kh, kl);
  }
  for (int g = 0; g < G; ++g)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + at + 16 * g), finish16(a[g], bias, shift));
}

}  // namespace

__attribute__((target("avx2"))) void vertical_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_top,
                                                   int bytes, const vertical_taps& taps, std::uint8_t* dst,
                                                   std::ptrdiff_t dst_stride, std::vector<std::int32_t>& pairs) {
  if (bytes < 16) std::abort();  // the caller runs the portable pass below 16 bytes
  const __m256i bias = _mm256_set1_epi32(1 << (taps.precision - 1));
  const __m128i shift = _mm_cvtsi32_si128(taps.precision);
  if (pairs.size() < static_cast<std::size_t>(taps.ksize) + 2) pairs.resize(static_cast<std::size_t>(taps.ksize) + 2);
  for (int i = 0; i < taps.count; ++i) {
    const std::int32_t* k = taps.k + static_cast<std::ptrdiff_t>(i) * taps.ksize;
    const int n = taps.len[i];
    for (int t = 0; t < n; t += 2) split_pair(k[t], t + 1 < n ? k[t + 1] : 0, pairs.data() + t);
    const std::uint8_t* first = src + static_cast<std::ptrdiff_t>(taps.lo[i] - src_top) * src_stride;
    std::uint8_t* out = dst + static_cast<std::ptrdiff_t>(i) * dst_stride;
    int at = 0;
    for (; at + 32 <= bytes; at += 32) vertical_groups<2>(first, src_stride, n, pairs.data(), at, out, bias, shift);
    if (at + 16 <= bytes) {
      vertical_groups<1>(first, src_stride, n, pairs.data(), at, out, bias, shift);
      at += 16;
    }
    // The last bytes as the row's last 16 (the overlap is written twice,
    // with the same values).
    if (at < bytes) vertical_groups<1>(first, src_stride, n, pairs.data(), bytes - 16, out, bias, shift);
  }
}

#else

void horizontal_rgb_avx2(const std::uint8_t*, std::ptrdiff_t, int, int, const horizontal_taps&, std::uint8_t*,
                         std::ptrdiff_t, std::vector<std::uint8_t>&, std::vector<std::uint8_t>&) {
  std::abort();  // cpu_has_avx2() is false here: never called
}

void horizontal_rgb_avx512(const std::uint8_t*, std::ptrdiff_t, int, int, const horizontal_taps&, std::uint8_t*,
                           std::ptrdiff_t, std::vector<std::uint8_t>&, std::vector<std::uint8_t>&) {
  std::abort();  // cpu_has_avx512() is false here: never called
}

void vertical_avx2(const std::uint8_t*, std::ptrdiff_t, int, int, const vertical_taps&, std::uint8_t*, std::ptrdiff_t,
                   std::vector<std::int32_t>&) {
  std::abort();  // cpu_has_avx2() is false here: never called
}

#endif

}  // namespace ringfeed::image::detail
