// ringfeed::batch — one batch as the consumer receives it: images (on the
// device when a CUDA device is used, else in host memory), labels and the
// dataset indices of its samples.
//
// A batch is a lease on loader memory: a host slab or a device buffer goes
// back to the loader when the batch is destroyed (or release()d). Keep a
// batch alive for as long as its images are read, including GPU work queued
// on a stream (see wait()). A batch may outlive its loader: the memory it
// leases stays valid until it is released.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/output_spec.hpp>

namespace ringfeed {

enum class memory_kind : std::uint8_t { host, device };

/// A dense 4-D array somebody else owns: images of one batch.
struct tensor_view {
  void* data = nullptr;
  ringfeed::dtype dtype = ringfeed::dtype::uint8;
  ringfeed::layout layout = ringfeed::layout::nhwc;
  /// N, C, H, W for nchw; N, H, W, C for nhwc. N is the batch's size().
  std::array<std::int64_t, 4> shape{};
  memory_kind memory = memory_kind::host;
  int device = -1;  ///< CUDA device ordinal when memory == device

  [[nodiscard]] std::size_t element_size() const noexcept { return ringfeed::element_size(dtype); }
  [[nodiscard]] std::size_t elements() const noexcept {
    return static_cast<std::size_t>(shape[0] * shape[1] * shape[2] * shape[3]);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return elements() * element_size(); }
};

namespace detail {
class loader_core;
struct batch_lease;
}  // namespace detail

/// A batch of samples. Move-only. Member functions are for the thread that
/// holds the batch; destruction may happen on any thread.
class batch {
 public:
  batch() = default;
  batch(batch&&) noexcept;
  batch& operator=(batch&&) noexcept;
  batch(const batch&) = delete;
  batch& operator=(const batch&) = delete;
  /// Releases the lease, as release() does.
  ~batch();

  /// The images: uint8 NHWC, or float32/float16 NCHW normalized as the
  /// pipeline says. Device memory when on_device(): use it only on a stream
  /// that waited for ready_event() (wait() does that).
  [[nodiscard]] const tensor_view& images() const noexcept { return m_images; }
  /// Labels, in slot order; always host memory.
  [[nodiscard]] std::span<const std::int64_t> labels() const noexcept { return m_labels; }
  /// Dataset index of each slot's sample.
  [[nodiscard]] std::span<const std::size_t> indices() const noexcept { return m_indices; }
  /// Samples in the batch: batch_size, fewer only at the end of an epoch
  /// (without drop_last) or when samples were skipped (on_error = skip).
  [[nodiscard]] std::size_t size() const noexcept { return m_labels.size(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return m_epoch; }
  /// Position of this batch in its epoch (0-based).
  [[nodiscard]] std::size_t number() const noexcept { return m_number; }
  [[nodiscard]] bool on_device() const noexcept { return m_images.memory == memory_kind::device; }

  /// The CUDA event recorded after the images were written on the device
  /// (null for host batches).
  [[nodiscard]] cuda::event_t ready_event() const noexcept;
  /// Makes `stream` wait for ready_event() (cudaStreamWaitEvent: no host
  /// synchronization) and remembers it for release(). A null stream is the
  /// device's default stream (torch's default stream is handle 0), ordered
  /// like any other. No-op for host batches. Throws cuda::cuda_error.
  void wait(cuda::stream_t stream);
  /// Gives the memory back now. Device batches: the loader writes the
  /// buffer again only after the work queued so far on the stream given to
  /// wait() (the default stream if wait() was not called) has finished.
  void release() noexcept;
  /// Gives the memory back now; device batches are written again only
  /// after the work queued so far on `consumer_stream` (null: the device's
  /// default stream) has finished.
  void release(cuda::stream_t consumer_stream) noexcept;
  /// Gives the memory back now: the consumer has synchronized with all its
  /// work on the images (cudaStreamSynchronize, cudaDeviceSynchronize), so
  /// the buffer may be written at once.
  void release_synchronized() noexcept;

 private:
  friend class detail::loader_core;
  void release_lease(cuda::stream_t consumer_stream, bool synchronized) noexcept;
  std::shared_ptr<detail::batch_lease> m_lease;
  tensor_view m_images{};
  std::span<const std::int64_t> m_labels;
  std::span<const std::size_t> m_indices;
  std::uint64_t m_epoch = 0;
  std::size_t m_number = 0;
  cuda::stream_t m_wait_stream = nullptr;
};

}  // namespace ringfeed
