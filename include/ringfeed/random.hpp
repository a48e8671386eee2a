// ringfeed's random numbers: one counter-based generator behind every random
// choice made for a sample or an order, one splitmix64 and one shuffle.
//
// sample_rng is Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random
// numbers: as easy as 1, 2, 3", SC'11; the Random123 reference constants).
// The 64-bit key is derived from (seed, epoch); the 128-bit counter is
// (block, stream, sample index). A sample's draws therefore depend only on
// (seed, epoch, index, stream) — not on threads, order of evaluation or what
// other samples drew — and stream separates independent uses within one
// sample (one stream per transform step), so adding a draw to one step never
// shifts another's. Orders (the sampler's permutation, `ringfeed pack`) draw
// from the reserved streams at the top of the range.
//
// splitmix64 (Steele, Lea, Flood, OOPSLA'14) derives keys and seeds;
// splitmix64_rng is its sequential form, for procedural content
// (`ringfeed gen`, the perf corpora) where a single stream is enough.
//
// Everything here is integer-only (uniform() aside, which is exact IEEE
// arithmetic), so the same inputs give the same numbers on every platform.
// Layer: core (knows nothing else of ringfeed).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace ringfeed {

/// Identifies one sample's randomness.
struct sample_key {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  ///< the sample's index in the dataset
  friend bool operator==(const sample_key&, const sample_key&) = default;
};

/// The stream data::permutation and the shard order draw from. Per-sample
/// augmentation streams must not use it (nor pack_stream).
inline constexpr std::uint32_t permutation_stream = 0xFFFF'FFFFu;
/// The stream `ringfeed pack` shuffles with.
inline constexpr std::uint32_t pack_stream = 0xFFFF'FFFEu;

/// The Philox4x32-10 block function: 4 × 32-bit outputs for a 128-bit
/// counter and 64-bit key. Pure.
[[nodiscard]] constexpr std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> ctr,
                                                                 std::array<std::uint32_t, 2> key) noexcept {
  constexpr std::uint32_t m0 = 0xD2511F53u;
  constexpr std::uint32_t m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u;  // golden ratio
  constexpr std::uint32_t w1 = 0xBB67AE85u;  // sqrt(3) - 1
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += w0;
      key[1] += w1;
    }
    const std::uint64_t p0 = std::uint64_t{m0} * ctr[0];
    const std::uint64_t p1 = std::uint64_t{m1} * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return ctr;
}

/// The increment of splitmix64's state (2^64 / golden ratio, odd).
inline constexpr std::uint64_t splitmix64_gamma = 0x9E3779B97F4A7C15ull;

/// SplitMix64's output for state `x` before its increment: the finalizer of
/// x + gamma (Steele, Lea, Flood, OOPSLA'14). Pure.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += splitmix64_gamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// SplitMix64 as a sequential generator: splitmix64(seed),
/// splitmix64(seed + gamma), … Tiny, fast, well mixed, and its output is
/// fixed by definition. A value type, not thread-safe.
class splitmix64_rng {
 public:
  explicit constexpr splitmix64_rng(std::uint64_t seed) noexcept : m_state(seed) {}

  /// The next 64 uniformly distributed bits.
  constexpr std::uint64_t next() noexcept {
    const std::uint64_t out = splitmix64(m_state);
    m_state += splitmix64_gamma;
    return out;
  }

 private:
  std::uint64_t m_state;
};

/// A stream of random numbers for one (sample, stream). Cheap to construct
/// (no state beyond 48 bytes); a value type, not thread-safe.
class sample_rng {
 public:
  explicit constexpr sample_rng(const sample_key& key, std::uint32_t stream = 0) noexcept
      : m_counter{0, stream, static_cast<std::uint32_t>(key.index),
                  static_cast<std::uint32_t>(key.index >> 32)} {
    const std::uint64_t k = splitmix64(splitmix64(key.seed) ^ key.epoch);
    m_key = {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
  }

  /// The next 32 uniformly distributed bits.
  constexpr std::uint32_t next_u32() noexcept {
    if (m_used == 4) {
      m_block = philox4x32_10(m_counter, m_key);
      ++m_counter[0];
      m_used = 0;
    }
    return m_block[static_cast<std::size_t>(m_used++)];
  }

  /// Uniform double in [0, 1) with 53 random bits.
  constexpr double uniform() noexcept {
    const std::uint64_t hi = next_u32() >> 5;  // 27 bits
    const std::uint64_t lo = next_u32() >> 6;  // 26 bits
    return static_cast<double>((hi << 26) | lo) * 0x1.0p-53;
  }

  /// lo + (hi - lo) · uniform(), in [lo, hi).
  constexpr double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }

  /// Integer in [lo, hi) as lo + floor(uniform() · (hi − lo)); lo when hi <= lo.
  constexpr std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) noexcept {
    if (hi <= lo) return lo;
    const auto n = hi - lo;
    const auto k = static_cast<std::int64_t>(uniform() * static_cast<double>(n));
    return lo + (k < n ? k : n - 1);
  }

  /// Exactly uniform integer in [0, range), range >= 1. Lemire, "Fast
  /// random integer generation in an interval" (ACM TOMACS 2019), on 32-bit
  /// draws when the range fits; plain rejection on 64-bit draws above that.
  /// Integer-only, so the sequence is the same on every platform.
  constexpr std::uint64_t below(std::uint64_t range) noexcept {
    if (range <= (std::uint64_t{1} << 32)) {
      std::uint64_t m = std::uint64_t{next_u32()} * range;
      auto low = static_cast<std::uint32_t>(m);
      if (low < range) {
        const std::uint64_t threshold = ((std::uint64_t{1} << 32) - range) % range;
        while (low < threshold) {
          m = std::uint64_t{next_u32()} * range;
          low = static_cast<std::uint32_t>(m);
        }
      }
      return m >> 32;
    }
    const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    for (;;) {
      const std::uint64_t x = (std::uint64_t{next_u32()} << 32) | next_u32();
      if (x >= threshold) return x % range;
    }
  }

 private:
  std::array<std::uint32_t, 4> m_counter;
  std::array<std::uint32_t, 2> m_key{};
  std::array<std::uint32_t, 4> m_block{};
  int m_used = 4;
};

/// Shuffles `items` uniformly in place: Fisher–Yates (Durstenfeld, from the
/// top), each swap partner drawn with rng.below(). The one shuffle every
/// order in ringfeed uses.
template <typename T>
constexpr void shuffle(std::span<T> items, sample_rng& rng) noexcept {
  for (std::size_t i = items.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    using std::swap;
    swap(items[i - 1], items[j]);
  }
}

}  // namespace ringfeed
