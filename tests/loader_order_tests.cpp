// loader::set_order and loader_options::samples: what ringfeed.DataLoader
// builds on (a torch sampler's indices, torchvision's `samples` list).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_fixtures.hpp"
#include "test_support.hpp"

using namespace ringfeed::test;
using ringfeed::loader;

TEST_CASE("set_order delivers the caller's indices in batches, then ends the epoch", "[loader][order]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 2);  // 16 samples
  loader l(base_options(root));                  // batches of 5
  const std::vector<std::size_t> order = {15, 3, 3, 0, 9, 12, 1, 3};  // repeats, as a sampler with replacement
  l.set_order(4, order);
  const auto got = drain_epoch(l);
  REQUIRE(got.size() == 2);
  REQUIRE(got[0].indices == std::vector<std::size_t>{15, 3, 3, 0, 9});
  REQUIRE(got[1].indices == std::vector<std::size_t>{12, 1, 3});
  REQUIRE(got[0].epoch == 4);
  REQUIRE(got[0].labels[0] == l.dataset().label(15));
  // A repeated index is augmented anew: its random choices follow the position.
  const std::size_t sample = got[0].pixels.size() / 5;
  REQUIRE(!std::equal(got[0].pixels.begin() + sample, got[0].pixels.begin() + 2 * sample,
                      got[0].pixels.begin() + 2 * sample));
  // Nothing was read ahead into an epoch nobody ordered: the next call says so.
  REQUIRE_THROWS_AS(ringfeed::sync_wait(l.next()), std::logic_error);

  SECTION("the same order again gives the same pixels; first_batch resumes inside it") {
    l.set_order(4, order, 1);
    const auto tail = drain_epoch(l);
    REQUIRE(tail.size() == 1);
    REQUIRE(tail[0].pixels == got[1].pixels);
  }
  SECTION("set_epoch goes back to the sampler") {
    l.set_epoch(0);
    REQUIRE(drain_epoch(l).size() == 4);
  }
}

TEST_CASE("set_order refuses an index past the dataset and a first batch past the order", "[loader][order]") {
  ringfeed::test::temp_dir tmp;
  loader l(base_options(make_folder(tmp.path(), 1)));  // 8 samples
  REQUIRE_THROWS_WITH(l.set_order(0, {1, 8}), Catch::Contains("index 8 (at position 1)") &&
                                                   Catch::Contains("dataset's size 8"));
  REQUIRE_THROWS_AS(l.set_order(0, {1, 2}, 2), std::out_of_range);
  l.set_order(0, {});  // an empty order is an empty epoch
  REQUIRE(drain_epoch(l).empty());
}

TEST_CASE("loader_options::samples reads the listed files with their labels", "[loader][order]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 2);
  std::vector<std::string> paths = {(root / "class1" / "rocket.jpg").string(), (root / "class0" / "coffee.jpg").string(),
                                    (root / "class1" / "hubble.jpg").string()};
  auto o = base_options(root);
  o.samples = ringfeed::data::listed_samples(root.string(), paths, {7, 3, 7});
  loader l(o);
  REQUIRE(l.dataset().size() == 3);
  l.set_order(0, {2, 0, 1});
  const auto got = drain_epoch(l);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].labels == std::vector<std::int64_t>{7, 7, 3});

  REQUIRE_THROWS_WITH(ringfeed::data::listed_samples("x", {"a", ""}, {0, 1}), Catch::Contains("sample 1 has an empty path"));
  REQUIRE_THROWS_WITH(ringfeed::data::listed_samples("x", {"a"}, {0, 1}), Catch::Contains("1 paths but 2 labels"));
}

TEST_CASE("loader_options::pixels reads images in memory, L ones as their RGB replicate", "[loader][order]") {
  // 6 images of 4x2 L pixels: image i is filled with 10 * i.
  std::vector<std::uint8_t> gray(6 * 2 * 4);
  for (std::size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<std::uint8_t>(10 * (i / 8));
  auto o = base_options("in-memory");
  o.pipeline = ringfeed::image::pipeline{};  // no transform: the image itself, uint8 HWC
  o.batch_size = 3;
  ringfeed::pixel_array px;
  px.data = gray.data();
  px.count = 6;
  px.height = 2;
  px.width = 4;
  px.channels = 1;
  px.labels = {0, 1, 2, 3, 4, 5};
  o.pixels = px;
  loader l(o);
  l.set_order(0, {5, 0, 2});
  const auto got = drain_epoch(l);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].labels == std::vector<std::int64_t>{5, 0, 2});
  REQUIRE(got[0].pixels.size() == 3 * 2 * 4 * 3);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t b = 0; b < 24; ++b) REQUIRE(got[0].pixels[k * 24 + b] == 10 * got[0].labels[k]);

  o.pixels->channels = 2;
  REQUIRE_THROWS_WITH(loader(o), Catch::Contains("1 or 3 channels"));
}

TEST_CASE("set_order mid-epoch, again and again: each order delivers its own batches", "[loader][order][concurrency]") {
  ringfeed::test::temp_dir tmp;
  auto o = base_options(make_folder(tmp.path(), 2));  // 16 samples, batches of 5
  o.threads = 3;
  loader l(o);
  for (std::uint64_t round = 0; round < 40; ++round) {
    std::vector<std::size_t> order(12);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = (i * 7 + round) % 16;
    l.set_order(round, order);
    const std::size_t take = round % 4;  // of its 3 batches; then a stop with work in flight, or at the end
    for (std::size_t k = 0; k < take; ++k) {
      auto b = ringfeed::sync_wait(l.next());
      REQUIRE(b);
      REQUIRE(b->epoch() == round);
      REQUIRE(b->number() == k);
      const std::vector<std::size_t> got(b->indices().begin(), b->indices().end());
      const std::size_t end = std::min<std::size_t>(order.size(), (k + 1) * 5);
      REQUIRE(got == std::vector<std::size_t>(order.begin() + static_cast<std::ptrdiff_t>(k * 5),
                                              order.begin() + static_cast<std::ptrdiff_t>(end)));
    }
  }
}
