// ringfeed/random.hpp: Philox4x32-10 and splitmix64 against their published
// known answers, what sample_rng depends on, below()'s range and the one
// shuffle's pinned order.
#include <catch2/catch.hpp>

#include <ringfeed/random.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

using ringfeed::sample_key;
using ringfeed::sample_rng;

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors", "[random]") {
  using a4 = std::array<std::uint32_t, 4>;
  CHECK(ringfeed::philox4x32_10({0, 0, 0, 0}, {0, 0}) == a4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(ringfeed::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}) ==
        a4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(ringfeed::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}) ==
        a4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("splitmix64 matches Vigna's reference splitmix64.c", "[random]") {
  // splitmix64.c seeded with 1234567, and with 0.
  ringfeed::splitmix64_rng r(1234567);
  CHECK(r.next() == 0x599ed017fb08fc85ull);
  CHECK(r.next() == 0x2c73f08458540fa5ull);
  CHECK(r.next() == 0x883ebce5a3f27c77ull);
  ringfeed::splitmix64_rng z(0);
  CHECK(z.next() == 0xe220a8397b1dcdafull);
  CHECK(z.next() == 0x6e789e6aa1b965f4ull);
  // The pure form is the generator's output for that state.
  CHECK(ringfeed::splitmix64(0) == 0xe220a8397b1dcdafull);
  CHECK(ringfeed::splitmix64(1234567) == 0x599ed017fb08fc85ull);
}

TEST_CASE("sample_rng depends only on (seed, epoch, index, stream)", "[random]") {
  const auto first = [](sample_key k, std::uint32_t stream) {
    sample_rng r(k, stream);
    std::vector<std::uint32_t> v;
    for (int i = 0; i < 9; ++i) v.push_back(r.next_u32());
    return v;
  };
  const sample_key k{42, 3, 1000};
  CHECK(first(k, 0) == first(k, 0));
  CHECK(first(k, 0) != first(k, 1));
  CHECK(first(k, 0) != first({43, 3, 1000}, 0));
  CHECK(first(k, 0) != first({42, 4, 1000}, 0));
  CHECK(first(k, 0) != first({42, 3, 1001}, 0));
  CHECK(first(k, 0) != first({42, 3, 1000 + (std::uint64_t{1} << 32)}, 0));
  sample_rng r(k);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = r.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    const auto n = r.uniform_int(3, 10);
    REQUIRE(n >= 3);
    REQUIRE(n < 10);
  }
  CHECK(sum / 100000 == Approx(0.5).margin(0.01));
  CHECK(r.uniform_int(5, 5) == 5);
}

TEST_CASE("below(range) stays in [0, range) on 32- and 64-bit ranges", "[random]") {
  sample_rng r({7, 0, 0});
  CHECK(r.below(1) == 0);
  for (const std::uint64_t range : {std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{1000},
                                    std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 1, ~std::uint64_t{0}}) {
    for (int i = 0; i < 1000; ++i) REQUIRE(r.below(range) < range);
  }
  std::array<int, 6> counts{};
  for (int i = 0; i < 60000; ++i) ++counts[r.below(6)];
  for (const int c : counts) CHECK(c == Approx(10000).margin(500));
}

TEST_CASE("shuffle is a permutation, pinned for a seed, and a pure function of the generator", "[random]") {
  const auto shuffled = [](std::size_t n, std::uint64_t seed) {
    std::vector<std::size_t> v(n);
    std::iota(v.begin(), v.end(), std::size_t{0});
    sample_rng rng(sample_key{seed, 0, 0}, ringfeed::permutation_stream);
    ringfeed::shuffle(std::span(v), rng);
    return v;
  };
  // The order data::permutation has given since it was written (sampler_tests pins it too).
  CHECK(shuffled(10, 0) == std::vector<std::size_t>{1, 5, 7, 9, 0, 2, 3, 4, 6, 8});
  CHECK(shuffled(10, 42) == std::vector<std::size_t>{1, 4, 5, 8, 7, 9, 3, 6, 0, 2});
  CHECK(shuffled(1000, 3) == shuffled(1000, 3));
  std::vector<std::size_t> p = shuffled(1000, 3);
  std::sort(p.begin(), p.end());
  std::vector<std::size_t> identity(1000);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  CHECK(p == identity);
  CHECK(shuffled(0, 1).empty());
  CHECK(shuffled(1, 1) == std::vector<std::size_t>{0});
}
