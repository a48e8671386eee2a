// lookup_planes_row and lookup_planes (planes.hpp): the portable loop,
// and with AVX2 eight pixels at a time, into 32-bit or 16-bit planes. Both
// write table entries (or their low halves) only, so they agree bit for
// bit; the AVX2 path is about 1.8x faster at 224x224 (a gather of eight
// entries against eight scalar loads of bytes and entries).
#include "image/planes.hpp"

#include <array>
#include <atomic>

#include "image/resample_detail.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace ringfeed::image::detail {

namespace {

std::atomic<bool> simd_enabled{true};

// T: uint32_t (float32 bits), or uint16_t (float16 bits, the entries' low
// halves).
template <class T>
void portable(const std::uint8_t* in, int x0, int width, int channels, bool flip, const std::uint32_t* const table[3],
              T* const out[3]) noexcept {
  for (int x = x0; x < width; ++x) {
    const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(flip ? width - 1 - x : x) * channels;
    for (int c = 0; c < channels; ++c) out[c][x] = static_cast<T>(table[c][p[c]]);
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

// The eight entries' low halves: bytes 0-1, 4-5, 8-9, 12-13 of each lane
// to its first eight bytes, then the two lanes' first quadwords together.
__attribute__((target("avx2"))) inline void gather_store(const std::uint32_t* table, __m128i bytes, std::uint16_t* out) {
  const __m256i low_halves = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                              0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(gather(table, bytes), low_halves), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}

// Pixels [0, width − width % 8); returns where the portable loop goes on.
template <class T>
__attribute__((target("avx2"))) int rows_avx2(const std::uint8_t* in, int width, int channels, bool flip,
                                              const std::uint32_t* const table[3], T* const out[3]) {
  const int f = flip ? 1 : 0;
  int x = 0;
  if (channels != 3) {
    if (channels != 1) return 0;
    const __m128i rev = load_mask(masks.reverse);
    for (; x + 8 <= width; x += 8) {
      const std::uint8_t* p = in + (flip ? width - 8 - x : x);
      __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      if (flip) v = _mm_shuffle_epi8(v, rev);
      gather_store(table[0], v, out[0] + x);
    }
    return x;
  }
  const __m128i lo0 = load_mask(masks.lo[f][0]), lo1 = load_mask(masks.lo[f][1]), lo2 = load_mask(masks.lo[f][2]);
  const __m128i hi0 = load_mask(masks.hi[f][0]), hi1 = load_mask(masks.hi[f][1]), hi2 = load_mask(masks.hi[f][2]);
  for (; x + 8 <= width; x += 8) {
    const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(flip ? width - 8 - x : x) * 3;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));       // bytes 0-15
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));  // bytes 16-23
    gather_store(table[0], _mm_or_si128(_mm_shuffle_epi8(a, lo0), _mm_shuffle_epi8(b, hi0)), out[0] + x);
    gather_store(table[1], _mm_or_si128(_mm_shuffle_epi8(a, lo1), _mm_shuffle_epi8(b, hi1)), out[1] + x);
    gather_store(table[2], _mm_or_si128(_mm_shuffle_epi8(a, lo2), _mm_shuffle_epi8(b, hi2)), out[2] + x);
  }
  return x;
}

#endif

template <class T>
void row(const std::uint8_t* in, int width, int channels, bool flip, const std::uint32_t* const table[3],
         T* const out[3]) noexcept {
  int x = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (simd_enabled.load(std::memory_order_relaxed) && cpu_has_avx2()) x = rows_avx2(in, width, channels, flip, table, out);
#endif
  portable(in, x, width, channels, flip, table, out);
}

template <class T>
void planes_of(image_view src, bool flip, const std::uint32_t* const table[3], T* out) noexcept {
  const std::size_t plane = static_cast<std::size_t>(src.height) * static_cast<std::size_t>(src.width);
  T* planes[3] = {out, nullptr, nullptr};
  for (int c = 1; c < src.channels; ++c) planes[c] = planes[c - 1] + plane;
  for (int y = 0; y < src.height; ++y) {
    row(src.row(y), src.width, src.channels, flip, table, planes);
    for (int c = 0; c < src.channels; ++c) planes[c] += src.width;
  }
}

}  // namespace

void set_lookup_planes_simd(bool enabled) noexcept { simd_enabled.store(enabled, std::memory_order_relaxed); }

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

}  // namespace ringfeed::image::detail
