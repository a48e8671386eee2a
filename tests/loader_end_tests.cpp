// loader_options::end: a caller that knows where its work ends (an export
// of one epoch or of N samples, `bench --epochs N`, Loader(epochs=N)) gets
// every batch up to it, then the end of the epoch, and nothing past it is
// read (on object storage each read is a billed GET). Random access and
// the shard stream alike; set_epoch() back before the end reads again.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_fixtures.hpp"
#include "test_support.hpp"

using namespace ringfeed::test;
using ringfeed::loader;
using ringfeed::loader_end;

TEST_CASE("end: the last epoch's first batches, then the end, and no read past them", "[loader][end]") {
  ringfeed::test::temp_dir tmp;
  auto o = base_options(make_folder(tmp.path(), 2));  // 16 samples, batches of 5: 4 per epoch
  o.end = loader_end{1, 2};
  loader l(o);
  REQUIRE(drain_epoch(l).size() == 4);
  const auto last = drain_epoch(l);
  REQUIRE(last.size() == 2);
  REQUIRE(last[1].epoch == 1);
  REQUIRE(last[1].number == 1);
  // Every read finished before its batch was delivered: the count is final.
  REQUIRE(l.stats().read.items == 16 + 10);
  REQUIRE_THROWS_WITH(ringfeed::sync_wait(l.next()), Catch::Contains("past the end") &&
                                                         Catch::Contains("epoch 1, 2 batch(es)"));
  REQUIRE(l.stats().read.items == 16 + 10);

  SECTION("set_epoch before the end reads that epoch again, up to the end") {
    l.set_epoch(1);
    REQUIRE(drain_epoch(l).size() == 2);
    REQUIRE(l.stats().read.items == 16 + 10 + 10);
  }
}

TEST_CASE("end at a whole epoch: the epoch, the end, nothing prefetched after", "[loader][end]") {
  ringfeed::test::temp_dir tmp;
  auto o = base_options(make_folder(tmp.path(), 1));  // 8 samples: batches of 5 and 3
  o.end = loader_end{0};
  loader l(o);
  REQUIRE(drain_epoch(l).size() == 2);
  REQUIRE(l.stats().read.items == 8);
  REQUIRE_THROWS_AS(ringfeed::sync_wait(l.next()), std::logic_error);
}

TEST_CASE("end with stream_shards: the shards of the epochs asked for, then the end", "[loader][end][stream]") {
  ringfeed::test::watchdog dog("stream end", std::chrono::seconds(60));
  ringfeed::test::temp_dir tmp;
  auto o = base_options(make_shards(tmp.path(), 2));  // 16 samples
  o.stream_shards = true;
  o.shuffle_buffer = 4;
  o.stream_read_size = 100 * 1024;  // several windows per shard
  o.end = loader_end{1};
  loader l(o);
  REQUIRE(drain_epoch(l).size() == 4);
  REQUIRE(drain_epoch(l).size() == 4);
  const std::uint64_t two_epochs = l.stats().read.items;
  REQUIRE(two_epochs == 32);
  REQUIRE_THROWS_AS(ringfeed::sync_wait(l.next()), std::logic_error);
  // The destructor joins the stream, whose reader ended at the end: no hang.
}
