// Fixtures shared by the loader's tests: a small ImageFolder of the test
// photos, the same photos in tar shards, options that read it quickly, and epochs copied out of batches;
// the photo folder in a temporary directory under a watchdog (the device tests' setup).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace ringfeed::test {

const char* const photo_names[] = {"astronaut.jpg", "brick_gray.jpg", "chelsea.jpg",  "coffee.jpg",
                                   "coffee_portrait.jpg", "grace_hopper.jpg", "hubble.jpg", "rocket.jpg"};

// An ImageFolder of `classes` × 8 photos (copies of the test photos).
inline std::filesystem::path make_folder(const std::filesystem::path& root, int classes) {
  const std::filesystem::path src = ringfeed::test::image_data::dir() / "photos";
  for (int c = 0; c < classes; ++c) {
    const std::filesystem::path dir = root / ("class" + std::to_string(c));
    std::filesystem::create_directories(dir);
    for (const char* name : photo_names) std::filesystem::copy_file(src / name, dir / name);
  }
  return root;
}

// `shards` WebDataset tar shards of 8 photos each (key.jpg + key.cls, label
// = shard number), written with GNU tar in name order.
inline std::filesystem::path make_shards(const std::filesystem::path& root, int shards) {
  const std::filesystem::path src = ringfeed::test::image_data::dir() / "photos";
  std::filesystem::create_directories(root / "shards");
  for (int sh = 0; sh < shards; ++sh) {
    const std::filesystem::path stage = root / ("stage" + std::to_string(sh));
    std::filesystem::create_directories(stage);
    int k = 0;
    for (const char* name : photo_names) {
      const std::string key = "s" + std::to_string(sh) + "_" + std::to_string(k++);
      std::filesystem::copy_file(src / name, stage / (key + ".jpg"));
      std::ofstream(stage / (key + ".cls")) << sh;
    }
    const std::string cmd = "tar -cf '" + (root / "shards" / ("shard-" + std::to_string(sh) + ".tar")).string() +
                            "' --sort=name -C '" + stage.string() + "' .";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  return root / "shards";
}

inline ringfeed::loader_options base_options(const std::filesystem::path& source) {
  ringfeed::loader_options o;
  o.source = source.string();
  o.dataset.use_cache = false;
  o.pipeline = ringfeed::image::pipeline::train(32, ringfeed::image::pipeline_mode::fast);
  o.output = ringfeed::output_spec::uint8_nhwc();
  o.batch_size = 5;
  o.threads = 2;
  o.io_depth = 8;
  o.device = -1;
  o.sampler.seed = 7;
  o.log = [](std::string_view) {};
  return o;
}

struct delivered {
  std::uint64_t epoch;
  std::size_t number;
  std::vector<std::size_t> indices;
  std::vector<std::int64_t> labels;
  std::vector<std::uint8_t> pixels;
};

inline delivered copy_of(const ringfeed::batch& b) {
  const auto* p = static_cast<const std::uint8_t*>(b.images().data);
  return {b.epoch(), b.number(), {b.indices().begin(), b.indices().end()}, {b.labels().begin(), b.labels().end()},
          {p, p + b.images().bytes()}};
}

inline std::vector<delivered> drain_epoch(ringfeed::loader& l) {
  std::vector<delivered> out;
  while (auto b = ringfeed::sync_wait(l.next())) out.push_back(copy_of(*b));
  return out;
}

// The first epoch of a loader made with `o`, destroyed before this returns: a reference run.
inline std::vector<delivered> first_epoch(const ringfeed::loader_options& o) {
  ringfeed::loader l(o);
  return drain_epoch(l);
}

// `got` has the batches of `want`: as many, each with the same samples and pixels.
inline void require_same_batches(const std::vector<delivered>& got, const std::vector<delivered>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("batch " << k);
    REQUIRE(got[k].indices == want[k].indices);
    REQUIRE(got[k].pixels == want[k].pixels);
  }
}

// What the device tests start with: a watchdog that names the test (none
// where `what` is null), a temporary directory, and the test photos as an
// ImageFolder in it (image_data::photo_folder), made in that order.
struct photo_folder_fixture {
  explicit photo_folder_fixture(const char* what = nullptr,
                                std::chrono::seconds limit = std::chrono::seconds(120))
      : dog(what != nullptr ? std::make_unique<watchdog>(what, limit) : nullptr),
        root(image_data::photo_folder(tmp.path())) {}

  std::unique_ptr<watchdog> dog;
  temp_dir tmp;
  std::filesystem::path root;
};

}  // namespace ringfeed::test
