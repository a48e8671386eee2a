// The loader's device path on the simulated device (support/sim_device):
// consumers on the default stream or a side stream, with slow kernels and
// no host synchronization, get the host path's bytes; stopping a run
// (set_epoch) loses no device buffer; the chosen device is used and the
// caller's current device is left alone; failures in the upload are
// reported, transient ones recovered, sticky ones final, and an uploader
// that cannot be made means host batches; destroying the loader waits for
// the consumers' releases. Each of these failed before its fix (a wrong
// byte, a hang caught by the watchdog, or a wrong device).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_fixtures.hpp"
#include "sim_device.hpp"

namespace {

namespace fs = std::filesystem;
namespace cu = ringfeed::cuda;
namespace img = ringfeed::image;
using ringfeed::output_spec;
using ringfeed::test::sim_device;
using ringfeed::test::sim_scope;
using namespace std::chrono_literals;

ringfeed::loader_options options(const fs::path& root, int device, std::size_t buffers = 2) {
  ringfeed::loader_options o;
  o.source = root.string();
  o.dataset.use_cache = false;
  o.pipeline = img::pipeline::train(24, img::pipeline_mode::fast);
  o.output = output_spec::float32_nchw();
  o.batch_size = 3;
  o.threads = 2;
  o.device = device;
  o.device_buffers = buffers;
  o.sampler.seed = 5;
  o.log = [](std::string_view) {};
  return o;
}

using bytes = std::vector<std::byte>;

// Every batch of `epochs` epochs on the host path: the reference.
std::vector<bytes> host_batches(const fs::path& root, std::uint64_t first_epoch, int epochs,
                                const img::pipeline* pipe = nullptr) {
  ringfeed::loader_options o = options(root, -1);
  if (pipe != nullptr) o.pipeline = *pipe;
  ringfeed::loader host(o);
  host.set_epoch(first_epoch);
  std::vector<bytes> out;
  for (int e = 0; e < epochs; ++e) {
    if (e > 0) host.set_epoch(first_epoch + static_cast<std::uint64_t>(e));
    while (auto b = ringfeed::sync_wait(host.next())) {
      const auto* p = static_cast<const std::byte*>(b->images().data);
      out.emplace_back(p, p + b->images().bytes());
    }
  }
  return out;
}

// What a consumer kernel read on its stream.
struct reading {
  bytes got;
  bool live = false;
};

// The consumer's work on batch `b` on stream `s`: a kernel that runs for
// `busy`, then reads the images. No host synchronization.
void consume(sim_device& dev, ringfeed::batch& b, cu::stream_t s, std::chrono::milliseconds busy, reading& out) {
  b.wait(s);
  const void* p = b.images().data;
  const std::size_t n = b.images().bytes();
  dev.enqueue(s, [&dev, p, n, busy, &out] {
    std::this_thread::sleep_for(busy);  // simulated device time: the consumer's kernel
    out.live = dev.live(p, n);
    out.got.assign(static_cast<const std::byte*>(p), static_cast<const std::byte*>(p) + n);
  });
}

// Runs `epochs` epochs with every batch read by a slow kernel on `stream`
// (null: the default stream) and dropped at once (its destructor releases
// it on the stream it waited on); returns what the kernels read.
std::vector<bytes> device_epochs(sim_device& dev, ringfeed::loader& loader, cu::stream_t stream, int epochs) {
  std::vector<std::unique_ptr<reading>> reads;
  for (int e = 0; e < epochs; ++e) {
    if (e > 0) loader.set_epoch(static_cast<std::uint64_t>(e));
    while (auto b = ringfeed::sync_wait(loader.next())) {
      REQUIRE(b->on_device());
      reads.push_back(std::make_unique<reading>());
      consume(dev, *b, stream, 6ms, *reads.back());
    }
  }
  dev.drain();
  std::vector<bytes> out;
  for (auto& r : reads) out.push_back(std::move(r->got));
  return out;
}

// Most tests' setup, in this order: a watchdog naming the test (none where
// `what` is null), the test photos in a temporary directory, the host
// path's batches of `epochs` epochs from `first_epoch` (made with `pipe`
// where given; none for 0 epochs), then the simulated device with
// `devices` devices, installed until the fixture goes.
struct sim_fixture {
  sim_fixture(const char* what, std::uint64_t first_epoch, int epochs, int devices = 1,
              const img::pipeline* pipe = nullptr)
      : photos(what),
        want(epochs > 0 ? host_batches(photos.root, first_epoch, epochs, pipe) : std::vector<bytes>{}),
        sim(devices) {}

  sim_device& dev() { return *sim.dev; }

  ringfeed::test::photo_folder_fixture photos;
  const fs::path& root = photos.root;
  std::vector<bytes> want;
  sim_scope sim;
};

}  // namespace

TEST_CASE("default-stream consumers with slow kernels get the host path's bytes", "[device_sim][loader]") {
  sim_fixture f("default stream", 0, 3);
  f.dev().set_timing({2ms, 2ms});
  ringfeed::loader loader(options(f.root, 0));
  REQUIRE(loader.uses_device());
  const auto got = device_epochs(f.dev(), loader, nullptr, 3);
  REQUIRE(got.size() == f.want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("batch " << k);
    REQUIRE(got[k] == f.want[k]);
  }
}

TEST_CASE("side-stream consumers with slow kernels get the host path's bytes", "[device_sim][loader]") {
  sim_fixture f("side stream", 0, 3);
  f.dev().set_timing({2ms, 2ms});
  ringfeed::loader loader(options(f.root, 0));
  const cu::stream_t s = f.dev().create_stream();
  const auto got = device_epochs(f.dev(), loader, s, 3);
  REQUIRE(got == f.want);
  f.dev().destroy_stream(s);
}

TEST_CASE("a transform list the kernel cannot convert is uploaded as the host made it", "[device_sim][loader]") {
  // One channel and a float tensor op at the end: the host writes the
  // output, the device gets it byte for byte (before: a ValueError, no
  // device path for such recipes).
  const img::pipeline pipe = img::transform_list::parse(
                                 "RandomResizedCrop(24); Grayscale(); ToTensor(); RandomErasing(p=0.5, value='random')")
                                 .compile(img::pipeline_mode::fast);
  sim_fixture f("host converted", 0, 2, 1, &pipe);
  f.dev().set_timing({2ms, 2ms});
  ringfeed::loader_options o = options(f.root, 0);
  o.pipeline = pipe;
  ringfeed::loader loader(o);
  REQUIRE(loader.uses_device());
  {
    auto b = ringfeed::sync_wait(loader.next());
    REQUIRE(b);
    CHECK(b->images().shape == std::array<std::int64_t, 4>{3, 1, 24, 24});
    CHECK(b->images().dtype == ringfeed::dtype::float32);
    CHECK(b->images().layout == ringfeed::layout::nchw);
  }
  loader.set_epoch(0);
  const auto got = device_epochs(f.dev(), loader, nullptr, 2);
  REQUIRE(got == f.want);
}

TEST_CASE("v2's ToDtype lists are converted on the device with v2's arithmetic", "[device_sim][loader]") {
  // [ToImage] ToDtype(float32, scale=True) Normalize is v2's conversion
  // (v · float32(1 / 255), not v / 255): after an image it goes to the
  // device with the table that follows it, and the batches are the host
  // path's (before: resolve refused the list for a device at all).
  for (const char* spec : {"Resize(30); CenterCrop(24); ToImage(); ToDtype(float32, scale=True); "
                           "Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))",
                           "RandomResizedCrop(24); PILToTensor(); ToDtype(float32, scale=True)"}) {
    INFO(spec);
    const img::pipeline pipe = img::transform_list::parse(spec).compile(img::pipeline_mode::fast);
    sim_fixture f("v2 ToDtype", 0, 2, 1, &pipe);
    f.dev().set_timing({2ms, 2ms});
    ringfeed::loader_options o = options(f.root, 0);
    o.pipeline = pipe;
    ringfeed::loader loader(o);
    REQUIRE(loader.uses_device());
    REQUIRE(device_epochs(f.dev(), loader, nullptr, 2) == f.want);
  }
}

TEST_CASE("stopping a run mid-epoch loses no device buffer", "[device_sim][loader]") {
  // break after a few batches, then iterate again (set_epoch), holding two
  // batches at a time: with buffers lost, the second next() never returns.
  sim_fixture f("set_epoch after break", 0, 0);
  ringfeed::loader loader(options(f.root, 0, 3));
  for (std::uint64_t round = 0; round < 4; ++round) {
    loader.set_epoch(round);
    auto a = ringfeed::sync_wait(loader.next());
    auto b = ringfeed::sync_wait(loader.next());
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    REQUIRE(a->number() == 0);
    REQUIRE(b->number() == 1);
    a->wait(nullptr);
    b->wait(nullptr);
  }
  // And a whole epoch afterwards, each batch held until the next arrives.
  loader.set_epoch(9);
  std::optional<ringfeed::batch> previous;
  std::size_t n = 0;
  while (auto b = ringfeed::sync_wait(loader.next())) {
    b->wait(nullptr);
    previous = std::move(b);
    ++n;
  }
  REQUIRE(n == loader.batches_per_epoch());
}

TEST_CASE("a loader resumed mid-epoch on the device continues with the host path's bytes", "[device_sim][loader]") {
  sim_fixture f("resume", 1, 1);
  const auto& epoch1 = f.want;
  f.dev().set_timing({2ms, 2ms});
  auto o = options(f.root, 0);
  o.resume = ringfeed::loader_state{o.sampler.seed, 1, 2, 0, 1};
  ringfeed::loader loader(o);
  std::vector<std::unique_ptr<reading>> reads;
  while (auto b = ringfeed::sync_wait(loader.next())) {
    reads.push_back(std::make_unique<reading>());
    consume(f.dev(), *b, nullptr, 4ms, *reads.back());
  }
  f.dev().drain();
  REQUIRE(reads.size() + 2 == epoch1.size());
  for (std::size_t k = 0; k < reads.size(); ++k) REQUIRE(reads[k]->got == epoch1[k + 2]);
}

TEST_CASE("the loader uploads to its device and leaves the caller's current device alone", "[device_sim][loader]") {
  sim_fixture f(nullptr, 0, 1, 2);
  sim_scope& sim = f.sim;
  REQUIRE(sim.dev->current_device() == 0);
  std::vector<bytes> got;
  {
    ringfeed::loader loader(options(f.root, 1));
    REQUIRE(loader.uses_device());
    REQUIRE(sim.dev->current_device() == 0);
    for (int d : sim.dev->allocation_devices()) REQUIRE(d == 1);
    while (auto b = ringfeed::sync_wait(loader.next())) {
      REQUIRE(b->images().device == 1);
      REQUIRE(sim.dev->current_device() == 0);
      // The consumer's default stream on device 1 (torch: current_stream(1)).
      sim.dev->set_device(1);
      b->wait(nullptr);
      sim.dev->synchronize(static_cast<cu::stream_t>(nullptr));
      const auto* p = static_cast<const std::byte*>(b->images().data);
      got.emplace_back(p, p + b->images().bytes());
      sim.dev->set_device(0);
      b->release(nullptr);  // from device 0: the loader finds device 1's default stream
      REQUIRE(sim.dev->current_device() == 0);
    }
  }
  REQUIRE(got == f.want);
}

TEST_CASE("a transient upload failure is reported and the next epoch is whole", "[device_sim][loader]") {
  sim_fixture f("transient failure", 1, 1);
  f.dev().set_timing({3ms, 1ms});
  ringfeed::loader loader(options(f.root, 0));
  f.dev().fail(sim_device::op::convert, 719, false, 2);  // the third batch's kernel launch
  bool failed = false;
  try {
    while (auto b = ringfeed::sync_wait(loader.next())) b->wait(nullptr);
  } catch (const cu::cuda_error& e) {
    failed = true;
    REQUIRE(std::string(e.what()).find("injected error 719") != std::string::npos);
  }
  REQUIRE(failed);
  loader.set_epoch(1);
  const auto got = device_epochs(f.dev(), loader, nullptr, 1);
  REQUIRE(got == f.want);
}

TEST_CASE("a sticky device error stays: no retry on the next epoch", "[device_sim][loader]") {
  sim_fixture f("sticky failure", 0, 0);
  sim_scope& sim = f.sim;
  ringfeed::loader loader(options(f.root, 0));
  sim.dev->fail(sim_device::op::copy_async, 700, true, 1);  // cudaErrorIllegalAddress on the second upload
  REQUIRE_THROWS_AS([&] { while (auto b = ringfeed::sync_wait(loader.next())) b->wait(nullptr); }(), cu::cuda_error);
  const std::size_t copies = sim.dev->calls(sim_device::op::copy_async);
  for (std::uint64_t e = 1; e < 3; ++e) {
    loader.set_epoch(e);
    REQUIRE_THROWS_WITH(ringfeed::sync_wait(loader.next()), Catch::Contains("injected error 700") &&
                                                               Catch::Contains("unusable"));
  }
  REQUIRE(sim.dev->calls(sim_device::op::copy_async) == copies);  // nothing retried on the dead context
}

TEST_CASE("an uploader that cannot be made means host batches, with the reason", "[device_sim][loader]") {
  sim_fixture f(nullptr, 0, 1);
  f.dev().fail(sim_device::op::allocate, 2, false, 1);  // cudaErrorMemoryAllocation for a buffer
  std::vector<std::string> lines;
  auto o = options(f.root, 0);
  o.log = [&](std::string_view l) { lines.emplace_back(l); };
  ringfeed::loader loader(o);
  REQUIRE_FALSE(loader.uses_device());
  REQUIRE(loader.host_reason().find("injected error 2") != std::string::npos);
  std::vector<bytes> got;
  while (auto b = ringfeed::sync_wait(loader.next())) {
    REQUIRE_FALSE(b->on_device());
    const auto* p = static_cast<const std::byte*>(b->images().data);
    got.emplace_back(p, p + b->images().bytes());
  }
  REQUIRE(got == f.want);
  REQUIRE(f.dev().live_allocations() == 0);  // nothing of the failed uploader left behind
}

TEST_CASE("destroying the loader waits for the consumer's pending release", "[device_sim][loader]") {
  sim_fixture f("destruction", 0, 1);
  sim_scope& sim = f.sim;
  const cu::stream_t s = sim.dev->create_stream();
  auto loader = std::make_unique<ringfeed::loader>(options(f.root, 0));
  auto b = ringfeed::sync_wait(loader->next());
  REQUIRE(b.has_value());
  ringfeed::test::sim_gate gate;  // the consumer's kernel runs until the gate opens; then it reads
  gate.hold(*sim.dev, s);
  reading r;
  consume(*sim.dev, *b, s, 0ms, r);
  loader.reset();  // the run stops; the batch keeps the loader's memory alive
  // Nothing is uploaded any more, so only the destruction waits for this
  // release; the batch is the last lease: the uploader and buffers go now.
  ringfeed::test::teardown_past_gate(*sim.dev, gate, [&] { b->release(s); });
  sim.dev->drain();
  REQUIRE(r.live);
  REQUIRE(r.got == f.want.front());
  sim.dev->destroy_stream(s);
}

namespace {

// The next batch, going on to the next epoch at an epoch's end.
ringfeed::batch next_across(ringfeed::loader& l, std::uint64_t& epoch) {
  if (auto b = ringfeed::sync_wait(l.next())) return std::move(*b);
  l.set_epoch(++epoch);
  auto b = ringfeed::sync_wait(l.next());
  REQUIRE(b);
  return std::move(*b);
}

}  // namespace

TEST_CASE("a prefetch depth that falls and rises keeps its pinned slabs: no cudaFreeHost mid-run",
          "[device_sim][loader][prefetch]") {
  // cudaFreeHost waits for the whole device: a slab retired while the
  // consumer is slow keeps its pinned memory, and comes back with it.
  sim_fixture f("pinned slabs kept", 0, 0);
  ringfeed::loader_options o = options(f.root, 0);
  o.batch_size = 1;
  o.prefetch_batches = 4;  // the cap
  ringfeed::loader l(o);
  using op = sim_device::op;
  std::uint64_t epoch = 0;
  const auto depth = [&] { return l.stats().prefetch.depth; };
  const auto fast_until_cap = [&] {  // each batch taken and dropped at once: every wait adds one ahead
    for (int n = 0; n < 400 && depth() < 4; ++n) next_across(l, epoch);
    REQUIRE(depth() == 4);
  };
  fast_until_cap();
  const std::size_t pinned = f.dev().calls(op::allocate_pinned), freed = f.dev().calls(op::deallocate_pinned);
  // Slow: the loader finishes two before each is taken; spare deliveries take the depth down.
  for (int n = 0; n < 400 && depth() > 1; ++n) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (l.stats().prefetch.ready < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    next_across(l, epoch);
  }
  REQUIRE(depth() == 1);
  fast_until_cap();
  CHECK(f.dev().calls(op::deallocate_pinned) == freed);  // none unpinned while running
  CHECK(f.dev().calls(op::allocate_pinned) == pinned);   // the way back up reused them
}
