// torch's CPU interpolate kernels (see torch_resize.hpp). Each weight and
// index is computed in the type torch computes it in (double for the uint8
// kernels, float for the float32 ones), with its mixed float / double
// promotions spelled out where the C++ of UpSampleKernel.cpp relies on them.
#include <ringfeed/image/torch_resize.hpp>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/resample_detail.hpp"
#include "image/kernels/simd_clones.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ringfeed::image::torch_resize {

namespace {

using i64 = std::int64_t;

// HelperInterpLinear::aa_filter: the triangle.
template <class S>
S linear_filter(S x) {
  x = std::abs(x);
  if (x < 1.0) return static_cast<S>(1.0 - x);
  return 0;
}

// HelperInterpCubic::aa_filter: Keys' cubic with parameter `a`
// (cubic_convolution1 / cubic_convolution2 of UpSample.h).
template <class S>
S cubic_filter(S x, S a) {
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The taps of one output side: for output i, `size[i]` source indices from
// `min[i]` with weights w[i · span ...].
template <class S>
struct taps {
  std::vector<i64> min, size;
  std::vector<S> w;
  int span = 0;
  S wt_max = 0;
};

template <class S>
S filter(mode m, bool keys_half, S x) {
  if (m == mode::bilinear) return linear_filter<S>(x);
  return cubic_filter<S>(x, keys_half ? static_cast<S>(-0.5) : static_cast<S>(-0.75));
}

// _compute_index_ranges_weights: antialias → _compute_indices_min_size_weights_aa
// (Pillow's bounds), else _compute_indices_min_size_weights (torch's index
// and lambda, border taps folded).
template <class S>
taps<S> compute_taps(i64 in, i64 out, mode m, bool antialias, S scale) {
  const int interp = m == mode::bilinear ? 2 : 4;
  S support;
  taps<S> t;
  if (antialias) {
    support = scale >= 1.0 ? static_cast<S>((interp * 0.5) * scale) : static_cast<S>(interp * 0.5);
    t.span = static_cast<int>(std::ceil(support)) * 2 + 1;
  } else {
    support = static_cast<S>(interp * 0.5);
    t.span = interp;
  }
  t.min.resize(static_cast<std::size_t>(out));
  t.size.resize(static_cast<std::size_t>(out));
  t.w.assign(static_cast<std::size_t>(out) * static_cast<std::size_t>(t.span), S(0));
  for (i64 i = 0; i < out; ++i) {
    S* w = t.w.data() + i * t.span;
    i64 xmin = 0, xsize = 0;
    if (antialias) {
      const auto center = static_cast<S>(scale * (static_cast<double>(i) + 0.5));
      const auto invscale = static_cast<S>(scale >= 1.0 ? 1.0 / scale : 1.0);
      xmin = std::max(static_cast<i64>(static_cast<double>(center - support) + 0.5), i64{0});
      xsize = std::min(static_cast<i64>(static_cast<double>(center + support) + 0.5), in) - xmin;
      xsize = std::clamp(xsize, i64{0}, static_cast<i64>(t.span));
      S total = 0;
      for (i64 j = 0; j < xsize; ++j) {
        const double arg = (static_cast<double>(static_cast<S>(j + xmin) - center) + 0.5) * invscale;
        w[j] = filter<S>(m, true, static_cast<S>(arg));
        total += w[j];
      }
      if (total != 0)
        for (i64 j = 0; j < xsize; ++j) {
          w[j] /= total;
          t.wt_max = std::max(t.wt_max, w[j]);
        }
    } else {
      const bool cubic = t.span > 2;
      S real = scale * (static_cast<S>(i) + static_cast<S>(0.5)) - static_cast<S>(0.5);
      if (!cubic && real < 0) real = 0;
      // guard_index_and_lambda: floorf, whatever the type
      const i64 index = std::min(static_cast<i64>(std::floor(static_cast<float>(real))), in - 1);
      const S lambda = std::min(std::max(real - static_cast<S>(index), S(0)), S(1));
      const i64 half = t.span / 2;
      const i64 unbound_min = index - half + 1;
      const i64 unbound_max = index + half + 1;
      xmin = std::max(unbound_min, i64{0});
      xsize = std::clamp(std::min(unbound_max, in) - xmin, i64{0}, static_cast<i64>(t.span));
      i64 at = 0;
      for (i64 j = 0; j < t.span; ++j) {
        w[j] = 0;
        const S v = filter<S>(m, false, static_cast<S>(j + 1 - half) - lambda);
        if (unbound_min + j <= 0) {
          at = 0;
        } else if (unbound_min + j >= in - 1) {
          at = xsize - 1;
        }
        w[at] += v;
        t.wt_max = std::max(t.wt_max, w[at]);
        ++at;
      }
    }
    t.min[static_cast<std::size_t>(i)] = xmin;
    t.size[static_cast<std::size_t>(i)] = xsize;
  }
  return t;
}

// _compute_index_ranges_int16_weights: the double weights scaled to int16
// at the most bits that keep the largest under 2^15.
struct int_taps {
  std::vector<i64> min, size;
  std::vector<std::int16_t> w;
  int span = 0;
  unsigned precision = 0;
};

int_taps int16_taps(i64 in, i64 out, mode m, bool antialias) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const taps<double> t = compute_taps<double>(in, out, m, antialias, scale);
  int_taps r;
  for (r.precision = 0; r.precision < 22; ++r.precision) {
    const int next = static_cast<int>(0.5 + t.wt_max * (1 << (r.precision + 1)));
    if (next >= (1 << 15)) break;
  }
  r.min = t.min;
  r.size = t.size;
  r.span = t.span;
  r.w.resize(t.w.size());
  for (std::size_t k = 0; k < t.w.size(); ++k) {
    const double v = t.w[k] * (1 << r.precision);
    r.w[k] = static_cast<std::int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
  }
  return r;
}

std::uint8_t clip8(int acc, unsigned precision) {
  return static_cast<std::uint8_t>(std::clamp(acc >> precision, 0, 255));
}

// basic_loop_aa_horizontal<uint8_t>: along each row; C channels
// interleaved (a compile-time count, so the tap loop vectorises).
template <int C>
void horizontal_rows(image_view src, const int_taps& t, const mutable_image_view& d, int c_runtime) {
  const int c = C > 0 ? C : c_runtime;
  const int out_w = static_cast<int>(t.min.size());
  const int bias = 1 << (t.precision - 1);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* row = src.row(y);
    std::uint8_t* o = d.row(y);
    for (int x = 0; x < out_w; ++x) {
      const std::int16_t* w = t.w.data() + static_cast<std::size_t>(x) * t.span;
      const std::uint8_t* s = row + t.min[static_cast<std::size_t>(x)] * c;
      const i64 n = t.size[static_cast<std::size_t>(x)];
      for (int ch = 0; ch < c; ++ch) {
        int acc = bias + s[ch] * w[0];
        for (i64 j = 1; j < n; ++j) acc += s[j * c + ch] * w[j];
        o[x * c + ch] = clip8(acc, t.precision);
      }
    }
  }
}

// RGB rows on AVX2: the resampler's kernel (Pillow-SIMD's layout, which
// torch's own AVX2 kernel also comes from) with torch's weights and
// precision. Exact integer sums: the same bytes as horizontal_rows.
void horizontal_rgb_simd(image_view src, const int_taps& t, const mutable_image_view& d) {
  struct scratch {
    std::vector<std::int32_t> k;
    std::vector<int> lo, len;
    std::vector<std::uint8_t> tile, out_tile;
  };
  thread_local scratch s;
  const std::size_t n = t.min.size();
  s.k.assign(t.w.begin(), t.w.end());
  s.lo.resize(n);
  s.len.resize(n);
  int read_lo = static_cast<int>(src.width), read_hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    s.lo[i] = static_cast<int>(t.min[i]);
    s.len[i] = static_cast<int>(t.size[i]);
    read_lo = std::min(read_lo, s.lo[i]);
    read_hi = std::max(read_hi, s.lo[i] + s.len[i]);
  }
  detail::horizontal_taps taps{s.k.data(), s.lo.data(), s.len.data(), static_cast<int>(n),
                               t.span,     read_lo,     read_hi};
  taps.precision = static_cast<int>(t.precision);
  detail::horizontal_rgb_simd(src.data, src.stride, 0, src.height, taps, d.data, d.stride, s.tile, s.out_tile);
}

void horizontal_u8(image_view src, const int_taps& t, image_buffer& dst) {
  dst.reset(static_cast<int>(t.min.size()), src.height, src.channels);
  const mutable_image_view d = dst.view();
  if (src.channels == 3 && t.precision > 0 && detail::resample_simd() && detail::cpu_has_avx2())
    return horizontal_rgb_simd(src, t, d);
  switch (src.channels) {
    case 1: return horizontal_rows<1>(src, t, d, 1);
    case 3: return horizontal_rows<3>(src, t, d, 3);
    default: return horizontal_rows<0>(src, t, d, src.channels);
  }
}

// basic_loop_aa_vertical<uint8_t>: across rows. The same integer sums,
// accumulated a row at a time (the order of integer additions does not
// change them).
// Two source rows per sweep of the accumulators (half the int32 traffic);
// compiled for AVX2 and the baseline, picked at load time.
RINGFEED_AVX2_CLONES
void vertical_rows(const std::uint8_t* first, std::ptrdiff_t stride, const std::int16_t* w, int n, int bias,
                   unsigned precision, int row_len, int* acc, std::uint8_t* o) {
  for (int k = 0; k < row_len; ++k) acc[k] = bias;
  int j = 0;
  for (; j + 1 < n; j += 2) {
    const std::uint8_t* r0 = first + j * stride;
    const std::uint8_t* r1 = r0 + stride;
    const int w0 = w[j], w1 = w[j + 1];
    for (int k = 0; k < row_len; ++k) acc[k] += r0[k] * w0 + r1[k] * w1;
  }
  if (j < n) {
    const std::uint8_t* r0 = first + j * stride;
    const int w0 = w[j];
    for (int k = 0; k < row_len; ++k) acc[k] += r0[k] * w0;
  }
  for (int k = 0; k < row_len; ++k) o[k] = static_cast<std::uint8_t>(std::clamp(acc[k] >> precision, 0, 255));
}

#if defined(__x86_64__) && defined(__GNUC__)
// vertical_rows on AVX2, 16 bytes of the row at a time with the sums in
// registers: two rows' bytes interleaved as int16 pairs, times their two
// weights by one pmaddwd (r0·w0 + r1·w1 in int32, as the scalar loop);
// shifted, then clamped to 0..255 by the saturating packs. The same
// integer sums: the same bytes. The last row_len % 16 bytes go the scalar
// way.
__attribute__((target("avx2"))) void vertical_rows_avx2(const std::uint8_t* first, std::ptrdiff_t stride,
                                                        const std::int16_t* w, int n, int bias, unsigned precision,
                                                        int row_len, std::uint8_t* o) {
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(precision));
  const __m256i start = _mm256_set1_epi32(bias);
  int k = 0;
  for (; k + 16 <= row_len; k += 16) {
    __m256i lo = start, hi = start;
    int j = 0;
    for (; j + 1 < n; j += 2) {
      const std::uint8_t* r0 = first + j * stride + k;
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + stride));
      const std::uint32_t w01 = static_cast<std::uint32_t>(static_cast<std::uint16_t>(w[j + 1])) << 16 |
                                static_cast<std::uint16_t>(w[j]);
      const __m256i pair = _mm256_set1_epi32(static_cast<int>(w01));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)), pair));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)), pair));
    }
    if (j < n) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(first + j * stride + k));
      const __m256i one = _mm256_set1_epi32(static_cast<std::uint16_t>(w[j]));
      const __m128i zero = _mm_setzero_si128();
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, zero)), one));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, zero)), one));
    }
    lo = _mm256_sra_epi32(lo, shift);
    hi = _mm256_sra_epi32(hi, shift);
    const __m128i lo16 = _mm_packs_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    const __m128i hi16 = _mm_packs_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + k), _mm_packus_epi16(lo16, hi16));
  }
  for (; k < row_len; ++k) {
    int acc = bias;
    for (int j = 0; j < n; ++j) acc += first[j * stride + k] * w[j];
    o[k] = static_cast<std::uint8_t>(std::clamp(acc >> precision, 0, 255));
  }
}
#endif

void vertical_u8(image_view src, const int_taps& t, image_buffer& dst) {
  const int c = src.channels;
  const int out_h = static_cast<int>(t.min.size());
  const int row_len = src.width * c;
  dst.reset(src.width, out_h, c);
  const mutable_image_view d = dst.view();
  const int bias = 1 << (t.precision - 1);
#if defined(__x86_64__) && defined(__GNUC__)
  if (t.precision > 0 && detail::resample_simd() && detail::cpu_has_avx2()) {
    for (int y = 0; y < out_h; ++y) {
      const i64 n = t.size[static_cast<std::size_t>(y)];
      vertical_rows_avx2(src.row(static_cast<int>(t.min[static_cast<std::size_t>(y)])), src.stride,
                         t.w.data() + static_cast<std::size_t>(y) * t.span, static_cast<int>(std::max<i64>(n, 1)),
                         bias, t.precision, row_len, d.row(y));
    }
    return;
  }
#endif
  thread_local std::vector<int> acc;
  acc.resize(static_cast<std::size_t>(row_len));
  for (int y = 0; y < out_h; ++y) {
    const std::int16_t* w = t.w.data() + static_cast<std::size_t>(y) * t.span;
    const i64 y0 = t.min[static_cast<std::size_t>(y)];
    const i64 n = t.size[static_cast<std::size_t>(y)];
    vertical_rows(src.row(static_cast<int>(y0)), src.stride, w, static_cast<int>(std::max<i64>(n, 1)), bias,
                  t.precision, row_len, acc.data(), d.row(y));
  }
}

// upsample_nearest2d's index: floor(i · float(in / out)), at most in − 1.
std::vector<i64> nearest_index(i64 in, i64 out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<i64> idx(static_cast<std::size_t>(out));
  for (i64 i = 0; i < out; ++i)
    idx[static_cast<std::size_t>(i)] =
        std::min(static_cast<i64>(std::floor(scale * static_cast<float>(i))), in - 1);
  return idx;
}

void check(size2 in, size2 out, int channels) {
  if (in.width < 1 || in.height < 1 || out.width < 1 || out.height < 1 || channels < 1)
    throw std::invalid_argument("torch resize: sizes must be positive (input " + std::to_string(in.width) + "x" +
                                std::to_string(in.height) + ", output " + std::to_string(out.width) + "x" +
                                std::to_string(out.height) + ")");
}

// --- float32 -------------------------------------------------------------------------------

// One separable float pass (_separable_upsample_generic_Nd_kernel_impl_single_dim
// on float): `lines` lines of `in` samples `step` apart, lines `line_step`
// apart in the source and `out_line_step` in the destination.
void pass_f32(const float* src, float* dst, const taps<float>& t, i64 lines, i64 line_step, i64 out_line_step,
              i64 step, i64 out_step) {
  const auto out = static_cast<i64>(t.min.size());
  for (i64 l = 0; l < lines; ++l)
    for (i64 i = 0; i < out; ++i) {
      const float* w = t.w.data() + i * t.span;
      const float* s = src + l * line_step + t.min[static_cast<std::size_t>(i)] * step;
      float acc = s[0] * w[0];
      for (i64 j = 1; j < t.size[static_cast<std::size_t>(i)]; ++j) acc += s[j * step] * w[j];
      dst[l * out_line_step + i * out_step] = acc;
    }
}

// compute_source_index_and_lambda (linear, float).
struct linear_tap {
  i64 i0, i1;
  float l0, l1;
};
std::vector<linear_tap> linear_taps(i64 in, i64 out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<linear_tap> r(static_cast<std::size_t>(out));
  for (i64 i = 0; i < out; ++i) {
    linear_tap& t = r[static_cast<std::size_t>(i)];
    if (in == out) {
      t = {i, i, 1.0f, 0.0f};
      continue;
    }
    float real = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (real < 0) real = 0;
    t.i0 = std::min(static_cast<i64>(std::floor(real)), in - 1);
    t.l1 = std::min(std::max(real - static_cast<float>(t.i0), 0.0f), 1.0f);
    t.i1 = t.i0 + (t.i0 < in - 1 ? 1 : 0);
    t.l0 = 1.0f - t.l1;
  }
  return r;
}

// HelperInterpCubic::compute_indices_weights (float, A = −0.75).
struct cubic_tap {
  i64 i[4];
  float w[4];
};
std::vector<cubic_tap> cubic_taps(i64 in, i64 out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  constexpr float a = -0.75f;
  std::vector<cubic_tap> r(static_cast<std::size_t>(out));
  for (i64 i = 0; i < out; ++i) {
    cubic_tap& t = r[static_cast<std::size_t>(i)];
    const float real = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    const i64 index = std::min(static_cast<i64>(std::floor(real)), in - 1);
    const float lambda = std::min(std::max(real - static_cast<float>(index), 0.0f), 1.0f);
    const auto x1 = lambda;
    const auto x2 = static_cast<float>(1.0 - lambda);
    const auto conv1 = [](float x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
    const auto conv2 = [](float x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
    t.w[0] = conv2(static_cast<float>(x1 + 1.0));
    t.w[1] = conv1(x1);
    t.w[2] = conv1(x2);
    t.w[3] = conv2(static_cast<float>(x2 + 1.0));
    for (int j = 0; j < 4; ++j) t.i[j] = std::clamp(index + j - 1, i64{0}, in - 1);
  }
  return r;
}

}  // namespace

void resize_u8(image_view src, size2 out, mode m, bool antialias, image_buffer& dst) {
  check(src.size(), out, src.channels);
  const int c = src.channels;
  if (m == mode::nearest) {
    const auto xs = nearest_index(src.width, out.width);
    const auto ys = nearest_index(src.height, out.height);
    dst.reset(out.width, out.height, c);
    const mutable_image_view d = dst.view();
    for (int y = 0; y < out.height; ++y) {
      const std::uint8_t* s = src.row(static_cast<int>(ys[static_cast<std::size_t>(y)]));
      std::uint8_t* o = d.row(y);
      for (int x = 0; x < out.width; ++x)
        for (int ch = 0; ch < c; ++ch) o[x * c + ch] = s[xs[static_cast<std::size_t>(x)] * c + ch];
    }
    return;
  }
  const bool horizontal = out.width != src.width;
  const bool vertical = out.height != src.height;
  if (!horizontal && !vertical) {
    dst.assign(src);
    return;
  }
  if (horizontal && !vertical) return horizontal_u8(src, int16_taps(src.width, out.width, m, antialias), dst);
  if (!horizontal) return vertical_u8(src, int16_taps(src.height, out.height, m, antialias), dst);
  image_buffer mid;
  horizontal_u8(src, int16_taps(src.width, out.width, m, antialias), mid);
  vertical_u8(mid.view(), int16_taps(src.height, out.height, m, antialias), dst);
}

void resize_f32(const float* src, int channels, int height, int width, size2 out, mode m, bool antialias,
                std::vector<float>& dst) {
  check({width, height}, out, channels);
  const i64 in_plane = static_cast<i64>(height) * width;
  const i64 out_plane = static_cast<i64>(out.height) * out.width;
  dst.resize(static_cast<std::size_t>(channels * out_plane));
  if (m == mode::nearest) {
    const auto xs = nearest_index(width, out.width);
    const auto ys = nearest_index(height, out.height);
    for (i64 c = 0; c < channels; ++c)
      for (int y = 0; y < out.height; ++y)
        for (int x = 0; x < out.width; ++x)
          dst[static_cast<std::size_t>(c * out_plane + static_cast<i64>(y) * out.width + x)] =
              src[c * in_plane + ys[static_cast<std::size_t>(y)] * width + xs[static_cast<std::size_t>(x)]];
    return;
  }
  if (antialias) {
    // separable: the width (if it changes), then the height (if it does)
    const bool horizontal = out.width != width;
    const bool vertical = out.height != height;
    if (!horizontal && !vertical) {
      std::copy(src, src + channels * in_plane, dst.begin());
      return;
    }
    std::vector<float> mid;
    const float* from = src;
    if (horizontal) {
      float* to = vertical ? (mid.resize(static_cast<std::size_t>(channels) * height * out.width), mid.data())
                           : dst.data();
      const auto t = compute_taps<float>(width, out.width, m, true,
                                         static_cast<float>(width) / static_cast<float>(out.width));
      pass_f32(src, to, t, static_cast<i64>(channels) * height, width, out.width, 1, 1);
      from = to;
    }
    if (vertical) {
      const int w = out.width;
      const auto t = compute_taps<float>(height, out.height, m, true,
                                         static_cast<float>(height) / static_cast<float>(out.height));
      for (i64 c = 0; c < channels; ++c)
        pass_f32(from + c * static_cast<i64>(height) * w, dst.data() + c * out_plane, t, w, 1, 1, w, w);
    }
    return;
  }
  if (m == mode::bilinear) {
    const auto ht = linear_taps(height, out.height);
    const auto wt = linear_taps(width, out.width);
    // upsample_bilinear2d_kernel_impl_float: the channels-last kernel (four
    // products with the weights multiplied first, summed left to right)
    // for outputs of h + w ≤ 128 and for 3 channels on one thread (a
    // DataLoader worker); the generic one (rows first) otherwise.
    const bool four_products = out.height + out.width <= 128 || channels == 3;
    for (i64 c = 0; c < channels; ++c) {
      const float* p = src + c * in_plane;
      float* o = dst.data() + c * out_plane;
      for (int y = 0; y < out.height; ++y) {
        const linear_tap& h = ht[static_cast<std::size_t>(y)];
        const float* r0 = p + h.i0 * width;
        const float* r1 = p + h.i1 * width;
        for (int x = 0; x < out.width; ++x) {
          const linear_tap& w = wt[static_cast<std::size_t>(x)];
          if (four_products) {
            o[static_cast<i64>(y) * out.width + x] =
                r0[w.i0] * (h.l0 * w.l0) + r0[w.i1] * (h.l0 * w.l1) + r1[w.i0] * (h.l1 * w.l0) + r1[w.i1] * (h.l1 * w.l1);
            continue;
          }
          const float t0 = r0[w.i0] * w.l0 + r0[w.i1] * w.l1;
          const float t1 = r1[w.i0] * w.l0 + r1[w.i1] * w.l1;
          o[static_cast<i64>(y) * out.width + x] = t0 * h.l0 + t1 * h.l1;
        }
      }
    }
    return;
  }
  const auto ht = cubic_taps(height, out.height);
  const auto wt = cubic_taps(width, out.width);
  for (i64 c = 0; c < channels; ++c) {
    const float* p = src + c * in_plane;
    float* o = dst.data() + c * out_plane;
    for (int y = 0; y < out.height; ++y) {
      const cubic_tap& h = ht[static_cast<std::size_t>(y)];
      for (int x = 0; x < out.width; ++x) {
        const cubic_tap& w = wt[static_cast<std::size_t>(x)];
        float acc = 0;
        for (int k = 0; k < 4; ++k) {
          const float* r = p + h.i[k] * width;
          float t = r[w.i[0]] * w.w[0];
          for (int j = 1; j < 4; ++j) t += r[w.i[j]] * w.w[j];
          acc = k == 0 ? t * h.w[0] : acc + t * h.w[k];
        }
        o[static_cast<i64>(y) * out.width + x] = acc;
      }
    }
  }
}

void resize_u8_via_float(image_view src, size2 out, mode m, bool antialias, image_buffer& dst) {
  check(src.size(), out, src.channels);
  const int c = src.channels;
  const std::size_t plane = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.height);
  std::vector<float> planes(plane * static_cast<std::size_t>(c));
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int ch = 0; ch < c; ++ch)
        planes[static_cast<std::size_t>(ch) * plane + static_cast<std::size_t>(y) * src.width + x] =
            src.row(y)[x * c + ch];
  std::vector<float> resized;
  resize_f32(planes.data(), c, src.height, src.width, out, m, antialias, resized);
  dst.reset(out.width, out.height, c);
  const mutable_image_view d = dst.view();
  const std::size_t out_plane = static_cast<std::size_t>(out.width) * static_cast<std::size_t>(out.height);
  for (int ch = 0; ch < c; ++ch)
    for (int y = 0; y < out.height; ++y)
      for (int x = 0; x < out.width; ++x) {
        float v = resized[static_cast<std::size_t>(ch) * out_plane + static_cast<std::size_t>(y) * out.width + x];
        if (m == mode::bicubic) v = std::clamp(v, 0.0f, 255.0f);
        v = std::nearbyint(v);  // torch.round: half to even
        // .to(uint8): truncation to int32, the low byte (NaN gives 0)
        d.row(y)[x * c + ch] =
            (v >= -2147483648.0f && v < 2147483648.0f) ? static_cast<std::uint8_t>(static_cast<std::int32_t>(v)) : 0;
      }
}

}  // namespace ringfeed::image::torch_resize
