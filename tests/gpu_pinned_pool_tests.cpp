// cuda::pinned_pool (lib/cuda/pinned_pool.hpp) on the simulated device: the
// pinned memory of nvJPEG's buffers and the decode stage's resize tables,
// pinned once and handed out again without cudaHostAlloc or cudaFreeHost
// (each blocks the host; cudaFreeHost waits for the whole device), a piece
// freed behind queued work handed out only once the stream passed it.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "cuda/pinned_pool.hpp"
#include "sim_device.hpp"

namespace {

using ringfeed::cuda::pinned_pool;
using ringfeed::test::sim_device;
using op = sim_device::op;

constexpr std::size_t mib = std::size_t{1} << 20;

std::size_t pinning_calls(const sim_device& dev) {
  return dev.calls(op::allocate_pinned) + dev.calls(op::deallocate_pinned);
}

}  // namespace

TEST_CASE("pinned_pool: nvJPEG's growth pattern pins nothing past the reserve", "[device_sim][gpu_decode]") {
  // nvJPEG grows a pinned buffer by freeing it and allocating a larger one,
  // buffer after buffer as larger images come.
  sim_device dev;
  pinned_pool pool(dev, 16 * mib, 0);
  const std::size_t pinned = pinning_calls(dev);
  CHECK(pinned == 1);
  std::vector<void*> buffers(8, nullptr);
  for (std::size_t size = 4096; size <= 256 * 1024; size *= 2) {
    for (void*& b : buffers) {
      pool.release(b);
      b = pool.allocate(size + 100);
      REQUIRE(b != nullptr);
      CHECK(reinterpret_cast<std::uintptr_t>(b) % 256 == 0);
    }
  }
  CHECK(pinning_calls(dev) == pinned);
  CHECK(pool.stats().growths == 0);
  for (void* b : buffers) pool.release(b);
  // Every piece came back and merged: the whole reserve is one piece again.
  CHECK(pool.stats().in_use == 0);
  void* all = pool.allocate(16 * mib);
  CHECK(all != nullptr);
  CHECK(pool.stats().growths == 0);
  pool.release(all);
}

TEST_CASE("pinned_pool: grows past its reserve within its limit, then refuses", "[device_sim][gpu_decode]") {
  sim_device dev;
  pinned_pool pool(dev, 2 * mib, 4 * mib);
  void* a = pool.allocate(2 * mib);
  REQUIRE(a != nullptr);
  void* b = pool.allocate(mib);  // a growth: pins a chunk
  REQUIRE(b != nullptr);
  CHECK(pool.stats().growths == 1);
  CHECK(pool.stats().pinned <= 4 * mib);
  CHECK(pool.allocate(2 * mib) == nullptr);  // past the limit
  CHECK(pool.stats().refused == 1);
  pool.release(a);
  CHECK(pool.allocate(2 * mib) == a);  // room again, nothing pinned
  CHECK(dev.calls(op::allocate_pinned) == 2);
}

TEST_CASE("pinned_pool: a piece freed behind queued work is handed out once the stream passed it",
          "[device_sim][gpu_decode]") {
  // nvJPEG frees the engines' staging buffer while the copy out of it may
  // still be queued: release_after holds the piece back until the stream
  // gets there, with no wait on the host.
  sim_device dev;
  pinned_pool pool(dev, mib, 0);
  const auto s = dev.create_stream();
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  dev.enqueue(s, [gate] { gate.wait(); });  // a copy still queued
  void* p = pool.allocate(mib);
  REQUIRE(p != nullptr);
  pool.release_after(p, s);
  CHECK(pool.stats().in_use == mib);  // not back yet
  void* q = pool.allocate(mib);       // so a new chunk serves this one
  CHECK(q != p);
  CHECK(pool.stats().growths == 1);
  open.set_value();
  dev.drain();
  CHECK(pool.stats().in_use == mib);  // p came back
  void* r = pool.allocate(mib);
  CHECK(r == p);
  pool.release(q);
  pool.release(r);
  dev.destroy_stream(s);
}

TEST_CASE("pinned_pool: threads allocating and giving back at once", "[device_sim][gpu_decode][concurrency]") {
  sim_device dev;
  pinned_pool pool(dev, 8 * mib, 0);
  const auto s = dev.create_stream();
  std::atomic<int> refused{0};  // Catch's assertions are for the test's own thread
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<void*> mine;
      for (int i = 0; i < 400; ++i) {
        void* p = pool.allocate(static_cast<std::size_t>(1 + (i * 37 + t * 11) % 64) * 1024);
        if (p == nullptr) {
          refused.fetch_add(1);
          continue;
        }
        static_cast<std::byte*>(p)[0] = std::byte{1};  // it is memory of its own
        mine.push_back(p);
        if (mine.size() > 8) {
          if (i % 2 == 0)
            pool.release(mine.front());
          else
            pool.release_after(mine.front(), s);
          mine.erase(mine.begin());
        }
      }
      for (void* p : mine) pool.release(p);
    });
  }
  for (auto& t : threads) t.join();
  dev.drain();
  CHECK(refused.load() == 0);
  CHECK(pool.stats().in_use == 0);
  dev.destroy_stream(s);
}
