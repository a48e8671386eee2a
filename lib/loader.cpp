// ringfeed::loader — see loader.hpp for the contract and loader_core.hpp for
// the structure.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <string_view>
#include <utility>

#include <ringfeed/cuda/device.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/loader.hpp>
#include <ringfeed/log.hpp>
#include <ringfeed/sync_wait.hpp>

#include "loader_core.hpp"

namespace ringfeed {
namespace detail {
namespace {

constexpr std::size_t page = 4096;
constexpr std::size_t max_default_slabs = 8;

// Thrown inside a worker when the run stops under it (not an error).
struct run_stopped {};

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

std::int64_t ns_since(clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
}

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}


}  // namespace

// --- run ---------------------------------------------------------------------------

run::run(loader_core& c, std::size_t slabs, std::size_t io_depth, std::size_t device_buffers,
         std::size_t stream_capacity)
    : core(c),
      free(slabs, *c.pool),
      jobs(io_depth, *c.pool),
      ready(2 * slabs + 4, *c.pool),
      out(2 * slabs + 4, *c.pool),
      device_free(std::max<std::size_t>(device_buffers, 1), *c.pool),
      store(*c.pool, stream_capacity),
      pending(2 * slabs + 4),
      pending_full(2 * slabs + 4, 0) {}

channel<delivery>& run::consumer_channel() noexcept { return core.uploader ? out : ready; }

void run::stop() noexcept {
  stopping.store(true, std::memory_order_relaxed);
  free.close();
  jobs.close();
  ready.close();
  out.close();
  device_free.close();
  store.close();
}

// --- core ----------------------------------------------------------------------------

loader_core::loader_core(loader_options options) : opt(std::move(options)) {
  if (opt.source.empty()) throw std::invalid_argument("loader: options.source is empty");
  if (opt.batch_size == 0) throw std::invalid_argument("loader: batch_size must be at least 1");

  if (io::nfs_url::is_nfs(opt.source) || io::is_lmdb_location(opt.source)) {
    // Storage with no local path is listed through its source, which resumes
    // reads on the decode threads: both start here.
    if (opt.stream_shards)
      throw std::invalid_argument("loader: stream_shards reads tar shards, and '" + opt.source +
                                  "' has none: pack it first with `ringfeed pack " + opt.source + " OUT`");
    pool = std::make_unique<thread_pool>(opt.threads);
    src = io::source::open(opt.source, *pool, source_options());
    listed_by_source = true;
    ds = data::open_dataset(*src, opt.dataset);
    where = src->storage();
    opt.io_depth = src->depth();
  } else {
    ds = data::open_dataset(opt.source, opt.dataset);
    // What the storage is decides the read path (network file systems get
    // deadlines and retries) and, unless set, the depth.
    where = io::probe_source(ds.shards().empty() ? std::string(ds.root()) : ds.shards().front().path);
  }
  if (ds.empty()) throw std::invalid_argument("loader: '" + opt.source + "' holds no samples");
  if (opt.io_depth == 0) opt.io_depth = where.io_depth;
  if (opt.stream_shards && ds.shards().empty())
    throw std::invalid_argument("loader: stream_shards reads tar shards, and '" + opt.source +
                                "' has none: pack it first with `ringfeed pack " + opt.source + " OUT`");
  if (opt.stream_shards && opt.stream_read_size == 0)
    throw std::invalid_argument("loader: stream_read_size must be at least 1");
  smp = std::make_unique<data::sampler>(ds.size(), opt.sampler);
  if (opt.stream_shards && smp->world_size() > 1)
    throw std::invalid_argument("loader: stream_shards with world_size " + std::to_string(smp->world_size()) +
                                " is not supported yet (each rank would need its own shards)");
  batches_per_epoch = smp->num_batches(opt.batch_size, opt.drop_last);
  if (batches_per_epoch == 0)
    throw std::invalid_argument("loader: '" + opt.source + "' gives rank " + std::to_string(smp->rank()) + " " +
                                std::to_string(smp->num_samples()) + " samples per epoch, fewer than batch_size " +
                                std::to_string(opt.batch_size) + " with drop_last: no batch to deliver");

  if (opt.resume) {
    const auto& st = *opt.resume;
    if (st.seed != opt.sampler.seed || st.rank != smp->rank() || st.world_size != smp->world_size())
      throw std::invalid_argument("loader: the resume state was saved with seed " + std::to_string(st.seed) +
                                  ", rank " + std::to_string(st.rank) + "/" + std::to_string(st.world_size) +
                                  " but this loader has seed " + std::to_string(opt.sampler.seed) + ", rank " +
                                  std::to_string(smp->rank()) + "/" + std::to_string(smp->world_size()));
    if (st.next_batch > batches_per_epoch)
      throw std::invalid_argument("loader: the resume state's batch " + std::to_string(st.next_batch) +
                                  " is past the epoch's " + std::to_string(batches_per_epoch) + " batches");
    pos_epoch = st.epoch;
    pos_batch = st.next_batch;
  }

  // Where batches go: a CUDA device when one is usable, else host memory.
  bool use_device = false;
  if (opt.device >= 0) {
    const auto probe = cuda::probe_devices();
    if (!probe.available()) {
      host_reason = "no usable CUDA device (" + probe.reason + ")";
    } else if (opt.device >= probe.device_count) {
      throw std::invalid_argument("loader: device " + std::to_string(opt.device) + " requested but " +
                                  std::to_string(probe.device_count) + " CUDA device(s) found");
    } else {
      use_device = true;
    }
  } else {
    host_reason = "host batches requested (device = -1)";
  }

  pipe = opt.pipeline;
  opt.output.check();  // on the device path too, where the uploader converts to it
  pipe.set_output(use_device ? output_spec::uint8_nhwc() : opt.output);
  const auto shape = pipe.fixed_shape();
  if (!shape)
    throw std::invalid_argument(
        "loader: the pipeline's output size depends on the image; end it with center_crop, "
        "random_resized_crop or an exact resize so samples fit batch slots");
  sample_shape = *shape;
  sample_bytes = shape->bytes();
  slab_bytes = round_up(opt.batch_size * sample_bytes, page);
  const std::size_t fit = opt.memory_budget / slab_bytes;
  if (fit < 2)
    throw std::invalid_argument("loader: memory_budget " + mib(opt.memory_budget) + " holds " + std::to_string(fit) +
                                " batch(es) of " + mib(slab_bytes) + " (batch_size " +
                                std::to_string(opt.batch_size) + "); it needs at least 2: raise it or lower batch_size");
  if (opt.prefetch_batches > 0) {
    nslabs = opt.prefetch_batches + 1;  // + the batch the consumer holds
    if (nslabs > fit)
      throw std::invalid_argument("loader: prefetch_batches " + std::to_string(opt.prefetch_batches) + " needs " +
                                  mib(nslabs * slab_bytes) + ", more than memory_budget " + mib(opt.memory_budget));
  } else {
    nslabs = std::min(fit, max_default_slabs);
  }

  if (use_device) {
    cuda::uploader::options u;
    u.device = opt.device;
    u.buffers = std::max<std::size_t>(opt.device_buffers, 1);
    u.max_images = opt.batch_size;
    u.height = sample_shape.height;
    u.width = sample_shape.width;
    u.output = opt.output;
    u.normalize = opt.pipeline.normalization();
    uploader = std::make_unique<cuda::uploader>(u);
    buffer_lent.assign(u.buffers, 0);
    buffer_labels.resize(u.buffers);
    buffer_indices.resize(u.buffers);
    for (std::size_t i = 0; i < u.buffers; ++i) {
      buffer_labels[i].reserve(opt.batch_size);
      buffer_indices[i].reserve(opt.batch_size);
      idle_buffers.push_back(static_cast<int>(i));
    }
  } else if (opt.device >= 0) {
    log(host_reason + "; batches stay in host memory, normalized on the CPU");
  }

  pinned = use_device;
}

void loader_core::start_threads() {
  if (threads_started) return;
  try {
    start_threads_once();
  } catch (...) {
    // Back to nothing started (io_uring refused, out of memory): a later
    // call may try again, and the destructor finds no half-made state.
    if (!listed_by_source) src.reset();
    idle_slabs.clear();
    slabs.clear();
    if (!listed_by_source) pool.reset();
    throw;
  }
  threads_started = true;
}

void loader_core::start_threads_once() {
  if (!pool) pool = std::make_unique<thread_pool>(opt.threads);
  // Slabs: pinned when they feed a device (DMA straight from them), else
  // page-aligned; touched only when written, so RSS grows with use.
  slabs.reserve(nslabs);
  for (std::size_t i = 0; i < nslabs; ++i) {
    auto s = std::make_unique<slab>();
    s->id = i;
    s->core = this;
    void* mem = pinned ? cuda::host_alloc_pinned(slab_bytes) : std::aligned_alloc(page, slab_bytes);
    if (mem == nullptr) throw std::bad_alloc();
    s->memory = std::unique_ptr<std::byte, slab_memory_deleter>(static_cast<std::byte*>(mem), {pinned});
    s->images = s->memory.get();
    s->labels.reserve(opt.batch_size);
    s->indices.reserve(opt.batch_size);
    s->ok.reserve(opt.batch_size);
    idle_slabs.push_back(s.get());
    slabs.push_back(std::move(s));
  }

  // Reads: io_uring, else a pool of pread threads; network file systems
  // get buffered reads, deadlines and retries (io/source.hpp).
  if (!src) {
    if (!where.small_files_ok && ds.shards().empty())
      log("'" + opt.source + "' is on " + std::string(io::to_string(where.device)) +
          " storage, where random small-file reads are slow: " + where.advice);
    src = io::source::open(opt.source, *pool, source_options());
  }
  backend_name = std::string(src->backend_name());
  if (opt.stream_shards) {
    stream_shard_of.resize(ds.size());
    stream_offset_of.resize(ds.size());
    for (std::size_t i = 0; i < ds.size(); ++i) {
      const auto loc = ds.location(i);
      stream_shard_of[i] = loc.shard;
      stream_offset_of[i] = loc.offset;
    }
  }
}

io::source_options loader_core::source_options() {
  io::source_options so;
  so.kind = opt.io;
  so.depth = opt.io_depth;
  so.pread_threads = opt.pread_threads;
  so.direct = opt.direct;
  so.retry.deadline = opt.io_deadline;
  so.retry.retries = opt.io_retries;
  so.log = [this](std::string_view line) { log(line); };
  if (!opt.cache_dir.empty()) {
    if (opt.stream_shards) {
      log("cache_dir '" + opt.cache_dir + "' not used: stream_shards reads whole shards sequentially");
    } else {
      so.cache_dir = opt.cache_dir;
      so.cache_bytes = opt.cache_bytes;
    }
  }
  return so;
}

loader_core::~loader_core() {
  // Only leases keep the core past the loader; by now every run is stopped.
  uploader.reset();  // waits for its stream: no more host-free callbacks
  slabs.clear();
}

void slab_memory_deleter::operator()(std::byte* p) const noexcept {
  if (pinned)
    cuda::host_free_pinned(p);
  else
    std::free(p);
}

void loader_core::log(std::string_view line) const { log_line(opt.log, line); }

void loader_core::start_run(std::uint64_t epoch, std::size_t first_batch) {
  start_threads();
  // A sample is emitted at most shuffle_buffer reads after it was read;
  // workers wait for up to 2·io_depth samples (jobs queued and running).
  const std::size_t stream_capacity = opt.shuffle_buffer + opt.batch_size + 2 * opt.io_depth + 16;
  auto r = std::make_shared<run>(*this, nslabs, opt.io_depth, buffer_lent.size(), stream_capacity);
  {
    std::lock_guard lock(runs_mutex);
    for (slab* s : idle_slabs) (void)r->free.try_send(s);
    idle_slabs.clear();
    for (int b : idle_buffers) (void)r->device_free.try_send(b);
    idle_buffers.clear();
    current = r;
  }
  if (started == clock::time_point{}) started = clock::now();
  r->scope.spawn(produce(r, epoch, first_batch));
  for (std::size_t i = 0; i < opt.io_depth; ++i) r->scope.spawn(work(r));
  if (opt.stream_shards) r->scope.spawn(stream(r, epoch, first_batch));
  if (uploader) r->scope.spawn(upload(r));
}

void loader_core::stop_run() {
  std::shared_ptr<run> r;
  {
    std::lock_guard lock(runs_mutex);
    r = std::exchange(current, nullptr);
  }
  if (!r) return;
  r->stop();
  sync_wait(r->scope.join());
  // Everything the run held and the consumer does not is idle again (slabs
  // in its channels, half-filled ones, delivered ones not yet received).
  std::lock_guard lock(runs_mutex);
  idle_slabs.clear();
  for (auto& s : slabs)
    if (!s->lent) idle_slabs.push_back(s.get());
  idle_buffers.clear();
  for (std::size_t i = 0; i < buffer_lent.size(); ++i)
    if (!buffer_lent[i]) idle_buffers.push_back(static_cast<int>(i));
}

void loader_core::return_slab(slab* s) noexcept {
  std::lock_guard lock(runs_mutex);
  s->lent = false;
  // try_send only fails when the run was stopped: then stop_run's sweep (or
  // the next start_run) finds the slab idle by its flag.
  if (!current || !current->free.try_send(s)) {
    if (!current) idle_slabs.push_back(s);
  }
}

void loader_core::return_device_buffer(int i) noexcept {
  std::lock_guard lock(runs_mutex);
  buffer_lent[static_cast<std::size_t>(i)] = 0;
  if (!current || !current->device_free.try_send(i)) {
    if (!current) idle_buffers.push_back(i);
  }
}

task<> loader_core::produce(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch) {
  co_await pool->schedule();
  for (std::uint64_t e = epoch;; ++e, first_batch = 0) {
    const data::epoch_plan plan = opt.stream_shards
                                      ? data::epoch_plan(e, stream_order_of(e).emit, opt.batch_size, opt.drop_last)
                                      : smp->plan(e, opt.batch_size, opt.drop_last);
    for (std::size_t k = first_batch; k < plan.num_batches(); ++k) {
      std::optional<slab*> got = co_await r->free.receive();
      if (!got) co_return;
      if (r->failed_at.load(std::memory_order_relaxed) != ~std::uint64_t{0}) {
        return_slab(*got);  // a batch failed: nothing after it is delivered
        co_return;
      }
      slab& s = **got;
      const auto idx = plan.batch(k);
      s.epoch = e;
      s.number = k;
      s.count = idx.size();
      s.indices.assign(idx.begin(), idx.end());
      s.labels.resize(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) s.labels[i] = ds.label(idx[i]);
      s.ok.assign(idx.size(), 0);
      s.error = nullptr;
      s.seq = r->next_seq++;
      s.remaining.store(idx.size(), std::memory_order_relaxed);
      // The job sends publish the slab's fields to the workers (channel lock).
      for (std::size_t slot = 0; slot < idx.size(); ++slot)
        if (!co_await r->jobs.send(job{&s, slot})) co_return;
    }
    delivery marker;
    marker.what = delivery::kind::end_of_epoch;
    marker.epoch = e;
    emit(*r, r->next_seq++, std::move(marker));
  }
}

task<> loader_core::work(std::shared_ptr<run> r) {
  io::read_buffer buffer(256 * 1024);
  std::string path;  // the sample's file, for the source and for messages
  const std::uint64_t seed = opt.sampler.seed;
  co_await pool->schedule();
  while (std::optional<job> j = co_await r->jobs.receive()) {
    slab& s = *j->s;
    const std::size_t slot = j->slot;
    const std::size_t index = s.indices[slot];
    if (!r->skips(s)) {
      std::exception_ptr failure;
      try {
        const auto loc = ds.location(index);
        std::span<const std::byte> bytes;
        std::optional<stream_item> streamed;  // stream_shards: the streamer read it
        if (opt.stream_shards) {
          streamed = co_await r->store.take(stream_key(s.epoch, index));
          if (!streamed) throw run_stopped{};
          if (streamed->error) std::rethrow_exception(streamed->error);
          bytes = streamed->bytes;
        } else {
          const auto t0 = clock::now();
          bytes = co_await src->read(ds.ref(index, path), buffer);  // `path`: a file's, for the decoder's messages
          read_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
          read_items.fetch_add(1, std::memory_order_relaxed);
          read_bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
        }

        // A stop (close, set_epoch, Ctrl-C in Python) that came during the
        // read skips the decode: shutting down waits for reads, not for
        // up to io_depth decodes of large images.
        if (r->skips(s)) throw run_stopped{};
        // Decode + transform straight into the slot.
        const auto t1 = clock::now();
        thread_local image::pipeline_workspace ws;
        const std::string_view name = loc.shard == data::no_shard ? std::string_view(path) : ds.name(index);
        pipe.apply(ws, bytes, name, image::sample_key{seed, s.epoch, index},
                   std::span(s.images + slot * sample_bytes, sample_bytes));
        s.ok[slot] = 1;
        decode_ns.fetch_add(ns_since(t1), std::memory_order_relaxed);
        decode_items.fetch_add(1, std::memory_order_relaxed);
        decode_bytes.fetch_add(sample_bytes, std::memory_order_relaxed);
      } catch (const run_stopped&) {
        // The run is being torn down: nothing to report.
      } catch (...) {
        failure = std::current_exception();
      }
      if (failure) fail_sample(*r, s, index, failure);
    }
    // acq_rel: the last worker of a slab sees every other worker's slot.
    if (s.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) finish(*r, s);
  }
}

void loader_core::fail_sample(run& r, slab& s, std::size_t index, std::exception_ptr error) {
  std::string reason = what_of(error);
  if (opt.on_error == error_policy::fail) {
    std::lock_guard lock(s.error_mutex);
    if (!s.error) s.error = error;
    return;
  }
  (void)r;
  std::string sample = ds.describe(index);
  std::lock_guard lock(skipped_mutex);
  if (!skipped_indices.insert(index).second) return;  // reported in an earlier epoch
  log("skipped " + sample + ": " + reason);
  skipped.push_back({std::move(sample), std::move(reason)});
}

void loader_core::finish(run& r, slab& s) {
  delivery d;
  d.epoch = s.epoch;
  d.number = s.number;
  if (s.error) {
    d.what = delivery::kind::error;
    d.error = s.error;
    return_slab(&s);
    // Nothing after this batch is delivered; batches before it still are.
    std::uint64_t first = r.failed_at.load(std::memory_order_relaxed);
    while (s.seq < first && !r.failed_at.compare_exchange_weak(first, s.seq, std::memory_order_relaxed)) {
    }
  } else {
    // Skipped samples: close the gaps, keeping slot order.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.count; ++i) {
      if (!s.ok[i]) continue;
      if (kept != i) {
        std::memmove(s.images + kept * sample_bytes, s.images + i * sample_bytes, sample_bytes);
        s.labels[kept] = s.labels[i];
        s.indices[kept] = s.indices[i];
      }
      ++kept;
    }
    s.count = kept;
    s.labels.resize(kept);
    s.indices.resize(kept);
    if (kept == 0 || r.skips(s)) {
      return_slab(&s);  // nothing to deliver: the sequence moves on
    } else {
      d.what = delivery::kind::batch;
      d.s = &s;
    }
  }
  emit(r, s.seq, std::move(d));
}

void loader_core::emit(run& r, std::uint64_t seq, delivery d) {
  std::lock_guard lock(r.seq_mutex);
  const std::size_t n = r.pending.size();
  r.pending[seq % n] = std::move(d);
  r.pending_full[seq % n] = 1;
  while (r.pending_full[r.next_emit % n]) {
    const std::size_t at = r.next_emit % n;
    delivery item = std::move(r.pending[at]);
    r.pending_full[at] = 0;
    ++r.next_emit;
    if (item.what == delivery::kind::none) continue;
    slab* s = item.s;
    // Never full (capacity covers every slab plus the markers between
    // them); fails only after stop(), when the slab is swept as idle.
    (void)r.ready.try_send(std::move(item));
    (void)s;
  }
}

task<> loader_core::upload(std::shared_ptr<run> r) {
  co_await pool->schedule();
  while (std::optional<delivery> d = co_await r->ready.receive()) {
    if (d->what == delivery::kind::batch) {
      std::optional<int> b = co_await r->device_free.receive();
      if (!b) break;
      slab& s = *d->s;
      const auto i = static_cast<std::size_t>(*b);
      buffer_labels[i].assign(s.labels.begin(), s.labels.end());
      buffer_indices[i].assign(s.indices.begin(), s.indices.end());
      {
        std::lock_guard lock(runs_mutex);
        s.lent = true;  // until the copy is done
        buffer_lent[i] = 1;
      }
      const auto t0 = clock::now();
      std::exception_ptr failed;
      try {
        uploader->enqueue(
            i, reinterpret_cast<const std::uint8_t*>(s.images), s.count,
            [](void* ctx) {  // CUDA's callback thread: no CUDA calls here
              auto* done = static_cast<slab*>(ctx);
              done->core->return_slab(done);
            },
            &s);
      } catch (...) {
        failed = std::current_exception();
      }
      if (failed) {
        return_slab(&s);
        return_device_buffer(*b);
        delivery e;
        e.what = delivery::kind::error;
        e.error = failed;
        r->stopping.store(true, std::memory_order_relaxed);
        (void)co_await r->out.send(std::move(e));
        break;
      }
      upload_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
      upload_items.fetch_add(s.count, std::memory_order_relaxed);
      upload_bytes.fetch_add(s.count * sample_bytes, std::memory_order_relaxed);
      d->device_buffer = *b;
    }
    if (!co_await r->out.send(std::move(*d))) break;
  }
}

tensor_view loader_core::layout_of(std::size_t n) const noexcept {
  tensor_view v;
  // The device converts the uint8 slab into opt.output; on the host the
  // pipeline already wrote the output format.
  const output_spec spec = uploader ? opt.output : pipe.output();
  v.dtype = spec.dtype;
  v.layout = spec.layout;
  const auto count = static_cast<std::int64_t>(n);
  const std::int64_t h = sample_shape.height, w = sample_shape.width;
  if (spec.layout == layout::nhwc) {
    v.shape = {count, h, w, 3};
  } else {
    v.shape = {count, 3, h, w};
  }
  v.memory = uploader ? memory_kind::device : memory_kind::host;
  v.device = uploader ? opt.device : -1;
  return v;
}

batch loader_core::make_batch(delivery d) {
  batch b;
  auto lease = std::make_shared<batch_lease>();
  lease->core = shared_from_this();
  if (d.device_buffer >= 0) {
    const auto i = static_cast<std::size_t>(d.device_buffer);
    lease->device_buffer = d.device_buffer;
    b.m_labels = buffer_labels[i];
    b.m_indices = buffer_indices[i];
    b.m_images = layout_of(buffer_labels[i].size());
    b.m_images.data = uploader->output(i);
  } else {
    slab& s = *d.s;
    {
      std::lock_guard lock(runs_mutex);
      s.lent = true;
    }
    lease->s = &s;
    b.m_images = layout_of(s.count);
    b.m_images.data = s.images;
    b.m_labels = std::span<const std::int64_t>(s.labels.data(), s.count);
    b.m_indices = std::span<const std::size_t>(s.indices.data(), s.count);
  }
  b.m_epoch = d.epoch;
  b.m_number = d.number;
  b.m_lease = std::move(lease);
  return b;
}

}  // namespace detail

// --- loader --------------------------------------------------------------------------

loader::loader(loader_options options) : m_core(std::make_shared<detail::loader_core>(std::move(options))) {
  // Threads before the scope: a failure to start them (io_uring refused)
  // leaves nothing that would need joining.
  if (m_core->opt.start_eagerly) m_core->start_threads();
  m_core->async_calls = std::make_unique<async_scope>();
  if (m_core->opt.start_eagerly) m_core->start_run(m_core->pos_epoch, m_core->pos_batch);
}

loader::~loader() {
  m_core->stop_run();  // pending next() calls see the end, async ones complete
  sync_wait(m_core->async_calls->join());
  // Threads go now; memory lent to batches stays until they are released.
  m_core->src.reset();  // before the pool its reads resume on; a cache writes what is queued
  m_core->pool.reset();
}

task<std::optional<batch>> loader::next() {
  detail::loader_core& c = *m_core;
  if (c.sticky_error) std::rethrow_exception(c.sticky_error);
  std::shared_ptr<detail::run> r;
  {
    std::lock_guard lock(c.runs_mutex);
    r = c.current;
  }
  if (!r) {
    c.start_run(c.pos_epoch, c.pos_batch);
    std::lock_guard lock(c.runs_mutex);
    r = c.current;
  }
  const auto t0 = detail::clock::now();
  std::optional<detail::delivery> d = co_await r->consumer_channel().receive();
  c.wait_ns.fetch_add(detail::ns_since(t0), std::memory_order_relaxed);
  if (!d) co_return std::nullopt;  // the loader is being destroyed
  switch (d->what) {
    case detail::delivery::kind::end_of_epoch:
      c.pos_epoch = d->epoch + 1;
      c.pos_batch = 0;
      co_return std::nullopt;
    case detail::delivery::kind::error:
      c.sticky_error = d->error;
      r->jobs.close();  // wind the run down; set_epoch() or the destructor joins it
      r->free.close();
      std::rethrow_exception(d->error);
    default:
      break;
  }
  batch b = c.make_batch(std::move(*d));
  c.pos_epoch = b.epoch();
  c.pos_batch = b.number() + 1;
  c.delivered_batches.fetch_add(1, std::memory_order_relaxed);
  c.delivered_images.fetch_add(b.size(), std::memory_order_relaxed);
  co_return std::optional<batch>(std::move(b));
}

void loader::start_next(std::unique_ptr<next_completion> completion) {
  m_core->async_calls->spawn([](loader& self, std::unique_ptr<next_completion> done) -> task<> {
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

loader::epoch_range loader::epoch(std::uint64_t e) {
  if (m_core->pos_epoch != e) set_epoch(e);
  return epoch_range{*this};
}

void loader::set_epoch(std::uint64_t e) {
  m_core->stop_run();
  m_core->sticky_error = nullptr;
  m_core->pos_epoch = e;
  m_core->pos_batch = 0;
  m_core->start_run(e, 0);
}

void loader::epoch_range::advance() {
  m_current.reset();  // give the previous batch back first
  m_current = sync_wait(m_loader->next());
}

loader_state loader::state() const {
  return {m_core->opt.sampler.seed, m_core->pos_epoch, m_core->pos_batch, m_core->smp->rank(),
          m_core->smp->world_size()};
}

const data::dataset& loader::dataset() const noexcept { return m_core->ds; }
std::size_t loader::batches_per_epoch() const noexcept { return m_core->batches_per_epoch; }
bool loader::uses_device() const noexcept { return m_core->uploader != nullptr; }
const std::string& loader::host_reason() const noexcept { return m_core->host_reason; }

tensor_view loader::batch_layout() const noexcept { return m_core->layout_of(m_core->opt.batch_size); }

}  // namespace ringfeed
