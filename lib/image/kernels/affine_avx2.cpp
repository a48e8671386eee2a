// Pillow's bilinear and bicubic affine (ImagingGenericTransform with
// affine_transform, bilinear_filter32RGB and bicubic_filter32RGB) on RGB
// images, four output pixels at a time with AVX2 doubles (the bicubic eight
// at a time with AVX-512 where the CPU has it); and the inside runs of its
// nearest-neighbour affine (affine_fixed), eight at a time.
//
// The portable loop (affine.cpp, generic_affine) converts each
// source byte to double and filters lane by lane. Here four pixels whose
// taps all lie inside the image (no clamping, no missing row) load their
// taps as whole words, then per channel do the portable loop's arithmetic
// on four lanes: the same doubles, multiplied and added in the same order,
// never fused (no FMA in this target, and the file is compiled with
// -ffp-contract=off), the same truncation and clipping to bytes. Pixels
// near the image's edges or outside it stay on the portable loop.
#include <immintrin.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/geometry_detail.hpp"

namespace ringfeed::image::geometry_detail {

namespace {
std::atomic<bool> simd_enabled{true};
std::atomic<bool> avx512_enabled{true};
}  // namespace

void set_affine_filter_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }

void set_affine_avx512(bool enabled) noexcept { avx512_enabled.store(enabled, std::memory_order_relaxed); }

bool affine_filter_simd() noexcept {
  return simd_enabled.load(std::memory_order_relaxed) && detail::cpu_has_avx2();
}

#if defined(__x86_64__) && defined(__GNUC__)

namespace {

struct row_constants {
  __m256d a0, a1y, a2, a3, a4y, a5, half, lo, wl, hl;
};

row_constants __attribute__((target("avx2"))) constants(image_view src, const std::array<double, 6>& a, int y,
                                                        double lo, int margin) {
  const double yin = y + 0.5;
  return {_mm256_set1_pd(a[0]), _mm256_set1_pd(a[1] * yin), _mm256_set1_pd(a[2]), _mm256_set1_pd(a[3]),
          _mm256_set1_pd(a[4] * yin), _mm256_set1_pd(a[5]), _mm256_set1_pd(0.5), _mm256_set1_pd(lo),
          _mm256_set1_pd(src.width - margin), _mm256_set1_pd(src.height - margin)};
}

// The four pixels' source points, Pillow's a[0] * xin + a[1] * yin + a[2]
// (left to right) less its 0.5, and their floors; false unless every lane's
// floor lies in [lo, w - margin] × [lo, h - margin] (every tap inside) and
// its loads, `span` bytes from column floor - lo in each of `rows` rows
// from row floor - lo, stay inside the image. Bytes past a row's end are
// the next row's or the stride's, except past the last row's end.
struct lanes {
  __m256d dx, dy;
  alignas(16) std::int32_t ix[4];
  alignas(16) std::int32_t iy[4];
};

__attribute__((target("avx2"), always_inline)) inline bool locate(image_view src, const row_constants& k, int x,
                                                                  int lo, int rows, int span, lanes& out) {
  const __m256d xin = _mm256_add_pd(_mm256_set1_pd(x), _mm256_set_pd(3.5, 2.5, 1.5, 0.5));  // x + 0.5, exact
  const __m256d xs = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(k.a0, xin), k.a1y), k.a2), k.half);
  const __m256d ys = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(k.a3, xin), k.a4y), k.a5), k.half);
  const __m256d fx = _mm256_floor_pd(xs);
  const __m256d fy = _mm256_floor_pd(ys);
  const __m256d ok =
      _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(fx, k.lo, _CMP_GE_OQ), _mm256_cmp_pd(fx, k.wl, _CMP_LE_OQ)),
                    _mm256_and_pd(_mm256_cmp_pd(fy, k.lo, _CMP_GE_OQ), _mm256_cmp_pd(fy, k.hl, _CMP_LE_OQ)));
  if (_mm256_movemask_pd(ok) != 0xF) return false;
  out.dx = _mm256_sub_pd(xs, fx);
  out.dy = _mm256_sub_pd(ys, fy);
  _mm_store_si128(reinterpret_cast<__m128i*>(out.ix), _mm256_cvttpd_epi32(fx));
  _mm_store_si128(reinterpret_cast<__m128i*>(out.iy), _mm256_cvttpd_epi32(fy));
  for (int l = 0; l < 4; ++l)
    if (out.iy[l] - lo + rows == src.height && (out.ix[l] - lo) * 3 + span > src.width * 3) return false;
  return true;
}

// Four [R, G, B, x] int32 words (values 0..255 in each channel's lane
// vector) stored as 12 bytes.
__attribute__((target("avx2"), always_inline)) inline void store_rgb(const __m128i (&ch)[3], std::uint8_t* out) {
  const __m128i packed =
      _mm_or_si128(_mm_or_si128(ch[0], _mm_slli_epi32(ch[1], 8)), _mm_slli_epi32(ch[2], 16));
  const __m128i rgb = _mm_shuffle_epi8(packed, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
  const std::int32_t tail = _mm_extract_epi32(rgb, 2);
  std::memcpy(out + 8, &tail, 4);
}

// Bilinear: one 4-byte load per corner (its R, G, B and one byte more).
__attribute__((target("avx2"), always_inline)) inline bool bilinear_four(image_view src, const row_constants& k,
                                                                         int x, std::uint8_t* out) {
  lanes p;
  if (!locate(src, k, x, 0, 2, 7, p)) return false;
  std::int32_t w00[4], w01[4], w10[4], w11[4];
  for (int l = 0; l < 4; ++l) {
    const std::uint8_t* r0 = src.row(p.iy[l]) + static_cast<std::ptrdiff_t>(p.ix[l]) * 3;
    const std::uint8_t* r1 = r0 + src.stride;
    std::memcpy(&w00[l], r0, 4);
    std::memcpy(&w01[l], r0 + 3, 4);
    std::memcpy(&w10[l], r1, 4);
    std::memcpy(&w11[l], r1 + 3, 4);
  }
  const __m128i p00 = _mm_setr_epi32(w00[0], w00[1], w00[2], w00[3]);
  const __m128i p01 = _mm_setr_epi32(w01[0], w01[1], w01[2], w01[3]);
  const __m128i p10 = _mm_setr_epi32(w10[0], w10[1], w10[2], w10[3]);
  const __m128i p11 = _mm_setr_epi32(w11[0], w11[1], w11[2], w11[3]);
  __m128i ch[3];
  for (int c = 0; c < 3; ++c) {
    // Byte c of each word, as int32 lanes.
    const __m128i pick = _mm_setr_epi8(static_cast<char>(c), -1, -1, -1, static_cast<char>(4 + c), -1, -1, -1,
                                       static_cast<char>(8 + c), -1, -1, -1, static_cast<char>(12 + c), -1, -1, -1);
    const __m128i q00 = _mm_shuffle_epi8(p00, pick);
    const __m128i q01 = _mm_shuffle_epi8(p01, pick);
    const __m128i q10 = _mm_shuffle_epi8(p10, pick);
    const __m128i q11 = _mm_shuffle_epi8(p11, pick);
    // r0[x0] + (r0[x1] - r0[x0]) * dx: the difference in int, then doubles.
    const __m256d v1 =
        _mm256_add_pd(_mm256_cvtepi32_pd(q00), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(q01, q00)), p.dx));
    const __m256d v2 =
        _mm256_add_pd(_mm256_cvtepi32_pd(q10), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(q11, q10)), p.dx));
    const __m256d r = _mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), p.dy));
    ch[c] = _mm256_cvttpd_epi32(r);  // 0..255
  }
  store_rgb(ch, out);
  return true;
}

// Pillow's BICUBIC on four lanes: p1 + d * (p2 + d * (p3 + d * p4)) with
// p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4 and
// p4 = -v1 + v2 - v3 + v4 (-a + b is b - a exactly, 2 * t is t + t).
__attribute__((target("avx2"), always_inline)) inline __m256d cubic4(__m256d v1, __m256d v2, __m256d v3, __m256d v4,
                                                                     __m256d d) {
  const __m256d p2 = _mm256_sub_pd(v3, v1);
  const __m256d p3 = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(_mm256_sub_pd(v1, v2), _mm256_sub_pd(v1, v2)), v3), v4);
  const __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(v2, v1), v3), v4);
  return _mm256_add_pd(v2, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, _mm256_add_pd(p3, _mm256_mul_pd(d, p4))))));
}

// The horizontal stage on one channel's four taps per lane (bytes 0..3 of
// each int32): affine.cpp's cubic_u8, p2..p4 exact in int.
__attribute__((target("avx2"), always_inline)) inline __m256d cubic_taps(__m128i q, __m256d d) {
  const __m128i byte = _mm_set1_epi32(0xFF);
  const __m128i t0 = _mm_and_si128(q, byte);
  const __m128i t1 = _mm_and_si128(_mm_srli_epi32(q, 8), byte);
  const __m128i t2 = _mm_and_si128(_mm_srli_epi32(q, 16), byte);
  const __m128i t3 = _mm_srli_epi32(q, 24);
  const __m128i d01 = _mm_sub_epi32(t0, t1);
  const __m128i p2 = _mm_sub_epi32(t2, t0);
  const __m128i p3 = _mm_sub_epi32(_mm_add_epi32(_mm_add_epi32(d01, d01), t2), t3);
  const __m128i p4 = _mm_sub_epi32(_mm_sub_epi32(t3, t2), d01);
  const __m256d f2 = _mm256_cvtepi32_pd(p2);
  const __m256d f3 = _mm256_cvtepi32_pd(p3);
  const __m256d f4 = _mm256_cvtepi32_pd(p4);
  return _mm256_add_pd(_mm256_cvtepi32_pd(t1),
                       _mm256_mul_pd(d, _mm256_add_pd(f2, _mm256_mul_pd(d, _mm256_add_pd(f3, _mm256_mul_pd(d, f4))))));
}

// cubic_taps at d = 0: t1 + 0 · (...) is t1 exactly (the products are ±0,
// the terms finite), so only the tap at the floor counts.
__attribute__((target("avx2"), always_inline)) inline __m256d tap_at_floor(__m128i q) {
  return _mm256_cvtepi32_pd(_mm_and_si128(_mm_srli_epi32(q, 8), _mm_set1_epi32(0xFF)));
}

// One row of four lanes' taps: a 16-byte load per lane (four RGB taps and
// four bytes more) at `base[l] + off`, regrouped by channel and transposed
// so that q[c]'s int32 lane l holds lane l's four taps of channel c.
__attribute__((target("avx2"), always_inline)) inline void taps_by_channel(const std::uint8_t* const (&base)[4],
                                                                           std::ptrdiff_t off, __m128i (&q)[3]) {
  const __m128i by_channel = _mm_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  __m128i w[4];
  for (int l = 0; l < 4; ++l)
    w[l] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base[l] + off)), by_channel);
  const __m128i lo01 = _mm_unpacklo_epi32(w[0], w[1]);
  const __m128i lo23 = _mm_unpacklo_epi32(w[2], w[3]);
  const __m128i hi01 = _mm_unpackhi_epi32(w[0], w[1]);
  const __m128i hi23 = _mm_unpackhi_epi32(w[2], w[3]);
  q[0] = _mm_unpacklo_epi64(lo01, lo23);
  q[1] = _mm_unpackhi_epi64(lo01, lo23);
  q[2] = _mm_unpacklo_epi64(hi01, hi23);
}

// Bicubic: per row of taps, one 16-byte load per lane (four RGB taps and
// four bytes more), regrouped by channel and transposed so that each
// channel's int32 lane holds that lane's four taps. Where every lane's dy
// is 0 (a shear along x, a translation along x: the source row is the
// output row), cubic4 gives its second row exactly, and only that row is
// filtered; where every dx is 0 (along y), each row's cubic_taps is its
// floor tap. The same doubles as the general path, so the same bytes.
__attribute__((target("avx2"), always_inline)) inline bool bicubic_four(image_view src, const row_constants& k,
                                                                        int x, std::uint8_t* out) {
  lanes p;
  if (!locate(src, k, x, 1, 4, 16, p)) return false;
  const std::uint8_t* base[4];
  for (int l = 0; l < 4; ++l) base[l] = src.row(p.iy[l] - 1) + static_cast<std::ptrdiff_t>(p.ix[l] - 1) * 3;
  const __m256d zero = _mm256_setzero_pd();
  const bool flat_x = _mm256_movemask_pd(_mm256_cmp_pd(p.dx, zero, _CMP_EQ_OQ)) == 0xF;
  const bool flat_y = _mm256_movemask_pd(_mm256_cmp_pd(p.dy, zero, _CMP_EQ_OQ)) == 0xF;
  __m256d v[3][4];
  for (int r = flat_y ? 1 : 0; r < (flat_y ? 2 : 4); ++r) {
    __m128i q[3];
    taps_by_channel(base, r * src.stride, q);
    for (int c = 0; c < 3; ++c) v[c][r] = flat_x ? tap_at_floor(q[c]) : cubic_taps(q[c], p.dx);
  }
  const __m256d top = _mm256_set1_pd(255.0);
  __m128i ch[3];
  for (int c = 0; c < 3; ++c) {
    // Clipped as Pillow's: <= 0 gives 0, >= 255 gives 255, else truncated.
    const __m256d r = flat_y ? v[c][1] : cubic4(v[c][0], v[c][1], v[c][2], v[c][3], p.dy);
    ch[c] = _mm256_cvttpd_epi32(_mm256_min_pd(_mm256_max_pd(r, zero), top));
  }
  store_rgb(ch, out);
  return true;
}

// One row of four-pixel groups; the groups it cannot take go to `left`.
// Bilinear corners are (floor, floor + 1): floors in [0, size - 2];
// bicubic taps floor - 1 .. floor + 2: floors in [1, size - 3].
template <bool Bicubic>
__attribute__((target("avx2"))) int filter_row(image_view src, const std::array<double, 6>& a, int y,
                                               std::uint8_t* out, int width, int* left) {
  const row_constants k = Bicubic ? constants(src, a, y, 1.0, 3) : constants(src, a, y, 0.0, 2);
  int n = 0;
  for (int x = 0; x + 4 <= width; x += 4) {
    const bool done = Bicubic ? bicubic_four(src, k, x, out + x * 3) : bilinear_four(src, k, x, out + x * 3);
    if (!done) left[n++] = x;
  }
  return n;
}

#define RF_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2")))

// The bicubic on eight lanes of AVX-512 doubles: locate, the taps' loads
// and their transposes as two groups of four, then every int32 and double
// operation of bicubic_four on all eight lanes at once, in the same order
// (so the same doubles, the same bytes).
// The zero-masking forms with every lane set: the plain ones pass GCC 12's
// headers an undefined vector, which -Wmaybe-uninitialized reports.
constexpr __mmask8 all8 = 0xFF;
RF_AVX512 inline __m512d to_pd(__m256i v) { return _mm512_maskz_cvtepi32_pd(all8, v); }
RF_AVX512 inline __m256i trunc_epi32(__m512d v) { return _mm512_maskz_cvttpd_epi32(all8, v); }
RF_AVX512 inline __m512d floor_pd(__m512d v) {
  return _mm512_maskz_roundscale_pd(all8, v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

struct row_constants8 {
  __m512d a0, a1y, a2, a3, a4y, a5, half, lo, wl, hl;
};

RF_AVX512 row_constants8 constants8(image_view src, const std::array<double, 6>& a, int y) {
  const double yin = y + 0.5;
  return {_mm512_set1_pd(a[0]), _mm512_set1_pd(a[1] * yin), _mm512_set1_pd(a[2]), _mm512_set1_pd(a[3]),
          _mm512_set1_pd(a[4] * yin), _mm512_set1_pd(a[5]), _mm512_set1_pd(0.5), _mm512_set1_pd(1.0),
          _mm512_set1_pd(src.width - 3), _mm512_set1_pd(src.height - 3)};
}

struct lanes8 {
  __m512d dx, dy;
  alignas(32) std::int32_t ix[8];
  alignas(32) std::int32_t iy[8];
};

// locate() for bicubic taps (lo 1, 4 rows, 16-byte loads) on eight lanes.
RF_AVX512 inline bool locate8(image_view src, const row_constants8& k, int x, lanes8& out) {
  const __m512d xin = _mm512_add_pd(_mm512_set1_pd(x), _mm512_setr_pd(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5));
  const __m512d xs = _mm512_sub_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(k.a0, xin), k.a1y), k.a2), k.half);
  const __m512d ys = _mm512_sub_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(k.a3, xin), k.a4y), k.a5), k.half);
  const __m512d fx = floor_pd(xs);
  const __m512d fy = floor_pd(ys);
  const __mmask8 ok = _mm512_cmp_pd_mask(fx, k.lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(fx, k.wl, _CMP_LE_OQ) &
                      _mm512_cmp_pd_mask(fy, k.lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(fy, k.hl, _CMP_LE_OQ);
  if (ok != 0xFF) return false;
  out.dx = _mm512_sub_pd(xs, fx);
  out.dy = _mm512_sub_pd(ys, fy);
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.ix), trunc_epi32(fx));
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.iy), trunc_epi32(fy));
  for (int l = 0; l < 8; ++l)
    if (out.iy[l] - 1 + 4 == src.height && (out.ix[l] - 1) * 3 + 16 > src.width * 3) return false;
  return true;
}

RF_AVX512 inline __m512d cubic4_8(__m512d v1, __m512d v2, __m512d v3, __m512d v4, __m512d d) {
  const __m512d p2 = _mm512_sub_pd(v3, v1);
  const __m512d p3 = _mm512_sub_pd(_mm512_add_pd(_mm512_add_pd(_mm512_sub_pd(v1, v2), _mm512_sub_pd(v1, v2)), v3), v4);
  const __m512d p4 = _mm512_add_pd(_mm512_sub_pd(_mm512_sub_pd(v2, v1), v3), v4);
  return _mm512_add_pd(v2, _mm512_mul_pd(d, _mm512_add_pd(p2, _mm512_mul_pd(d, _mm512_add_pd(p3, _mm512_mul_pd(d, p4))))));
}

RF_AVX512 inline __m512d cubic_taps8(__m256i q, __m512d d) {
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m256i t0 = _mm256_and_si256(q, byte);
  const __m256i t1 = _mm256_and_si256(_mm256_srli_epi32(q, 8), byte);
  const __m256i t2 = _mm256_and_si256(_mm256_srli_epi32(q, 16), byte);
  const __m256i t3 = _mm256_srli_epi32(q, 24);
  const __m256i d01 = _mm256_sub_epi32(t0, t1);
  const __m256i p2 = _mm256_sub_epi32(t2, t0);
  const __m256i p3 = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(d01, d01), t2), t3);
  const __m256i p4 = _mm256_sub_epi32(_mm256_sub_epi32(t3, t2), d01);
  const __m512d f2 = to_pd(p2);
  const __m512d f3 = to_pd(p3);
  const __m512d f4 = to_pd(p4);
  return _mm512_add_pd(to_pd(t1),
                       _mm512_mul_pd(d, _mm512_add_pd(f2, _mm512_mul_pd(d, _mm512_add_pd(f3, _mm512_mul_pd(d, f4))))));
}

RF_AVX512 inline bool bicubic_eight(image_view src, const row_constants8& k, int x, std::uint8_t* out) {
  lanes8 p;
  if (!locate8(src, k, x, p)) return false;
  const std::uint8_t* base[2][4];
  for (int l = 0; l < 8; ++l)
    base[l / 4][l % 4] = src.row(p.iy[l] - 1) + static_cast<std::ptrdiff_t>(p.ix[l] - 1) * 3;
  const __m512d zero = _mm512_setzero_pd();
  const bool flat_x = _mm512_cmp_pd_mask(p.dx, zero, _CMP_EQ_OQ) == 0xFF;
  const bool flat_y = _mm512_cmp_pd_mask(p.dy, zero, _CMP_EQ_OQ) == 0xFF;
  __m512d v[3][4];
  for (int r = flat_y ? 1 : 0; r < (flat_y ? 2 : 4); ++r) {
    __m128i lo[3], hi[3];
    taps_by_channel(base[0], r * src.stride, lo);
    taps_by_channel(base[1], r * src.stride, hi);
    for (int c = 0; c < 3; ++c) {
      const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(lo[c]), hi[c], 1);
      v[c][r] = flat_x ? to_pd(_mm256_and_si256(_mm256_srli_epi32(q, 8), _mm256_set1_epi32(0xFF)))
                       : cubic_taps8(q, p.dx);
    }
  }
  const __m512d top = _mm512_set1_pd(255.0);
  __m128i ch_lo[3], ch_hi[3];
  for (int c = 0; c < 3; ++c) {
    const __m512d r = flat_y ? v[c][1] : cubic4_8(v[c][0], v[c][1], v[c][2], v[c][3], p.dy);
    const __m256i b = trunc_epi32(_mm512_maskz_min_pd(all8, _mm512_maskz_max_pd(all8, r, zero), top));
    ch_lo[c] = _mm256_castsi256_si128(b);
    ch_hi[c] = _mm256_extracti128_si256(b, 1);
  }
  store_rgb(ch_lo, out);
  store_rgb(ch_hi, out + 12);
  return true;
}

// filter_row<true> eight pixels at a time; a group of eight it cannot take
// is tried as two of four, and the groups of four left go to `left`.
RF_AVX512 int bicubic_row_eights(image_view src, const std::array<double, 6>& a, int y, std::uint8_t* out, int width,
                                 int* left) {
  const row_constants8 k8 = constants8(src, a, y);
  const row_constants k = constants(src, a, y, 1.0, 3);
  int n = 0;
  int x = 0;
  for (; x + 8 <= width; x += 8) {
    if (bicubic_eight(src, k8, x, out + x * 3)) continue;
    if (!bicubic_four(src, k, x, out + x * 3)) left[n++] = x;
    if (!bicubic_four(src, k, x + 4, out + (x + 4) * 3)) left[n++] = x + 4;
  }
  if (x + 4 <= width && !bicubic_four(src, k, x, out + x * 3)) left[n++] = x;
  return n;
}

#undef RF_AVX512

}  // namespace

__attribute__((target("avx2"))) int nearest_run_rgb_avx2(image_view src, std::uint32_t xx, std::uint32_t yy,
                                                         std::uint32_t a0, std::uint32_t a3, int n,
                                                         std::uint8_t* out) {
  // Eight pixels per step: offsets yin * stride + xin * 3 in int32 (the
  // caller checks the view fits), one gather of eight 4-byte words, packed
  // to 24 bytes by two 16-byte stores; the second store's last 4 bytes
  // belong to the next two pixels, which are copied after, so at least two
  // pixels always remain for the caller.
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i vx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(xx)),
                                _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(a0)), lane));
  __m256i vy = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(yy)),
                                _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(a3)), lane));
  const __m256i step_x = _mm256_set1_epi32(static_cast<int>(a0 * 8));
  const __m256i step_y = _mm256_set1_epi32(static_cast<int>(a3 * 8));
  const __m256i stride = _mm256_set1_epi32(static_cast<int>(src.stride));
  // The image's last pixel: its fourth byte may lie past the buffer.
  const __m256i last = _mm256_set1_epi32(static_cast<int>((src.height - 1) * src.stride + (src.width - 1) * 3));
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                                        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const int* base = reinterpret_cast<const int*>(src.row(0));
  int x = 0;
  for (; x + 10 <= n; x += 8) {
    const __m256i xin = _mm256_srai_epi32(vx, 16);
    const __m256i yin = _mm256_srai_epi32(vy, 16);
    const __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(yin, stride), _mm256_add_epi32(xin, _mm256_add_epi32(xin, xin)));
    if (!_mm256_testz_si256(_mm256_cmpeq_epi32(off, last), _mm256_cmpeq_epi32(off, last))) break;
    const __m256i px = _mm256_shuffle_epi8(_mm256_i32gather_epi32(base, off, 1), pack);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x * 3), _mm256_castsi256_si128(px));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x * 3 + 12), _mm256_extracti128_si256(px, 1));
    vx = _mm256_add_epi32(vx, step_x);
    vy = _mm256_add_epi32(vy, step_y);
  }
  return x;
}

__attribute__((target("avx2"))) int bilinear_row_rgb_avx2(image_view src, const std::array<double, 6>& a, int y,
                                                          std::uint8_t* out, int width, int* left) {
  return filter_row<false>(src, a, y, out, width, left);
}

__attribute__((target("avx2"))) int bicubic_row_rgb_avx2(image_view src, const std::array<double, 6>& a, int y,
                                                         std::uint8_t* out, int width, int* left) {
  if (avx512_enabled.load(std::memory_order_relaxed) && detail::cpu_has_avx512())
    return bicubic_row_eights(src, a, y, out, width, left);
  return filter_row<true>(src, a, y, out, width, left);
}

#else

namespace {
int all_left(int width, int* left) {
  int n = 0;
  for (int x = 0; x + 4 <= width; x += 4) left[n++] = x;
  return n;
}
}  // namespace

int nearest_run_rgb_avx2(image_view, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, int, std::uint8_t*) {
  return 0;
}

int bilinear_row_rgb_avx2(image_view, const std::array<double, 6>&, int, std::uint8_t*, int width, int* left) {
  return all_left(width, left);
}

int bicubic_row_rgb_avx2(image_view, const std::array<double, 6>&, int, std::uint8_t*, int width, int* left) {
  return all_left(width, left);
}

#endif

}  // namespace ringfeed::image::geometry_detail
