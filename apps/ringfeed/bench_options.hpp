// `ringfeed bench`'s options, shared by its two halves: the loader bench
// (cmd_bench.cpp) and `--pipeline none`, the storage path alone
// (cmd_bench_read.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <ringfeed/io/source.hpp>

#include "commands.hpp"

namespace ringfeed::cli {

struct bench_options {
  std::string source;
  recipe_options recipe = recipe_with("train");
  std::size_t batch = 64;
  bool exact = false;
  bool no_dct_scale = false;
  std::uint64_t max_pixels = image::default_max_pixels;
  std::string output = "float32";
  CLI::Option* output_option = nullptr;
  int device = 0;
  std::string decode = "auto";  // where JPEGs are decoded: auto | cpu | gpu
  std::size_t threads = 0;
  std::size_t io_depth = 0;  // 0: the storage probe's recommendation
  int epochs = 1;
  std::string io = "auto";
  io::s3_options s3;
  std::size_t memory_mb = 1024;
  CLI::Option* memory_option = nullptr;
  std::uint64_t seed = 0;
  std::string on_error = "skip";
  double step_ms = 0.0;  // simulated training step per batch (the consumer's own time)
  int warmup_batches = -1;  // batches before the steady state; -1: one per batch buffer
  bool direct = false;
  bool json = false;
  // Remote sources: the local read-through cache.
  std::string cache_dir;
  std::string cache = "bytes";  // what --cache-dir keeps: bytes | pixels
  double cache_gb = 10.0;
  CLI::Option* cache_gb_option = nullptr;
  // Tar shards: stream them (sequential reads + shuffle buffer).
  bool stream = false;
  std::size_t shuffle_buffer = 1000;
};

/// `--pipeline none`: every sample of opt.source read through the loader's
/// storage interface, nothing decoded; prints the result, returns the exit status.
int run_read_bench(bench_options opt);

}  // namespace ringfeed::cli
