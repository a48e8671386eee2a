// Adaptive prefetch in a running loader (issue 39): a consumer that is fast
// for the first part of an epoch and slow for the rest moves the depth up
// to the cap and back down, handing slabs back, and every sample still
// arrives once, in order. The rule itself is in prefetch_control_tests.cpp.
// No sleeps: the slow consumer waits, polling stats() against a deadline,
// until two batches are finished before it takes one.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <numeric>
#include <thread>
#include <vector>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_fixtures.hpp"
#include "test_support.hpp"

using ringfeed::loader;
using namespace ringfeed::test;  // the fixtures

namespace {

// Polls `l`'s stats until `done` holds, for 60 s at most: a condition the
// loader reaches by itself, never a sleep standing in for one.
template <class Done>
bool wait_for(const loader& l, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done(l.stats())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("prefetch grows while the consumer waits and shrinks while batches wait for it", "[loader][prefetch]") {
  watchdog dog("loader prefetch", std::chrono::seconds(240));
  temp_dir tmp;
  auto o = base_options(make_folder(tmp.path(), 8));  // 64 photos
  o.sampler.shuffle = false;
  o.batch_size = 2;          // 32 batches
  o.prefetch_batches = 4;    // the cap
  o.end = ringfeed::loader_end{0};  // one epoch: nothing prefetched past it
  const std::vector<delivered> want = first_epoch(o);
  REQUIRE(want.size() == 32);

  loader l(o);
  const auto start = l.stats().prefetch;
  CHECK((start.depth == 2 && start.floor == 1 && start.cap == 4));
  CHECK(l.stats().prefetch_batches == 4);
  std::vector<delivered> got;

  // Fast: each batch taken as soon as the loader has it and dropped at
  // once. next() finds none ready, and each wait adds a batch ahead.
  while (got.size() < 16 && l.stats().prefetch.depth < 4) {
    auto b = ringfeed::sync_wait(l.next());
    REQUIRE(b);
    got.push_back(copy_of(*b));
  }
  const auto fast = l.stats().prefetch;
  INFO("fast phase: " << got.size() << " batches, " << fast.consumer_waits << " waits");
  REQUIRE(fast.depth == 4);
  CHECK(fast.high == 4);
  CHECK(fast.consumer_waits >= 2);
  const std::size_t turned_at = got.size();

  // Slow: before each batch the consumer lets the loader finish two (the one
  // it takes and one behind it): every delivery has a batch to spare, and
  // every third of those takes one batch ahead away.
  while (got.size() < want.size()) {
    REQUIRE(wait_for(l, [](const ringfeed::loader_stats& s) { return s.prefetch.ready >= 2; }));
    auto b = ringfeed::sync_wait(l.next());
    REQUIRE(b);
    got.push_back(copy_of(*b));
  }
  REQUIRE_FALSE(ringfeed::sync_wait(l.next()));  // the end of the epoch

  // Every sample once, in order, with the pixels of a loader left alone.
  require_same_batches(got, want);
  std::vector<std::size_t> order, expected(64);
  for (const auto& d : got) order.insert(order.end(), d.indices.begin(), d.indices.end());
  std::iota(expected.begin(), expected.end(), std::size_t{0});
  CHECK(order == expected);

  // The depth rose to the cap, then fell to the floor, one step at a time,
  // and the slabs beyond it gave their memory back.
  REQUIRE(wait_for(l, [](const ringfeed::loader_stats& s) { return s.prefetch.slabs == 2; }));
  const auto end = l.stats().prefetch;
  CHECK(end.depth == 1);
  CHECK((end.low == 1 && end.high == 4));
  CHECK(end.spare_deliveries >= 9);
  std::size_t peak = 0;
  for (std::size_t i = 0; i < end.history.size(); ++i)
    if (end.history[i].depth == 4) peak = i;
  INFO("turned slow after batch " << turned_at);
  CHECK(end.history[peak].batch <= turned_at);
  for (std::size_t i = peak + 1; i < end.history.size(); ++i) {
    CHECK(end.history[i].depth + 1 == end.history[i - 1].depth);
    CHECK(end.history[i].batch >= turned_at);
  }
  CHECK(end.history.back().depth == 1);
  const std::string json = l.stats().json();
  CHECK_THAT(json, Catch::Contains("\"prefetch\":{") && Catch::Contains("\"history\":[[0,2]"));
}

TEST_CASE("a consumer that keeps its batches still gets the next ones: the depth counts what it holds",
          "[loader][prefetch]") {
  // list(loader) in Python, or batches kept across set_epoch: the slabs the
  // consumer holds are not the loader's to fill, so they never count
  // against the depth (a shrink never leaves the loader without a slab).
  watchdog dog("loader prefetch, batches kept", std::chrono::seconds(120));
  temp_dir tmp;
  auto o = base_options(make_folder(tmp.path(), 1));  // 8 photos
  o.sampler.shuffle = false;
  o.batch_size = 2;        // 4 batches an epoch
  o.prefetch_batches = 7;  // 8 slabs at most
  loader l(o);
  std::vector<ringfeed::batch> kept;
  while (auto b = ringfeed::sync_wait(l.next())) kept.push_back(std::move(*b));
  REQUIRE(kept.size() == 4);
  l.set_epoch(1);  // the kept batches stay valid across the restart
  for (int k = 0; k < 3; ++k) {
    auto b = ringfeed::sync_wait(l.next());
    REQUIRE(b);
    CHECK(b->epoch() == 1);
    kept.push_back(std::move(*b));
  }
  // The 7 kept + the one the loader fills, once it has asked for it: a
  // slab grows when next() finds nothing ready, so on a busy machine the
  // eighth may not be there yet. Never more than the cap.
  const auto p = l.stats().prefetch;
  CHECK(p.slabs >= 7);
  CHECK(p.slabs <= 8);
  CHECK(kept.front().indices()[0] == 0);  // still epoch 0's first batch
  kept.clear();
  REQUIRE(wait_for(l, [](const ringfeed::loader_stats& s) { return s.prefetch.ready >= 1; }));
}
