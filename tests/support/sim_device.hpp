// A simulated device for the device_sim tests: cuda::device_api (the
// upload stage's only way to a device) without a GPU.
//
// - Each stream is a thread running its queue in order; a device's default
//   (null) stream is one more, and like CUDA's legacy stream it is NOT
//   ordered against streams created by create_stream() (non-blocking).
// - Events are real cross-thread signals: wait(s, e) holds s until the
//   record of e that was latest when wait() was called has executed.
// - Device memory is host memory. Freed memory is poisoned (0xDB) and kept
//   until the simulator goes, so a late reader sees garbage, not a crash,
//   and live() tells whether an address is still allocated.
// - Copies and the conversion kernel take injectable time and write in
//   chunks over it, so work that is not ordered after them reads torn data.
// - Each thread has a current device (set_device), as in CUDA; streams and
//   events belong to the device current when they were made, and recording
//   an event on another device's stream fails as CUDA does.
// - Failures can be injected into any call; a sticky one fails every later
//   call, as a lost CUDA context does.
// Not a user-facing feature: the loader gets it only through
// cuda::install_device_api (tests).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../lib/cuda/device_api.hpp"

namespace ringfeed::test {

class sim_device final : public cuda::device_api {
 public:
  enum class op : int {
    set_device, create_stream, create_event, allocate, allocate_pinned, copy, copy_async, host_func, convert,
    resize, record, wait, synchronize, allocate_async, deallocate, deallocate_pinned, deallocate_async, count_
  };
  struct timing {
    std::chrono::microseconds copy{0};    ///< each async copy
    std::chrono::microseconds kernel{0};  ///< each conversion launch
  };

  explicit sim_device(int devices = 1);
  ~sim_device() override;
  sim_device(const sim_device&) = delete;
  sim_device& operator=(const sim_device&) = delete;

  void set_timing(timing t);
  /// Conversion kernels launched from now on run only once `open` is ready
  /// (a default future: no gate).
  void gate_kernels(std::shared_future<void> open);
  /// The call of `o` after the next `skip` ones throws cuda_error(code);
  /// sticky: so does every later call of any kind.
  void fail(op o, int code, bool sticky, int skip = 0);
  /// Consumer work: `fn` runs on `s` (null: the current device's default
  /// stream) after everything queued there before it.
  void enqueue(cuda::stream_t s, std::function<void()> fn);
  /// Whether [p, p + bytes) lies in memory allocate() gave and nobody freed.
  [[nodiscard]] bool live(const void* p, std::size_t bytes) const;
  /// Calls of `o` so far (failed ones included; frees, which cannot fail,
  /// are only counted).
  [[nodiscard]] std::size_t calls(op o) const noexcept;
  /// Calls whose CUDA counterpart blocks the host or synchronizes the device
  /// (cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost, cudaMemcpy, the
  /// synchronizes: what perf/gpu/cuda_sync_counter counts as "sync"), so far.
  [[nodiscard]] std::size_t synchronizing_calls() const noexcept;
  /// Host threads now blocked in synchronize(event) on a record that has
  /// not run yet.
  [[nodiscard]] std::size_t blocked_event_waits() const noexcept { return m_blocked_event_waits.load(); }
  /// Async copies queued and not finished.
  [[nodiscard]] std::size_t copies_in_flight() const noexcept { return m_copies_in_flight.load(); }
  /// Device allocations not yet freed.
  [[nodiscard]] std::size_t live_allocations() const;
  /// The device of each live allocation.
  [[nodiscard]] std::vector<int> allocation_devices() const;
  /// Waits until every stream's queue is empty.
  void drain();

  // --- cuda::device_api ---------------------------------------------------
  cuda::device_probe probe() noexcept override;
  int current_device() override;
  void set_device(int device) override;
  cuda::stream_t create_stream() override;
  void destroy_stream(cuda::stream_t s) noexcept override;
  cuda::event_t create_event() override;
  void destroy_event(cuda::event_t e) noexcept override;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void* allocate_async(std::size_t bytes, cuda::stream_t s) override;
  void deallocate_async(void* p, cuda::stream_t s) noexcept override;
  void* allocate_pinned(std::size_t bytes) override;
  void deallocate_pinned(void* p) noexcept override;
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_device_async(void* dst, const void* src, std::size_t bytes, cuda::stream_t s) override;
  void launch_host_func(cuda::stream_t s, void (*fn)(void*), void* ctx) override;
  void launch_convert(const cuda::convert_launch& k, cuda::stream_t s) override;
  void launch_resize(const cuda::resize_launch& k, cuda::stream_t s) override;
  void record(cuda::event_t e, cuda::stream_t s) override;
  void wait(cuda::stream_t s, cuda::event_t e) override;
  void synchronize(cuda::stream_t s) override;
  void synchronize(cuda::event_t e) override;

  struct stream;
  struct event;
  struct signal;

 private:
  void enter(op o);  // counts the call, throws an injected failure
  stream& resolve(cuda::stream_t s);
  event& resolve(cuda::event_t e);
  void check_device(int device, const char* call) const;
  void free_block(void* p) noexcept;  // poisons and marks a block freed

  const int m_devices;
  const std::size_t m_id;  // this simulator's key in the per-thread device map
  std::atomic<std::int64_t> m_copy_us{0}, m_kernel_us{0};
  std::shared_future<void> m_kernel_gate;  // guarded by m_mutex
  std::atomic<std::size_t> m_copies_in_flight{0};
  std::atomic<std::size_t> m_blocked_event_waits{0};
  std::array<std::atomic<std::size_t>, static_cast<std::size_t>(op::count_)> m_calls{};

  mutable std::mutex m_mutex;
  struct failure {
    op what;
    int code;
    bool sticky;
    int skip;
  };
  std::vector<failure> m_failures;             // guarded by m_mutex
  int m_dead = 0;                              // guarded by m_mutex: a sticky error's code
  std::atomic<bool> m_lost{false};             // m_dead != 0, for the stream threads
  std::vector<std::unique_ptr<stream>> m_streams;   // guarded; default streams first (one per device)
  std::vector<std::unique_ptr<event>> m_events;     // guarded
  struct block {
    std::size_t bytes;
    int device;
    bool pinned;
    bool freed;
  };
  std::map<const std::byte*, block> m_blocks;  // guarded by m_mutex
};

/// A consumer kernel that runs until the test opens the gate: hold(s)
/// queues it on stream s (null: the default stream).
class sim_gate {
 public:
  void hold(sim_device& dev, cuda::stream_t s) {
    dev.enqueue(s, [open = m_open] { open.wait(); });
  }
  void open() { m_promise.set_value(); }
  [[nodiscard]] std::shared_future<void> opened() const { return m_open; }

 private:
  std::promise<void> m_promise;
  std::shared_future<void> m_open = m_promise.get_future().share();
};

/// Runs `teardown` on another thread and opens `gate` once the teardown
/// has either finished (it did not wait for the gated consumer) or blocks
/// in a host wait on the device (it waits, as it must); then joins it.
inline void teardown_past_gate(sim_device& dev, sim_gate& gate, const std::function<void()>& teardown) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    teardown();
    done = true;
  });
  while (!done && dev.blocked_event_waits() == 0) std::this_thread::yield();
  gate.open();
  t.join();
}

/// Installs a simulated device as the device API for one test (scope);
/// drains it and goes back to the built-in API afterwards.
struct sim_scope {
  std::shared_ptr<sim_device> dev;
  explicit sim_scope(int devices = 1) : dev(std::make_shared<sim_device>(devices)) { cuda::install_device_api(dev); }
  ~sim_scope() {
    dev->drain();
    cuda::install_device_api(nullptr);
  }
  sim_scope(const sim_scope&) = delete;
  sim_scope& operator=(const sim_scope&) = delete;
};

}  // namespace ringfeed::test
