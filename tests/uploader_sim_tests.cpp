// The upload stage's protocol on the simulated device (support/sim_device):
// uploads equal the CPU conversion; a consumer's release on any stream,
// the default one included, holds back the next write into its buffer;
// a failed enqueue leaves no callback behind; destruction waits for pending
// releases; the caller's current device is left alone; the host copy is
// not held back by a consumer still reading the buffer, nor by the previous
// batch's conversion, whose staging buffer it leaves alone. Delays make every
// missing wait or release show up as wrong bytes.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

#include "sim_device.hpp"
#include "test_support.hpp"

namespace {

namespace cu = ringfeed::cuda;
namespace img = ringfeed::image;
using ringfeed::output_spec;
using ringfeed::test::sim_device;
using ringfeed::test::sim_scope;
using namespace std::chrono_literals;

// Installs a simulated device for one test case.
std::vector<std::uint8_t> noise(std::size_t bytes, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(bytes);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

cu::uploader::options small(output_spec format, std::size_t buffers = 2) {
  cu::uploader::options o;
  o.buffers = buffers;
  o.max_images = 4;
  o.height = 16;
  o.width = 12;
  o.output = format;
  o.normalize = img::imagenet_normalize;
  return o;
}

std::vector<std::byte> expected(const std::vector<std::uint8_t>& host, std::size_t n, const cu::uploader::options& o) {
  std::vector<std::byte> want(n * o.height * o.width * 3 * o.output.element_size());
  cu::convert_batch_cpu(host.data(), n, o.height, o.width, o.output, &*o.normalize, want.data());
  return want;
}

void count_call(void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }

// What a consumer's kernel read, filled in on its stream.
struct reading {
  std::vector<std::byte> bytes;
  bool live = false;
};

// Queues on `s`: a long-running consumer kernel (`busy`), then a read of
// `bytes` at `p` into `out`.
void consume(sim_device& dev, cu::stream_t s, const void* p, std::size_t bytes, std::chrono::milliseconds busy,
             reading& out) {
  dev.enqueue(s, [&dev, p, bytes, busy, &out] {
    std::this_thread::sleep_for(busy);  // simulated device time: the consumer's kernel runs this long
    out.live = dev.live(p, bytes);
    out.bytes.assign(static_cast<const std::byte*>(p), static_cast<const std::byte*>(p) + bytes);
  });
}

}  // namespace

TEST_CASE("uploads equal the CPU conversion bit for bit, every format", "[device_sim][uploader]") {
  sim_scope sim;
  sim.dev->set_timing({2ms, 2ms});
  for (auto format : {output_spec::float32_nchw(), output_spec::float16_nchw(), output_spec::uint8_nhwc()}) {
    const auto o = small(format);
    cu::uploader up(o);
    for (std::size_t n : {std::size_t{4}, std::size_t{3}}) {
      const auto host = noise(n * 16 * 12 * 3, static_cast<unsigned>(n));
      std::atomic<int> freed{0};
      up.enqueue(n % 2, host.data(), n, count_call, &freed);
      reading got;
      up.wait(n % 2, nullptr);
      consume(*sim.dev, nullptr, up.output(n % 2), expected(host, n, o).size(), 0ms, got);
      sim.dev->drain();
      REQUIRE(got.bytes == expected(host, n, o));
      REQUIRE(freed.load() == 1);  // the host-free callback ran once
    }
  }
}

TEST_CASE("a release on the default stream holds back the next upload into that buffer", "[device_sim][uploader]") {
  // torch's default stream is handle 0: it must order like any stream.
  sim_scope sim;
  sim.dev->set_timing({1ms, 1ms});
  for (auto format : {output_spec::float32_nchw(), output_spec::uint8_nhwc()}) {
    const auto o = small(format, 1);
    cu::uploader up(o);
    const auto first = noise(4 * 16 * 12 * 3, 1), second = noise(4 * 16 * 12 * 3, 2);
    std::atomic<int> freed{0};
    up.enqueue(0, first.data(), 4, count_call, &freed);
    up.wait(0, nullptr);
    reading got;
    const auto want = expected(first, 4, o);
    consume(*sim.dev, nullptr, up.output(0), want.size(), 40ms, got);
    up.release(0, nullptr);
    up.enqueue(0, second.data(), 4, count_call, &freed);  // must not overwrite what the consumer still reads
    sim.dev->drain();
    REQUIRE(got.bytes == want);
  }
}

TEST_CASE("a release on a side stream holds back the next upload into that buffer", "[device_sim][uploader]") {
  sim_scope sim;
  sim.dev->set_timing({1ms, 1ms});
  const auto o = small(output_spec::float32_nchw(), 2);
  cu::uploader up(o);
  const cu::stream_t consumer = sim.dev->create_stream();
  std::vector<reading> got(12);
  std::vector<std::vector<std::byte>> want(12);
  std::vector<std::vector<std::uint8_t>> hosts;
  for (int k = 0; k < 12; ++k) hosts.push_back(noise(4 * 16 * 12 * 3, static_cast<unsigned>(100 + k)));
  std::atomic<int> freed{0};
  for (std::size_t k = 0; k < 12; ++k) {
    const std::size_t i = k % 2;
    up.enqueue(i, hosts[k].data(), 4, count_call, &freed);
    up.wait(i, consumer);
    want[k] = expected(hosts[k], 4, o);
    consume(*sim.dev, consumer, up.output(i), want[k].size(), 15ms, got[k]);
    up.release(i, consumer);
  }
  sim.dev->drain();
  for (std::size_t k = 0; k < 12; ++k) REQUIRE(got[k].bytes == want[k]);
  sim.dev->destroy_stream(consumer);
}

TEST_CASE("a failed enqueue runs no host-free callback and leaves no copy reading the host memory",
          "[device_sim][uploader]") {
  using op = sim_device::op;
  for (op where : {op::copy_async, op::convert, op::record, op::host_func}) {
    sim_scope sim;
    sim.dev->set_timing({20ms, 1ms});
    const auto o = small(output_spec::float32_nchw());
    cu::uploader up(o);
    auto host = noise(4 * 16 * 12 * 3, 7);
    std::atomic<int> freed{0};
    sim.dev->fail(where, 700, false);  // cudaErrorLaunchFailure-like, but transient here
    INFO("failing call: " << static_cast<int>(where));
    REQUIRE_THROWS_AS(up.enqueue(0, host.data(), 4, count_call, &freed), cu::cuda_error);
    REQUIRE(sim.dev->copies_in_flight() == 0);
    // The caller now owns the host memory again: scribbling on it must not
    // reach the device, and the callback must never come.
    std::memset(host.data(), 0x55, host.size());
    sim.dev->drain();
    REQUIRE(freed.load() == 0);
    // A transient failure: the next upload works.
    const auto again = noise(4 * 16 * 12 * 3, 8);
    up.enqueue(1, again.data(), 4, count_call, &freed);
    reading got;
    up.wait(1, nullptr);
    consume(*sim.dev, nullptr, up.output(1), expected(again, 4, o).size(), 0ms, got);
    sim.dev->drain();
    REQUIRE(got.bytes == expected(again, 4, o));
    REQUIRE(freed.load() == 1);
  }
}

TEST_CASE("destruction waits for the consumers' pending releases before freeing buffers", "[device_sim][uploader]") {
  sim_scope sim;
  const auto o = small(output_spec::float32_nchw(), 2);
  const auto host = noise(4 * 16 * 12 * 3, 3);
  const auto want = expected(host, 4, o);
  const cu::stream_t consumer = sim.dev->create_stream();
  reading got;
  auto up = std::make_unique<cu::uploader>(o);
  std::atomic<int> freed{0};
  up->enqueue(0, host.data(), 4, count_call, &freed);
  up->wait(0, consumer);
  ringfeed::test::sim_gate gate;  // the consumer's kernel runs until the gate opens
  gate.hold(*sim.dev, consumer);
  consume(*sim.dev, consumer, up->output(0), want.size(), 0ms, got);
  up->release(0, consumer);
  ringfeed::test::teardown_past_gate(*sim.dev, gate, [&] { up.reset(); });
  sim.dev->drain();
  REQUIRE(got.live);
  REQUIRE(got.bytes == want);
  sim.dev->destroy_stream(consumer);
}

TEST_CASE("the uploader leaves the calling thread's current device as it was", "[device_sim][uploader]") {
  sim_scope sim(2);
  REQUIRE(sim.dev->current_device() == 0);
  auto o = small(output_spec::float32_nchw());
  o.device = 1;
  const auto host = noise(4 * 16 * 12 * 3, 4);  // outlives the uploader's copy and callback
  std::atomic<int> freed{0};
  cu::uploader up(o);
  REQUIRE(sim.dev->current_device() == 0);
  for (int d : sim.dev->allocation_devices()) REQUIRE(d == 1);  // every buffer on the chosen device
  up.enqueue(0, host.data(), 4, count_call, &freed);
  REQUIRE(sim.dev->current_device() == 0);
  // The consumer's default stream on the uploader's device: torch's
  // current_stream(1) is handle 0 too.
  up.wait(0, nullptr);
  up.release(0, nullptr);
  REQUIRE(sim.dev->current_device() == 0);
  sim.dev->drain();
  REQUIRE(freed.load() == 1);
}

TEST_CASE("the host copy is not held back by a consumer still reading the buffer", "[device_sim][uploader]") {
  // The release wait belongs before the kernel that writes the consumer's
  // buffer, not before the copy into staging: the host slab comes back
  // while the consumer still reads.
  sim_scope sim;
  const auto o = small(output_spec::float32_nchw(), 1);
  cu::uploader up(o);
  const cu::stream_t consumer = sim.dev->create_stream();
  const auto first = noise(4 * 16 * 12 * 3, 5), second = noise(4 * 16 * 12 * 3, 6);
  std::atomic<int> freed{0};
  up.enqueue(0, first.data(), 4, count_call, &freed);
  up.wait(0, consumer);
  ringfeed::test::sim_gate gate;  // the consumer's kernel runs until the gate opens
  gate.hold(*sim.dev, consumer);
  up.release(0, consumer);
  std::promise<void> copied;
  up.enqueue(
      0, second.data(), 4, [](void* c) { static_cast<std::promise<void>*>(c)->set_value(); }, &copied);
  const bool back_early = copied.get_future().wait_for(10s) == std::future_status::ready;
  gate.open();
  sim.dev->drain();
  REQUIRE(back_early);
  sim.dev->destroy_stream(consumer);
}

TEST_CASE("the next batch's copy is not held back by the previous batch's conversion", "[device_sim][uploader]") {
  // Float outputs convert on a stream of their own: batch k+1's copy runs
  // while batch k's kernel does, so the stage costs the longer of the two.
  sim_scope sim;
  const auto o = small(output_spec::float32_nchw(), 2);
  cu::uploader up(o);
  ringfeed::test::sim_gate gate;  // every conversion kernel waits here
  sim.dev->gate_kernels(gate.opened());
  const auto first = noise(4 * 16 * 12 * 3, 7), second = noise(4 * 16 * 12 * 3, 8);
  std::atomic<int> freed{0};
  up.enqueue(0, first.data(), 4, count_call, &freed);
  std::promise<void> copied;
  up.enqueue(
      1, second.data(), 4, [](void* c) { static_cast<std::promise<void>*>(c)->set_value(); }, &copied);
  const bool back_early = copied.get_future().wait_for(10s) == std::future_status::ready;
  gate.open();
  reading a, b;
  up.wait(0, nullptr);
  consume(*sim.dev, nullptr, up.output(0), expected(first, 4, o).size(), 0ms, a);
  up.wait(1, nullptr);
  consume(*sim.dev, nullptr, up.output(1), expected(second, 4, o).size(), 0ms, b);
  sim.dev->drain();
  REQUIRE(back_early);
  REQUIRE(a.bytes == expected(first, 4, o));
  REQUIRE(b.bytes == expected(second, 4, o));
}

TEST_CASE("a staging buffer is refilled only after the kernel reading it is done", "[device_sim][uploader]") {
  // Copies are instant and kernels slow: from the third batch on, each copy
  // goes to the staging buffer the batch two before it read, whose kernel
  // may still run, and must wait for it.
  sim_scope sim;
  sim.dev->set_timing({0ms, 4ms});
  for (auto format : {output_spec::float32_nchw(), output_spec::float16_nchw()}) {
    const auto o = small(format, 5);
    cu::uploader up(o);
    std::vector<std::vector<std::uint8_t>> hosts;
    for (unsigned k = 0; k < 5; ++k) hosts.push_back(noise(4 * 16 * 12 * 3, 20 + k));
    std::atomic<int> freed{0};
    for (std::size_t k = 0; k < hosts.size(); ++k) up.enqueue(k, hosts[k].data(), 4 - k % 2, count_call, &freed);
    std::vector<reading> got(hosts.size());
    for (std::size_t k = 0; k < hosts.size(); ++k) {
      up.wait(k, nullptr);
      consume(*sim.dev, nullptr, up.output(k), expected(hosts[k], 4 - k % 2, o).size(), 0ms, got[k]);
    }
    sim.dev->drain();
    for (std::size_t k = 0; k < hosts.size(); ++k) REQUIRE(got[k].bytes == expected(hosts[k], 4 - k % 2, o));
    REQUIRE(freed.load() == 5);
  }
}
