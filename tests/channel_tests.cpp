#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/channel.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "test_support.hpp"

using ringfeed::async_scope;
using ringfeed::channel;
using ringfeed::sync_wait;
using ringfeed::task;
using ringfeed::thread_pool;
using ringfeed::when_all;

namespace {

template <typename T>
task<bool> send(channel<T>& ch, T v) {
  co_return co_await ch.send(std::move(v));
}

template <typename T>
task<std::optional<T>> receive(channel<T>& ch) {
  co_return co_await ch.receive();
}

}  // namespace

TEST_CASE("values come out in the order they went in", "[channel]") {
  channel<int> ch(4);
  REQUIRE(ch.capacity() == 4);
  for (int i = 0; i < 4; ++i) REQUIRE(sync_wait(send(ch, i)));
  REQUIRE(ch.size() == 4);
  for (int i = 0; i < 4; ++i) REQUIRE(sync_wait(receive(ch)) == i);
  REQUIRE(ch.size() == 0);
}

TEST_CASE("close: sends fail, receives drain the buffer and then end", "[channel]") {
  channel<std::unique_ptr<int>> ch(3);
  REQUIRE(sync_wait(send(ch, std::make_unique<int>(1))));
  REQUIRE(sync_wait(send(ch, std::make_unique<int>(2))));
  ch.close();
  ch.close();  // idempotent
  REQUIRE(ch.is_closed());
  REQUIRE_FALSE(sync_wait(send(ch, std::make_unique<int>(3))));
  REQUIRE(*sync_wait(receive(ch)).value() == 1);
  REQUIRE(*sync_wait(receive(ch)).value() == 2);
  REQUIRE_FALSE(sync_wait(receive(ch)).has_value());
  REQUIRE_FALSE(sync_wait(receive(ch)).has_value());
}

TEST_CASE("close wakes suspended receivers with nullopt and senders with false", "[channel]") {
  channel<int> ch(1);  // no executor: woken waiters resume on the closing thread
  async_scope scope;
  std::vector<std::optional<int>> received;
  std::vector<bool> sent;
  auto receiver = [](channel<int>& c, std::vector<std::optional<int>>& out) -> task<> {
    out.push_back(co_await c.receive());
  };
  scope.spawn(receiver(ch, received));
  scope.spawn(receiver(ch, received));
  REQUIRE(received.empty());  // both suspended on the empty channel
  ch.close();
  REQUIRE(received == std::vector<std::optional<int>>{std::nullopt, std::nullopt});

  channel<int> full(1);
  REQUIRE(sync_wait(send(full, 1)));
  auto sender = [](channel<int>& c, std::vector<bool>& out, int v) -> task<> {
    out.push_back(co_await c.send(v));
  };
  scope.spawn(sender(full, sent, 2));
  scope.spawn(sender(full, sent, 3));
  REQUIRE(sent.empty());  // both suspended on the full channel
  full.close();
  REQUIRE(sent == std::vector<bool>{false, false});
  REQUIRE(sync_wait(receive(full)) == 1);  // what was buffered is still delivered
  REQUIRE_FALSE(sync_wait(receive(full)).has_value());
  sync_wait(scope.join());
}

TEST_CASE("a full channel suspends the sender until a receive frees a slot", "[channel]") {
  channel<int> ch(1);
  async_scope scope;
  std::optional<bool> result;
  auto sender = [](channel<int>& c, std::optional<bool>& r) -> task<> { r = co_await c.send(2); };
  REQUIRE(sync_wait(send(ch, 1)));
  scope.spawn(sender(ch, result));
  REQUIRE_FALSE(result.has_value());           // suspended: the channel is full
  REQUIRE(sync_wait(receive(ch)) == 1);        // frees a slot, takes the waiting value in
  REQUIRE(result == true);
  REQUIRE(sync_wait(receive(ch)) == 2);
  sync_wait(scope.join());
}

TEST_CASE("capacity 0 is a rendezvous", "[channel]") {
  channel<int> ch(0);
  async_scope scope;
  std::optional<bool> result;
  auto sender = [](channel<int>& c, std::optional<bool>& r) -> task<> { r = co_await c.send(5); };
  scope.spawn(sender(ch, result));
  REQUIRE_FALSE(result.has_value());  // nobody to take it
  REQUIRE(sync_wait(receive(ch)) == 5);
  REQUIRE(result == true);
  sync_wait(scope.join());
}

TEST_CASE("a woken waiter may use the channel again at once (resumed outside the lock)",
          "[channel]") {
  // Inline resumption: the receiver runs on the sender's thread and sends on
  // the same channel. Had the sender still held the channel's (non-recursive)
  // mutex, this would deadlock.
  ringfeed::test::watchdog dog("reentrant wake", std::chrono::seconds(30));
  channel<int> ch(1);
  async_scope scope;
  auto echo = [](channel<int>& c) -> task<> {
    auto v = co_await c.receive();
    co_await c.send(*v + 1);
  };
  scope.spawn(echo(ch));
  REQUIRE(sync_wait(send(ch, 41)));
  REQUIRE(sync_wait(receive(ch)) == 42);
  sync_wait(scope.join());
}

TEST_CASE("destroying a closed channel frees what is still buffered, without blocking",
          "[channel]") {
  auto tracker = std::make_shared<int>(0);
  {
    channel<std::shared_ptr<int>> ch(4);
    REQUIRE(sync_wait(send(ch, tracker)));
    REQUIRE(sync_wait(send(ch, tracker)));
    REQUIRE(tracker.use_count() == 3);
  }
  REQUIRE(tracker.use_count() == 1);
}

namespace {

task<> produce(thread_pool& pool, channel<int>& ch, int first, int count) {
  co_await pool.schedule();
  for (int i = first; i < first + count; ++i) {
    const bool ok = co_await ch.send(i);
    if (!ok) throw std::logic_error("send failed on an open channel");
  }
}

task<std::vector<int>> consume(thread_pool& pool, channel<int>& ch) {
  co_await pool.schedule();
  std::vector<int> got;
  while (auto v = co_await ch.receive()) got.push_back(*v);
  co_return got;
}

task<std::vector<std::vector<int>>> run_mpmc(thread_pool& pool, channel<int>& ch, int producers,
                                             int consumers, int per_producer) {
  std::vector<task<std::vector<int>>> readers;
  for (int c = 0; c < consumers; ++c) readers.push_back(consume(pool, ch));
  auto writers_then_close = [&]() -> task<std::vector<int>> {
    std::vector<task<>> writers;
    for (int p = 0; p < producers; ++p) writers.push_back(produce(pool, ch, p * per_producer, per_producer));
    co_await when_all(std::move(writers));
    ch.close();  // consumers drain what is left and then stop
    co_return std::vector<int>{};
  };
  readers.push_back(writers_then_close());
  co_return co_await when_all(std::move(readers));
}

}  // namespace

TEST_CASE("stress: several producers and consumers, small capacity, exactly-once delivery",
          "[channel][pool][stress]") {
  ringfeed::test::watchdog dog("channel MPMC", std::chrono::seconds(240));
  thread_pool pool(ringfeed::test::stress_threads());
  for (std::size_t capacity : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}}) {
    for (bool via_pool : {true, false}) {
      INFO("capacity " << capacity << (via_pool ? ", waiters posted to the pool" : ", inline wake-ups"));
      channel<int> ch(capacity, via_pool ? &pool : nullptr);
      constexpr int producers = 4;
      constexpr int consumers = 3;
      constexpr int per_producer = 5'000;
      auto per_consumer = sync_wait(run_mpmc(pool, ch, producers, consumers, per_producer));
      std::vector<int> all;
      for (auto& got : per_consumer) {
        // Each producer's values reach any one consumer in the order sent.
        std::vector<int> last(producers, -1);
        for (int v : got) {
          const int p = v / per_producer;
          REQUIRE(v > last[static_cast<std::size_t>(p)]);
          last[static_cast<std::size_t>(p)] = v;
        }
        all.insert(all.end(), got.begin(), got.end());
      }
      std::sort(all.begin(), all.end());
      REQUIRE(all.size() == static_cast<std::size_t>(producers * per_producer));
      for (int i = 0; i < producers * per_producer; ++i) REQUIRE(all[static_cast<std::size_t>(i)] == i);
    }
  }
}
