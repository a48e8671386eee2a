// detail::prefetch_control, the adaptive prefetch rule (issue 39), driven
// event by event: no loader, no threads, no clocks. The loader test that a
// consumer changing speed moves the depth is in loader_prefetch_tests.cpp.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "loader/prefetch_control.hpp"

using ringfeed::detail::prefetch_control;

namespace {

prefetch_control::limits bounds(std::size_t cap, std::size_t start = 2, std::size_t shrink_after = 3) {
  prefetch_control::limits l;
  l.floor = 1;
  l.cap = cap;
  l.start = start;
  l.shrink_after = shrink_after;
  return l;
}

// A consumer faster than the loader: it waits for every batch.
void fast(prefetch_control& c, int batches) {
  for (int i = 0; i < batches; ++i) {
    c.consumer_waited();
    c.delivered(0);
  }
}

// A slower one: every batch it takes has `behind` more finished behind it.
void slow(prefetch_control& c, int batches, std::size_t behind = 1) {
  for (int i = 0; i < batches; ++i) c.delivered(behind);
}

}  // namespace

TEST_CASE("prefetch: starts at 2 batches, clamped into [floor, cap]", "[prefetch]") {
  CHECK(prefetch_control(bounds(6)).depth() == 2);
  CHECK(prefetch_control(bounds(1)).depth() == 1);   // prefetch_batches = 1: the cap wins
  CHECK(prefetch_control(bounds(6, 0)).depth() == 1);  // never below the floor
  const auto s = prefetch_control(bounds(6)).stats();
  CHECK(s.floor == 1);
  CHECK(s.cap == 6);
  CHECK((s.low == 2 && s.high == 2 && s.changes == 0));
  REQUIRE(s.history.size() == 1);  // the starting depth, at batch 0
  CHECK((s.history[0].batch == 0 && s.history[0].depth == 2));
}

TEST_CASE("prefetch: each wait of the consumer adds a batch, up to the cap", "[prefetch]") {
  prefetch_control c(bounds(5));
  fast(c, 2);
  CHECK(c.depth() == 4);
  fast(c, 10);
  CHECK(c.depth() == 5);  // prefetch_batches / the memory budget bound it
  const auto s = c.stats();
  CHECK(s.high == 5);
  CHECK(s.consumer_waits == 12);
  CHECK(s.changes == 3);
  REQUIRE(s.history.size() == 4);
  // Changed when the wait for batches 0, 1 and 2 began (delivered() counts after).
  CHECK((s.history[1].batch == 0 && s.history[1].depth == 3));
  CHECK((s.history[2].batch == 1 && s.history[2].depth == 4));
  CHECK((s.history[3].batch == 2 && s.history[3].depth == 5));
}

TEST_CASE("prefetch: batches to spare, shrink_after times in a row, take one away, down to the floor", "[prefetch]") {
  prefetch_control c(bounds(4, 4, 3));
  slow(c, 2);
  CHECK(c.depth() == 4);  // not yet: two in a row
  slow(c, 1);
  CHECK(c.depth() == 3);
  slow(c, 3 * 10);
  CHECK(c.depth() == 1);  // the floor: the slab being filled
  const auto s = c.stats();
  CHECK((s.low == 1 && s.high == 4));
  CHECK(s.spare_deliveries == 33);
  CHECK(s.history.back().batch == 9);  // 3 → 2 after 6 batches, 2 → 1 after 9
}

TEST_CASE("prefetch: a wait or a just-in-time batch breaks the streak", "[prefetch]") {
  prefetch_control c(bounds(4, 3, 3));
  slow(c, 2);
  c.delivered(0);  // nothing behind it: the depth was just right
  slow(c, 2);
  CHECK(c.depth() == 3);
  c.consumer_waited();  // and a wait grows it at once
  c.delivered(0);
  CHECK(c.depth() == 4);
  slow(c, 2);
  CHECK(c.depth() == 4);
  slow(c, 1);
  CHECK(c.depth() == 3);
}

TEST_CASE("prefetch: a consumer that changes speed moves the depth up, then down", "[prefetch]") {
  prefetch_control c(bounds(6));
  fast(c, 10);
  CHECK(c.depth() == 6);
  slow(c, 40);
  CHECK(c.depth() == 1);
  fast(c, 1);
  CHECK(c.depth() == 2);
  const auto s = c.stats();
  CHECK((s.low == 1 && s.high == 6));
  // Up, then down, then up: each step one batch, in order of the batch count.
  std::vector<std::size_t> depths;
  for (const auto& h : s.history) depths.push_back(h.depth);
  CHECK(depths == std::vector<std::size_t>{2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 2});
  for (std::size_t i = 1; i < s.history.size(); ++i) CHECK(s.history[i - 1].batch <= s.history[i].batch);
}

TEST_CASE("prefetch: no memory for another slab caps the depth where it is", "[prefetch]") {
  prefetch_control c(bounds(8));
  fast(c, 2);
  CHECK(c.depth() == 4);
  c.cap(3);  // the fourth batch's slab could not be allocated
  CHECK(c.depth() == 3);
  fast(c, 5);
  CHECK(c.depth() == 3);
  CHECK(c.stats().cap == 3);
  c.cap(0);
  CHECK(c.depth() == 1);  // never below the floor
}

TEST_CASE("prefetch: the history keeps the latest changes", "[prefetch]") {
  auto l = bounds(2, 1, 1);
  l.history = 4;
  prefetch_control c(l);
  for (int i = 0; i < 10; ++i) {
    fast(c, 1);
    slow(c, 1);
  }
  const auto s = c.stats();
  CHECK(s.changes == 20);
  REQUIRE(s.history.size() == 4);
  // Up at batches 16 and 18, down at 18 and 20: the last four of twenty.
  CHECK((s.history[0].batch == 16 && s.history[0].depth == 2));
  CHECK((s.history[1].batch == 18 && s.history[1].depth == 1));
  CHECK((s.history[2].batch == 18 && s.history[2].depth == 2));
  CHECK((s.history[3].batch == 20 && s.history[3].depth == 1));
}
