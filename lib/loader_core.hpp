// Private: the loader's moving parts. See include/ringfeed/loader.hpp for
// the contract; this file is how it is kept.
//
// A *run* is one continuous production, from (epoch, batch) onwards through
// the following epochs, until it is stopped (set_epoch, destruction, or a
// failure). It owns its channels and coroutines:
//
//   producer ──jobs──► io_depth workers ──(sequencer, in order)──► ready
//        ▲                                                          │
//        └──────────── free slabs ◄── batch lease / host-free ◄─────┘
//                                              (device: uploader ─► out)
//
// Slabs and device buffers outlive runs: they belong to the core, and a
// lease returns its slab to whichever run is current (or to the idle list
// between runs), so a restart never loses memory a consumer still holds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/batch.hpp>
#include <ringfeed/channel.hpp>
#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/loader.hpp>
#include <ringfeed/thread_pool.hpp>

#include "loader_stream.hpp"

namespace ringfeed::detail {

using clock = std::chrono::steady_clock;

/// Frees slab memory the way it was allocated.
struct slab_memory_deleter {
  bool pinned = false;
  void operator()(std::byte* p) const noexcept;
};

/// One batch's memory: images for batch_size samples plus their labels.
struct slab {
  std::size_t id = 0;
  std::unique_ptr<std::byte, slab_memory_deleter> memory;
  std::byte* images = nullptr;  // memory.get(): batch_size × sample_bytes, page aligned
  std::vector<std::int64_t> labels;   // capacity batch_size, never reallocated
  std::vector<std::size_t> indices;   // likewise
  std::vector<std::uint8_t> ok;       // per slot: decoded into place
  std::uint64_t epoch = 0;
  std::size_t number = 0;         // batch number within the epoch
  std::size_t count = 0;          // samples in the batch (after compaction)
  std::uint64_t seq = 0;          // position in the run's delivery order
  std::atomic<std::size_t> remaining{0};
  std::exception_ptr error;       // on_error = fail: the first failure in it (guarded by error_mutex)
  std::mutex error_mutex;
  bool lent = false;              // guarded by loader_core::runs_mutex: consumer or device copy holds it
  loader_core* core = nullptr;    // for the CUDA host-free callback
};

/// What travels to the consumer, in order.
struct delivery {
  enum class kind : std::uint8_t { none, batch, end_of_epoch, error } what = kind::none;
  slab* s = nullptr;
  int device_buffer = -1;
  std::uint64_t epoch = 0;
  std::size_t number = 0;  // batch number within the epoch
  std::exception_ptr error;
};

struct job {
  slab* s = nullptr;
  std::size_t slot = 0;
};

struct loader_core;

struct run {
  run(loader_core& core, std::size_t slabs, std::size_t io_depth, std::size_t device_buffers,
      std::size_t stream_capacity);

  loader_core& core;
  channel<slab*> free;
  channel<job> jobs;
  channel<delivery> ready;  // sequencer → uploader (device) or consumer (host)
  channel<delivery> out;    // uploader → consumer (device path only)
  channel<int> device_free;  // device buffers not lent to the consumer
  stream_store store;  // stream_shards: streamer → workers
  async_scope scope;
  std::atomic<bool> stopping{false};  // shut down: skip all remaining work
  // on_error = fail: seq of the first failed batch. Work for later batches
  // is skipped; earlier ones are finished and delivered before the error.
  std::atomic<std::uint64_t> failed_at{~std::uint64_t{0}};
  [[nodiscard]] bool skips(const slab& s) const noexcept {
    return stopping.load(std::memory_order_relaxed) || s.seq > failed_at.load(std::memory_order_relaxed);
  }

  // Sequencer: items are emitted in `seq` order whatever order they finish.
  std::mutex seq_mutex;
  std::uint64_t next_seq = 0;      // producer side (producer coroutine only)
  std::uint64_t next_emit = 0;     // guarded by seq_mutex
  std::vector<delivery> pending;   // guarded by seq_mutex; ring indexed by seq
  std::vector<std::uint8_t> pending_full;  // guarded by seq_mutex

  channel<delivery>& consumer_channel() noexcept;
  void stop() noexcept;
};

struct batch_lease {
  std::shared_ptr<loader_core> core;
  slab* s = nullptr;        // host batches: the slab to give back
  int device_buffer = -1;   // device batches: the buffer to give back
  ~batch_lease();
  void release(cuda::stream_t consumer_stream) noexcept;
};

struct loader_core : std::enable_shared_from_this<loader_core> {
  explicit loader_core(loader_options options);
  ~loader_core();

  // --- fixed after construction ------------------------------------------
  loader_options opt;
  data::dataset ds;
  std::unique_ptr<data::sampler> smp;
  image::pipeline pipe;  // the options' pipeline with the output format chosen
  image::output_shape sample_shape;
  std::size_t sample_bytes = 0;
  std::size_t slab_bytes = 0;
  std::size_t nslabs = 0;
  std::size_t batches_per_epoch = 0;
  std::string host_reason;  // why batches stay in host memory ("" on device)
  std::string backend_name;
  io::storage_info where;  // what the source's storage is (decides the read path)
  bool threads_started = false;  // consumer thread only: start_threads() ran

  std::unique_ptr<thread_pool> pool;     // decode (and where reads resume)
  // Every sample's bytes: local files, nfs://, LMDB, behind a read-through
  // cache where one is set (io/source.hpp). nfs:// and LMDB sources are
  // opened by the constructor (they list the dataset), local ones with the
  // threads.
  std::unique_ptr<io::source> src;
  bool listed_by_source = false;
  // stream_shards: every sample's shard and offset, for data::shard_stream_order.
  std::vector<std::uint32_t> stream_shard_of;
  std::vector<std::uint64_t> stream_offset_of;
  std::unique_ptr<cuda::uploader> uploader;
  std::vector<std::unique_ptr<slab>> slabs;
  bool pinned = false;

  // --- runs ----------------------------------------------------------------
  std::mutex runs_mutex;
  std::shared_ptr<run> current;          // guarded by runs_mutex
  std::vector<slab*> idle_slabs;         // guarded by runs_mutex: free between runs
  std::vector<int> idle_buffers;         // guarded by runs_mutex
  std::vector<std::uint8_t> buffer_lent;  // guarded by runs_mutex: per device buffer
  // Labels and indices of the batch in each device buffer (the host slab is
  // reused as soon as its copy is done).
  std::vector<std::vector<std::int64_t>> buffer_labels;
  std::vector<std::vector<std::size_t>> buffer_indices;
  std::unique_ptr<async_scope> async_calls;  // async_next() operations in flight (made by loader)

  // --- consumer position (consumer thread only) ---------------------------
  std::uint64_t pos_epoch = 0;
  std::size_t pos_batch = 0;
  std::exception_ptr sticky_error;

  // --- counters (relaxed atomics: statistics only) ------------------------
  clock::time_point started{};
  std::atomic<std::int64_t> read_ns{0}, decode_ns{0}, upload_ns{0}, wait_ns{0};
  std::atomic<std::uint64_t> read_items{0}, read_bytes{0}, decode_items{0}, decode_bytes{0};
  std::atomic<std::uint64_t> upload_items{0}, upload_bytes{0}, delivered_batches{0}, delivered_images{0};
  mutable std::mutex skipped_mutex;
  std::vector<skipped_sample> skipped;  // guarded by skipped_mutex, each sample once
  std::unordered_set<std::size_t> skipped_indices;  // guarded by skipped_mutex

  void log(std::string_view line) const;
  /// The decode pool, reader, cache writer and slabs: what the constructor
  /// leaves for the first run (options.start_eagerly = false defers it to
  /// the first next()). Consumer thread; idempotent.
  void start_threads();
  void start_threads_once();
  /// What the options say about reading (depth, deadline, cache, log).
  [[nodiscard]] io::source_options source_options();
  void start_run(std::uint64_t epoch, std::size_t first_batch);
  void stop_run();
  void return_slab(slab* s) noexcept;
  void return_device_buffer(int i) noexcept;

  task<> produce(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch);
  task<> work(std::shared_ptr<run> r);
  task<> stream(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch);
  [[nodiscard]] data::stream_order stream_order_of(std::uint64_t epoch) const;
  [[nodiscard]] std::uint64_t stream_key(std::uint64_t epoch, std::size_t index) const noexcept {
    return epoch * ds.size() + index;
  }
  task<> upload(std::shared_ptr<run> r);
  void fail_sample(run& r, slab& s, std::size_t index, std::exception_ptr error);
  void finish(run& r, slab& s);
  void emit(run& r, std::uint64_t seq, delivery d);

  batch make_batch(delivery d);
  /// The images view of a batch of n samples (data left null).
  [[nodiscard]] tensor_view layout_of(std::size_t n) const noexcept;
};

}  // namespace ringfeed::detail
