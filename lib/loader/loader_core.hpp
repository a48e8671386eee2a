// Private: the loader's moving parts. See include/ringfeed/loader.hpp for
// the contract. The pieces:
//   loader_plan.hpp  what the options come to (pure, checked, sized)
//   slab_pool.hpp    batch memory and who holds it (one lock)
//   loader_run.hpp   one run of the pipeline (channels, sequencer)
//   loader_core      this class: the source, the threads, the runs, the
//                    consumer's position; loader (loader.cpp) is a thin
//                    facade over it, and batches keep it alive through
//                    their leases while they hold its memory.
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
#include <string_view>
#include <unordered_set>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/loader/batch.hpp>
#include <ringfeed/channel.hpp>
#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/pixel_cache.hpp>
#include <ringfeed/thread_pool.hpp>

#include "loader_plan.hpp"
#include "loader_run.hpp"
#include "slab_pool.hpp"

namespace ringfeed::detail {

using clock = std::chrono::steady_clock;

class loader_core;

/// decode="gpu": the uploader's fill hook, the stage's resize of the
/// batch's GPU-decoded images into their slots (loader_gpu.cpp).
struct stage_fill final : cuda::device_fill {
  cuda::decode_stage* stage = nullptr;
  slab* s = nullptr;
  void fill(std::uint8_t* target, cuda::stream_t stream) override;
};

struct batch_lease {
  std::shared_ptr<loader_core> core;
  slab* s = nullptr;        // host batches: the slab to give back
  int device_buffer = -1;   // device batches: the buffer to give back
  ~batch_lease();
  /// Gives the memory back; a device buffer once the work queued on
  /// `consumer_stream` (null: the default stream) is done, or at once when
  /// the consumer `synchronized`.
  void release(cuda::stream_t consumer_stream, bool synchronized) noexcept;
};

class loader_core : public std::enable_shared_from_this<loader_core> {
 public:
  /// Opens the dataset (through its source, for nfs:// and LMDB) and plans;
  /// starts nothing else. Throws what plan_loader and the source throw.
  explicit loader_core(loader_options options);
  ~loader_core();
  loader_core(const loader_core&) = delete;
  loader_core& operator=(const loader_core&) = delete;

  // --- the loader's operations (consumer thread) --------------------------
  /// Threads now unless options.start_eagerly is false, then the first run.
  void start();
  /// Stops the run, waits for async next() calls, stops the threads;
  /// memory lent to batches stays until they are released.
  void shut_down();
  [[nodiscard]] task<std::optional<batch>> next();
  /// next(), completed through `done` (asio.hpp, Python).
  void start_next(std::unique_ptr<next_completion> done);
  void set_epoch(std::uint64_t e);
  void set_order(std::uint64_t e, std::vector<std::size_t> indices, std::size_t first_batch);
  [[nodiscard]] std::uint64_t epoch() const noexcept { return m_pos_epoch; }
  [[nodiscard]] loader_state state() const;
  [[nodiscard]] loader_stats stats() const;
  [[nodiscard]] const data::dataset& dataset() const noexcept { return m_ds; }
  [[nodiscard]] std::size_t batches_per_epoch() const noexcept { return m_plan.batches_per_epoch; }
  [[nodiscard]] bool uses_device() const noexcept { return m_uploader != nullptr; }
  [[nodiscard]] const std::string& host_reason() const noexcept { return m_plan.host_reason; }
  [[nodiscard]] bool converts_on_device() const noexcept {
    return uses_device() && !m_plan.host_converted && m_opt.output.normalized();  // uint8 NHWC: copied as made
  }
  [[nodiscard]] std::size_t batch_capacity() const noexcept { return m_opt.batch_size; }
  /// The images view of a batch of n samples (data left null).
  [[nodiscard]] tensor_view layout_of(std::size_t n) const noexcept;

  // --- for batch leases (any thread) -------------------------------------
  [[nodiscard]] slab_pool& memory() noexcept { return *m_memory; }
  [[nodiscard]] cuda::uploader& uploader() noexcept { return *m_uploader; }
  void log(std::string_view line) const;

 private:
  // The decode pool, the source (local ones), the slabs: what start()
  // leaves for the first run with start_eagerly = false. Idempotent; on a
  // failure nothing stays started.
  void start_threads();
  void start_threads_once();
  // The decode pool, on the CPUs options.numa names (all of the mask when none).
  [[nodiscard]] std::unique_ptr<thread_pool> make_pool() const;
  [[nodiscard]] io::source_options source_options();
  void start_run(std::uint64_t epoch, std::size_t first_batch);
  void stop_run();
  // set_epoch / set_order: stop the run, forget its error, then run epoch
  // `e` from `first_batch` in `order` (null: the sampler's).
  void restart(std::uint64_t e, std::size_t first_batch, std::shared_ptr<const std::vector<std::size_t>> order);

  // The pipeline of a run (loader_run.cpp, loader_stream.cpp).
  task<> produce(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch);
  task<> work(std::shared_ptr<run> r);
  task<> stream(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch);
  task<> read_windows(std::shared_ptr<run> r, std::shared_ptr<channel<stream_window>> out, std::size_t at_once,
                      std::uint64_t epoch, std::size_t first_batch);
  [[nodiscard]] std::vector<stream_window> plan_windows(std::uint64_t epoch, std::size_t first_batch) const;
  task<stream_window> read_window(stream_window w);
  task<> upload(std::shared_ptr<run> r);
  [[nodiscard]] data::stream_order stream_order_of(std::uint64_t epoch) const;
  // shuffle_buffer, at most the dataset: a larger buffer gives the same
  // order (it never fills) and would only reserve memory.
  [[nodiscard]] std::size_t stream_buffer() const noexcept;
  // options.end: whether epoch `e` lies past it, and how many of the
  // `in_epoch` batches of epoch `e` may be read.
  [[nodiscard]] bool past_end(std::uint64_t e) const noexcept;
  [[nodiscard]] std::size_t batches_to_read(std::uint64_t e, std::size_t in_epoch) const noexcept;
  [[nodiscard]] std::uint64_t stream_key(std::uint64_t epoch, std::size_t index) const noexcept {
    return epoch * m_ds.size() + index;
  }
  void fail_sample(slab& s, std::size_t index, std::exception_ptr error);
  // cache=pixels (loader_pixels.cpp): opens cache_dir/pixels, or says why not.
  void open_pixel_cache();
  // The key of sample `index` (`ref` from m_ds.ref): its bytes' identity
  // (path, range, size and mtime of a local file) and the decode settings.
  [[nodiscard]] pixel_cache::key pixel_key(const io::sample_ref& ref) const;
  void finish(run& r, slab& s);
  // Closes the gaps failed samples left, keeping slot order; returns the count kept.
  std::size_t close_gaps(slab& s);

  // decode="gpu" (loader_gpu.cpp).
  // Opens the decode stage on the uploader's device, or says why not.
  void open_gpu_decode(const std::shared_ptr<cuda::device_api>& api);
  // Decode thread: keeps the sample on the GPU route (bytes and plan in
  // `g`) and returns true, or returns false for the CPU.
  bool gpu_route(cuda::gpu_sample& g, std::span<const std::byte> bytes, std::string_view name,
                 const image::sample_key& key);
  // Upload thread: queues the batch's GPU decodes before its copy; decodes
  // on the CPU what the GPU refused. False: nothing to deliver (every
  // sample failed, or one did with on_error=fail: s.error says which).
  bool gpu_decode(slab& s);
  [[nodiscard]] gpu_decode_stats gpu_stats() const;
  batch make_batch(delivery d);

  // --- fixed after construction ------------------------------------------
  loader_options m_opt;
  data::dataset m_ds;
  std::unique_ptr<data::sampler> m_smp;
  loader_plan m_plan;
  io::storage_info m_where;  // what the source's storage is (decides the read path)
  std::unique_ptr<thread_pool> m_pool;  // decode, and where reads resume
  // Every sample's bytes (io/source.hpp). nfs:// and LMDB sources are
  // opened by the constructor (they list the dataset), local ones with the threads.
  std::unique_ptr<io::source> m_src;
  // cache=pixels: decoded pixels on local disk (loader/pixel_cache.hpp);
  // null without one. Its reads resume on m_pool.
  std::unique_ptr<pixel_cache> m_pixels;
  std::string m_pixel_decode;  // the decode settings in its keys
  bool m_local_files = false;  // samples are local files: their mtime joins the key, else the source's version()
  bool m_pixel_head = false;   // the cache keeps the deterministic head's output (pipeline::apply_head)
  bool m_listed_by_source = false;
  std::string m_backend_name;
  bool m_threads_started = false;  // consumer thread only
  std::unique_ptr<cuda::uploader> m_uploader;
  // decode="gpu": the stage, or null (m_gpu_reason says why).
  std::unique_ptr<cuda::decode_stage> m_stage;
  std::string m_gpu_reason;
  std::unique_ptr<slab_pool> m_memory;
  // stream_shards: every sample's shard and offset, for data::shard_stream_order.
  std::vector<std::uint32_t> m_stream_shard_of;
  std::vector<std::uint64_t> m_stream_offset_of;
  // Labels and indices of the batch in each device buffer (the host slab is
  // reused as soon as its copy is done).
  std::vector<std::vector<std::int64_t>> m_buffer_labels;
  std::vector<std::vector<std::size_t>> m_buffer_indices;
  std::unique_ptr<async_scope> m_async_calls;  // start_next() operations in flight

  // --- consumer position (consumer thread only) ---------------------------
  std::uint64_t m_pos_epoch = 0;
  std::size_t m_pos_batch = 0;
  std::exception_ptr m_sticky_error;  // until set_epoch
  // set_order(): the order of epoch m_order_epoch, whose run ends with it;
  // null: the sampler's order, every epoch.
  std::shared_ptr<const std::vector<std::size_t>> m_order;
  std::uint64_t m_order_epoch = 0;
  /// The uploader met a sticky CUDA error: the error to throw for good.
  [[nodiscard]] std::exception_ptr device_lost() const;

  // --- counters (relaxed atomics: statistics only) ------------------------
  clock::time_point m_started{};
  std::atomic<std::int64_t> m_read_ns{0}, m_decode_ns{0}, m_upload_ns{0}, m_wait_ns{0};
  std::atomic<std::uint64_t> m_read_items{0}, m_read_bytes{0}, m_decode_items{0}, m_decode_bytes{0};
  std::atomic<std::uint64_t> m_upload_items{0}, m_upload_bytes{0}, m_delivered_batches{0}, m_delivered_images{0};
  mutable std::mutex m_skipped_mutex;
  std::vector<skipped_sample> m_skipped;               // guarded by m_skipped_mutex, each sample once
  std::unordered_set<std::size_t> m_skipped_indices;   // guarded by m_skipped_mutex
};

}  // namespace ringfeed::detail
