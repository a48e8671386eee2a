#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <ringfeed/detail/work_stealing_deque.hpp>

#include "test_support.hpp"

using ringfeed::detail::work_stealing_deque;

TEST_CASE("owner pops newest first, thieves steal oldest first", "[deque]") {
  work_stealing_deque<int> dq(4);
  REQUIRE(dq.empty());
  REQUIRE_FALSE(dq.pop().has_value());
  REQUIRE_FALSE(dq.steal().has_value());
  for (int i = 0; i < 5; ++i) dq.push(i);
  REQUIRE(dq.size() == 5);
  REQUIRE(dq.steal() == 0);
  REQUIRE(dq.pop() == 4);
  REQUIRE(dq.steal() == 1);
  REQUIRE(dq.pop() == 3);
  REQUIRE(dq.pop() == 2);
  REQUIRE_FALSE(dq.pop().has_value());
  REQUIRE(dq.empty());
}

TEST_CASE("growing keeps every item and its order", "[deque]") {
  work_stealing_deque<std::uint32_t> dq(2);
  for (std::uint32_t i = 0; i < 10'000; ++i) dq.push(i);
  REQUIRE(dq.capacity() >= 10'000);
  for (std::uint32_t i = 0; i < 5'000; ++i) REQUIRE(dq.steal() == i);
  for (std::uint32_t i = 10'000; i-- > 5'000;) REQUIRE(dq.pop() == i);
  REQUIRE(dq.empty());
}

namespace {

// The gold-set test (after taskflow's test_wsq.cpp): the owner pushes N unique
// items, popping now and then, while `thieves` threads steal; afterwards the
// popped and stolen items together must be exactly the pushed set: nothing
// lost, nothing delivered twice.
void gold_set(std::uint32_t n, unsigned thieves) {
  work_stealing_deque<std::uint32_t> dq(2);  // tiny, so it grows under contention
  std::atomic<bool> owner_done{false};
  std::vector<std::vector<std::uint32_t>> stolen(thieves);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < thieves; ++t) {
    threads.emplace_back([&, t] {
      while (!owner_done.load(std::memory_order_acquire)) {
        if (auto v = dq.steal()) stolen[t].push_back(*v);
      }
    });
  }
  std::vector<std::uint32_t> popped;
  for (std::uint32_t i = 0; i < n; ++i) {
    dq.push(i);
    if (i % 3 == 2) {
      if (auto v = dq.pop()) popped.push_back(*v);
    }
  }
  while (auto v = dq.pop()) popped.push_back(*v);
  owner_done.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  REQUIRE(dq.empty());

  std::vector<std::uint32_t> all = popped;
  for (auto& s : stolen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == n);  // no duplicates and no losses, given the next check
  for (std::uint32_t i = 0; i < n; ++i) {
    if (all[i] != i) FAIL("item " << i << " missing or duplicated (found " << all[i] << ")");
  }
}

}  // namespace

TEST_CASE("gold set: owner pushes and pops while 1-8 thieves steal", "[deque][stress]") {
  ringfeed::test::watchdog dog("deque gold set", std::chrono::seconds(240));
  for (unsigned thieves : {1u, 2u, 4u, 8u}) {
    for (std::uint32_t n = 1; n <= 88'573; n = n * 3 + 1) {  // 1, 4, 13, 40, ..., 88573
      INFO("N = " << n << ", thieves = " << thieves);
      gold_set(n, thieves);
    }
  }
}
