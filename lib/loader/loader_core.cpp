// ringfeed::detail::loader_core: opening, threads, runs and the consumer's
// side (loader_core.hpp). The pipeline a run executes is loader_run.cpp.
#include "loader_core.hpp"

#include <algorithm>
#include <cerrno>
#include <stop_token>
#include <system_error>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/cuda/device.hpp>
#include <ringfeed/text.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/log.hpp>
#include <ringfeed/sync_wait.hpp>

#include "../cuda/device_api.hpp"
#include "numa_scope.hpp"

namespace ringfeed::detail {

loader_core::loader_core(loader_options options) : m_opt(std::move(options)) {
  if (m_opt.source.empty()) throw std::invalid_argument("loader: options.source is empty");
  if (m_opt.batch_size == 0) throw std::invalid_argument("loader: batch_size must be at least 1");
  check_limits(m_opt);  // before the pool a network source starts below
  // on_error reaches the index too: an ImageFolder directory that cannot be
  // listed is left out and reported below, or stops the scan naming it.
  if (m_opt.on_error == error_policy::skip) m_opt.dataset.skip_unreadable = true;

  if (io::nfs_url::is_nfs(m_opt.source) || io::is_lmdb_location(m_opt.source) ||
      io::is_object_location(m_opt.source)) {
    // Storage with no local path is listed through its source, which resumes
    // reads on the decode threads: both start here.
    if (m_opt.stream_shards && !io::is_object_location(m_opt.source))
      throw std::invalid_argument("loader: stream_shards reads tar shards, and '" + m_opt.source +
                                  "' has none: pack it first with `ringfeed pack " + escape_bytes(m_opt.source) + " OUT`");
    // Object storage wants few large requests: a shard streamed in parts of
    // 8 MiB unless the window was set away from its default.
    if (io::is_object_location(m_opt.source) && m_opt.stream_read_size == loader_options{}.stream_read_size)
      m_opt.stream_read_size = std::size_t{8} << 20;
    m_pool = make_pool();
    m_src = io::source::open(m_opt.source, *m_pool, source_options());
    m_listed_by_source = true;
    {
      // A stop ends the listing and indexing now: its reads fail (ECANCELED).
      std::stop_callback on_stop(m_opt.stop, [this] { m_src->cancel_reads(true); });
      try {
        m_ds = data::open_dataset(*m_src, m_opt.dataset);
        // A manifest names objects without a listing: a cache keys them by the
        // ETags a listing of their prefix pins (a replaced object is a miss).
        if (!m_opt.cache_dir.empty() && m_ds.kind() == data::dataset_kind::manifest) {
          std::vector<std::string> files(m_ds.size());
          std::string scratch;
          for (std::size_t i = 0; i < files.size(); ++i) files[i] = m_ds.ref(i, scratch).file;
          m_src->pin_versions(files);
        }
      } catch (...) {
        if (!m_opt.stop.stop_requested()) throw;
      }
    }
    if (m_opt.stop.stop_requested())
      throw std::system_error(ECANCELED, std::generic_category(),
                              "loader: opening '" + escape_bytes(m_opt.source) + "' was interrupted");
    // The listing and index are made: what reads learn from now on is no
    // version, so the caches' keys hold still all run long.
    m_src->seal_versions();
    m_where = m_src->storage();
    m_opt.io_depth = m_src->depth();
  } else if (m_opt.pixels) {
    const pixel_array& px = *m_opt.pixels;
    if (px.data == nullptr || px.count == 0 || px.height <= 0 || px.width <= 0 ||
        (px.channels != 1 && px.channels != 3) || px.labels.size() != px.count)
      throw std::invalid_argument("loader: pixels of '" + escape_bytes(m_opt.source) +
                                  "': give count images of height x width x 1 or 3 channels and one label each");
    if (m_opt.stream_shards)
      throw std::invalid_argument("loader: stream_shards reads tar shards, and images in memory have none");
    std::vector<std::string> names(px.count);  // "[i]": messages name an image source[i]
    for (std::size_t i = 0; i < px.count; ++i) names[i] = "[" + std::to_string(i) + "]";
    m_ds = data::listed_samples(m_opt.source, names, px.labels);
    m_where.io_depth = 1;  // nothing is read
  } else if (m_opt.samples) {
    if (m_opt.stream_shards)
      throw std::invalid_argument("loader: stream_shards reads tar shards, and a list of samples has none");
    m_ds = std::move(*m_opt.samples);
    m_opt.samples.reset();
    m_where = io::probe_source(m_opt.source);
  } else {
    m_ds = data::open_dataset(m_opt.source, m_opt.dataset);
    // What the storage is decides the read path (network file systems get
    // deadlines and retries) and, unless set, the depth.
    if (!m_ds.empty())  // (an empty one is refused below)
      m_where = io::probe_source(m_ds.shards().empty() ? std::string(m_ds.root()) : m_ds.shards().front().path);
  }
  for (const data::skipped_directory& d : m_ds.report().skipped) {
    log("left out " + escape_bytes(d.path) + ": " + d.reason);
    m_skipped.push_back({d.path, d.reason});  // no thread runs yet: the mutex is not needed
  }
  if (m_ds.empty()) throw std::invalid_argument("loader: '" + escape_bytes(m_opt.source) + "' holds no samples");
  if (m_opt.io_depth == 0) m_opt.io_depth = m_where.io_depth;
  m_smp = std::make_unique<data::sampler>(m_ds.size(), m_opt.sampler);
  const std::shared_ptr<cuda::device_api> api = cuda::current_device_api();
  m_plan = plan_loader(m_opt, m_ds, *m_smp, m_opt.device >= 0 ? api->probe() : cuda::device_probe{});
  m_pos_epoch = m_plan.first_epoch;
  m_pos_batch = m_plan.first_batch;

  std::size_t device_buffers = 0;
  if (m_plan.use_device) {
    cuda::uploader::options u;
    u.device = m_opt.device;
    u.buffers = std::max<std::size_t>(m_opt.device_buffers, 1);
    u.max_images = m_opt.batch_size;
    u.height = m_plan.sample_shape.height;
    u.width = m_plan.sample_shape.width;
    u.output = m_opt.output;
    u.normalize = m_opt.pipeline.normalization();
    if (m_plan.host_converted) u.sample_bytes = m_plan.sample_bytes;
    try {
      m_uploader = std::make_unique<cuda::uploader>(u);
    } catch (const cuda::cuda_error& e) {
      // Out of device memory, exclusive-process mode, a lost context:
      // host batches, as when there is no device at all.
      cuda::device_probe unusable;
      unusable.reason = "the upload stage could not be set up on device " + std::to_string(m_opt.device) + ": " +
                        e.what();
      m_plan = plan_loader(m_opt, m_ds, *m_smp, unusable);
    }
  }
  if (m_uploader) {
    device_buffers = m_uploader->buffers();
    m_buffer_labels.assign(device_buffers, {});
    m_buffer_indices.assign(device_buffers, {});
    for (std::size_t i = 0; i < device_buffers; ++i) {
      m_buffer_labels[i].reserve(m_opt.batch_size);
      m_buffer_indices[i].reserve(m_opt.batch_size);
    }
  } else if (m_opt.device >= 0) {
    log(m_plan.host_reason + "; batches stay in host memory, normalized on the CPU");
  }
  open_gpu_decode(api);
  // Prefetch adapts to the consumer (prefetch_control.hpp): from 2 batches
  // ahead, up to what the plan sized (prefetch_batches or the budget).
  prefetch_control::limits depth;
  depth.cap = m_plan.slabs - 1;
  m_memory = std::make_unique<slab_pool>(m_plan.slabs, m_plan.slab_bytes, m_opt.batch_size,
                                         m_plan.use_device ? api : nullptr, device_buffers, depth,
                                         m_plan.use_device ? m_opt.numa.node : -1);
  open_pixel_cache();
}

loader_core::~loader_core() {
  // Only leases keep the core past the loader; by now every run is stopped.
  m_uploader.reset();  // waits for its streams: no more host-free callbacks
  m_memory.reset();    // the slabs' resize tables go back to the stage's pool
  m_stage.reset();     // nothing queued reads its scratch any more
}

void loader_core::log(std::string_view line) const { log_line(m_opt.log, line); }

io::source_options loader_core::source_options() {
  io::source_options so;
  so.kind = m_opt.io;
  so.depth = m_opt.io_depth;
  so.pread_threads = m_opt.pread_threads;
  so.direct = m_opt.direct;
  so.retry.deadline = m_opt.io_deadline;
  so.retry.retries = m_opt.io_retries;
  so.log = [this](std::string_view line) { log(line); };
  so.s3 = m_opt.s3;
  if (!m_opt.cache_dir.empty() && m_opt.cache == cache_kind::bytes) {
    if (m_opt.stream_shards) {
      log("cache_dir '" + escape_bytes(m_opt.cache_dir) + "' not used: stream_shards reads whole shards sequentially");
    } else {
      so.cache_dir = m_opt.cache_dir;
      so.cache_bytes = m_opt.cache_bytes;
    }
  }
  return so;
}

// --- threads -------------------------------------------------------------------------

void loader_core::start() {
  // Threads before the scope: a failure to start them (io_uring refused)
  // leaves nothing that would need joining.
  if (m_opt.start_eagerly) start_threads();
  m_async_calls = std::make_unique<async_scope>();
  if (!m_opt.start_eagerly) return;
  try {
    start_run(m_pos_epoch, m_pos_batch);
  } catch (...) {
    // The loader is not made (out of memory for the run, say): what did
    // start is stopped and joined, as the loader's destructor would.
    shut_down();
    throw;
  }
}

std::unique_ptr<thread_pool> loader_core::make_pool() const {
  // Feeding a GPU on a machine of several NUMA nodes: the decode threads
  // start on its node's CPUs (threads inherit their creator's mask).
  const run_on_cpus near(m_opt.numa.cpus);
  return std::make_unique<thread_pool>(m_opt.threads);
}

void loader_core::start_threads() {
  if (m_threads_started) return;
  try {
    start_threads_once();
  } catch (...) {
    // Back to nothing started (io_uring refused, out of memory): a later
    // call may try again, and the destructor finds no half-made state.
    if (!m_listed_by_source) m_src.reset();
    m_memory->free_memory();
    if (!m_listed_by_source) m_pool.reset();
    throw;
  }
  m_threads_started = true;
}

void loader_core::start_threads_once() {
  if (!m_pool) m_pool = make_pool();
  m_memory->allocate();
  // Reads: io_uring, else a pool of pread threads; network file systems
  // get buffered reads, deadlines and retries (io/source.hpp).
  if (m_opt.pixels) {
    m_backend_name = "memory";
    return;
  }
  if (!m_src) {
    if (!m_where.small_files_ok && m_ds.shards().empty())
      log("'" + escape_bytes(m_opt.source) + "' is on " + std::string(io::to_string(m_where.device)) +
          " storage, where random small-file reads are slow: " + m_where.advice);
    m_src = io::source::open(m_opt.source, *m_pool, source_options());
  }
  m_backend_name = std::string(m_src->backend_name());
  if (m_opt.stream_shards) {
    m_stream_shard_of.resize(m_ds.size());
    m_stream_offset_of.resize(m_ds.size());
    for (std::size_t i = 0; i < m_ds.size(); ++i) {
      const auto loc = m_ds.location(i);
      m_stream_shard_of[i] = loc.shard;
      m_stream_offset_of[i] = loc.offset;
    }
  }
  if (m_pixels) m_pixels->start_reads(*m_pool);  // last: nothing after it can fail
}

void loader_core::shut_down() {
  stop_run();  // pending next() calls see the end, async ones complete
  sync_wait(m_async_calls->join());
  m_src.reset();  // before the pool its reads resume on; a cache writes what is queued
  if (m_pixels) m_pixels->stop_reads();
  m_pool.reset();
}

// --- runs ----------------------------------------------------------------------------

void loader_core::start_run(std::uint64_t epoch, std::size_t first_batch) {
  start_threads();
  // A sample is emitted at most shuffle_buffer reads after it was read;
  // workers wait for up to io_depth + workers samples (jobs queued and running).
  const std::size_t stream_capacity =
      stream_buffer() + m_opt.batch_size + m_opt.io_depth + m_plan.workers + 16;
  auto r = std::make_shared<run>(*m_pool, m_uploader != nullptr, m_plan.slabs, m_opt.io_depth, m_plan.workers,
                                 m_memory->device_buffers(), stream_capacity);
  m_memory->attach(r);
  if (m_started == clock::time_point{}) m_started = clock::now();
  r->order = m_order;
  r->scope.spawn(failing_to_consumer(r, produce(r, epoch, first_batch)));
  for (std::size_t i = 0; i < m_plan.workers; ++i) r->scope.spawn(failing_to_consumer(r, work(r)));
  if (m_opt.stream_shards) r->scope.spawn(failing_to_consumer(r, stream(r, epoch, first_batch)));
  if (m_uploader) r->scope.spawn(failing_to_consumer(r, upload(r)));
}

void loader_core::stop_run() {
  const std::shared_ptr<run> r = m_memory->detach();
  if (!r) return;
  r->stop();
  // Reads in flight end now, and any the run still starts (a worker past
  // its check, the stream's reader): a stalled server would hold the join
  // for its timeouts (and a server in this process, stopping with us,
  // forever). The next run reads again.
  if (m_src) m_src->cancel_reads(true);
  sync_wait(r->scope.join());
  if (m_src) m_src->resume_reads();
  m_memory->reclaim();
}

// --- the consumer's side -------------------------------------------------------------

task<std::optional<batch>> loader_core::next() {
  if (const std::exception_ptr lost = device_lost()) std::rethrow_exception(lost);
  if (m_sticky_error) std::rethrow_exception(m_sticky_error);
  if (m_order && m_pos_epoch != m_order_epoch)  // its run ended with its epoch: nothing would come
    throw std::logic_error("loader: epoch " + std::to_string(m_pos_epoch) + " has no order (set_order() gave one for epoch " +
                           std::to_string(m_order_epoch) + "): call set_order() or set_epoch() first");
  if (past_end(m_pos_epoch))  // its run read nothing past the end: nothing would come
    throw std::logic_error("loader: next() past the end the options set (epoch " + std::to_string(m_opt.end->epoch) +
                           ", " + (m_opt.end->batches == loader_end{}.batches ? std::string("all its batches")
                                                                              : std::to_string(m_opt.end->batches) +
                                                                                    " batch(es)") +
                           "): call set_epoch() to an epoch before it first");
  std::shared_ptr<run> r = m_memory->current();
  if (!r) {
    start_run(m_pos_epoch, m_pos_batch);
    r = m_memory->current();
  }
  channel<delivery>& ready = r->consumer_channel();
  // Nothing ready: the consumer waits, prefetch was too shallow. A run's
  // first item counts too: the consumer may hold every slab there is
  // (batches kept across set_epoch), and only growing gives the run one.
  const bool waits = ready.size() == 0;
  if (waits && !m_memory->consumer_waited())
    log("prefetch stays at " + std::to_string(m_memory->prefetch().depth) +
        " batch(es): no memory for another batch slab");
  const auto t0 = clock::now();
  std::optional<delivery> d = co_await ready.receive();
  m_wait_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count(),
                      std::memory_order_relaxed);
  if (!d) co_return std::nullopt;  // the loader is being destroyed
  // Batches finished behind this one wait for the consumer: prefetch may be
  // deeper than it needs (the same channel: nobody else takes from it).
  if (d->what == delivery::kind::batch) m_memory->delivered(waits ? 0 : ready.size());
  switch (d->what) {
    case delivery::kind::end_of_epoch:
      m_pos_epoch = d->epoch + 1;
      m_pos_batch = 0;
      co_return std::nullopt;
    case delivery::kind::error:
      m_sticky_error = d->error;
      r->jobs.close();  // wind the run down; set_epoch() or the destructor joins it
      r->free.close();
      std::rethrow_exception(d->error);
    default:
      break;
  }
  batch b = make_batch(std::move(*d));
  m_pos_epoch = b.epoch();
  m_pos_batch = b.number() + 1;
  m_delivered_batches.fetch_add(1, std::memory_order_relaxed);
  m_delivered_images.fetch_add(b.size(), std::memory_order_relaxed);
  co_return std::optional<batch>(std::move(b));
}

void loader_core::start_next(std::unique_ptr<next_completion> completion) {
  m_async_calls->spawn([](loader_core& self, std::unique_ptr<next_completion> done) -> task<> {
    std::exception_ptr error;
    std::optional<batch> result;
    try {
      result = co_await self.next();
    } catch (...) {
      error = std::current_exception();
    }
    done->complete(error, std::move(result));
  }(*this, std::move(completion)));
}

void loader_core::set_order(std::uint64_t e, std::vector<std::size_t> indices, std::size_t first_batch) {
  if (m_opt.stream_shards)
    throw std::invalid_argument("loader: set_order() does not apply with stream_shards (the stream decides the order)");
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] >= m_ds.size())
      throw std::out_of_range("loader: set_order(): index " + std::to_string(indices[i]) + " (at position " +
                              std::to_string(i) + ") is not below the dataset's size " + std::to_string(m_ds.size()));
  const data::epoch_plan plan(e, indices, m_opt.batch_size, m_opt.drop_last);
  if (first_batch > plan.num_batches())
    throw std::out_of_range("loader: set_order(): first_batch " + std::to_string(first_batch) + " is past the " +
                            std::to_string(plan.num_batches()) + " batches of the order");
  restart(e, first_batch, std::make_shared<const std::vector<std::size_t>>(std::move(indices)));
}

void loader_core::set_epoch(std::uint64_t e) { restart(e, 0, nullptr); }

void loader_core::restart(std::uint64_t e, std::size_t first_batch,
                          std::shared_ptr<const std::vector<std::size_t>> order) {
  stop_run();
  m_sticky_error = nullptr;
  m_order = std::move(order);
  if (m_order) m_order_epoch = e;
  m_pos_epoch = e;
  m_pos_batch = first_batch;
  if (!device_lost()) start_run(e, first_batch);  // a lost device stays lost: next() says so
}

std::exception_ptr loader_core::device_lost() const {
  const std::exception_ptr lost = m_uploader ? m_uploader->lost() : nullptr;
  if (!lost) return nullptr;
  try {
    std::rethrow_exception(lost);
  } catch (const cuda::cuda_error& e) {
    return std::make_exception_ptr(cuda::cuda_error(
        e.code(), std::string("loader: the CUDA device is unusable for the rest of this process (restart it): ") +
                      e.what(),
        true));
  } catch (...) {
    return lost;
  }
}

loader_state loader_core::state() const {
  return {m_opt.sampler.seed, m_pos_epoch, m_pos_batch, m_smp->rank(), m_smp->world_size()};
}

}  // namespace ringfeed::detail
