// Private: everything the upload stage asks of a device, behind one narrow
// interface with two implementations:
//   cuda_device.cu   the CUDA runtime (the only file that includes it for
//                    the upload path), or device_none.cpp without CUDA;
//   tests/support/sim_device.*   a simulated device for tests: each stream a
//                    thread running its queue in order, events real
//                    cross-thread signals, device memory host memory, and
//                    delays and failures injectable, so the protocol between
//                    the uploader, the loader and a consumer can be tested
//                    (ASan, TSan) on machines without a GPU.
//
// Streams and events are the CUDA runtime's handle types (cuda/stream.hpp);
// the simulated device hands out its own objects under those names. A null
// stream is the device's default (legacy) stream, as in CUDA: a real
// stream, never a way to say "no ordering needed".
//
// Every call that can fail throws cuda_error naming the call; a failure that
// leaves the device unusable for this process (a lost context) has
// cuda_error::sticky() set. Calls act on the device current on the calling
// thread (set_device), as CUDA's do.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <ringfeed/cuda/device.hpp>
#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/output_spec.hpp>

#include "device_resize.hpp"

namespace ringfeed::cuda {

/// One launch of the conversion kernel: `images` × `pixels` uint8 RGB
/// pixels (NHWC) at `in` into `out` as `dtype`, NCHW planes or NHWC, each
/// value table[c * 256 + v] (image::normalize_table's bits).
struct convert_launch {
  const std::uint8_t* in = nullptr;
  void* out = nullptr;
  const std::uint32_t* table = nullptr;  // device memory, 3 × 256 entries
  std::size_t pixels = 0;                // per image
  std::size_t images = 0;
  ringfeed::dtype dtype = ringfeed::dtype::float32;  // float32, float16 or bfloat16
  ringfeed::layout layout = ringfeed::layout::nchw;
};

/// The conversion kernel's work on the CPU, with `table` in host memory
/// (k.table is not read): the simulated device's kernel.
void convert_with_table(const convert_launch& k, const std::array<std::array<std::uint32_t, 256>, 3>& table);

class device_api {
 public:
  virtual ~device_api() = default;

  /// How many devices there are, or why none. Never throws.
  [[nodiscard]] virtual device_probe probe() noexcept = 0;
  /// The calling thread's current device.
  /// Device `device`'s PCI address ("0000:3B:00.0"), for its NUMA node
  /// (loader/numa.hpp); "" when the driver cannot say (and on devices
  /// without one: the simulated device, none). Never throws.
  [[nodiscard]] virtual std::string pci_bus_id(int device) noexcept {
    (void)device;
    return {};
  }
  [[nodiscard]] virtual int current_device() = 0;
  virtual void set_device(int device) = 0;

  /// A stream of the current device that does not synchronize with the
  /// default stream (cudaStreamNonBlocking).
  [[nodiscard]] virtual stream_t create_stream() = 0;
  virtual void destroy_stream(stream_t s) noexcept = 0;
  [[nodiscard]] virtual event_t create_event() = 0;
  virtual void destroy_event(event_t e) noexcept = 0;
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;
  /// Device memory in stream order (cudaMallocAsync from the device's
  /// default pool): usable by work queued on `s` after this, with no host
  /// synchronization. Freed by deallocate_async, or deallocate.
  [[nodiscard]] virtual void* allocate_async(std::size_t bytes, stream_t s) = 0;
  /// Frees `p` once the work queued on `s` before this is done
  /// (cudaFreeAsync): no host synchronization.
  virtual void deallocate_async(void* p, stream_t s) noexcept = 0;
  /// Page-locked host memory (usable by every device's copies).
  [[nodiscard]] virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void deallocate_pinned(void* p) noexcept = 0;

  /// Host to device, blocking the caller until done.
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  /// Host (pinned) to device, queued on `s`.
  virtual void copy_to_device_async(void* dst, const void* src, std::size_t bytes, stream_t s) = 0;
  /// `fn(ctx)` on a runtime thread once the work queued on `s` before it is
  /// done; later work on `s` waits for it to return. fn must not call the
  /// device API.
  virtual void launch_host_func(stream_t s, void (*fn)(void*), void* ctx) = 0;
  virtual void launch_convert(const convert_launch& k, stream_t s) = 0;
  /// The batched crop / resize / flip of GPU-decoded images
  /// (device_resize.hpp), `k`'s pointers device memory, queued on `s`.
  virtual void launch_resize(const resize_launch& k, stream_t s) = 0;
  /// Records `e` at this point of `s`; waits on `e` refer to the latest record.
  virtual void record(event_t e, stream_t s) = 0;
  /// Work queued on `s` after this waits for `e`'s latest record (none: no wait).
  virtual void wait(stream_t s, event_t e) = 0;
  /// Blocks the caller until everything queued on `s` so far is done.
  virtual void synchronize(stream_t s) = 0;
  /// Blocks the caller until `e`'s latest record is done.
  virtual void synchronize(event_t e) = 0;
};

/// The device API the loader and uploaders use: CUDA's (or, built without
/// CUDA, one that says so on every call), unless a test installed another.
[[nodiscard]] std::shared_ptr<device_api> current_device_api();
/// Tests: makes `api` the one current_device_api() returns (null: back to
/// the built-in one). Affects uploaders created afterwards only.
void install_device_api(std::shared_ptr<device_api> api);
/// The built-in implementation (cuda_device.cu or device_none.cpp).
[[nodiscard]] std::shared_ptr<device_api> builtin_device_api();

/// Why the CUDA runtime found no device, in words that point at the fix.
/// `error`, `name`, `text`: cudaGetDeviceCount's error (0: it succeeded,
/// with 0 devices) and CUDA's name and string for it; `driver_error`: why
/// the NVIDIA driver's libcuda.so.1 cannot be loaded, "" when it can. With
/// no driver the CUDA runtime says "CUDA driver version is insufficient"
/// (cudaErrorInsufficientDriver), which sends a user looking for an
/// upgrade: the reason then says that no driver was found. CUDA's own text
/// stays where a driver exists (one too old for the runtime, say).
[[nodiscard]] std::string no_device_reason(int error, std::string_view name, std::string_view text,
                                           std::string_view driver_error);
/// "" when the NVIDIA driver library (libcuda.so.1) can be loaded by this
/// process, else dlerror()'s reason.
[[nodiscard]] std::string driver_load_error();

/// Makes `device` current on this thread for the guard's lifetime and
/// restores the thread's previous device afterwards, so a loader's calls
/// never leave the caller's thread on another device.
class device_guard {
 public:
  device_guard(device_api& api, int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  device_api& m_api;
  int m_previous = -1;
};

}  // namespace ringfeed::cuda
