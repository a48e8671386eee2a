// Sampler tests: the permutation, DistributedSampler's padding and sharding
// (checked against torch when it is importable), batches, resume, the
// environment, and concurrent use of one sampler.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ringfeed/data/sampler.hpp>

#include "test_support.hpp"

using namespace ringfeed::data;
using indices_t = std::vector<std::size_t>;

namespace {

// Sets (or unsets, for nullptr) environment variables for one scope.
class env_guard {
 public:
  env_guard(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : {"RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
      const char* old = std::getenv(name);
      m_saved.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name);
    }
    for (const auto& [name, value] : vars) {
      if (value != nullptr) ::setenv(name, value, 1);
    }
  }
  env_guard(const env_guard&) = delete;
  env_guard& operator=(const env_guard&) = delete;
  ~env_guard() {
    for (const auto& [name, value] : m_saved) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

// torch.utils.data.DistributedSampler.__iter__, transcribed, over a given
// global order.
indices_t reference_rank(const indices_t& order, std::size_t world, std::size_t rank, bool drop_last) {
  const std::size_t n = order.size();
  std::size_t num_samples;
  if (drop_last && n % world != 0) {
    // math.ceil((n - world) / world), which may be negative → 0 samples
    const long long num = static_cast<long long>(n) - static_cast<long long>(world);
    num_samples = num <= 0 ? 0 : static_cast<std::size_t>((num + static_cast<long long>(world) - 1) / static_cast<long long>(world));
  } else {
    num_samples = (n + world - 1) / world;
  }
  const std::size_t total = num_samples * world;
  indices_t indices = order;
  if (!drop_last) {
    const std::size_t padding = total - n;
    if (padding <= n) {
      indices.insert(indices.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(padding));
    } else {
      indices_t repeated;
      const std::size_t times = (padding + n - 1) / n;
      for (std::size_t t = 0; t < times; ++t) repeated.insert(repeated.end(), order.begin(), order.end());
      indices.insert(indices.end(), repeated.begin(), repeated.begin() + static_cast<std::ptrdiff_t>(padding));
    }
  } else {
    indices.resize(total);
  }
  REQUIRE(indices.size() == total);
  indices_t out;
  for (std::size_t i = rank; i < total; i += world) out.push_back(indices[i]);
  REQUIRE(out.size() == num_samples);
  return out;
}

sampler_options make_options(std::uint64_t seed, bool shuffle, bool drop_last, std::size_t rank, std::size_t world) {
  sampler_options o;
  o.seed = seed;
  o.shuffle = shuffle;
  o.drop_last = drop_last;
  o.rank = rank;
  o.world_size = world;
  return o;
}

bool is_permutation_of_iota(indices_t v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("permutation: a deterministic permutation of 0..n-1", "[sampler]") {
  for (const std::size_t n : {0u, 1u, 2u, 3u, 10u, 1000u, 12345u}) {
    const indices_t p = permutation(n, 42);
    CHECK(p.size() == n);
    CHECK(is_permutation_of_iota(p));
    CHECK(permutation(n, 42) == p);
  }
  CHECK(permutation(1000, 1) != permutation(1000, 2));
  // Pinned values: the algorithm (Philox4x32-10 + Lemire + Fisher–Yates) is
  // integer-only, so these hold on every platform. A change here changes
  // every user's epoch order: only on purpose.
  CHECK(permutation(10, 0) == indices_t{1, 5, 7, 9, 0, 2, 3, 4, 6, 8});
  CHECK(permutation(10, 42) == indices_t{1, 4, 5, 8, 7, 9, 3, 6, 0, 2});
}

TEST_CASE("permutation: uniform over the 6 orders of 3 elements", "[sampler]") {
  std::map<indices_t, int> counts;
  constexpr int trials = 60000;
  for (int s = 0; s < trials; ++s) ++counts[permutation(3, static_cast<std::uint64_t>(s))];
  REQUIRE(counts.size() == 6);
  // Each order has p = 1/6: mean 10000, sd ≈ 91; allow 5 sd.
  for (const auto& [order, count] : counts) CHECK(std::abs(count - trials / 6) < 460);
  // And the position of element 0 in 10-element permutations.
  std::vector<int> where(10, 0);
  for (int s = 0; s < 20000; ++s) {
    const indices_t p = permutation(10, static_cast<std::uint64_t>(s) + 1'000'000);
    ++where[static_cast<std::size_t>(std::find(p.begin(), p.end(), 0u) - p.begin())];
  }
  for (const int c : where) CHECK(std::abs(c - 2000) < 220);  // sd ≈ 42
}

TEST_CASE("sampler: DistributedSampler padding, truncation and sharding", "[sampler]") {
  for (std::size_t n = 0; n <= 23; ++n) {
    for (std::size_t world = 1; world <= 7; ++world) {
      for (const bool drop_last : {false, true}) {
        for (const bool shuffle : {false, true}) {
          INFO("n=" << n << " world=" << world << " drop_last=" << drop_last << " shuffle=" << shuffle);
          std::multiset<std::size_t> all;
          std::optional<std::size_t> count;
          for (std::size_t rank = 0; rank < world; ++rank) {
            const sampler s(n, make_options(7, shuffle, drop_last, rank, world));
            const indices_t order = s.global_order(3);
            if (!shuffle) {
              indices_t iota(n);
              std::iota(iota.begin(), iota.end(), std::size_t{0});
              CHECK(order == iota);
            }
            const indices_t mine = s.indices(3);
            CHECK(mine == reference_rank(order, world, rank, drop_last));
            CHECK(mine.size() == s.num_samples());
            CHECK(s.total_size() == s.num_samples() * world);
            if (count) CHECK(*count == mine.size());  // every rank gets the same count
            count = mine.size();
            all.insert(mine.begin(), mine.end());
          }
          if (drop_last) {
            // Truncated: disjoint, floor(n / world) * world distinct samples.
            CHECK(all.size() == n / world * world);
            CHECK(std::set<std::size_t>(all.begin(), all.end()).size() == all.size());
          } else {
            // Padded: covers everything; ceil(n / world) * world in all.
            CHECK(all.size() == (n + world - 1) / world * world);
            CHECK(std::set<std::size_t>(all.begin(), all.end()).size() == n);
          }
        }
      }
    }
  }
}

TEST_CASE("sampler: shards are disjoint and cover the dataset when world divides n", "[sampler]") {
  const std::size_t n = 1000;
  const std::size_t world = 8;
  std::set<std::size_t> seen;
  for (std::size_t rank = 0; rank < world; ++rank) {
    for (const std::size_t i : sampler(n, make_options(5, true, false, rank, world)).indices(0)) {
      CHECK(seen.insert(i).second);
    }
  }
  CHECK(seen.size() == n);
}

TEST_CASE("sampler: padding repeats the epoch's first indices, as torch does", "[sampler]") {
  // n = 10, world = 4: total 12, the 2 padded positions hold order[0], order[1].
  const sampler r2(10, make_options(9, true, false, 2, 4));
  const sampler r3(10, make_options(9, true, false, 3, 4));
  const indices_t order = r2.global_order(0);
  CHECK(r2.indices(0) == indices_t{order[2], order[6], order[0]});
  CHECK(r3.indices(0) == indices_t{order[3], order[7], order[1]});
  // n = 2, world = 5: padding (3) exceeds n, the order is repeated.
  const sampler tiny(2, make_options(9, false, false, 4, 5));
  CHECK(tiny.indices(0) == indices_t{0});
  CHECK(sampler(2, make_options(9, false, false, 2, 5)).indices(0) == indices_t{0});
  CHECK(sampler(2, make_options(9, false, false, 3, 5)).indices(0) == indices_t{1});
  CHECK(sampler(2, make_options(9, false, true, 0, 5)).indices(0).empty());
}

TEST_CASE("sampler: matches torch's DistributedSampler(shuffle=False) run now", "[sampler][torch]") {
  const std::string probe = "/usr/bin/python3 -c 'import torch.utils.data' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::printf("torch parity: torch is not importable by /usr/bin/python3; the transcribed reference above "
                "is the only check of DistributedSampler semantics\n");
    return;
  }
  ringfeed::test::temp_dir tmp;
  const auto script = tmp.path() / "ds.py";
  const auto out = tmp.path() / "ds.out";
  {
    std::ofstream f(script);
    f << "import sys\n"
         "from torch.utils.data import DistributedSampler\n"
         "with open(sys.argv[1], 'w') as out:\n"
         "    for n in (0, 1, 2, 5, 10, 11, 17):\n"
         "        for world in (1, 2, 3, 4, 6):\n"
         "            for drop_last in (False, True):\n"
         "                for rank in range(world):\n"
         "                    s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False,\n"
         "                                           drop_last=drop_last)\n"
         "                    out.write(f'{n} {world} {int(drop_last)} {rank} {len(s)} ' +\n"
         "                              ' '.join(map(str, iter(s))) + '\\n')\n";
  }
  const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + out.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::size_t n, world, drop, rank, len;
    ss >> n >> world >> drop >> rank >> len;
    indices_t torch_indices;
    for (std::size_t v; ss >> v;) torch_indices.push_back(v);
    INFO(line);
    const sampler s(n, make_options(0, false, drop != 0, rank, world));
    CHECK(s.num_samples() == len);
    CHECK(s.indices(0) == torch_indices);
    ++rows;
  }
  CHECK(rows == 7 * (1 + 2 + 3 + 4 + 6) * 2);
  std::printf("torch parity: %d DistributedSampler(shuffle=False) configurations compared with torch\n", rows);
}

TEST_CASE("sampler: epochs differ, (seed, epoch) repeats, seed + epoch is the key", "[sampler]") {
  const sampler s(5000, make_options(11, true, false, 0, 1));
  CHECK(s.indices(0) != s.indices(1));
  CHECK(s.indices(1) != s.indices(2));
  CHECK(s.indices(4) == sampler(5000, make_options(11, true, false, 0, 1)).indices(4));
  CHECK(s.indices(0) != sampler(5000, make_options(12, true, false, 0, 1)).indices(0));
  // torch seeds its generator with seed + epoch; so do we.
  CHECK(s.indices(1) == sampler(5000, make_options(12, true, false, 0, 1)).indices(0));
  CHECK(is_permutation_of_iota(s.indices(7)));
  // shuffle = false: the same order every epoch.
  const sampler val(10, make_options(11, false, false, 0, 1));
  CHECK(val.indices(0) == indices_t{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(val.indices(5) == val.indices(0));
}

TEST_CASE("sampler: batches, drop_last for batches, resume at (epoch, batch)", "[sampler]") {
  const sampler s(103, make_options(3, true, false, 1, 2));  // 52 samples on this rank
  REQUIRE(s.num_samples() == 52);
  CHECK(s.num_batches(10, false) == 6);
  CHECK(s.num_batches(10, true) == 5);
  CHECK(s.num_batches(52, true) == 1);
  CHECK(s.num_batches(53, true) == 0);
  CHECK_THROWS_AS(s.num_batches(0, false), std::invalid_argument);
  CHECK_THROWS_AS(s.plan(0, 0, false), std::invalid_argument);

  const epoch_plan keep = s.plan(4, 10, false);
  const epoch_plan drop = s.plan(4, 10, true);
  CHECK(keep.epoch() == 4);
  CHECK(keep.batch_size() == 10);
  REQUIRE(keep.num_batches() == 6);
  REQUIRE(drop.num_batches() == 5);
  indices_t joined;
  for (std::size_t k = 0; k < keep.num_batches(); ++k) {
    const auto b = keep.batch(k);
    CHECK(b.size() == (k < 5 ? 10u : 2u));
    joined.insert(joined.end(), b.begin(), b.end());
    if (k < 5) CHECK(std::equal(b.begin(), b.end(), drop.batch(k).begin(), drop.batch(k).end()));
  }
  CHECK(joined == s.indices(4));
  CHECK_THROWS_AS(keep.batch(6), std::out_of_range);
  CHECK_THROWS_AS(drop.batch(5), std::out_of_range);

  // A "restarted" loader: a new sampler with the same state continues at
  // batch 3 of epoch 4 with exactly the same samples.
  const sampler restored(103, make_options(3, true, false, 1, 2));
  const epoch_plan resumed = restored.plan(4, 10, false);
  for (std::size_t k = 3; k < keep.num_batches(); ++k) {
    const auto a = keep.batch(k);
    const auto b = resumed.batch(k);
    CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  // Other epochs: other batches.
  const epoch_plan plan5 = s.plan(5, 10, false);
  const auto e5 = plan5.batch(0);
  CHECK_FALSE(std::equal(e5.begin(), e5.end(), keep.batch(0).begin(), keep.batch(0).end()));
}

TEST_CASE("sampler: rank and world size from the environment", "[sampler][env]") {
  {
    env_guard env({});
    const sampler s(10);
    CHECK(s.rank() == 0);
    CHECK(s.world_size() == 1);
    CHECK(s.env().origin == "default");
  }
  {
    env_guard env({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
    const sampler s(10);
    CHECK(s.rank() == 3);  // torchrun's variables win over SLURM's
    CHECK(s.world_size() == 4);
    CHECK(s.env().origin == "RANK/WORLD_SIZE");
    CHECK(s.num_samples() == 3);
  }
  {
    env_guard env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
    const sampler s(10);
    CHECK(s.rank() == 1);
    CHECK(s.world_size() == 2);
    CHECK(s.env().origin == "SLURM_PROCID/SLURM_NTASKS");
  }
  {
    env_guard env({{"RANK", "1"}, {"WORLD_SIZE", "4"}});
    sampler_options o;
    o.rank = 0;
    o.world_size = 2;
    const sampler s(10, o);  // options win
    CHECK(s.rank() == 0);
    CHECK(s.world_size() == 2);
    CHECK(s.env().origin == "options");
    sampler_options only_rank;
    only_rank.rank = 2;
    const sampler mixed(10, only_rank);  // rank from options, world size from RANK/WORLD_SIZE
    CHECK(mixed.rank() == 2);
    CHECK(mixed.world_size() == 4);
  }
  {
    env_guard env({{"RANK", "1"}});
    CHECK_THROWS_WITH(sampler(10), Catch::Contains("RANK is set but WORLD_SIZE is not"));
  }
  {
    env_guard env({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
    CHECK_THROWS_WITH(sampler(10), Catch::Contains("rank 4 is not below world size 4 (from RANK/WORLD_SIZE)"));
  }
  {
    env_guard env({{"SLURM_PROCID", "x1"}, {"SLURM_NTASKS", "4"}});
    CHECK_THROWS_WITH(sampler(10), Catch::Contains("SLURM_PROCID='x1' is not a non-negative integer"));
  }
  {
    env_guard env({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
    CHECK_THROWS_AS(sampler(10), std::invalid_argument);
  }
  {
    env_guard env({});
    CHECK_THROWS_WITH(sampler(10, make_options(0, true, false, 2, 2)), Catch::Contains("rank 2 is not below world size 2"));
  }
}

TEST_CASE("sampler: one sampler used from many threads gives identical plans", "[sampler][concurrency]") {
  ringfeed::test::watchdog dog("sampler concurrency", std::chrono::seconds(60));
  const sampler s(20000, make_options(17, true, false, 1, 3));
  const epoch_plan reference = s.plan(2, 64, true);
  const unsigned threads = ringfeed::test::stress_threads();
  std::vector<int> same(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        const epoch_plan p = s.plan(2, 64, true);
        const auto a = p.indices();
        const auto b = reference.indices();
        same[t] += std::equal(a.begin(), a.end(), b.begin(), b.end()) ? 1 : 0;
        const auto k = reference.batch(static_cast<std::size_t>(round) * 7);  // shared const reads
        same[t] += std::equal(k.begin(), k.end(), p.batch(static_cast<std::size_t>(round) * 7).begin()) ? 1 : 0;
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const int c : same) CHECK(c == 10);
}
