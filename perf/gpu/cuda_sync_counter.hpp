// perf/gpu/cuda_sync_counter.hpp — counts the CUDA runtime and driver API calls
// that make the host wait for the device, through CUPTI's callback API
// (cuptiSubscribe + cuptiEnableDomain for CUPTI_CB_DOMAIN_RUNTIME_API and
// CUPTI_CB_DOMAIN_DRIVER_API), process-wide: every thread's calls count,
// the loader's pool threads included.
//
// Synchronizing, by the CUDA programming guide's rules ("implicit
// synchronization" and the API sync behaviour of memcpy/memset):
//   explicit   cudaDeviceSynchronize, cudaThreadSynchronize,
//              cudaStreamSynchronize, cudaEventSynchronize (cuCtx/cuStream/
//              cuEventSynchronize)
//   copies     cudaMemcpy*, cudaMemset* without "Async" (cuMemcpy*, cuMemset*)
//   allocation cudaMalloc*, cudaFree*, cudaHostAlloc, cudaMallocHost,
//              cudaFreeHost, cudaHostRegister/Unregister (cuMemAlloc*,
//              cuMemFree*, cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister/
//              Unregister), stream-ordered *Async variants excepted
//   and any cudaMemcpyAsync host→device or device→host whose host pointer is
//   pageable (not pinned): the runtime copies those synchronously. Each such
//   copy's host pointer is checked with cudaPointerGetAttributes after
//   stop(), outside the window.
// Polls (cudaStreamQuery, cudaEventQuery, cuStreamQuery, cuEventQuery) do not
// block but a loop of them is a spin-wait: counted apart.
//
// A runtime call is implemented with driver calls, which CUPTI reports too:
// driver calls made inside a runtime call (same thread) are not counted
// again. With the static runtime (ringfeed links CUDA::cudart_static) CUPTI
// has reported runtime callbacks since CUDA 10; if it reports none here,
// result::runtime_calls is 0 and the driver calls, all counted as direct,
// still show every wait (each runtime sync ends in a driver one).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace ringfeed::perf {

class cuda_sync_counter {
 public:
  struct result {
    std::map<std::string, std::uint64_t> sync_calls;  ///< name → count (runtime names, and driver ones called directly)
    std::uint64_t syncs = 0;                          ///< their sum, pageable async copies included
    std::uint64_t pageable_async_copies = 0;          ///< cudaMemcpyAsync calls with a pageable host pointer
    std::map<std::string, std::uint64_t> polls;       ///< cudaStreamQuery & co.
    std::uint64_t runtime_calls = 0;                  ///< every runtime API call seen
    std::uint64_t driver_calls_direct = 0;            ///< driver calls outside runtime calls
    std::uint64_t async_copies = 0;                   ///< cudaMemcpyAsync (or cuMemcpy*Async called directly)
  };

  /// Subscribes to CUPTI (counting off). Throws std::runtime_error with
  /// CUPTI's message (another profiler subscribed, no permission, ...).
  cuda_sync_counter();
  /// Unsubscribes.
  ~cuda_sync_counter();
  cuda_sync_counter(const cuda_sync_counter&) = delete;
  cuda_sync_counter& operator=(const cuda_sync_counter&) = delete;

  /// Resets the counts and starts counting. Any thread.
  void start();
  /// Stops counting and returns what was counted since start().
  [[nodiscard]] result stop();

  /// "sync", "poll" or "" for an API function name (version suffixes such
  /// as _v2, _v3020, _ptsz already stripped). Exposed for the self-test.
  [[nodiscard]] static std::string_view classify(std::string_view name) noexcept;
  /// The name without CUPTI's version and per-thread-stream suffixes.
  [[nodiscard]] static std::string_view base_name(std::string_view name) noexcept;

  struct state;

 private:
  std::unique_ptr<state> m_state;
};

}  // namespace ringfeed::perf
