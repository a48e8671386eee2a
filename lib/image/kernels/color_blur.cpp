// F.gaussian_blur on a PIL image, as torchvision 0.14 computes it: the PIL
// image becomes a uint8 tensor and goes through the tensor kernel
// (functional_tensor.gaussian_blur): a float32 2-D kernel, reflect padding,
// conv2d with one group per channel, torch.round (half to even), uint8.
//
// The kernel is reproduced operation for operation as torch 1.13 (Debian 12)
// computes it with its AVX2 dispatch:
// - torch.linspace(-h, h, k): exact integers or halves;
// - x / sigma, .pow(2) (x * x), * -0.5: float32, correctly rounded;
// - torch.exp: Vectorized<float>::exp, i.e. Sleef_expf8_u10 (libsleef 3.5,
//   AVX2 with FMA) — not the correctly rounded expf, and differs in the last
//   bit for about a third of the kernels; sleef_expf below is its algorithm;
// - pdf.sum(): ATen's cascade_sum (SumKernel.cpp): 8-float vectors in four
//   interleaved accumulators, then the scalar tail, then the lanes in order;
// - pdf / sum, and the 2-D kernel ky[i] * kx[j] (torch.mm with one inner
//   term: one rounded product).
// The convolution: conv2d with groups = channels (mkldnn is on) lands in
// oneDNN, whose kernels accumulate each output from 0 with fused
// multiply-adds in row-major tap order; a one-channel image with a small
// kernel lands in slow_conv2d (im2col, then Debian's reference BLAS sgemm:
// rounded products added in the same order). torch_uses_onednn() picks the
// same way; the loops below do either, with hardware FMA where the CPU has
// it and std::fma (exact, slower) where it does not.
#include <ringfeed/image/color.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "image/kernels/cpu_features.hpp"

namespace ringfeed::image {
namespace {

// Sleef 3.5's xexpf (sleefsimdsp.c) with vmla = fused multiply-add, one lane.
float sleef_expf(float d) {
  constexpr float r_ln2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  constexpr float l2u = 0.693145751953125f;
  constexpr float l2l = 1.428606765330187045e-06f;
  const int q = static_cast<int>(std::nearbyint(d * r_ln2));  // cvtps2dq: nearest, ties to even
  float s = std::fma(static_cast<float>(q), -l2u, d);
  s = std::fma(static_cast<float>(q), -l2l, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  u = 1.0f + std::fma(s * s, u, s);
  // vldexp2: u · 2^(q >> 1) · 2^(q − (q >> 1)), two rounded products.
  const int q1 = q >> 1;
  u = u * std::ldexp(1.0f, q1) * std::ldexp(1.0f, q - q1);
  if (d < -104.0f) u = 0.0f;
  if (1e10f < d) u = std::numeric_limits<float>::infinity();
  return u;
}

struct vec8 {
  float v[8] = {};
  vec8& operator+=(const vec8& o) {
    for (int i = 0; i < 8; ++i) v[i] += o.v[i];
    return *this;
  }
};

std::int64_t ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  return static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(x) - 1));
}

// ATen's multi_row_sum: `load(i, k)` is element k of row i; four levels of
// partial sums so that long rows keep their precision.
template <class Acc, class Load>
std::array<Acc, 4> multi_row_sum(const Load& load, std::int64_t size) {
  constexpr int levels = 4;
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(size) / levels);
  const std::int64_t level_step = std::int64_t{1} << level_power;
  const std::int64_t level_mask = level_step - 1;
  Acc acc[levels][4] = {};
  std::int64_t i = 0;
  while (i + level_step <= size) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i)
      for (int k = 0; k < 4; ++k) acc[0][k] += load(i, k);
    for (int j = 1; j < levels; ++j) {
      for (int k = 0; k < 4; ++k) {
        acc[j][k] += acc[j - 1][k];
        acc[j - 1][k] = Acc{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < 4; ++k) acc[0][k] += load(i, k);
  for (int j = 1; j < levels; ++j)
    for (int k = 0; k < 4; ++k) acc[0][k] += acc[j][k];
  return {acc[0][0], acc[0][1], acc[0][2], acc[0][3]};
}

// ATen's row_sum: the row seen as (-1, 4), its column sums, the tail into
// the first, then the four added in order.
template <class Acc, class Elem>
Acc row_sum(const Elem& elem, std::int64_t size) {
  const std::int64_t size_ilp = size / 4;
  auto partial = multi_row_sum<Acc>([&](std::int64_t i, int k) { return elem(i * 4 + k); }, size_ilp);
  for (std::int64_t i = size_ilp * 4; i < size; ++i) partial[0] += elem(i);
  for (int k = 1; k < 4; ++k) partial[0] += partial[static_cast<std::size_t>(k)];
  return partial[0];
}

// torch.sum of a contiguous float32 vector (cascade_sum, AVX2: 8 lanes).
float torch_sum(const float* x, std::int64_t n) {
  if (n < 8) return row_sum<float>([&](std::int64_t i) { return x[i]; }, n);
  const std::int64_t vectors = n / 8;
  const vec8 lanes = row_sum<vec8>(
      [&](std::int64_t i) {
        vec8 v;
        std::memcpy(v.v, x + i * 8, sizeof v.v);
        return v;
      },
      vectors);
  float total = 0.0f;
  for (std::int64_t k = vectors * 8; k < n; ++k) total += x[k];
  for (float l : lanes.v) total += l;
  return total;
}

void check_kernel(int size, double sigma) {
  if (size < 1 || size % 2 == 0)
    throw std::invalid_argument("gaussian_blur: kernel_size should have odd and positive integers, not " +
                                std::to_string(size));
  if (!(sigma > 0.0) || !std::isfinite(sigma))
    throw std::invalid_argument("gaussian_blur: sigma should have positive values, not " + std::to_string(sigma));
}

inline int reflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

// The running sums of one output row (`n` floats) over the taps in
// row-major order: fused multiply-adds (oneDNN's order), or rounded products
// then adds (reference BLAS sgemm after im2col: torch's slow_conv2d).
template <bool fused>
[[gnu::always_inline]] inline void accumulate(float* a, const float* in, float w, std::size_t n) {
  if constexpr (fused) {
    for (std::size_t e = 0; e < n; ++e) a[e] = std::fma(w, in[e], a[e]);
  } else {
    for (std::size_t e = 0; e < n; ++e) a[e] = a[e] + w * in[e];  // no contraction: -ffp-contract=off
  }
}

// Blocks of 32 outputs keep their sums in registers across all taps; each
// output's own order of operations is the same either way.
template <bool fused>
[[gnu::always_inline]] inline void convolve_row(const float* const* rows, const float* kernel, int kx, int ky,
                                                int step, float* acc, std::size_t n) {
  constexpr std::size_t block = 32;
  std::size_t e0 = 0;
  for (; e0 + block <= n; e0 += block) {
    float a[block] = {};
    for (int i = 0; i < ky; ++i)
      for (int j = 0; j < kx; ++j)
        accumulate<fused>(a, rows[i] + static_cast<std::ptrdiff_t>(j) * step + e0, kernel[i * kx + j], block);
    std::memcpy(acc + e0, a, sizeof a);
  }
  if (e0 == n) return;
  std::fill(acc + e0, acc + n, 0.0f);
  for (int i = 0; i < ky; ++i)
    for (int j = 0; j < kx; ++j)
      accumulate<fused>(acc + e0, rows[i] + static_cast<std::ptrdiff_t>(j) * step + e0, kernel[i * kx + j], n - e0);
}

// A run of kernel taps the SIMD loops visit, in row-major order: taps
// [begin, end) of one kernel row, all denormal or all normal. Two kinds of
// tap are exact no-ops on a running sum a ≥ 0 of pixels x in [0, 255], and
// are skipped:
// - w = 0 (in no run): fma(0, x, a) = a + 0·x = a.
// - w denormal (< 2^-126, as the far taps of a small sigma are), once
//   a ≥ 2^-93: w·x < 2^-118, less than half an ulp of a (≥ 2^-117), so
//   a + w·x (or a + the rounded w·x) rounds back to a.
// Only the denormal taps met while a sum is still tiny (the kernel's first
// rows) are computed, as the reference does.
struct blur_run {
  static constexpr float settled = 0x1p-93f;
  int row;  // kernel row
  int begin, end;  // kernel columns
  bool tiny;  // the weights are denormal
};

struct blur_job {
  const float* padded;
  std::size_t padded_stride;
  const float* kernel;
  int kx, ky, channels;
  bool fused;
  float* acc;
  const float** rows;  // ky row pointers
  const blur_run* runs;  // the non-zero taps, row-major
  std::size_t run_count;
  mutable_image_view out;
  float* sums;  // null, or where each row's float sums are copied (set_blur_sums)
};

// The sums of row y, before torch.round: copied out for the test hook.
inline void keep_sums(const blur_job& b, int y, std::size_t n) {
  if (b.sums != nullptr) std::memcpy(b.sums + static_cast<std::size_t>(y) * n, b.acc, n * sizeof(float));
}

// The portable loops, for CPUs without AVX2 + FMA and for the test hook
// (std::fma from libm: exact, slower).
template <bool fused>
[[gnu::always_inline]] inline void run_blur(const blur_job& b) {
  const std::size_t n = static_cast<std::size_t>(b.out.width) * static_cast<std::size_t>(b.channels);
  const float** rows = b.rows;
  for (int y = 0; y < b.out.height; ++y) {
    for (int i = 0; i < b.ky; ++i)
      rows[static_cast<std::size_t>(i)] = b.padded + static_cast<std::size_t>(y + i) * b.padded_stride;
    convolve_row<fused>(rows, b.kernel, b.kx, b.ky, b.channels, b.acc, n);
    keep_sums(b, y, n);
    std::uint8_t* out = b.out.row(y);
    for (std::size_t e = 0; e < n; ++e)  // torch.round: half to even; then uint8
      out[e] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(b.acc[e]), 0.0f, 255.0f));
  }
}

void run_blur_baseline(const blur_job& b) {
  if (b.fused) run_blur<true>(b);
  else run_blur<false>(b);
}

#if defined(__x86_64__) && defined(__GNUC__)
// a += w · (V vectors at r), as accumulate<fused> does.
template <bool fused, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void tap_avx2(__m256* a, float w, const float* r) {
  const __m256 wv = _mm256_set1_ps(w);
  for (int k = 0; k < V; ++k) {
    const __m256 x = _mm256_loadu_ps(r + 8 * k);
    if constexpr (fused) a[k] = _mm256_fmadd_ps(wv, x, a[k]);
    else a[k] = _mm256_add_ps(a[k], _mm256_mul_ps(wv, x));  // -ffp-contract=off: not fused
  }
}

// One block of V vectors of 8 outputs: the sums stay in registers across
// all taps (the auto-vectorized loops above spill them to the stack on every
// tap), and each output sees the same operations in the same order as
// accumulate<fused>, save the taps that provably leave it unchanged (see
// blur_run): bit-identical, and clear of most of the denormal operands that
// cost the hardware a microcode assist (~150 cycles) per instruction.
template <bool fused, int V>
__attribute__((target("avx2,fma"), always_inline)) inline void block_avx2(const blur_job& b, std::size_t e0) {
  const __m256 settled = _mm256_set1_ps(blur_run::settled);
  __m256 a[V];
  for (int k = 0; k < V; ++k) a[k] = _mm256_setzero_ps();
  for (const blur_run* run = b.runs; run != b.runs + b.run_count; ++run) {
    const float* r = b.rows[run->row] + static_cast<std::ptrdiff_t>(run->begin) * b.channels + e0;
    const float* w = b.kernel + static_cast<std::ptrdiff_t>(run->row) * b.kx;
    if (!run->tiny) {
      for (int j = run->begin; j < run->end; ++j, r += b.channels) tap_avx2<fused, V>(a, w[j], r);
      continue;
    }
    for (int j = run->begin; j < run->end; ++j, r += b.channels) {
      __m256 ok = _mm256_cmp_ps(a[0], settled, _CMP_GE_OQ);
      for (int k = 1; k < V; ++k) ok = _mm256_and_ps(ok, _mm256_cmp_ps(a[k], settled, _CMP_GE_OQ));
      if (_mm256_movemask_ps(ok) == 0xFF) break;  // and a no longer changes in this run
      tap_avx2<fused, V>(a, w[j], r);
    }
  }
  for (int k = 0; k < V; ++k) _mm256_storeu_ps(b.acc + e0 + 8 * k, a[k]);
}

template <bool fused>
__attribute__((target("avx2,fma"))) void run_blur_avx2(const blur_job& b) {
  const std::size_t n = static_cast<std::size_t>(b.out.width) * static_cast<std::size_t>(b.channels);
  const float** rows = b.rows;
  const __m256 lo = _mm256_setzero_ps();
  const __m256 hi = _mm256_set1_ps(255.0f);
  for (int y = 0; y < b.out.height; ++y) {
    for (int i = 0; i < b.ky; ++i)
      rows[static_cast<std::size_t>(i)] = b.padded + static_cast<std::size_t>(y + i) * b.padded_stride;
    std::size_t e = 0;
    for (; e + 64 <= n; e += 64) block_avx2<fused, 8>(b, e);
    for (; e + 8 <= n; e += 8) block_avx2<fused, 1>(b, e);
    if (e < n) {
      std::fill(b.acc + e, b.acc + n, 0.0f);
      for (int i = 0; i < b.ky; ++i)
        for (int j = 0; j < b.kx; ++j)
          accumulate<fused>(b.acc + e, rows[i] + static_cast<std::ptrdiff_t>(j) * b.channels + e,
                            b.kernel[i * b.kx + j], n - e);
    }
    keep_sums(b, y, n);
    // torch.round (half to even), clamped, to uint8.
    std::uint8_t* out = b.out.row(y);
    e = 0;
    for (; e + 8 <= n; e += 8) {
      __m256 v = _mm256_round_ps(_mm256_loadu_ps(b.acc + e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m256i q = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
      const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + e), _mm_packus_epi16(w16, w16));
    }
    for (; e < n; ++e) out[e] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(b.acc[e]), 0.0f, 255.0f));
  }
}

void run_blur_avx2(const blur_job& b) {
  if (b.fused) run_blur_avx2<true>(b);
  else run_blur_avx2<false>(b);
}
#else
void run_blur_avx2(const blur_job& b) { run_blur_baseline(b); }
#endif

// Which convolution torch 1.13's conv2d picks (ConvParams::use_mkldnn) for
// this (1, C, H + 2py, W + 2px) input and (C, 1, ky, kx) weight with groups
// = C, one thread: oneDNN when groups > 1 (RGB), or when both kernel sides
// exceed 3, or the padded input has more than 20480 values; else
// slow_conv2d (im2col + BLAS sgemm). A 1x1 kernel is 1.0f either way.
bool torch_uses_onednn(int channels, int kx, int ky, int padded_w, int padded_h) {
  return channels > 1 || (kx > 3 && ky > 3) ||
         static_cast<std::int64_t>(padded_w) * padded_h * channels > 20480;
}

std::atomic<bool> simd_enabled{true};  // set_blur_simd
thread_local std::vector<float>* kept_sums = nullptr;  // set_blur_sums

struct blur_scratch {
  std::vector<float> kernel1d;
  std::vector<float> padded;
  std::vector<float> kernel;
  std::vector<float> acc;
  std::vector<const float*> rows;
  std::vector<blur_run> runs;
};

}  // namespace

void set_blur_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }
void set_blur_sums(std::vector<float>* sums) noexcept { kept_sums = sums; }

double gaussian_default_sigma(int kernel_size) noexcept { return kernel_size * 0.15 + 0.35; }

namespace {

// _get_gaussian_kernel1d into `pdf` (size floats); see the file comment.
void fill_kernel1d(int size, double sigma, float* pdf) {
  check_kernel(size, sigma);
  const auto start = static_cast<float>(-(size - 1) * 0.5);
  const auto end = static_cast<float>((size - 1) * 0.5);
  const float step = size > 1 ? (end - start) / static_cast<float>(size - 1) : 0.0f;
  const auto s = static_cast<float>(sigma);
  for (int i = 0; i < size; ++i) {
    const float x = i < size / 2 ? start + step * static_cast<float>(i)
                                 : end - step * static_cast<float>(size - i - 1);
    const float t = x / s;
    pdf[i] = sleef_expf(-0.5f * (t * t));
  }
  const float sum = torch_sum(pdf, size);
  for (int i = 0; i < size; ++i) pdf[i] = pdf[i] / sum;
}

}  // namespace

std::vector<float> gaussian_kernel1d(int size, double sigma) {
  check_kernel(size, sigma);
  std::vector<float> k(static_cast<std::size_t>(size));
  fill_kernel1d(size, sigma, k.data());
  return k;
}

void gaussian_blur(image_view src, std::array<int, 2> kernel_size, std::array<double, 2> sigma,
                   image_buffer& dst) {
  if (src.channels < 1 || src.channels > 4 || src.width < 1 || src.height < 1 || src.data == nullptr)
    throw std::invalid_argument("gaussian_blur: needs a non-empty image of 1 to 4 channels");
  check_kernel(kernel_size[0], sigma[0]);
  check_kernel(kernel_size[1], sigma[1]);
  const int px = kernel_size[0] / 2;
  const int py = kernel_size[1] / 2;
  if (px >= src.width || py >= src.height)
    throw std::invalid_argument("gaussian_blur: kernel " + std::to_string(kernel_size[0]) + "x" +
                                std::to_string(kernel_size[1]) + " is too large for a " + std::to_string(src.width) +
                                "x" + std::to_string(src.height) +
                                " image (reflect padding needs kernel_size / 2 < the side)");
  thread_local blur_scratch scratch;
  const auto kw = static_cast<std::size_t>(kernel_size[0]);
  const auto kh = static_cast<std::size_t>(kernel_size[1]);
  scratch.kernel1d.resize(kw + kh);
  float* kx = scratch.kernel1d.data();
  float* ky = kx + kw;
  fill_kernel1d(kernel_size[0], sigma[0], kx);
  fill_kernel1d(kernel_size[1], sigma[1], ky);
  scratch.kernel.resize(kw * kh);  // torch.mm(ky[:, None], kx[None, :])
  for (std::size_t i = 0; i < kh; ++i)
    for (std::size_t j = 0; j < kw; ++j) scratch.kernel[i * kw + j] = ky[i] * kx[j];

  const int c = src.channels;
  const int pw = src.width + 2 * px;
  const int ph = src.height + 2 * py;
  const std::size_t pstride = static_cast<std::size_t>(pw) * static_cast<std::size_t>(c);
  scratch.padded.resize(pstride * static_cast<std::size_t>(ph));
  for (int y = 0; y < ph; ++y) {
    const std::uint8_t* in = src.row(reflect(y - py, src.height));
    float* out = scratch.padded.data() + static_cast<std::size_t>(y) * pstride;
    for (int x = 0; x < pw; ++x) {
      const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(reflect(x - px, src.width)) * c;
      for (int k = 0; k < c; ++k) out[x * c + k] = static_cast<float>(p[k]);
    }
  }
  scratch.acc.resize(static_cast<std::size_t>(src.width) * static_cast<std::size_t>(c));
  scratch.rows.resize(static_cast<std::size_t>(ph));
  dst.reset(src.width, src.height, c);
  scratch.runs.clear();
  for (int i = 0; i < kernel_size[1]; ++i) {
    const float* w = scratch.kernel.data() + static_cast<std::size_t>(i) * kw;
    for (int j = 0; j < kernel_size[0];) {
      if (w[j] == 0.0f) {
        ++j;
        continue;
      }
      const bool tiny = std::fpclassify(w[j]) == FP_SUBNORMAL;
      int e = j + 1;
      while (e < kernel_size[0] && w[e] != 0.0f && (std::fpclassify(w[e]) == FP_SUBNORMAL) == tiny) ++e;
      scratch.runs.push_back({i, j, e, tiny});
      j = e;
    }
  }
  const bool fused = torch_uses_onednn(c, kernel_size[0], kernel_size[1], pw, ph);
  blur_job job{scratch.padded.data(), pstride, scratch.kernel.data(), kernel_size[0], kernel_size[1],
               c, fused, scratch.acc.data(), scratch.rows.data(), scratch.runs.data(),
               scratch.runs.size(), dst.view(), nullptr};
  if (kept_sums != nullptr) {
    kept_sums->assign(static_cast<std::size_t>(src.width) * static_cast<std::size_t>(c) *
                          static_cast<std::size_t>(src.height), 0.0f);
    job.sums = kept_sums->data();
  }
  if (simd_enabled.load(std::memory_order_relaxed) && detail::cpu_has_avx2_fma()) run_blur_avx2(job);
  else run_blur_baseline(job);
}

}  // namespace ringfeed::image
