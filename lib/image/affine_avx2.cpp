// Pillow's bilinear affine (ImagingGenericTransform with affine_transform
// and bilinear_filter32RGB) on RGB images, four output pixels at a time
// with AVX2 doubles.
//
// The portable loop (geometry_transform.cpp, generic_affine) converts each
// corner byte to double and interpolates lane by lane. Here four pixels
// whose corners all lie inside the image (no clamping, a row below) take
// one 4-byte load per corner (its R, G, B and one byte more), then per
// channel the portable loop's arithmetic on four lanes: the same doubles,
// multiplied and added in the same order, never fused (no FMA in this
// target, and the file is compiled with -ffp-contract=off), the same
// truncation to bytes. Pixels near the image's edges or outside it stay on
// the portable loop.
#include <immintrin.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "image/geometry_detail.hpp"
#include "image/resample_detail.hpp"

namespace ringfeed::image::geometry_detail {

namespace {
std::atomic<bool> simd_enabled{true};
}  // namespace

void set_affine_filter_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }

bool affine_filter_simd() noexcept {
  return simd_enabled.load(std::memory_order_relaxed) && detail::cpu_has_avx2();
}

#if defined(__x86_64__) && defined(__GNUC__)

// The fourth byte read past a corner is the next pixel's or the next row's,
// except past the image's very last pixel, which no lane may then use.
namespace {

struct row_constants {
  __m256d a0, a1y, a2, a3, a4y, a5, half, zero, wl, hl;
};

__attribute__((target("avx2"), always_inline)) inline bool four(image_view src, const row_constants& k, int x,
                                                                std::uint8_t* out) {
  const __m256d xin = _mm256_add_pd(_mm256_set1_pd(x), _mm256_set_pd(3.5, 2.5, 1.5, 0.5));  // x + 0.5, exact
  // a[0] * xin + a[1] * yin + a[2], left to right, then Pillow's - 0.5.
  const __m256d xs = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(k.a0, xin), k.a1y), k.a2), k.half);
  const __m256d ys = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(k.a3, xin), k.a4y), k.a5), k.half);
  const __m256d fx = _mm256_floor_pd(xs);
  const __m256d fy = _mm256_floor_pd(ys);
  // Corners inside: 0 <= fx <= w - 2 and 0 <= fy <= h - 2 (so the pixel is
  // inside too), and not the last corner's over-read.
  const __m256d zero = k.zero, wl = k.wl, hl = k.hl;
  const __m256d ok = _mm256_andnot_pd(
      _mm256_and_pd(_mm256_cmp_pd(fx, wl, _CMP_EQ_OQ), _mm256_cmp_pd(fy, hl, _CMP_EQ_OQ)),
      _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(fx, zero, _CMP_GE_OQ), _mm256_cmp_pd(fx, wl, _CMP_LE_OQ)),
                    _mm256_and_pd(_mm256_cmp_pd(fy, zero, _CMP_GE_OQ), _mm256_cmp_pd(fy, hl, _CMP_LE_OQ))));
  if (_mm256_movemask_pd(ok) != 0xF) return false;
  const __m256d dx = _mm256_sub_pd(xs, fx);
  const __m256d dy = _mm256_sub_pd(ys, fy);
  alignas(16) std::int32_t ix[4];
  alignas(16) std::int32_t iy[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(ix), _mm256_cvttpd_epi32(fx));
  _mm_store_si128(reinterpret_cast<__m128i*>(iy), _mm256_cvttpd_epi32(fy));
  std::int32_t w00[4], w01[4], w10[4], w11[4];
  for (int l = 0; l < 4; ++l) {
    const std::uint8_t* r0 = src.row(iy[l]) + static_cast<std::ptrdiff_t>(ix[l]) * 3;
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
  __m128i packed = _mm_setzero_si128();
  for (int c = 0; c < 3; ++c) {
    // Byte c of each word, as int32 lanes.
    const __m128i pick = _mm_setr_epi8(static_cast<char>(c), -1, -1, -1, static_cast<char>(4 + c), -1, -1, -1,
                                       static_cast<char>(8 + c), -1, -1, -1, static_cast<char>(12 + c), -1, -1, -1);
    const __m128i q00 = _mm_shuffle_epi8(p00, pick);
    const __m128i q01 = _mm_shuffle_epi8(p01, pick);
    const __m128i q10 = _mm_shuffle_epi8(p10, pick);
    const __m128i q11 = _mm_shuffle_epi8(p11, pick);
    // r0[x0] + (r0[x1] - r0[x0]) * dx: the difference in int, then doubles.
    const __m256d v1 = _mm256_add_pd(_mm256_cvtepi32_pd(q00), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(q01, q00)), dx));
    const __m256d v2 = _mm256_add_pd(_mm256_cvtepi32_pd(q10), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(q11, q10)), dx));
    const __m256d r = _mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy));
    packed = _mm_or_si128(packed, _mm_slli_epi32(_mm256_cvttpd_epi32(r), 8 * c));  // 0..255: one byte each
  }
  // Four [R, G, B, 0] words to 12 bytes.
  const __m128i rgb = _mm_shuffle_epi8(packed, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
  const std::int32_t tail = _mm_extract_epi32(rgb, 2);
  std::memcpy(out + 8, &tail, 4);
  return true;
}

}  // namespace

__attribute__((target("avx2"))) int bilinear_row_rgb_avx2(image_view src, const std::array<double, 6>& a, int y,
                                                          std::uint8_t* out, int width, int* left) {
  const double yin = y + 0.5;
  const row_constants k{_mm256_set1_pd(a[0]), _mm256_set1_pd(a[1] * yin), _mm256_set1_pd(a[2]),
                        _mm256_set1_pd(a[3]), _mm256_set1_pd(a[4] * yin), _mm256_set1_pd(a[5]),
                        _mm256_set1_pd(0.5), _mm256_setzero_pd(), _mm256_set1_pd(src.width - 2),
                        _mm256_set1_pd(src.height - 2)};
  int n = 0;
  for (int x = 0; x + 4 <= width; x += 4)
    if (!four(src, k, x, out + x * 3)) left[n++] = x;
  return n;
}

#else

int bilinear_row_rgb_avx2(image_view, const std::array<double, 6>&, int, std::uint8_t*, int width, int* left) {
  int n = 0;
  for (int x = 0; x + 4 <= width; x += 4) left[n++] = x;
  return n;
}

#endif

}  // namespace ringfeed::image::geometry_detail
