// lookup_planes_row, lookup_planes and split_planes (planes.hpp): the
// portable loop, and with AVX2 eight pixels at a time, into 32-bit, 16-bit
// or (split_planes, no table) 8-bit planes. The table lookups
// write table entries (or their low halves) only, so they agree bit for
// bit; the AVX2 path is about 1.8x faster at 224x224 (a gather of eight
// entries against eight scalar loads of bytes and entries).
#include "image/transforms/planes.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "image/kernels/cpu_features.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace ringfeed::image::detail {

namespace {

std::atomic<bool> simd_enabled{true};
std::atomic<bool> fma_enabled{true};  // compute_planes' divisions as multiply-adds, where exact

// T: uint32_t (float32 bits), float (the same bits as floats), or
// uint16_t (float16 bits, the entries' low halves).
template <class T>
void portable(const std::uint8_t* in, int x0, int width, int channels, bool flip, const std::uint32_t* const table[3],
              T* const out[3]) noexcept {
  for (int x = x0; x < width; ++x) {
    const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(flip ? width - 1 - x : x) * channels;
    for (int c = 0; c < channels; ++c) {
      if constexpr (std::is_same_v<T, float>)
        out[c][x] = std::bit_cast<float>(table[c][p[c]]);
      else
        out[c][x] = static_cast<T>(table[c][p[c]]);
    }
  }
}

// Calls row_fn(in, planes) for each row of `src`, `planes` pointing at that
// row in each of the CHW planes at `out`.
template <class T, class RowFn>
void for_each_row(image_view src, T* out, const RowFn& row_fn) noexcept {
  const std::size_t plane = static_cast<std::size_t>(src.height) * static_cast<std::size_t>(src.width);
  T* planes[3] = {out, nullptr, nullptr};
  for (int c = 1; c < src.channels; ++c) planes[c] = planes[c - 1] + plane;
  for (int y = 0; y < src.height; ++y) {
    row_fn(src.row(y), planes);
    for (int c = 0; c < src.channels; ++c) planes[c] += src.width;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)

// pshufb masks that move channel c of the eight pixels in a 24-byte block
// (bytes 0-15 in one register, 16-23 in another) to bytes 0-7, in pixel
// order or reversed (flip); -1 (0x80) clears a byte.
struct split_masks {
  alignas(16) std::array<std::int8_t, 16> lo[2][3];  // [flip][c], from bytes 0-15
  alignas(16) std::array<std::int8_t, 16> hi[2][3];  // from bytes 16-23
  alignas(16) std::array<std::int8_t, 16> reverse;   // one channel, flipped
};

constexpr split_masks make_masks() {
  split_masks m{};
  for (int f = 0; f < 2; ++f)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 16; ++k) {
        m.lo[f][c][static_cast<std::size_t>(k)] = -1;
        m.hi[f][c][static_cast<std::size_t>(k)] = -1;
        if (k >= 8) continue;
        const int j = 3 * (f != 0 ? 7 - k : k) + c;
        if (j < 16)
          m.lo[f][c][static_cast<std::size_t>(k)] = static_cast<std::int8_t>(j);
        else
          m.hi[f][c][static_cast<std::size_t>(k)] = static_cast<std::int8_t>(j - 16);
      }
  for (int k = 0; k < 16; ++k) m.reverse[static_cast<std::size_t>(k)] = static_cast<std::int8_t>(k < 8 ? 7 - k : -1);
  return m;
}

constexpr split_masks masks = make_masks();

__attribute__((target("avx2"))) inline __m128i load_mask(const std::array<std::int8_t, 16>& m) {
  return _mm_load_si128(reinterpret_cast<const __m128i*>(m.data()));
}

__attribute__((target("avx2"))) inline __m256i gather(const std::uint32_t* table, __m128i bytes) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(table), _mm256_cvtepu8_epi32(bytes), 4);
}

__attribute__((target("avx2"))) inline void gather_store(const std::uint32_t* table, __m128i bytes, std::uint32_t* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), gather(table, bytes));
}

__attribute__((target("avx2"))) inline void gather_store(const std::uint32_t* table, __m128i bytes, float* out) {
  _mm256_storeu_ps(out, _mm256_castsi256_ps(gather(table, bytes)));
}

// The eight entries' low halves: bytes 0-1, 4-5, 8-9, 12-13 of each lane
// to its first eight bytes, then the two lanes' first quadwords together.
__attribute__((target("avx2"))) inline void gather_store(const std::uint32_t* table, __m128i bytes, std::uint16_t* out) {
  const __m256i low_halves = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                              0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(gather(table, bytes), low_halves), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}

// Table lookups of eight bytes (bytes 0-7 of a register) to out[c] + x.
template <class T>
struct gather_sink {
  const std::uint32_t* const* table;
  T* const* out;
  __attribute__((target("avx2"), always_inline)) void operator()(int c, __m128i bytes, int x) const {
    gather_store(table[c], bytes, out[c] + x);
  }
};

// normalized()'s float operations on eight bytes: float(v) / 255 (or
// float(v) · float32(1 / 255), v2's ToDtype), then
// (x − mean) / std; IEEE division and subtraction, so the same bits as the
// scalar operations normalize_table computes its entries with.
// A float plane's eight values. The planes are the output (a batch slot
// the GPU copies or the consumer reads much later): streamed past the
// caches where aligned, so a line is not read only to be overwritten.
// compute_planes ends with a store fence (streaming stores are weakly ordered).
__attribute__((target("avx2"), always_inline)) inline void store_planar(float* out, __m256 v) {
  if ((reinterpret_cast<std::uintptr_t>(out) & 31u) == 0)
    _mm256_stream_ps(out, v);
  else
    _mm256_storeu_ps(out, v);
}

struct formula {
  __m256 mean[3], std[3];
  bool norm;
  bool reciprocal;  // v · float32(1 / 255) (v2's ToDtype) instead of v / 255
};

struct formula_sink {
  const formula& f;
  float* const* out;
  __attribute__((target("avx2"), always_inline)) void operator()(int c, __m128i bytes, int x) const {
    const __m256 raw = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    __m256 v = f.reciprocal ? _mm256_mul_ps(raw, _mm256_set1_ps(static_cast<float>(1.0 / 255.0)))
                            : _mm256_div_ps(raw, _mm256_set1_ps(255.0f));
    if (f.norm) v = _mm256_div_ps(_mm256_sub_ps(v, f.mean[c]), f.std[c]);
    store_planar(out[c] + x, v);
  }
};

// The same quotients without a division: q = a · (1 / b), then one
// correction step, q + fma(−q, b, a) · (1 / b) (Markstein's). With 1 / b
// correctly rounded this is the correctly rounded a / b for the values that
// occur here; fast_formula_exact() checks all 256 of each channel against
// the table before it is used, so the bits are the division's, or the
// division runs. Two divisions cost about 10 cycles per 8 values; this, 6
// multiply-adds.
struct fast_formula {
  __m256 mean[3], std[3], inv_std[3];
  bool norm;
  bool reciprocal;
};

__attribute__((target("avx2,fma"), always_inline)) inline __m256 divide(__m256 a, __m256 b, __m256 inv_b) {
  const __m256 q = _mm256_mul_ps(a, inv_b);
  return _mm256_fmadd_ps(_mm256_fnmadd_ps(q, b, a), inv_b, q);
}

__attribute__((target("avx2,fma"), always_inline)) inline __m256 fast_value(const fast_formula& f, int c, __m256 raw) {
  const __m256 inv255 = _mm256_set1_ps(static_cast<float>(1.0 / 255.0));
  __m256 v = f.reciprocal ? _mm256_mul_ps(raw, inv255) : divide(raw, _mm256_set1_ps(255.0f), inv255);
  if (f.norm) v = divide(_mm256_sub_ps(v, f.mean[c]), f.std[c], f.inv_std[c]);
  return v;
}

struct fast_formula_sink {
  const fast_formula& f;
  float* const* out;
  __attribute__((target("avx2,fma"), always_inline)) void operator()(int c, __m128i bytes, int x) const {
    store_planar(out[c] + x, fast_value(f, c, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes))));
  }
};

// True when fast_value gives table[c][v] for every byte v of the channels.
__attribute__((target("avx2,fma"))) bool fast_formula_exact(const fast_formula& f, int channels,
                                                            const std::uint32_t* const table[3]) {
  for (int c = 0; c < channels; ++c)
    for (int v = 0; v < 256; v += 8) {
      const __m256 raw = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
      const __m256i got = _mm256_castps_si256(fast_value(f, c, raw));
      const __m256i want = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table[c] + v));
      if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(got, want)) != -1) return false;
    }
  return true;
}

// Pixels [0, width − width % 8), each channel's eight bytes to `sink`;
// returns where the portable loop goes on.
template <class Sink>
__attribute__((target("avx2,fma"), always_inline)) inline int rows_avx2(const std::uint8_t* in, int width, int channels,
                                                                    bool flip, const Sink& sink) {
  const int f = flip ? 1 : 0;
  int x = 0;
  if (channels != 3) {
    if (channels != 1) return 0;
    const __m128i rev = load_mask(masks.reverse);
    for (; x + 8 <= width; x += 8) {
      const std::uint8_t* p = in + (flip ? width - 8 - x : x);
      __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      if (flip) v = _mm_shuffle_epi8(v, rev);
      sink(0, v, x);
    }
    return x;
  }
  const __m128i lo0 = load_mask(masks.lo[f][0]), lo1 = load_mask(masks.lo[f][1]), lo2 = load_mask(masks.lo[f][2]);
  const __m128i hi0 = load_mask(masks.hi[f][0]), hi1 = load_mask(masks.hi[f][1]), hi2 = load_mask(masks.hi[f][2]);
  for (; x + 8 <= width; x += 8) {
    const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(flip ? width - 8 - x : x) * 3;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));       // bytes 0-15
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));  // bytes 16-23
    sink(0, _mm_or_si128(_mm_shuffle_epi8(a, lo0), _mm_shuffle_epi8(b, hi0)), x);
    sink(1, _mm_or_si128(_mm_shuffle_epi8(a, lo1), _mm_shuffle_epi8(b, hi1)), x);
    sink(2, _mm_or_si128(_mm_shuffle_epi8(a, lo2), _mm_shuffle_epi8(b, hi2)), x);
  }
  return x;
}

template <class T>
__attribute__((target("avx2,fma"))) int lookup_rows_avx2(const std::uint8_t* in, int width, int channels, bool flip,
                                                     const std::uint32_t* const table[3], T* const out[3]) {
  return rows_avx2(in, width, channels, flip, gather_sink<T>{table, out});
}

// compute_planes' rows: the formula on AVX2, the tail from the table.
template <class Formula, class Sink>
__attribute__((target("avx2,fma"))) void compute_row_avx2(const std::uint8_t* in, int width, int channels, bool flip,
                                                          const Formula& f, const std::uint32_t* const table[3],
                                                          float* const out[3]) {
  const int x = rows_avx2(in, width, channels, flip, Sink{f, out});
  portable(in, x, width, channels, flip, table, out);
}

__attribute__((target("avx2,fma"))) void compute_planes_avx2(image_view src, bool flip, const normalize_params* norm,
                                                         const std::uint32_t* const table[3], float* out) {
  formula f{};
  f.norm = norm != nullptr;
  f.reciprocal = norm != nullptr && norm->reciprocal;
  for (std::size_t c = 0; c < 3; ++c) {
    f.mean[c] = _mm256_set1_ps(norm ? norm->mean[c] : 0.0f);
    f.std[c] = _mm256_set1_ps(norm ? norm->std[c] : 1.0f);
  }
  for_each_row(src, out, [&](const std::uint8_t* in, float* const planes[3]) {
    compute_row_avx2<formula, formula_sink>(in, src.width, src.channels, flip, f, table, planes);
  });
  _mm_sfence();
}

// The same with fast_formula where it is exact for this table; false when
// it is not (compute_planes_avx2 then).
__attribute__((target("avx2,fma"))) fast_formula make_fast_formula(const normalize_params* norm) {
  fast_formula f{};
  f.norm = norm != nullptr;
  f.reciprocal = norm != nullptr && norm->reciprocal;
  for (std::size_t c = 0; c < 3; ++c) {
    const float sd = norm ? norm->std[c] : 1.0f;
    f.mean[c] = _mm256_set1_ps(norm ? norm->mean[c] : 0.0f);
    f.std[c] = _mm256_set1_ps(sd);
    f.inv_std[c] = _mm256_set1_ps(static_cast<float>(1.0 / static_cast<double>(sd)));
  }
  return f;
}

__attribute__((target("avx2,fma"))) bool compute_planes_fma(image_view src, bool flip, const normalize_params* norm,
                                                            const std::uint32_t* const table[3], float* out) {
  const fast_formula f = make_fast_formula(norm);
  if (!fast_formula_exact(f, src.channels, table)) return false;
  for_each_row(src, out, [&](const std::uint8_t* in, float* const planes[3]) {
    compute_row_avx2<fast_formula, fast_formula_sink>(in, src.width, src.channels, flip, f, table, planes);
  });
  _mm_sfence();
  return true;
}

// PILToTensor's bytes: pixels [0, n − n % 8) of RGB split into three
// planes with the channel masks; returns where the portable loop goes on.
__attribute__((target("avx2"))) std::size_t split_avx2(const std::uint8_t* in, std::size_t n, std::uint8_t* const out[3]) {
  const __m128i lo0 = load_mask(masks.lo[0][0]), lo1 = load_mask(masks.lo[0][1]), lo2 = load_mask(masks.lo[0][2]);
  const __m128i hi0 = load_mask(masks.hi[0][0]), hi1 = load_mask(masks.hi[0][1]), hi2 = load_mask(masks.hi[0][2]);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * 3));       // bytes 0-15
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i * 3 + 16));  // bytes 16-23
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out[0] + i), _mm_or_si128(_mm_shuffle_epi8(a, lo0), _mm_shuffle_epi8(b, hi0)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out[1] + i), _mm_or_si128(_mm_shuffle_epi8(a, lo1), _mm_shuffle_epi8(b, hi1)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out[2] + i), _mm_or_si128(_mm_shuffle_epi8(a, lo2), _mm_shuffle_epi8(b, hi2)));
  }
  return i;
}

#endif

template <class T>
void row(const std::uint8_t* in, int width, int channels, bool flip, const std::uint32_t* const table[3],
         T* const out[3]) noexcept {
  int x = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (simd_enabled.load(std::memory_order_relaxed) && cpu_has_avx2_fma())
    x = lookup_rows_avx2(in, width, channels, flip, table, out);
#endif
  portable(in, x, width, channels, flip, table, out);
}

template <class T>
void planes_of(image_view src, bool flip, const std::uint32_t* const table[3], T* out) noexcept {
  for_each_row(src, out, [&](const std::uint8_t* in, T* const planes[3]) {
    row(in, src.width, src.channels, flip, table, planes);
  });
}

}  // namespace

void set_lookup_planes_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }

bool compute_planes_multiply_adds(const normalize_params* norm, int channels,
                                  const std::uint32_t* const table[3]) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  return simd_enabled.load(std::memory_order_relaxed) && fma_enabled.load(std::memory_order_relaxed) &&
         cpu_has_avx2_fma() && fast_formula_exact(make_fast_formula(norm), channels, table);
#else
  (void)norm, (void)channels, (void)table;
  return false;
#endif
}

void set_compute_planes_fma(bool enabled) noexcept { fma_enabled.store(enabled, std::memory_order_relaxed); }

void lookup_planes_row(const std::uint8_t* in, int width, int channels, bool flip,
                       const std::uint32_t* const table[3], std::uint32_t* const out[3]) noexcept {
  row(in, width, channels, flip, table, out);
}

void lookup_planes(image_view src, bool flip, const std::uint32_t* const table[3], std::uint32_t* out) noexcept {
  planes_of(src, flip, table, out);
}

void lookup_planes(image_view src, bool flip, const std::uint32_t* const table[3], std::uint16_t* out) noexcept {
  planes_of(src, flip, table, out);
}

void lookup_interleaved(image_view src, bool flip, const std::uint32_t* const table[3], std::size_t element_bytes,
                        std::byte* out) noexcept {
  // Portable: each entry's low bytes (little-endian, as every target of
  // this project) stored in place; the compiler unrolls the fixed sizes.
  const int ch = src.channels;
  const std::size_t row_elements = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(ch);
  const auto store = [&]<std::size_t Bytes>(std::integral_constant<std::size_t, Bytes>) {
    for (int y = 0; y < src.height; ++y) {
      const std::uint8_t* in = src.row(y);
      std::byte* o = out + static_cast<std::size_t>(y) * row_elements * Bytes;
      for (int x = 0; x < src.width; ++x) {
        const std::uint8_t* px = in + static_cast<std::ptrdiff_t>(flip ? src.width - 1 - x : x) * ch;
        for (int c = 0; c < ch; ++c, o += Bytes) std::memcpy(o, &table[c][px[c]], Bytes);
      }
    }
  };
  if (element_bytes == 4)
    store(std::integral_constant<std::size_t, 4>{});
  else
    store(std::integral_constant<std::size_t, 2>{});
}

void store_output_16(std::byte* dst, output_spec spec, std::size_t index, float value) noexcept {
  const std::uint16_t bits = spec.dtype == dtype::bfloat16 ? float_to_bfloat16(value) : float_to_half(value);
  std::memcpy(dst + index * 2, &bits, 2);
}

void compute_planes(image_view src, bool flip, const normalize_params* norm, const std::uint32_t* const table[3],
                    float* out) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  if (simd_enabled.load(std::memory_order_relaxed) && cpu_has_avx2_fma()) {
    if (fma_enabled.load(std::memory_order_relaxed) &&
        compute_planes_fma(src, flip, norm, table, out))
      return;
    return compute_planes_avx2(src, flip, norm, table, out);
  }
#endif
  (void)norm;
  planes_of(src, flip, table, out);
}

void split_planes(const std::uint8_t* in, std::size_t pixels, int channels, std::uint8_t* out) noexcept {
  if (pixels == 0) return;  // `in` and `out` may then be null
  if (channels == 1) {
    std::memcpy(out, in, pixels);
    return;
  }
  std::uint8_t* const planes[3] = {out, out + pixels, out + 2 * pixels};
  std::size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (channels == 3 && simd_enabled.load(std::memory_order_relaxed) && cpu_has_avx2()) i = split_avx2(in, pixels, planes);
#endif
  const auto ch = static_cast<std::size_t>(channels);
  for (; i < pixels; ++i)
    for (std::size_t c = 0; c < ch; ++c) planes[c][i] = in[i * ch + c];
}

}  // namespace ringfeed::image::detail
