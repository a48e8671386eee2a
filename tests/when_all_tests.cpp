#include <catch2/catch.hpp>

#include <atomic>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "test_support.hpp"

using ringfeed::sync_wait;
using ringfeed::task;
using ringfeed::thread_pool;
using ringfeed::when_all;

namespace {

task<int> value(int v) { co_return v; }
task<std::string> text(std::string s) { co_return s; }
task<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }

task<int> value_on(thread_pool& pool, int v) {
  co_await pool.schedule();
  co_return v;
}

}  // namespace

TEST_CASE("variadic when_all returns every result in argument order", "[when_all]") {
  auto [a, b, c] = sync_wait(when_all(value(1), text("two"), boxed(3)));
  REQUIRE(a == 1);
  REQUIRE(b == "two");
  REQUIRE(*c == 3);
}

TEST_CASE("variadic when_all of void tasks is a task<void>", "[when_all]") {
  int runs = 0;
  auto bump = [](int& n) -> task<> {
    ++n;
    co_return;
  };
  static_assert(std::is_same_v<decltype(when_all(bump(runs), bump(runs))), task<void>>);
  sync_wait(when_all(bump(runs), bump(runs), bump(runs)));
  REQUIRE(runs == 3);
}

TEST_CASE("vector when_all keeps the vector's order whatever the finishing order", "[when_all][pool]") {
  ringfeed::test::watchdog dog("vector when_all", std::chrono::seconds(60));
  thread_pool pool(4);
  std::vector<task<int>> tasks;
  for (int i = 0; i < 1000; ++i) tasks.push_back(value_on(pool, i));
  const std::vector<int> results = sync_wait(when_all(std::move(tasks)));
  REQUIRE(results.size() == 1000);
  for (int i = 0; i < 1000; ++i) REQUIRE(results[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("empty vectors complete at once", "[when_all]") {
  REQUIRE(sync_wait(when_all(std::vector<task<int>>{})).empty());
  sync_wait(when_all(std::vector<task<>>{}));
}

TEST_CASE("children run concurrently once they hop to an executor", "[when_all][pool]") {
  // Each child blocks until both have arrived: if when_all ran them one after
  // another this would never finish (the watchdog would abort).
  ringfeed::test::watchdog dog("concurrent children", std::chrono::seconds(60));
  thread_pool pool(2);
  std::latch both(2);
  auto child = [](thread_pool& p, std::latch& l) -> task<int> {
    co_await p.schedule();
    l.arrive_and_wait();
    co_return 1;
  };
  auto [a, b] = sync_wait(when_all(child(pool, both), child(pool, both)));
  REQUIRE(a + b == 2);
}

TEST_CASE("a failing child: every child finishes, then the first exception is rethrown",
          "[when_all][pool]") {
  ringfeed::test::watchdog dog("failing child", std::chrono::seconds(60));
  thread_pool pool(2);
  std::atomic<int> finished{0};
  auto slow_ok = [](thread_pool& p, std::atomic<int>& done) -> task<> {
    co_await p.schedule();
    for (int i = 0; i < 50; ++i) co_await p.schedule();  // still running when the thrower throws
    done.fetch_add(1);
  };
  auto fail_now = []() -> task<> {
    throw std::runtime_error("first failure");
    co_return;
  };
  auto fail_later = [](thread_pool& p) -> task<> {
    co_await p.schedule();
    throw std::runtime_error("second failure");
  };
  std::vector<task<>> tasks;
  tasks.push_back(slow_ok(pool, finished));
  tasks.push_back(fail_now());  // throws synchronously, before anything else can
  tasks.push_back(slow_ok(pool, finished));
  tasks.push_back(fail_later(pool));
  REQUIRE_THROWS_WITH(sync_wait(when_all(std::move(tasks))), "first failure");
  REQUIRE(finished.load() == 2);  // nobody was abandoned
}

TEST_CASE("variadic when_all rethrows a child's exception after the others finish",
          "[when_all][pool]") {
  thread_pool pool(2);
  std::atomic<int> finished{0};
  auto ok = [](thread_pool& p, std::atomic<int>& done) -> task<int> {
    co_await p.schedule();
    done.fetch_add(1);
    co_return 1;
  };
  auto bad = [](thread_pool& p) -> task<int> {
    co_await p.schedule();
    throw std::invalid_argument("bad child");
  };
  REQUIRE_THROWS_AS(sync_wait(when_all(ok(pool, finished), bad(pool), ok(pool, finished))),
                    std::invalid_argument);
  REQUIRE(finished.load() == 2);
}

TEST_CASE("stress: 50k children fork-join on a pool, results exact", "[when_all][pool][stress]") {
  ringfeed::test::watchdog dog("50k fork-join", std::chrono::seconds(120));
  thread_pool pool(ringfeed::test::stress_threads());
  for (int round = 0; round < 3; ++round) {
    std::vector<task<int>> tasks;
    tasks.reserve(50'000);
    for (int i = 0; i < 50'000; ++i) tasks.push_back(value_on(pool, i));
    const auto results = sync_wait(when_all(std::move(tasks)));
    long long sum = 0;
    for (int v : results) sum += v;
    REQUIRE(sum == 50'000LL * 49'999 / 2);
  }
}
