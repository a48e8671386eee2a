// ringfeed::cuda::uploader — the upload stage: uint8 NHWC batches from
// pinned host slabs to the device, converted there to normalized float32 or
// float16 NCHW (or kept as uint8 NHWC), on one non-blocking stream, never
// synchronizing the host.
//
// Per batch, on the uploader's stream:
//   [wait for the consumer's release event of buffer i]
//   cudaMemcpyAsync host slab → device staging (or straight into buffer i
//   for uint8 output)
//   cudaLaunchHostFunc(on_host_free): the host slab may be reused
//   conversion kernel staging → buffer i (table lookups: see
//   image::normalize_table, shared with the CPU path)
//   cudaEventRecord(ready event i)
// The consumer makes its stream wait for the ready event (wait()), and gives
// the buffer back with release(i, its stream), which records an event there
// that the next upload into buffer i waits for on the device.
//
// This header needs no CUDA headers: stream_t and event_t (cuda/stream.hpp)
// are the CUDA runtime's own handle types (cudaStream_t, cudaEvent_t). Built
// without CUDA, the uploader and pinned allocation throw cuda_error saying
// so; convert_batch_cpu always works (it is the no-device path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/image/transforms.hpp>
#include <ringfeed/output_spec.hpp>

namespace ringfeed::cuda {

/// A CUDA runtime failure: what() names the call and CUDA's error name and
/// string; code() is the cudaError_t value (0 when built without CUDA).
/// sticky(): the CUDA context is unusable from now on (a kernel fault, a
/// lost device): every later call in this process fails too.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(int code, const std::string& what, bool sticky = false)
      : std::runtime_error(what), m_code(code), m_sticky(sticky) {}
  [[nodiscard]] int code() const noexcept { return m_code; }
  [[nodiscard]] bool sticky() const noexcept { return m_sticky; }

 private:
  int m_code;
  bool m_sticky;
};

/// Page-locked host memory (cudaHostAlloc, cudaHostAllocPortable: usable by
/// every device's copies; not write-combined, since the CPU writes and
/// reads it). Throws cuda_error. Any thread.
[[nodiscard]] void* host_alloc_pinned(std::size_t bytes);
/// Frees memory from host_alloc_pinned; null is ignored. Any thread.
void host_free_pinned(void* p) noexcept;

/// The batch conversion on the CPU: `n` images of h × w × 3 uint8 (NHWC,
/// contiguous) into `dst` as `spec` (uint8 NHWC: a copy; float32/float16
/// NCHW: planes per image, values from image::normalize_table(spec.dtype,
/// norm)). The device kernel's reference. Any thread. Throws
/// std::invalid_argument for an unsupported spec or an empty size.
void convert_batch_cpu(const std::uint8_t* src, std::size_t n, int h, int w, output_spec spec,
                       const image::normalize_params* norm, void* dst);

class uploader {
 public:
  struct options {
    int device = 0;
    std::size_t buffers = 3;     ///< device output buffers in rotation
    std::size_t max_images = 0;  ///< images per batch at most
    int height = 0;
    int width = 0;
    output_spec output = output_spec::float32_nchw();  ///< a supported one
    std::optional<image::normalize_params> normalize;  ///< none: plain v / 255
  };

  /// Selects the device, creates a non-blocking stream, `buffers` output
  /// buffers, a uint8 staging buffer, the events and the device copy of the
  /// conversion table. Throws cuda_error naming the failed call.
  explicit uploader(const options& o);
  /// Waits for the stream (so every host-free callback has run), then frees
  /// everything. Must not run while another thread calls enqueue().
  ~uploader();
  uploader(const uploader&) = delete;
  uploader& operator=(const uploader&) = delete;

  [[nodiscard]] std::size_t buffers() const noexcept;
  [[nodiscard]] stream_t stream() const noexcept;
  /// Bytes of one full output buffer.
  [[nodiscard]] std::size_t output_bytes() const noexcept;

  /// Enqueues the upload of `n` ≤ max_images images from `host_nhwc` (pinned,
  /// h × w × 3 each) into buffer i (see the header comment). Returns without
  /// waiting for the device. `on_host_free(ctx)` runs on a CUDA runtime
  /// thread once the copy is done: it must not call CUDA and must be quick.
  /// Buffer i must not be lent to a consumer. One thread at a time.
  /// Throws cuda_error.
  void enqueue(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*), void* ctx);

  /// Device pointer of buffer i.
  [[nodiscard]] void* output(std::size_t i) const noexcept;
  /// The event recorded after buffer i was last written.
  [[nodiscard]] event_t ready_event(std::size_t i) const noexcept;
  /// Makes `consumer` wait (on the device) for buffer i's ready event. Any
  /// thread. Throws cuda_error.
  void wait(std::size_t i, stream_t consumer) const;
  /// The consumer is done with buffer i: work it queued on `consumer_stream`
  /// so far must finish before buffer i is written again (an event recorded
  /// there, waited for on the uploader's stream). Null: the consumer has
  /// synchronized, nothing to wait for. Any thread. Throws cuda_error.
  void release(std::size_t i, stream_t consumer_stream);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace ringfeed::cuda
