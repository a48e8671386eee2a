// detail::plan_loader: every refusal a bad option gets, where delivery
// starts, and how much batch memory a loader takes — checked without a
// dataset on disk, threads or a GPU (the plan is a pure function).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <ringfeed/thread_pool.hpp>

#include "loader/loader_plan.hpp"
#include "loader/loader_stream.hpp"

using ringfeed::loader_options;
using ringfeed::output_spec;
using ringfeed::cuda::device_probe;
using ringfeed::data::dataset;
using ringfeed::data::sampler;
using ringfeed::detail::plan_loader;

namespace {

dataset folder_of(std::size_t n) {
  ringfeed::data::detail::dataset_contents c;
  c.root = "/nowhere";
  c.classes = {"a", "b"};
  for (std::size_t i = 0; i < n; ++i) {
    c.names.push_back("a/" + std::to_string(i) + ".jpg");
    c.labels.push_back(static_cast<std::int64_t>(i % 2));
  }
  return dataset(std::move(c));
}

loader_options options_for(std::size_t batch) {
  loader_options o;
  o.source = "/nowhere";
  o.batch_size = batch;
  o.pipeline = ringfeed::image::pipeline::val(256, 224);
  o.output = output_spec::float32_nchw();
  o.device = -1;
  o.sampler.rank = 0;
  o.sampler.world_size = 1;
  return o;
}

device_probe no_gpu() {
  device_probe p;
  p.reason = "cudaErrorInsufficientDriver";
  return p;
}

device_probe gpus(int n) {
  device_probe p;
  p.device_count = n;
  return p;
}

constexpr std::size_t sample = 3 * 224 * 224 * 4;  // float32 NCHW
constexpr std::size_t slab = (4 * sample + 4095) / 4096 * 4096;

}  // namespace

TEST_CASE("plan: batch memory is whole pages per batch, up to 8 batches of the budget", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  o.memory_budget = 20 * slab;
  const sampler smp(ds.size(), o.sampler);
  const auto p = plan_loader(o, ds, smp, no_gpu());
  CHECK(p.sample_bytes == sample);
  CHECK(p.slab_bytes == slab);
  CHECK(p.slab_bytes % 4096 == 0);
  CHECK(p.slabs == ringfeed::detail::max_default_slabs);
  CHECK(p.batches_per_epoch == 3);  // 10 samples, batches of 4, the last short
  CHECK(p.sample_shape.height == 224);
  CHECK(p.pipe.output() == output_spec::float32_nchw());

  o.memory_budget = 3 * slab;  // a small budget: as many as fit
  CHECK(plan_loader(o, ds, smp, no_gpu()).slabs == 3);
  o.prefetch_batches = 2;  // + the consumer's batch
  CHECK(plan_loader(o, ds, smp, no_gpu()).slabs == 3);
}

TEST_CASE("plan: decode=gpu's files share memory_budget with the slabs", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  const sampler smp(ds.size(), o.sampler);
  const auto shared = [&] {
    auto p = plan_loader(o, ds, smp, no_gpu());
    ringfeed::detail::share_budget_with_files(o, p);
    CHECK(p.slabs * p.slab_bytes + p.file_bytes <= o.memory_budget);  // the budget holds both
    return p;
  };
  o.memory_budget = 20 * slab;  // 8 slabs leave the files more than a quarter
  auto p = shared();
  CHECK(p.slabs == ringfeed::detail::max_default_slabs);
  CHECK(p.file_bytes == 12 * slab);
  o.memory_budget = 8 * slab;  // 8 slabs would fill it: 6 leave the files a quarter
  p = shared();
  CHECK(p.slabs == 6);
  CHECK(p.file_bytes == 2 * slab);
  o.memory_budget = 2 * slab + 100;  // never fewer than 2 slabs; the files get what is left
  p = shared();
  CHECK(p.slabs == 2);
  CHECK(p.file_bytes == 100);
  o.memory_budget = 8 * slab;
  o.prefetch_batches = 6;  // asked for: 7 slabs kept, the files get the eighth
  p = shared();
  CHECK(p.slabs == 7);
  CHECK(p.file_bytes == slab);
}

TEST_CASE("plan: a worker per thread even when io_depth is shallower, else one per read", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  const sampler smp(ds.size(), o.sampler);
  o.threads = 16;
  o.io_depth = 8;  // what the probe recommends in memory (tmpfs): decodes must not stop at 8
  CHECK(plan_loader(o, ds, smp, no_gpu()).workers == 16);
  o.io_depth = 64;  // NVMe: reads in flight need a worker each
  CHECK(plan_loader(o, ds, smp, no_gpu()).workers == 64);
  o.threads = 0;  // one per core
  o.io_depth = 1;
  CHECK(plan_loader(o, ds, smp, no_gpu()).workers == ringfeed::thread_pool::default_thread_count(0));
}

TEST_CASE("plan: a budget or prefetch that does not fit is refused, saying what to change", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  const sampler smp(ds.size(), o.sampler);
  o.memory_budget = 2 * slab - 1;
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()),
                    Catch::Contains("memory_budget") && Catch::Contains("needs at least 2"));
  o.memory_budget = 4 * slab;
  o.prefetch_batches = 4;  // 5 slabs
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()),
                    Catch::Contains("prefetch_batches 4") && Catch::Contains("more than memory_budget"));
}

TEST_CASE("plan: no batch to deliver, no samples, or a pipeline of any size is refused", "[plan]") {
  auto o = options_for(16);
  o.drop_last = true;
  const dataset ten = folder_of(10);
  const sampler smp(ten.size(), o.sampler);
  CHECK_THROWS_WITH(plan_loader(o, ten, smp, no_gpu()), Catch::Contains("no batch to deliver"));

  const dataset none;
  const sampler empty_smp(0, o.sampler);
  CHECK_THROWS_WITH(plan_loader(o, none, empty_smp, no_gpu()), Catch::Contains("holds no samples"));

  o = options_for(2);
  o.pipeline = ringfeed::image::pipeline().resize(100);  // the size depends on each image
  CHECK_THROWS_WITH(plan_loader(o, ten, smp, no_gpu()), Catch::Contains("depends on the image"));

  o = options_for(0);
  CHECK_THROWS_WITH(plan_loader(o, ten, smp, no_gpu()), Catch::Contains("batch_size"));
}

TEST_CASE("plan: threads and io_depth past what a machine holds are refused, naming them", "[plan]") {
  // --io-depth -1 wrapped to 2^64-1 and aborted the CLI; --threads 1e9
  // filled memory with threads until the kernel's OOM killer came.
  const auto ds = folder_of(64);
  const ringfeed::data::sampler smp(ds.size(), {});
  auto o = options_for(4);
  o.memory_budget = 8 * slab;
  o.threads = ringfeed::max_threads;
  o.io_depth = ringfeed::max_io_depth;
  CHECK_NOTHROW(plan_loader(o, ds, smp, no_gpu()));
  o.threads = ringfeed::max_threads + 1;
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("threads 4097 is more than 4096"));
  o.threads = 0;
  o.io_depth = ~std::size_t{0};
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("io_depth 18446744073709551615") &&
                                                            Catch::Contains("32768"));
  o.io_depth = 0;
  o.pread_threads = 100000;
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("pread_threads 100000"));
}

TEST_CASE("plan: the resume state sets where delivery starts, and must match the loader", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  o.sampler.seed = 7;
  const sampler smp(ds.size(), o.sampler);
  o.resume = ringfeed::loader_state{7, 5, 2, 0, 1};
  const auto p = plan_loader(o, ds, smp, no_gpu());
  CHECK(p.first_epoch == 5);
  CHECK(p.first_batch == 2);

  o.resume = ringfeed::loader_state{8, 5, 2, 0, 1};
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("seed 8") && Catch::Contains("seed 7"));
  o.resume = ringfeed::loader_state{7, 5, 4, 0, 1};  // past the 3 batches
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("batch 4 is past"));
}

TEST_CASE("plan: the device is used when there is one, else host batches with the reason", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  const sampler smp(ds.size(), o.sampler);

  auto p = plan_loader(o, ds, smp, gpus(1));  // device = -1
  CHECK_FALSE(p.use_device);
  CHECK(p.host_reason == "host batches requested (device = -1)");

  o.device = 0;
  p = plan_loader(o, ds, smp, no_gpu());
  CHECK_FALSE(p.use_device);
  CHECK_THAT(p.host_reason, Catch::Contains("cudaErrorInsufficientDriver"));
  CHECK(p.pipe.output() == output_spec::float32_nchw());  // the CPU converts

  p = plan_loader(o, ds, smp, gpus(1));
  CHECK(p.use_device);
  CHECK(p.host_reason.empty());
  CHECK(p.pipe.output() == output_spec::uint8_nhwc());  // bytes cross PCIe; the device converts
  CHECK(p.sample_bytes == 224 * 224 * 3);

  o.device = 3;
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, gpus(1)), Catch::Contains("device 3 requested"));
}

TEST_CASE("plan: stream_shards needs tar shards and one rank", "[plan]") {
  const dataset ds = folder_of(10);
  auto o = options_for(4);
  o.stream_shards = true;
  const sampler smp(ds.size(), o.sampler);
  CHECK_THROWS_WITH(plan_loader(o, ds, smp, no_gpu()), Catch::Contains("ringfeed pack"));
}

TEST_CASE("stream_shards reads ahead within an eighth of memory_budget", "[loader][stream]") {
  using ringfeed::detail::stream_windows_in_flight;
  const std::size_t mib = std::size_t{1} << 20;
  // 2·k + 1 windows alive at most: k in flight, k queued, one being split.
  for (std::size_t budget : {64 * mib, 256 * mib, 1024 * mib, 8192 * mib}) {
    for (std::size_t read : {1 * mib, 4 * mib, 8 * mib, 64 * mib}) {
      const std::size_t k = stream_windows_in_flight(budget, read);
      INFO("budget " << budget / mib << " MiB, reads of " << read / mib << " MiB: " << k << " at once");
      CHECK(k >= 1);
      CHECK(k <= 4);
      if (k > 1) CHECK((2 * k + 1) * read <= budget / 8);
    }
  }
  CHECK(stream_windows_in_flight(std::size_t{1} << 30, 8 * mib) == 4);  // the defaults on object storage
  CHECK(stream_windows_in_flight(64 * mib, 8 * mib) == 1);             // a small budget: one at a time
}
