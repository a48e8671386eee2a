// Private: the loader's batch memory and who holds it. Slabs (one batch of
// host memory each) and device buffers outlive runs: the current run has
// them in its free channels, the consumer holds the ones it was lent (a
// batch, or a slab whose device copy is in flight), and between runs the
// rest wait on the idle lists. One lock guards all of that; give_back()
// routes memory to whichever run is current, so a restart (set_epoch)
// never loses memory a consumer still holds.
//
// Not every slab has memory at all times: the prefetch depth
// (prefetch_control.hpp, kept here under the same lock) says how many may,
// depth + those the consumer holds (at least one). Growing allocates a slab's
// memory on the consumer's thread; shrinking frees one as the producer
// takes it from the free channel, so memory goes back as soon as the
// consumer lets go of a batch.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "../cuda/decode_stage.hpp"
#include "prefetch_control.hpp"

namespace ringfeed::cuda {
class device_api;
}

namespace ringfeed::detail {

struct run;
class slab_pool;

/// Frees slab memory the way it was allocated: by the device API that
/// pinned it, else std::free.
struct slab_memory_deleter {
  cuda::device_api* pinned_by = nullptr;
  void operator()(std::byte* p) const noexcept;
};

/// One batch's memory: images for batch_size samples plus their labels.
struct slab {
  std::unique_ptr<std::byte, slab_memory_deleter> memory;
  std::byte* images = nullptr;        // memory.get(): batch_size × sample_bytes, page aligned
  std::vector<std::int64_t> labels;   // capacity batch_size, never reallocated
  std::vector<std::size_t> indices;   // likewise
  std::vector<std::uint8_t> ok;       // per slot: decoded into place
  std::uint64_t epoch = 0;
  std::size_t number = 0;             // batch number within the epoch
  std::size_t count = 0;              // samples in the batch (after compaction)
  std::uint64_t seq = 0;              // position in the run's delivery order
  std::atomic<std::size_t> remaining{0};
  std::exception_ptr error;           // on_error = fail: the first failure in it (guarded by error_mutex)
  std::mutex error_mutex;
  bool lent = false;                  // guarded by the pool's lock
  bool retired = false;               // guarded by the pool's lock: out of circulation (the depth is lower)
  slab_pool* pool = nullptr;          // for the CUDA host-free callback
  // decode="gpu" (loader_gpu.cpp): per slot, the GPU route's bytes and
  // plan (decode threads); the resize table's pinned memory (upload thread).
  std::vector<cuda::gpu_sample> gpu;
  cuda::pinned_side side;
};

class slab_pool {
 public:
  /// Up to `slabs` of `slab_bytes` for batches of `batch_size`, pinned by
  /// `pinned_by` when they feed a device (null: plain host memory);
  /// `device_buffers` device buffers (0 on the host path). The prefetch
  /// depth moves within `depth` (its cap at most slabs - 1). Slab memory is
  /// preferably allocated on NUMA node `numa_node` (-1: where the OS puts
  /// it). Nothing is allocated before allocate().
  slab_pool(std::size_t slabs, std::size_t slab_bytes, std::size_t batch_size,
            std::shared_ptr<cuda::device_api> pinned_by, std::size_t device_buffers,
            prefetch_control::limits depth, int numa_node = -1);
  slab_pool(const slab_pool&) = delete;
  slab_pool& operator=(const slab_pool&) = delete;

  /// Allocates memory for the starting depth's slabs (touched only when
  /// written, so RSS grows with use); all idle. Throws std::bad_alloc,
  /// leaving none. Consumer thread.
  void allocate();
  /// Frees the slabs (none may be lent). Consumer thread.
  void free_memory() noexcept;
  [[nodiscard]] bool allocated() const noexcept { return !m_slabs.empty(); }
  [[nodiscard]] std::size_t device_buffers() const noexcept { return m_buffer_lent.size(); }

  /// Makes `r` the current run and hands it every idle slab and buffer.
  void attach(const std::shared_ptr<run>& r);
  /// The current run, no longer current (null when there is none).
  [[nodiscard]] std::shared_ptr<run> detach();
  [[nodiscard]] std::shared_ptr<run> current() const;
  /// After a detached run has finished: everything the consumer does not
  /// hold is idle again (slabs in its channels, half-filled ones,
  /// delivered ones not yet received).
  void reclaim();

  /// Held outside the run from now on (by a batch, or a copy in flight).
  void lend(slab& s) noexcept;
  void lend_buffer(int i) noexcept;
  /// Back to the current run, or to the idle list between runs. Any thread.
  void give_back(slab* s) noexcept;
  void give_back_buffer(int i) noexcept;

  // --- prefetch depth -------------------------------------------------------
  /// The consumer waited for a batch: the depth may grow, and the memory
  /// for it is allocated now (pinned memory a retirement kept is reused)
  /// and handed to the current run. An allocation
  /// that fails caps the depth where it is (logged by the caller through
  /// the returned false). Consumer thread.
  [[nodiscard]] bool consumer_waited();
  /// A batch went to the consumer with `ready_behind` more finished behind it.
  void delivered(std::size_t ready_behind);
  /// The producer took `s` from the free channel: true when the depth has
  /// dropped below the slabs in circulation, and `s` left it (take
  /// another); host memory is freed, pinned memory kept for its return (no
  /// cudaFreeHost, which waits for the device, mid-run). Producer (any
  /// thread but CUDA's callbacks).
  [[nodiscard]] bool retire_if_over(slab& s) noexcept;
  [[nodiscard]] prefetch_stats prefetch() const;

 private:
  [[nodiscard]] std::unique_ptr<std::byte, slab_memory_deleter> allocate_memory() const;
  // Slabs with memory the depth allows: depth + those the consumer holds
  // (at least one: the batch it is about to take). Counting every batch it
  // holds means a consumer that keeps many (list(loader)) still leaves the
  // loader its depth; the cap (m_count) bounds them all.
  [[nodiscard]] std::size_t target() const noexcept { return m_control.depth() + std::max<std::size_t>(m_lent, 1); }

  const std::size_t m_count;
  const std::size_t m_slab_bytes;
  const std::size_t m_batch_size;
  const int m_numa_node;
  const std::shared_ptr<cuda::device_api> m_pinned_by;  // outlives m_slabs
  std::vector<std::unique_ptr<slab>> m_slabs;  // fixed between allocate() and free_memory()

  mutable std::mutex m_mutex;
  std::shared_ptr<run> m_current;          // guarded by m_mutex
  std::vector<slab*> m_idle_slabs;         // guarded by m_mutex
  std::vector<int> m_idle_buffers;         // guarded by m_mutex
  std::vector<std::uint8_t> m_buffer_lent;  // guarded by m_mutex: per device buffer
  prefetch_control m_control;              // guarded by m_mutex
  std::size_t m_live = 0;                  // guarded by m_mutex: slabs in circulation
  std::size_t m_lent = 0;                  // guarded by m_mutex: slabs with lent set
  std::vector<slab*> m_retired;            // guarded by m_mutex: out of circulation (host: without memory)
};

}  // namespace ringfeed::detail
