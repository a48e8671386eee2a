#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

#include "test_support.hpp"

using ringfeed::sync_wait;
using ringfeed::task;

namespace {

task<int> forty_two() { co_return 42; }
task<> nothing() { co_return; }
task<std::unique_ptr<std::string>> boxed(std::string s) {
  co_return std::make_unique<std::string>(std::move(s));
}
task<int> thrower() {
  throw std::runtime_error("boom from task");
  co_return 0;
}
task<> void_thrower() {
  throw std::logic_error("void boom");
  co_return;
}

}  // namespace

TEST_CASE("task delivers values, void and move-only results", "[task]") {
  REQUIRE(sync_wait(forty_two()) == 42);
  sync_wait(nothing());
  auto p = sync_wait(boxed("hello"));
  REQUIRE(p != nullptr);
  REQUIRE(*p == "hello");
}

TEST_CASE("task<T&> returns a reference to the same object", "[task]") {
  int target = 1;
  auto ref = [](int& x) -> task<int&> { co_return x; };
  int& r = sync_wait(ref(target));
  r = 7;
  REQUIRE(target == 7);
}

TEST_CASE("task is lazy: the body runs only when awaited", "[task]") {
  bool ran = false;
  auto body = [](bool& flag) -> task<int> {
    flag = true;
    co_return 1;
  };
  {
    task<int> t = body(ran);
    REQUIRE_FALSE(ran);
    REQUIRE(t.valid());
    REQUIRE_FALSE(t.is_ready());
  }  // destroyed unawaited: the body never runs (and nothing leaks: ASan checks)
  REQUIRE_FALSE(ran);
  task<int> t2 = body(ran);
  REQUIRE(sync_wait(std::move(t2)) == 1);
  REQUIRE(ran);
}

TEST_CASE("exceptions propagate to the awaiter and through sync_wait", "[task]") {
  REQUIRE_THROWS_WITH(sync_wait(thrower()), "boom from task");
  REQUIRE_THROWS_AS(sync_wait(void_thrower()), std::logic_error);
  auto outer = []() -> task<std::string> {
    try {
      co_await thrower();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught: ") + e.what();
    }
    co_return "not caught";
  };
  REQUIRE(sync_wait(outer()) == "caught: boom from task");
}

TEST_CASE("awaiting an lvalue task and an rvalue task", "[task]") {
  auto outer = []() -> task<int> {
    task<int> t = forty_two();
    int a = co_await t;              // lvalue: result stays in t
    int b = co_await forty_two();    // rvalue temporary
    auto&& c = co_await boxed("x");  // by value: no dangling after the temporary dies
    co_return a + b + static_cast<int>(c->size());
  };
  REQUIRE(sync_wait(outer()) == 85);
}

TEST_CASE("move assignment destroys the previous frame and keeps the new one", "[task]") {
  task<int> a = forty_two();
  task<int> b = forty_two();
  a = std::move(b);
  REQUIRE_FALSE(b.valid());  // NOLINT: testing moved-from state
  REQUIRE(sync_wait(std::move(a)) == 42);
}

namespace {

task<std::uint64_t> recurse(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await recurse(depth - 1);
}

task<std::uint64_t> sync_loop(int n) {
  std::uint64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<std::uint64_t>(co_await forty_two());
  co_return sum;
}

}  // namespace

TEST_CASE("deep recursion does not overflow the stack (symmetric transfer)", "[task][tail-call]") {
  // 200k nested awaits would need far more than an 8 MiB stack if each one
  // nested a resume() call; symmetric transfer keeps the stack flat.
  REQUIRE(sync_wait(recurse(200'000)) == 200'000u);
}

TEST_CASE("a million synchronously completing awaits in a loop keep the stack flat", "[task][tail-call]") {
  REQUIRE(sync_wait(sync_loop(1'000'000)) == 42'000'000u);
}

TEST_CASE("a task resumed on a pool continues there and sync_wait gets its value", "[task][pool]") {
  ringfeed::test::watchdog dog("task on pool", std::chrono::seconds(60));
  ringfeed::thread_pool pool(2);
  const auto caller = std::this_thread::get_id();
  auto hop = [](ringfeed::thread_pool& p, std::thread::id from) -> task<bool> {
    co_await p.schedule();
    co_return p.on_worker_thread() && std::this_thread::get_id() != from;
  };
  REQUIRE(sync_wait(hop(pool, caller)));
  auto throw_on_pool = [](ringfeed::thread_pool& p) -> task<> {
    co_await p.schedule();
    throw std::runtime_error("thrown on a worker");
  };
  REQUIRE_THROWS_WITH(sync_wait(throw_on_pool(pool)), "thrown on a worker");
}
