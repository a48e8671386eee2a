// cache=pixels in a running loader (issue 40): epoch 0 fills the cache,
// later epochs and later loaders read it, and every batch is byte-identical
// to exact mode without the cache; a changed file is decoded again, never
// served stale; fast mode with the cache gives exact mode's batches.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_fixtures.hpp"
#include "test_support.hpp"

using ringfeed::loader;
using namespace ringfeed::test;  // the fixtures

namespace {

// The train recipe in exact mode: RandomResizedCrop draws differ per epoch.
ringfeed::loader_options exact_options(const std::filesystem::path& source) {
  auto o = base_options(source);
  o.pipeline = ringfeed::image::pipeline::train(32, ringfeed::image::pipeline_mode::exact);
  return o;
}

ringfeed::loader_options cached(ringfeed::loader_options o, const std::filesystem::path& dir) {
  o.cache_dir = dir.string();
  o.cache = ringfeed::cache_kind::pixels;
  return o;
}

std::vector<std::vector<delivered>> epochs_of(const ringfeed::loader_options& o, int epochs) {
  loader l(o);
  std::vector<std::vector<delivered>> out;
  for (int e = 0; e < epochs; ++e) out.push_back(drain_epoch(l));
  return out;
}

}  // namespace

TEST_CASE("cache=pixels: epoch 0 fills, later epochs hit, batches equal exact mode without it",
          "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache", std::chrono::seconds(240));
  temp_dir tmp;
  const auto source = make_folder(tmp.path() / "data", 2);  // 16 photos, two of them gray
  const auto want = epochs_of(exact_options(source), 2);

  auto one_epoch = cached(exact_options(source), tmp.path() / "cache");
  one_epoch.end = ringfeed::loader_end{0};  // nothing of epoch 1 read ahead: exact counts
  {
    loader l(one_epoch);
    REQUIRE(l.stats().pixel_cache);
    require_same_batches(drain_epoch(l), want[0]);
    const auto p = l.stats().pixels;
    CHECK(p.hits == 0);
    CHECK(p.misses == 16);
    CHECK(p.stores == 16);
    CHECK(p.entries == 16);
    CHECK_THAT(l.stats().json(), Catch::Contains("\"pixel_cache\":{"));
  }
  {
    // A later loader (a later run, another rank) reads what the first wrote.
    // The clock starts before the loader: it reads ahead from its start.
    const auto t0 = std::chrono::steady_clock::now();
    loader later(one_epoch);
    require_same_batches(drain_epoch(later), want[0]);
    const auto wall = std::chrono::steady_clock::now() - t0;
    const auto p = later.stats().pixels;
    // Bandwidth is over the time a read was in flight, counted once however
    // many overlap: never more than the epoch's wall time, nor the reads' sum.
    CHECK(p.read_busy_ns > 0);
    CHECK(p.read_busy_ns <= std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count());
    CHECK(p.read_busy_ns <= p.read_ns);
    CHECK(p.hits == 16);
    CHECK(p.misses == 0);
    CHECK(p.stores == 0);
    CHECK(p.bytes_read > 0);
    // Each hit reads the stripes that hold the rows its crop reads (about
    // 3/4 of an image on average), not the whole entry.
    CHECK(p.bytes_read < p.bytes * 9 / 10);
  }
  // One loader over two epochs, the second read ahead while the first ends.
  temp_dir fresh;
  loader l(cached(exact_options(source), fresh.path()));
  require_same_batches(drain_epoch(l), want[0]);
  require_same_batches(drain_epoch(l), want[1]);
  const auto p = l.stats().pixels;
  CHECK(p.stores == 16);
  CHECK(p.hits >= 1);  // epoch 1's samples decoded in epoch 0 are read, not decoded
}

TEST_CASE("cache=pixels: fast mode reads the full decode, so its batches are exact mode's", "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache, fast mode", std::chrono::seconds(240));
  temp_dir tmp;
  const auto source = make_folder(tmp.path() / "data", 1);
  const auto want = epochs_of(exact_options(source), 2);
  const auto got = epochs_of(cached(base_options(source), tmp.path() / "cache"), 2);  // base_options: fast
  require_same_batches(got[0], want[0]);
  require_same_batches(got[1], want[1]);
}

TEST_CASE("cache=pixels: a file changed since it was cached is decoded again, never served stale",
          "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache, changed file", std::chrono::seconds(240));
  temp_dir tmp;
  const auto source = make_folder(tmp.path() / "data", 1);  // 8 photos, one class
  auto o = cached(exact_options(source), tmp.path() / "cache");
  o.end = ringfeed::loader_end{0};
  (void)first_epoch(o);  // fills the cache
  // Another photo under the same name (a new size and mtime).
  std::filesystem::copy_file(source / "class0" / "chelsea.jpg", source / "class0" / "astronaut.jpg",
                             std::filesystem::copy_options::overwrite_existing);
  const auto want = first_epoch(exact_options(source));
  loader l(o);
  require_same_batches(drain_epoch(l), want);
  const auto p = l.stats().pixels;
  CHECK(p.hits == 7);
  CHECK(p.misses == 1);
  CHECK(p.stores == 1);
}

TEST_CASE("cache=pixels with on_error=fail: a cache directory that cannot be made is an error naming it",
          "[loader][pixel_cache]") {
  temp_dir tmp;
  const auto source = make_folder(tmp.path() / "data", 1);
  std::ofstream(tmp.path() / "not-a-dir") << "x";
  auto o = cached(exact_options(source), tmp.path() / "not-a-dir");
  o.on_error = ringfeed::error_policy::fail;
  CHECK_THROWS_WITH(loader(o), Catch::Contains("not-a-dir/pixels"));
  o.on_error = ringfeed::error_policy::skip;  // a warning, and the loader runs without it
  std::vector<std::string> lines;
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  loader l(o);
  CHECK_FALSE(l.stats().pixel_cache);
  CHECK(drain_epoch(l).size() == 2);
  bool said = false;
  for (const auto& line : lines) said = said || line.find("without the pixel cache") != std::string::npos;
  CHECK(said);
}

TEST_CASE("cache=pixels keeps a deterministic head's output: val lists store the crop, not the decode",
          "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache, deterministic head", std::chrono::seconds(240));
  temp_dir tmp;
  const auto source = make_folder(tmp.path() / "data", 1);
  namespace img = ringfeed::image;
  // The val preset (fused Resize + CenterCrop + Normalize, float output),
  // and a list whose random ops run after the head every epoch.
  const std::vector<std::pair<const char*, img::pipeline>> recipes = {
      {"val preset", img::pipeline::val(36, 32, img::pipeline_mode::exact)},
      {"list with random ops after the head",
       img::transform_list::parse("Resize(36); CenterCrop(32); ColorJitter(0.4, 0.4, 0.4, 0.1); "
                                  "RandomGrayscale(0.3); ToTensor()")
           .compile(img::pipeline_mode::exact)},
  };
  for (const auto& [what, pipe] : recipes) {
    INFO(what);
    auto plain = base_options(source);
    plain.pipeline = pipe;
    plain.output = ringfeed::output_spec::float32_nchw();
    const auto want = epochs_of(plain, 2);
    const auto dir = tmp.path() / (std::string("cache-") + (pipe.tail().empty() ? "val" : "list"));
    auto o = cached(plain, dir);
    o.pipeline.set_mode(img::pipeline_mode::fast);  // the cache's batches are exact mode's anyway
    o.end = ringfeed::loader_end{0};
    {
      loader fill(o);
      require_same_batches(drain_epoch(fill), want[0]);
      const auto p = fill.stats().pixels;
      CHECK(p.stores == 8);
      CHECK(p.bytes == 8 * 4096);  // 32 x 32 x 3 bytes each: the crop, not the 300-600 KB decode
    }
    o.end.reset();
    loader later(o);
    require_same_batches(drain_epoch(later), want[0]);
    require_same_batches(drain_epoch(later), want[1]);  // the random ops drew anew in epoch 1
    CHECK(later.stats().pixels.stores == 0);
  }
}

TEST_CASE("cache=pixels over tar shards: members are keyed by shard and range", "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache, tar shards", std::chrono::seconds(240));
  temp_dir tmp;
  const auto shards = make_shards(tmp.path(), 2);  // 16 photos in 2 shards
  const auto want = first_epoch(exact_options(shards));
  auto o = cached(exact_options(shards), tmp.path() / "cache");
  o.end = ringfeed::loader_end{0};
  {
    loader fill(o);
    require_same_batches(drain_epoch(fill), want);
    CHECK(fill.stats().pixels.stores == 16);
  }
  loader later(o);
  require_same_batches(drain_epoch(later), want);
  const auto p = later.stats().pixels;
  CHECK(p.hits == 16);
  CHECK(p.misses == 0);
}

TEST_CASE("cache=pixels with stream_shards: hits drop the streamed bytes, batches equal the uncached run",
          "[loader][pixel_cache]") {
  watchdog dog("loader pixel cache, stream_shards", std::chrono::seconds(240));
  temp_dir tmp;
  const auto shards = make_shards(tmp.path(), 2);  // 16 photos in 2 shards
  auto streamed = exact_options(shards);
  streamed.stream_shards = true;
  const auto want = epochs_of(streamed, 2);
  auto o = cached(streamed, tmp.path() / "cache");
  {
    loader l(o);
    REQUIRE(l.stats().pixel_cache);
    require_same_batches(drain_epoch(l), want[0]);
    require_same_batches(drain_epoch(l), want[1]);
    const auto p = l.stats().pixels;
    CHECK(p.stores == 16);
    CHECK(p.hits >= 1);  // epoch 1's samples decoded in epoch 0 are read, not decoded
  }
  loader later(o);
  require_same_batches(drain_epoch(later), want[0]);
  require_same_batches(drain_epoch(later), want[1]);
  const auto p = later.stats().pixels;
  CHECK(p.misses == 0);
  CHECK(p.hits >= 32);
}
