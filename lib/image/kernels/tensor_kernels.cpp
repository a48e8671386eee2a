// torchvision 0.14's functional_tensor kernels as torch 1.13 computes them on
// the CPU (see tensor_kernels.hpp). Compiled with -ffp-contract=off: every
// float expression here rounds each operation, as torch's separate tensor
// ops do, and the multiply-adds torch's AVX2 kernels fuse are std::fma.
#include <ringfeed/image/tensor_kernels.hpp>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/simd_clones.hpp"

namespace ringfeed::image::tensor {

namespace {

void require_channels(const char* op, image_view src) {
  if (src.channels != 1 && src.channels != 3)
    throw std::invalid_argument(std::string(op) + ": expected an L or RGB image, got " +
                                std::to_string(src.channels) + " channels");
}

// .to(torch.uint8) of a float32 tensor already clamped to [0, 255]:
// truncation (through int32, the same byte for [0, 255], so loops vectorize).
std::uint8_t to_u8(float v) {
  return static_cast<std::uint8_t>(static_cast<std::int32_t>(std::clamp(v, 0.0f, 255.0f)));
}

// _blend(img1, img2, ratio) for one element: (ratio·a + (1 − ratio)·b),
// each product and the sum a float32 op, clamped to [0, 255], truncated.
// `r` and `r2` are float32(ratio) and float32(1.0 − ratio) (Python floats
// made tensor scalars).
std::uint8_t blend_px(float r, float r2, float a, float b) {
  const float p = r * a;
  const float q = r2 * b;
  return to_u8(p + q);
}

// rgb_to_grayscale's (0.2989·r + 0.587·g + 0.114·b).to(uint8).
std::uint8_t gray_px(const std::uint8_t* px) {
  const float r = 0.2989f * static_cast<float>(px[0]);
  const float g = 0.587f * static_cast<float>(px[1]);
  const float b = 0.114f * static_cast<float>(px[2]);
  const float rg = r + g;
  return static_cast<std::uint8_t>(rg + b);
}

// One row of blend_with: out[i] = blend_px(r, r2, in[i], other[i]).
RINGFEED_V3_CLONES
void blend_row(const std::uint8_t* in, const float* other, std::size_t n, float r, float r2, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = blend_px(r, r2, static_cast<float>(in[i]), other[i]);
}

// Blends every element of src with a second image at `factor`:
// `other_row(y, row)` writes that image's row y (width × channels floats)
// into `row`. Row by row, so the blend itself is one vectorizable loop.
template <typename OtherRow>
void blend_with(image_view src, double factor, image_buffer& dst, OtherRow other_row) {
  dst.reset(src.width, src.height, src.channels);
  const float r = static_cast<float>(factor);
  const float r2 = static_cast<float>(1.0 - factor);
  const auto n = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.channels);
  thread_local std::vector<float> other;
  other.resize(n);
  for (int y = 0; y < src.height; ++y) {
    other_row(y, other.data());
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    blend_row(in, other.data(), n, r, r2, out);
  }
}

// A row of one constant value (the constant second images: zeros, a mean).
auto constant_row(image_view src, float value) {
  const auto n = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.channels);
  return [n, value](int, float* row) { std::fill_n(row, n, value); };
}

// utils::CeilLog2 of ATen's cpu/utils.h.
std::int64_t ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  std::int64_t bit = 63;
  const auto v = static_cast<std::uint64_t>(x - 1);
  while (((v >> bit) & 1u) == 0) --bit;
  return bit + 1;
}

constexpr int lanes = 8;  // Vectorized<float> on AVX2
using vec = std::array<float, lanes>;

void add_to(vec& a, const vec& b) {
  for (int k = 0; k < lanes; ++k) a[k] += b[k];
}

vec load(const float* p) {
  vec v;
  std::copy_n(p, lanes, v.begin());
  return v;
}

}  // namespace

float torch_sum(const float* values, std::int64_t n) {
  // vectorized_inner_sum: row_sum over the n / 8 whole vectors, the scalar
  // tail, then the vector's lanes in order.
  const std::int64_t vec_size = n / lanes;
  constexpr std::int64_t ilp = 4, levels = 4;
  const std::int64_t size_ilp = vec_size / ilp;
  // multi_row_sum<vec, 4>(rows of 4 vectors, size_ilp)
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(size_ilp) / levels);
  const std::int64_t level_step = std::int64_t{1} << level_power;
  const std::int64_t level_mask = level_step - 1;
  std::array<std::array<vec, ilp>, levels> acc{};
  const auto row = [&](std::int64_t i, std::int64_t k) { return load(values + (i * ilp + k) * lanes); };
  std::int64_t i = 0;
  while (i + level_step <= size_ilp) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i)
      for (std::int64_t k = 0; k < ilp; ++k) add_to(acc[0][k], row(i, k));
    for (std::int64_t j = 1; j < levels; ++j) {
      for (std::int64_t k = 0; k < ilp; ++k) {
        add_to(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = vec{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size_ilp; ++i)
    for (std::int64_t k = 0; k < ilp; ++k) add_to(acc[0][k], row(i, k));
  for (std::int64_t j = 1; j < levels; ++j)
    for (std::int64_t k = 0; k < ilp; ++k) add_to(acc[0][k], acc[j][k]);
  std::array<vec, ilp>& partial = acc[0];
  for (std::int64_t v = size_ilp * ilp; v < vec_size; ++v) add_to(partial[0], load(values + v * lanes));
  for (std::int64_t k = 1; k < ilp; ++k) add_to(partial[0], partial[k]);
  float total = 0;
  for (std::int64_t k = vec_size * lanes; k < n; ++k) total += values[k];
  for (int k = 0; k < lanes; ++k) total += partial[0][k];
  return 0.0f + total;  // CastStoreAccumulate into the zero-filled output
}

namespace {

std::atomic<bool> simd_enabled{true};  // set_affine_simd

// One F_t.affine call, resolved: the rescaled theta, the unnormalisation
// scales, the fill.
struct affine_job {
  image_view src;
  mutable_image_view dst;
  float ax, bx, cx, ay, by, cy;  // _gen_affine_grid's rescaled theta
  float scale_w, scale_h;        // grid_sample's size / 2
  std::array<float, 3> fill;
  bool fused_grid;               // torch 2.x's bmm: fma(1, c, fma(y, b, x·a))
  bool v2_blend;                 // v2's fill blend: (img − fill) · mask + fill
};

// Per-row scratch of affine_rows: the sampling positions' corner weights
// and indices, computed in a first, vectorizable pass.
struct affine_row_scratch {
  std::vector<float> nw, ne, sw, se;
  std::vector<int> x0, y0;
  void resize(int w) {
    for (auto* v : {&nw, &ne, &sw, &se}) v->resize(static_cast<std::size_t>(w));
    x0.resize(static_cast<std::size_t>(w));
    y0.resize(static_cast<std::size_t>(w));
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
bool rgb8_avx2(const affine_job& j, const affine_row_scratch& r, int x, std::uint8_t* o);
bool nearest8_avx2(const affine_job& j, const affine_row_scratch& r, int x, std::uint8_t* o);
int positions_avx2(const affine_job& j, affine_row_scratch& r, bool bilinear, float x_start, float py, float gx1,
                   float gy1);
#endif

// The rows of one affine, for `Bilinear` and `Masked` (a fill given), in
// two passes per row: the sampling positions, then the pixels. `Simd`: the
// copy inside affine_avx2 (always_inline), where std::fma, floor and
// nearbyint are single instructions and positions_avx2 / rgb8_avx2 /
// nearest8_avx2 take the first pass and the unfilled RGB pixels 8 at a time.
template <bool Bilinear, bool Masked, bool Simd>
[[gnu::always_inline]] inline void affine_rows(const affine_job& j, affine_row_scratch& r) {
  const int w = j.src.width, h = j.src.height, ch = j.src.channels;
  const auto fw = static_cast<float>(w), fh = static_cast<float>(h);
  r.resize(w);
  float* const nw = r.nw.data();
  float* const ne = r.ne.data();
  float* const sw = r.sw.data();
  float* const se = r.se.data();
  int* const x0 = r.x0.data();
  int* const y0 = r.y0.data();
  const auto x_start = static_cast<float>(-w * 0.5 + 0.5);  // base grid: half-integers, exact in float
  for (int y = 0; y < h; ++y) {
    // the base grid's pixel centres times theta through reference BLAS's
    // sgemm: k = x, y, 1 in order, each product and sum rounded
    const auto py = static_cast<float>(-h * 0.5 + 0.5 + y);
    const float gx1 = py * j.bx, gy1 = py * j.by;
    int first = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (Simd) {
      first = positions_avx2(j, r, Bilinear, x_start, py, gx1, gy1);
    }
#endif
    for (int x = first; x < w; ++x) {
      const float px = x_start + static_cast<float>(x);
      const float gx0 = px * j.ax, gy0 = px * j.ay;
      const float gx01 = j.fused_grid ? std::fma(py, j.bx, gx0) : gx0 + gx1;
      const float gy01 = j.fused_grid ? std::fma(py, j.by, gy0) : gy0 + gy1;
      const float gx = gx01 + j.cx, gy = gy01 + j.cy;
      const float gx_1 = gx + 1.0f, gy_1 = gy + 1.0f;
      const float sx = std::fma(gx_1, j.scale_w, -0.5f);  // (g + 1)·size/2 − 0.5, fused
      const float sy = std::fma(gy_1, j.scale_h, -0.5f);
      // positions far outside are clamped before the int conversion (no
      // corner of them is inside either way)
      if constexpr (Bilinear) {
        const float xw = std::floor(sx), yn = std::floor(sy);
        const float we = sx - xw, wn = sy - yn;  // distances to the west and north neighbours
        const float e = 1.0f - we, s = 1.0f - wn;
        nw[x] = s * e, ne[x] = s * we, sw[x] = wn * e, se[x] = wn * we;
        x0[x] = static_cast<int>(std::clamp(xw, -2.0f, fw));
        y0[x] = static_cast<int>(std::clamp(yn, -2.0f, fh));
      } else {
        x0[x] = static_cast<int>(std::clamp(std::nearbyint(sx), -1.0f, fw));
        y0[x] = static_cast<int>(std::clamp(std::nearbyint(sy), -1.0f, fh));
      }
    }
    std::uint8_t* o = j.dst.row(y);
    for (int x = 0; x < w; ++x, o += ch) {
#if defined(__x86_64__) && defined(__GNUC__)
      if constexpr (Simd && Bilinear && !Masked) {  // 8 RGB pixels with all corners inside at once
        while (ch == 3 && x + 8 <= w && rgb8_avx2(j, r, x, o)) x += 8, o += 24;
        if (x == w) break;
      }
      if constexpr (Simd && !Bilinear && !Masked) {
        while (ch == 3 && x + 8 <= w && nearest8_avx2(j, r, x, o)) x += 8, o += 24;
        if (x == w) break;
      }
#endif
      const int xx = x0[x], yy = y0[x];
      if constexpr (!Bilinear) {
        if (xx >= 0 && xx < w && yy >= 0 && yy < h) {
          const std::uint8_t* src = j.src.row(yy) + static_cast<std::ptrdiff_t>(xx) * ch;
          for (int c = 0; c < ch; ++c) o[c] = src[c];
        } else {
          for (int c = 0; c < ch; ++c)
            o[c] = Masked ? to_u8(std::nearbyint(j.fill[static_cast<std::size_t>(c)])) : 0;
        }
        continue;
      }
      // (nw_val·nw) + (ne_val·ne) + (sw_val·sw) + (se_val·se) as GCC fuses it
      const auto interp = [&](float vnw, float vne, float vsw, float vse) {
        return std::fma(vse, se[x], std::fma(vsw, sw[x], std::fma(vne, ne[x], vnw * nw[x])));
      };
      const auto blend_fill = [&](float v, float mask, int c) {  // img · mask + (1.0 − mask) · fill
        if (j.v2_blend) {  // float_img.sub_(fill_img).mul_(mask).add_(fill_img)
          const float f = j.fill[static_cast<std::size_t>(c)];
          const float d = v - f;
          const float p = d * mask;
          return p + f;
        }
        const float kept = v * mask;
        const float rest = 1.0f - mask;
        const float filled = rest * j.fill[static_cast<std::size_t>(c)];
        return kept + filled;
      };
      if (xx >= 0 && xx + 1 < w && yy >= 0 && yy + 1 < h) {  // all four corners inside
        const std::uint8_t* n0 = j.src.row(yy) + static_cast<std::ptrdiff_t>(xx) * ch;
        const std::uint8_t* s0 = n0 + j.src.stride;
        const float mask = Masked ? interp(1.0f, 1.0f, 1.0f, 1.0f) : 1.0f;
        for (int c = 0; c < ch; ++c) {
          float v = interp(n0[c], n0[ch + c], s0[c], s0[ch + c]);
          if constexpr (Masked) v = blend_fill(v, mask, c);
          o[c] = to_u8(std::nearbyint(v));
        }
        continue;
      }
      const bool iw = xx >= 0 && xx < w, ie = xx + 1 >= 0 && xx + 1 < w;
      const bool in_n = yy >= 0 && yy < h, is = yy + 1 >= 0 && yy + 1 < h;
      const std::uint8_t* rn = in_n ? j.src.row(yy) : nullptr;
      const std::uint8_t* rs = is ? j.src.row(yy + 1) : nullptr;
      const auto at = [&](const std::uint8_t* row, bool ok, int col, int c) {
        return ok ? static_cast<float>(row[static_cast<std::ptrdiff_t>(col) * ch + c]) : 0.0f;
      };
      const float mask = Masked ? interp(iw && in_n ? 1.0f : 0.0f, ie && in_n ? 1.0f : 0.0f,
                                         iw && is ? 1.0f : 0.0f, ie && is ? 1.0f : 0.0f)
                                : 1.0f;
      for (int c = 0; c < ch; ++c) {
        float v = interp(at(rn, iw && in_n, xx, c), at(rn, ie && in_n, xx + 1, c), at(rs, iw && is, xx, c),
                         at(rs, ie && is, xx + 1, c));
        if constexpr (Masked) v = blend_fill(v, mask, c);
        o[c] = to_u8(std::nearbyint(v));
      }
    }
  }
}

template <bool Simd>
[[gnu::always_inline]] inline void affine_dispatch(const affine_job& j, bool bilinear, bool masked) {
  thread_local affine_row_scratch r;
  if (bilinear) masked ? affine_rows<true, true, Simd>(j, r) : affine_rows<true, false, Simd>(j, r);
  else masked ? affine_rows<false, true, Simd>(j, r) : affine_rows<false, false, Simd>(j, r);
}

void affine_baseline(const affine_job& j, bool bilinear, bool masked) { affine_dispatch<false>(j, bilinear, masked); }

#if defined(__x86_64__) && defined(__GNUC__)
// Lanes whose (x, y) lies in [0, x_end) × [0, y_end): all ones, else 0.
__attribute__((target("avx2"), always_inline)) inline __m256i lanes_inside(__m256i xx, __m256i yy, int x_end,
                                                                        int y_end) {
  const __m256i minus1 = _mm256_set1_epi32(-1);
  return _mm256_and_si256(
      _mm256_and_si256(_mm256_cmpgt_epi32(xx, minus1), _mm256_cmpgt_epi32(_mm256_set1_epi32(x_end), xx)),
      _mm256_and_si256(_mm256_cmpgt_epi32(yy, minus1), _mm256_cmpgt_epi32(_mm256_set1_epi32(y_end), yy)));
}

// Lanes at exactly (x, y): all ones, else 0.
__attribute__((target("avx2"), always_inline)) inline __m256i lanes_at(__m256i xx, __m256i yy, int x, int y) {
  return _mm256_and_si256(_mm256_cmpeq_epi32(xx, _mm256_set1_epi32(x)), _mm256_cmpeq_epi32(yy, _mm256_set1_epi32(y)));
}

// Pixels x..x+7 of a row of an RGB bilinear affine without fill, when all
// four corners of each lie inside the image: one 4-byte gather per corner
// (its R, G, B and one byte more), then per channel the scalar path's
// arithmetic on 8 lanes (the same products, fused multiply-adds, rounding
// and clamp). False, with nothing written, when a lane is not such a pixel.
// The fourth byte read past a corner is the next pixel's or the next row's,
// except past the image's very last pixel, which no lane may use.
__attribute__((target("avx2,fma"))) bool rgb8_avx2(const affine_job& j, const affine_row_scratch& r, int x,
                                                    std::uint8_t* o) {
  const int w = j.src.width, h = j.src.height;
  const __m256i xx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.x0.data() + x));
  const __m256i yy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.y0.data() + x));
  const __m256i inside = lanes_inside(xx, yy, w - 1, h - 1);
  const __m256i last = lanes_at(xx, yy, w - 2, h - 2);
  if (_mm256_movemask_epi8(_mm256_andnot_si256(last, inside)) != -1) return false;
  const auto stride = static_cast<int>(j.src.stride);
  const __m256i nw_at = _mm256_add_epi32(_mm256_mullo_epi32(yy, _mm256_set1_epi32(stride)),
                                         _mm256_mullo_epi32(xx, _mm256_set1_epi32(3)));
  const auto* base = reinterpret_cast<const int*>(j.src.data);
  const __m256i vnw = _mm256_i32gather_epi32(base, nw_at, 1);
  const __m256i vne = _mm256_i32gather_epi32(base, _mm256_add_epi32(nw_at, _mm256_set1_epi32(3)), 1);
  const __m256i vsw = _mm256_i32gather_epi32(base, _mm256_add_epi32(nw_at, _mm256_set1_epi32(stride)), 1);
  const __m256i vse = _mm256_i32gather_epi32(base, _mm256_add_epi32(nw_at, _mm256_set1_epi32(stride + 3)), 1);
  const __m256 nw = _mm256_loadu_ps(r.nw.data() + x), ne = _mm256_loadu_ps(r.ne.data() + x);
  const __m256 sw = _mm256_loadu_ps(r.sw.data() + x), se = _mm256_loadu_ps(r.se.data() + x);
  const __m256i byte = _mm256_set1_epi32(0xFF);
  alignas(32) std::array<std::array<int, 8>, 3> out{};
  for (int c = 0; c < 3; ++c) {
    const __m128i shift = _mm_cvtsi32_si128(8 * c);  // channel c: byte c of each gathered word
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(vnw, shift), byte)), nw);
    v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(vne, shift), byte)), ne, v);
    v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(vsw, shift), byte)), sw, v);
    v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(vse, shift), byte)), se, v);
    v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out[static_cast<std::size_t>(c)].data()), _mm256_cvttps_epi32(v));
  }
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t c = 0; c < 3; ++c) o[3 * i + c] = static_cast<std::uint8_t>(out[c][i]);
  return true;
}

// Pixels x..x+7 of a row of an RGB nearest affine without fill: one
// 4-byte gather per pixel inside the image (its R, G, B and one byte
// more), zeros outside, as the scalar loop. False, with nothing written,
// when a lane reads the image's very last pixel (its fourth byte may lie
// past the buffer).
__attribute__((target("avx2,fma"))) bool nearest8_avx2(const affine_job& j, const affine_row_scratch& r, int x,
                                                        std::uint8_t* o) {
  const int w = j.src.width, h = j.src.height;
  const __m256i xx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.x0.data() + x));
  const __m256i yy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.y0.data() + x));
  const __m256i inside = lanes_inside(xx, yy, w, h);
  const __m256i last = lanes_at(xx, yy, w - 1, h - 1);
  if (!_mm256_testz_si256(last, inside)) return false;
  const auto stride = static_cast<int>(j.src.stride);
  const __m256i at = _mm256_add_epi32(_mm256_mullo_epi32(yy, _mm256_set1_epi32(stride)),
                                      _mm256_mullo_epi32(xx, _mm256_set1_epi32(3)));
  const auto* base = reinterpret_cast<const int*>(j.src.data);
  const __m256i px = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), base, _mm256_and_si256(at, inside),
                                                 inside, 1);
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                                        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i rgb = _mm256_shuffle_epi8(px, pack);
  const __m128i lo = _mm256_castsi256_si128(rgb), hi = _mm256_extracti128_si256(rgb, 1);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(o), lo);
  const std::int32_t lo_tail = _mm_extract_epi32(lo, 2);
  std::memcpy(o + 8, &lo_tail, 4);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 12), hi);
  const std::int32_t hi_tail = _mm_extract_epi32(hi, 2);
  std::memcpy(o + 20, &hi_tail, 4);
  return true;
}

// The first pass of a row, 8 pixels at a time: the scalar loop's
// operations lane by lane (each rounded alike, the same fused step).
// Returns the pixels done (a multiple of 8); the caller does the rest.
__attribute__((target("avx2,fma"))) int positions_avx2(const affine_job& j, affine_row_scratch& r, bool bilinear,
                                                        float x_start, float py, float gx1, float gy1) {
  const int w = j.src.width;
  const __m256 fw = _mm256_set1_ps(static_cast<float>(w)), fh = _mm256_set1_ps(static_cast<float>(j.src.height));
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(-0.5f);
  const __m256 lo = _mm256_set1_ps(bilinear ? -2.0f : -1.0f);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int x = 0;
  for (; x + 8 <= w; x += 8) {
    const __m256 px =
        _mm256_add_ps(_mm256_set1_ps(x_start), _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(x), lane)));
    const __m256 gx0 = _mm256_mul_ps(px, _mm256_set1_ps(j.ax)), gy0 = _mm256_mul_ps(px, _mm256_set1_ps(j.ay));
    // fused: fma(py, b, x·a), else x·a + py·b
    const __m256 gx01 = j.fused_grid ? _mm256_fmadd_ps(_mm256_set1_ps(py), _mm256_set1_ps(j.bx), gx0)
                                     : _mm256_add_ps(gx0, _mm256_set1_ps(gx1));
    const __m256 gy01 = j.fused_grid ? _mm256_fmadd_ps(_mm256_set1_ps(py), _mm256_set1_ps(j.by), gy0)
                                     : _mm256_add_ps(gy0, _mm256_set1_ps(gy1));
    const __m256 gx = _mm256_add_ps(gx01, _mm256_set1_ps(j.cx));
    const __m256 gy = _mm256_add_ps(gy01, _mm256_set1_ps(j.cy));
    const __m256 sx = _mm256_fmadd_ps(_mm256_add_ps(gx, one), _mm256_set1_ps(j.scale_w), half);
    const __m256 sy = _mm256_fmadd_ps(_mm256_add_ps(gy, one), _mm256_set1_ps(j.scale_h), half);
    __m256 cx, cy;
    if (bilinear) {
      const __m256 xw = _mm256_floor_ps(sx), yn = _mm256_floor_ps(sy);
      const __m256 we = _mm256_sub_ps(sx, xw), wn = _mm256_sub_ps(sy, yn);
      const __m256 e = _mm256_sub_ps(one, we), s = _mm256_sub_ps(one, wn);
      _mm256_storeu_ps(r.nw.data() + x, _mm256_mul_ps(s, e));
      _mm256_storeu_ps(r.ne.data() + x, _mm256_mul_ps(s, we));
      _mm256_storeu_ps(r.sw.data() + x, _mm256_mul_ps(wn, e));
      _mm256_storeu_ps(r.se.data() + x, _mm256_mul_ps(wn, we));
      cx = xw, cy = yn;
    } else {
      cx = _mm256_round_ps(sx, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      cy = _mm256_round_ps(sy, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r.x0.data() + x),
                        _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(cx, lo), fw)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r.y0.data() + x),
                        _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(cy, lo), fh)));
  }
  return x;
}

__attribute__((target("avx2,fma"))) void affine_avx2(const affine_job& j, bool bilinear, bool masked) {
  // the gathers' 32-bit offsets: the image must be under 2 GiB
  if (static_cast<std::int64_t>(j.src.stride) * j.src.height < (std::int64_t{1} << 31) - 4)
    affine_dispatch<true>(j, bilinear, masked);
  else
    affine_dispatch<false>(j, bilinear, masked);
}
#else
void affine_avx2(const affine_job& j, bool bilinear, bool masked) { affine_baseline(j, bilinear, masked); }
#endif

}  // namespace

void set_affine_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }

void affine(image_view src, const std::array<double, 6>& matrix, bool bilinear, std::span<const double> fill,
            image_buffer& dst, bool fused_grid, bool v2_blend) {
  require_channels("affine", src);
  const int w = src.width, h = src.height, ch = src.channels;
  if (!fill.empty() && fill.size() != 1 && fill.size() != static_cast<std::size_t>(ch))
    throw std::invalid_argument("affine: fill has " + std::to_string(fill.size()) + " values for an image of " +
                                std::to_string(ch) + " channels");
  affine_job j{};
  for (int c = 0; c < ch; ++c) {
    const double v = fill.empty() ? 0.0 : fill[fill.size() == 1 ? 0 : static_cast<std::size_t>(c)];
    if (!(v >= 0.0 && v <= 255.0))
      throw std::invalid_argument("affine: fill values must lie in [0, 255] for a uint8 image");
    j.fill[static_cast<std::size_t>(c)] = static_cast<float>(v);
  }
  dst.reset(w, h, ch);
  if (w == 0 || h == 0) return;
  // _gen_affine_grid: theta in float32, divided by (0.5·w, 0.5·h)
  std::array<float, 6> t{};
  for (std::size_t k = 0; k < 6; ++k) t[k] = static_cast<float>(matrix[k]);
  const float half_w = static_cast<float>(0.5 * w), half_h = static_cast<float>(0.5 * h);
  j.ax = t[0] / half_w, j.bx = t[1] / half_w, j.cx = t[2] / half_w;
  j.ay = t[3] / half_h, j.by = t[4] / half_h, j.cy = t[5] / half_h;
  j.scale_w = static_cast<float>(w) / 2, j.scale_h = static_cast<float>(h) / 2;
  j.fused_grid = fused_grid;
  j.v2_blend = v2_blend;
  j.src = src;
  j.dst = dst.view();
  if (simd_enabled.load(std::memory_order_relaxed) && image::detail::cpu_has_avx2_fma())
    affine_avx2(j, bilinear, !fill.empty());
  else affine_baseline(j, bilinear, !fill.empty());
}

void adjust_brightness(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_brightness", src);
  blend_with(src, factor, dst, constant_row(src, 0.0f));
}

void adjust_saturation(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_saturation", src);
  if (src.channels == 1) return dst.assign(src);
  blend_with(src, factor, dst, [&](int y, float* row) {
    const std::uint8_t* in = src.row(y);
    for (int x = 0; x < src.width; ++x, in += 3, row += 3) row[0] = row[1] = row[2] = gray_px(in);
  });
}

void adjust_contrast(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_contrast", src);
  std::vector<float> gray(static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.height));
  std::size_t k = 0;
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x, ++k) {
      const std::uint8_t* px = src.row(y) + static_cast<std::ptrdiff_t>(x) * src.channels;
      gray[k] = static_cast<float>(src.channels == 3 ? gray_px(px) : px[0]);
    }
  const auto n = static_cast<std::int64_t>(gray.size());
  const float mean = torch_sum(gray.data(), n) / static_cast<float>(n);  // sum(...).div_(numel)
  blend_with(src, factor, dst, constant_row(src, mean));
}

void adjust_sharpness(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_sharpness", src);
  if (src.width <= 2 || src.height <= 2) return dst.assign(src);
  // conv2d with float32(1/13) and float32(5/13), then torch.round: the sum
  // S of the taps (centre ×5) is an integer, and S/13 lies at least 1/26
  // from a half, far beyond float32's error, so the rounded value is
  // round(S / 13) = (2S + 13) / 26 in integers.
  const int ch = src.channels;
  const int n = src.width * ch;
  blend_with(src, factor, dst, [&](int y, float* row) {
    const std::uint8_t* mid = src.row(y);
    if (y == 0 || y == src.height - 1) {
      for (int i = 0; i < n; ++i) row[i] = mid[i];
      return;
    }
    const std::uint8_t* up = mid - src.stride;
    const std::uint8_t* down = mid + src.stride;
    for (int i = 0; i < ch; ++i) row[i] = mid[i], row[n - ch + i] = mid[n - ch + i];
    for (int i = ch; i < n - ch; ++i) {
      const int sum = up[i - ch] + up[i] + up[i + ch] + mid[i - ch] + 5 * mid[i] + mid[i + ch] + down[i - ch] +
                      down[i] + down[i + ch];
      row[i] = static_cast<float>((2 * sum + 13) / 26);
    }
  });
}

void autocontrast(image_view src, image_buffer& dst) {
  require_channels("autocontrast", src);
  const int ch = src.channels;
  std::array<float, 3> lo{}, scale{};
  for (int c = 0; c < ch; ++c) {
    int mn = 255, mx = 0;
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < src.width; ++x) {
        const int v = src.row(y)[static_cast<std::ptrdiff_t>(x) * ch + c];
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
    const auto cc = static_cast<std::size_t>(c);
    lo[cc] = static_cast<float>(mn);
    // bound / (maximum − minimum) is Tensor.__rtruediv__: reciprocal() · 255
    const float reciprocal = 1.0f / (static_cast<float>(mx) - static_cast<float>(mn));
    scale[cc] = reciprocal * 255.0f;
    if (!std::isfinite(scale[cc])) lo[cc] = 0.0f, scale[cc] = 1.0f;  // a flat channel (or an empty image)
  }
  dst.reset(src.width, src.height, ch);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int x = 0; x < src.width; ++x)
      for (int c = 0; c < ch; ++c) {
        const auto cc = static_cast<std::size_t>(c);
        const int i = x * ch + c;
        const float shifted = static_cast<float>(in[i]) - lo[cc];
        out[i] = to_u8(shifted * scale[cc]);
      }
  }
}

}  // namespace ringfeed::image::tensor
