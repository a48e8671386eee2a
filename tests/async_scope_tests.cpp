#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <stdexcept>
#include <stop_token>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/channel.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

#include "test_support.hpp"

using ringfeed::async_scope;
using ringfeed::sync_wait;
using ringfeed::task;
using ringfeed::thread_pool;

TEST_CASE("join completes at once when nothing was spawned", "[async_scope]") {
  async_scope scope;
  sync_wait(scope.join());
}

TEST_CASE("spawn runs a task to its first suspension before returning", "[async_scope]") {
  async_scope scope;
  ringfeed::channel<int> ch(1);  // no executor: woken waiters resume inline
  int stage = 0;
  auto body = [](ringfeed::channel<int>& c, int& s) -> task<> {
    s = 1;
    auto v = co_await c.receive();  // suspends: the channel is empty
    s = *v;
  };
  scope.spawn(body(ch, stage));
  REQUIRE(stage == 1);  // ran synchronously up to the receive
  auto send = [](ringfeed::channel<int>& c) -> task<bool> { co_return co_await c.send(7); };
  REQUIRE(sync_wait(send(ch)));
  REQUIRE(stage == 7);  // resumed by the send
  sync_wait(scope.join());
}

TEST_CASE("join waits for every spawned task on a pool", "[async_scope][pool][stress]") {
  ringfeed::test::watchdog dog("join waits", std::chrono::seconds(120));
  thread_pool pool(ringfeed::test::stress_threads());
  async_scope scope;
  std::atomic<int> done{0};
  auto work = [](thread_pool& p, std::atomic<int>& d) -> task<> {
    co_await p.schedule();
    for (int i = 0; i < 3; ++i) co_await p.schedule();
    d.fetch_add(1, std::memory_order_relaxed);
  };
  constexpr int n = 20'000;
  for (int i = 0; i < n; ++i) scope.spawn(work(pool, done));
  sync_wait(scope.join());
  REQUIRE(done.load() == n);  // join happens-after every task's effects
}

TEST_CASE("spawned tasks may spawn more into the same scope", "[async_scope][pool]") {
  ringfeed::test::watchdog dog("nested spawn", std::chrono::seconds(60));
  thread_pool pool(2);
  async_scope scope;
  std::atomic<int> leaves{0};
  struct tree {
    static task<> grow(thread_pool& p, async_scope& s, std::atomic<int>& count, int depth) {
      co_await p.schedule();
      if (depth == 0) {
        count.fetch_add(1);
        co_return;
      }
      s.spawn(grow(p, s, count, depth - 1));
      s.spawn(grow(p, s, count, depth - 1));
    }
  };
  scope.spawn(tree::grow(pool, scope, leaves, 12));
  sync_wait(scope.join());
  REQUIRE(leaves.load() == 4096);
}

TEST_CASE("join rethrows the first failure after every task has finished", "[async_scope][pool]") {
  thread_pool pool(2);
  async_scope scope;
  std::atomic<int> ok{0};
  auto good = [](thread_pool& p, std::atomic<int>& d) -> task<> {
    co_await p.schedule();
    d.fetch_add(1);
  };
  auto bad = []() -> task<> {
    throw std::runtime_error("spawned task failed");
    co_return;
  };
  scope.spawn(good(pool, ok));
  scope.spawn(bad());
  scope.spawn(good(pool, ok));
  REQUIRE_THROWS_WITH(sync_wait(scope.join()), "spawned task failed");
  REQUIRE(ok.load() == 2);
}

TEST_CASE("request_stop reaches tasks that watch the scope's token", "[async_scope][pool]") {
  ringfeed::test::watchdog dog("stop token", std::chrono::seconds(60));
  thread_pool pool(2);
  async_scope scope;
  std::atomic<int> stopped{0};
  auto loop = [](thread_pool& p, std::stop_token st, std::atomic<int>& s) -> task<> {
    while (!st.stop_requested()) co_await p.schedule();  // a yield loop until asked to stop
    s.fetch_add(1);
  };
  for (int i = 0; i < 4; ++i) scope.spawn(loop(pool, scope.get_token(), stopped));
  scope.request_stop();
  sync_wait(scope.join());
  REQUIRE(stopped.load() == 4);
}

TEST_CASE("destroying a scope that was never joined aborts with a message", "[async_scope]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler: die as a user's program would
    ::close(2);                     // keep the expected message out of the test log
    { async_scope scope; }
    ::_exit(0);  // reached only if the destructor did not abort
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGABRT);
}
