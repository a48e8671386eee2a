// ringfeed::cuda::uploader — the upload stage: uint8 NHWC batches from
// pinned host slabs to the device, converted there to normalized float32 or
// float16 NCHW (or kept as uint8 NHWC), on non-blocking streams, never
// synchronizing the host.
//
// Per batch, on the uploader's copy stream:
//   [float output: wait for converted[j], the last kernel that read
//   staging buffer j (two in turn)]
//   cudaMemcpyAsync host slab → staging j (uint8 output: straight into
//   buffer i, after the consumer's release event of buffer i)
//   cudaEventRecord(copied)
//   [uint8 output: cudaEventRecord(ready event i)]
// float output, on the kernel stream, after `copied`:
//   wait for the consumer's release event of buffer i
//   conversion kernel staging j → buffer i (table lookups: see
//   image::normalize_table, shared with the CPU path)
//   cudaEventRecord(converted[j]), cudaEventRecord(ready event i)
// so batch k+1's copy runs while batch k converts (the stage costs the
// longer of the two per batch, not their sum); and on a third stream, after
// `copied`: the host-free callback (the host slab may be reused), so neither
// the kernel nor the ready event waits for a round trip through a CPU
// thread, and the host slab comes back as soon as its copy is done, even
// while a consumer still reads buffer i.
// The consumer makes its stream wait for the ready event (wait()), and gives
// the buffer back with release(i, its stream), which records an event there
// that the next write into buffer i waits for on the device.
//
// Streams are CUDA's: a null stream_t is the device's default (legacy)
// stream, a real stream with real work on it (torch's default stream is
// handle 0), never a way to say "nothing to wait for"; that is
// release_synchronized(). The uploader's streams do not synchronize with
// the default stream (cudaStreamNonBlocking): only these events order them.
// Every call makes the uploader's device current for its duration and
// restores the calling thread's current device afterwards.
//
// This header needs no CUDA headers: stream_t and event_t (cuda/stream.hpp)
// are the CUDA runtime's own handle types (cudaStream_t, cudaEvent_t). Built
// without CUDA, the uploader and pinned allocation throw cuda_error saying
// so; convert_batch_cpu always works (it is the no-device path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/image/pipeline.hpp>
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

/// More of a batch written on the device after its host copy, before the
/// conversion (the GPU decode stage's resize of the images it decoded):
/// uploader::enqueue calls fill() on the copy stream's thread of control.
class device_fill {
 public:
  /// Queues work on `s` (the copy stream) that writes into `target`, the
  /// batch's uint8 NHWC images on the device. Throws cuda_error.
  virtual void fill(std::uint8_t* target, stream_t s) = 0;

 protected:
  ~device_fill() = default;
};

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
    /// Nonzero: the host slabs already hold the output, `sample_bytes` per
    /// image (a transform list that ends with a tensor or a channel count
    /// the kernel does not convert): copied as they are, no kernel, no
    /// staging buffer; `output` and `normalize` are not used.
    std::size_t sample_bytes = 0;
  };

  /// Creates, on o.device, the non-blocking streams, `buffers` output
  /// buffers, two uint8 staging buffers (float outputs), the events and the
  /// device copy of the conversion table. Throws cuda_error naming the failed call, having
  /// freed what it made.
  explicit uploader(const options& o);
  /// Waits for the consumers' pending release events and for the streams
  /// (so every host-free callback has run), then frees everything. Must not
  /// run while another thread calls enqueue().
  ~uploader();
  uploader(const uploader&) = delete;
  uploader& operator=(const uploader&) = delete;

  [[nodiscard]] std::size_t buffers() const noexcept;
  /// Blocks the calling thread until every queued copy and kernel is done
  /// (benchmarks and tests; the loader never calls it). Throws cuda_error.
  void synchronize() const;
  /// Bytes of one full output buffer.
  [[nodiscard]] std::size_t output_bytes() const noexcept;

  /// Enqueues the upload of `n` ≤ max_images images from `host_nhwc` (pinned,
  /// h × w × 3 each) into buffer i (see the header comment). Returns without
  /// waiting for the device. `on_host_free(ctx)` runs exactly once, on a
  /// CUDA runtime thread, once the copy is done: it must not call CUDA and
  /// must be quick. Buffer i must not be lent to a consumer. One thread at a
  /// time. Throws cuda_error (sticky() when the context is lost); then
  /// on_host_free never runs and no queued copy reads host_nhwc any more:
  /// the caller has the memory back.
  /// With `fill`: its work is queued after the copy, and on_host_free runs
  /// after that work too (what it reads from host memory is done).
  void enqueue(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*), void* ctx,
               device_fill* fill = nullptr);
  /// The stream copies (and fills) are queued on: work the caller queues
  /// there before enqueue() comes before the batch's copy.
  [[nodiscard]] stream_t copy_stream() const noexcept;

  /// Device pointer of buffer i.
  [[nodiscard]] void* output(std::size_t i) const noexcept;
  /// The event recorded after buffer i was last written.
  [[nodiscard]] event_t ready_event(std::size_t i) const noexcept;
  /// Makes `consumer` (null: the device's default stream) wait, on the
  /// device, for buffer i's ready event. Any thread. Throws cuda_error.
  void wait(std::size_t i, stream_t consumer) const;
  /// The consumer is done with buffer i: work it queued on `consumer_stream`
  /// (null: the device's default stream) so far must finish before buffer i
  /// is written again (an event recorded there, waited for on the device;
  /// the destructor waits for it too). Any thread. Throws cuda_error.
  void release(std::size_t i, stream_t consumer_stream);
  /// The consumer is done with buffer i and has synchronized with all its
  /// work on it (for example cudaDeviceSynchronize): nothing to wait for.
  void release_synchronized(std::size_t i) noexcept;
  /// The first sticky cuda_error any call met (null: none): the device is
  /// unusable for the rest of the process. Any thread.
  [[nodiscard]] std::exception_ptr lost() const;

 private:
  void enqueue_on_device(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*),
                         void* ctx, device_fill* fill);
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace ringfeed::cuda
