// One run of the loader's pipeline (loader_run.hpp): the producer that
// fills slabs with jobs, the workers that read and decode each sample into
// its slot, the sequencer that delivers batches in order, and the uploader.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/text.hpp>

#include "loader_core.hpp"

namespace ringfeed::detail {
namespace {

// Thrown inside a worker when the run stops under it (not an error).
struct run_stopped {};

// One of run::read_slots, held for one read and given back however the read
// ends (a failed read must not shrink the depth).
class read_slot {
 public:
  read_slot() = default;
  read_slot(const read_slot&) = delete;
  read_slot& operator=(const read_slot&) = delete;
  ~read_slot() {
    if (m_slots != nullptr) (void)m_slots->try_send(0);  // false only after close(): nobody waits then
  }
  void hold(channel<std::uint8_t>& slots) noexcept { m_slots = &slots; }

 private:
  channel<std::uint8_t>* m_slots = nullptr;
};

std::int64_t ns_since(clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
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

run::run(thread_pool& pool, bool device, std::size_t slabs, std::size_t io_depth, std::size_t workers,
         std::size_t device_buffers, std::size_t stream_capacity)
    : device_path(device),
      free(slabs, pool),
      jobs(io_depth, pool),
      ready(2 * slabs + 4, pool),
      out(2 * std::max(slabs, device_buffers) + 4, pool),  // batches in device buffers, markers, room
      device_free(std::max<std::size_t>(device_buffers, 1), pool),
      store(pool, stream_capacity),
      gate_reads(workers > io_depth),
      read_slots(gate_reads ? io_depth : 0, pool),
      pending(2 * slabs + 4),
      pending_full(2 * slabs + 4, 0) {
  for (std::size_t i = 0; i < read_slots.capacity(); ++i) (void)read_slots.try_send(0);
}

void run::stop() noexcept {
  stopping.store(true, std::memory_order_relaxed);
  free.close();
  jobs.close();
  ready.close();
  out.close();
  device_free.close();
  store.close();
  read_slots.close();
}

void run::fail(std::exception_ptr error) noexcept {
  if (failed.exchange(true)) return;
  stopping.store(true, std::memory_order_relaxed);
  delivery d;
  d.what = delivery::kind::error;
  d.error = std::move(error);
  // Room is kept for it (the channels' + 4); after stop() nobody waits.
  (void)consumer_channel().try_send(std::move(d));
  // Nothing more is made (as next() does on an error it receives): the
  // producer ends at its next slab, the workers at their next job.
  jobs.close();
  free.close();
}

task<> failing_to_consumer(std::shared_ptr<run> r, task<> body) {
  try {
    co_await std::move(body);
  } catch (...) {
    r->fail(std::current_exception());
  }
}

void run::emit(std::uint64_t seq, delivery d) {
  std::lock_guard lock(seq_mutex);
  const std::size_t n = pending.size();
  pending[seq % n] = std::move(d);
  pending_full[seq % n] = 1;
  while (pending_full[next_emit % n]) {
    const std::size_t at = next_emit % n;
    delivery item = std::move(pending[at]);
    pending_full[at] = 0;
    ++next_emit;
    if (item.what == delivery::kind::none) continue;
    // Never full (capacity covers every slab plus the markers between
    // them); fails only after stop(), when the slab is swept as idle.
    (void)ready.try_send(std::move(item));
  }
}


// --- the pipeline --------------------------------------------------------------------

task<> loader_core::produce(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch) {
  co_await m_pool->schedule();
  for (std::uint64_t e = epoch; !past_end(e); ++e, first_batch = 0) {
    const data::epoch_plan plan =
        r->order            ? data::epoch_plan(e, *r->order, m_opt.batch_size, m_opt.drop_last)
        : m_opt.stream_shards ? data::epoch_plan(e, stream_order_of(e).emit, m_opt.batch_size, m_opt.drop_last)
                              : m_smp->plan(e, m_opt.batch_size, m_opt.drop_last);
    for (std::size_t k = first_batch; k < batches_to_read(e, plan.num_batches()); ++k) {
      // A slab beyond what the prefetch depth allows now gives its memory
      // back (slab_pool::retire_if_over) and the producer takes another.
      std::optional<slab*> got;
      do {
        got = co_await r->free.receive();
      } while (got && m_memory->retire_if_over(**got));
      if (!got) co_return;
      if (r->failed_at.load(std::memory_order_relaxed) != ~std::uint64_t{0}) {
        m_memory->give_back(*got);  // a batch failed: nothing after it is delivered
        co_return;
      }
      slab& s = **got;
      const auto idx = plan.batch(k);
      s.epoch = e;
      s.number = k;
      s.count = idx.size();
      s.indices.assign(idx.begin(), idx.end());
      s.labels.resize(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) s.labels[i] = m_ds.label(idx[i]);
      s.ok.assign(idx.size(), 0);
      if (m_stage) {
        if (s.gpu.size() < idx.size()) s.gpu.resize(idx.size());
        for (std::size_t i = 0; i < idx.size(); ++i) s.gpu[i].backend = cuda::jpeg_backend::cpu;
      }
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
    r->emit(r->next_seq++, std::move(marker));
    if (r->order) co_return;  // the caller orders the next epoch
  }
}

bool loader_core::past_end(std::uint64_t e) const noexcept { return m_opt.end && e > m_opt.end->epoch; }

std::size_t loader_core::batches_to_read(std::uint64_t e, std::size_t in_epoch) const noexcept {
  if (!m_opt.end || e < m_opt.end->epoch) return in_epoch;
  return e == m_opt.end->epoch ? std::min(in_epoch, m_opt.end->batches) : 0;
}

task<> loader_core::work(std::shared_ptr<run> r) {
  io::read_buffer buffer(256 * 1024);
  io::read_buffer pixel_buffer;  // cache=pixels: a hit's pixels
  std::string path;  // the sample's file, for the source and for messages
  const std::uint64_t seed = m_opt.sampler.seed;
  co_await m_pool->schedule();
  while (std::optional<job> j = co_await r->jobs.receive()) {
    slab& s = *j->s;
    const std::size_t slot = j->slot;
    const std::size_t index = s.indices[slot];
    if (!r->skips(s)) {
      std::exception_ptr failure;
      try {
        const auto loc = m_ds.location(index);
        std::span<const std::byte> bytes;
        std::optional<stream_item> streamed;  // stream_shards: the streamer read it
        // cache=pixels: the decoded image from the cache (a hit), or the key
        // to store the decode under (a miss).
        // An order of the caller's may repeat an index (sampling with
        // replacement): its random choices follow the position instead.
        const std::size_t key = r->order ? s.number * m_opt.batch_size + slot : index;
        const image::sample_key sample{seed, s.epoch, key};
        std::optional<image::image_rows> cached;
        pixel_cache::key pixel_key_of{};
        if (m_pixels) {
          pixel_key_of = pixel_key(m_ds.ref(index, path));
          // A kept head's output is read whole; a decoded image only where
          // this sample's transforms read it.
          if (m_pixel_head)
            cached = co_await m_pixels->read(pixel_key_of, pixel_buffer, {});
          else
            cached = co_await m_pixels->read(pixel_key_of, pixel_buffer, [&](image::size2 size) {
              return m_plan.pipe.rows_read(size, sample);
            });
        }
        if (m_opt.stream_shards) {
          // The streamer hands over every sample of the run (it reads whole
          // shards): a pixel-cache hit's bytes, or its read error, are dropped.
          streamed = co_await r->store.take(stream_key(s.epoch, index));
          if (!streamed) throw run_stopped{};
          if (!cached) {
            if (streamed->error) std::rethrow_exception(streamed->error);
            bytes = streamed->bytes;
          }
        } else if (m_opt.pixels || cached) {  // nothing to read: in memory, or in the pixel cache
          if (m_opt.pixels) path.assign(m_opt.source).append(m_ds.name(index));
        } else {
          read_slot held;  // given back at the end of this block, before the decode
          if (r->gate_reads) {
            if (!co_await r->read_slots.receive()) throw run_stopped{};
            held.hold(r->read_slots);
          }
          const auto t0 = clock::now();
          bytes = co_await m_src->read(m_ds.ref(index, path), buffer);  // `path`: a file's, for the decoder's messages
          m_read_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
          m_read_items.fetch_add(1, std::memory_order_relaxed);
          m_read_bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
        }

        // A stop (close, set_epoch, Ctrl-C in Python) that came during the
        // read skips the decode: shutting down waits for reads, not for
        // up to io_depth decodes of large images.
        if (r->skips(s)) throw run_stopped{};
        // Decode + transform straight into the slot.
        const auto t1 = clock::now();
        thread_local image::pipeline_workspace ws;
        const std::string_view name = loc.shard == data::no_shard ? std::string_view(path) : m_ds.name(index);
        const std::span<std::byte> out(s.images + slot * m_plan.sample_bytes, m_plan.sample_bytes);
        if (m_stage && gpu_route(s.gpu[slot], bytes, name, sample)) {
          // The upload thread queues its decode on the GPU with the batch.
        } else if (cached) {
          if (m_pixel_head)
            m_plan.pipe.apply_after_head(ws, cached->rows, name, sample, out);
          else
            m_plan.pipe.apply_pixel_rows(ws, *cached, name, sample, out);
        } else if (m_pixels) {
          // A miss: the full decode, and what is kept of it for the next
          // epochs (the decode, or the deterministic head's output), then
          // the rest on that: exact mode's arithmetic, as a hit's.
          thread_local image::decoder dec;
          thread_local image::image_buffer decoded;
          (void)dec.decode(bytes, name, decoded, m_plan.pipe.decoding());
          if (m_pixel_head) {
            const image::image_view head = m_plan.pipe.apply_head(ws, decoded.view(), name);
            (void)m_pixels->store(pixel_key_of, head);
            m_plan.pipe.apply_after_head(ws, head, name, sample, out);
          } else {
            (void)m_pixels->store(pixel_key_of, decoded.view());
            m_plan.pipe.apply_pixels(ws, decoded.view(), name, sample, out);
          }
        } else if (m_opt.pixels) {
          const pixel_array& px = *m_opt.pixels;
          const auto row = static_cast<std::size_t>(px.width) * static_cast<std::size_t>(px.channels);
          const image::image_view pixels{px.data + index * row * static_cast<std::size_t>(px.height), px.width,
                                         px.height, px.channels, static_cast<std::ptrdiff_t>(row)};
          m_plan.pipe.apply_pixels(ws, pixels, name, sample, out);
        } else if (m_stage) {
          // gpu_route read its header to route it: not read again.
          m_plan.pipe.apply(ws, bytes, s.gpu[slot].info, name, sample, out);
        } else {
          m_plan.pipe.apply(ws, bytes, name, sample, out);
        }
        s.ok[slot] = 1;
        if (m_stage && s.gpu[slot].backend == cuda::jpeg_backend::cpu) m_stage->count_cpu(ns_since(t1));
        m_decode_ns.fetch_add(ns_since(t1), std::memory_order_relaxed);
        m_decode_items.fetch_add(1, std::memory_order_relaxed);
        m_decode_bytes.fetch_add(m_plan.sample_bytes, std::memory_order_relaxed);
      } catch (const run_stopped&) {
        // The run is being torn down: nothing to report.
      } catch (...) {
        // A read that failed because the run stopped (cancelled) is no
        // sample's failure: only one of a run still going is reported.
        if (!r->skips(s)) failure = std::current_exception();
      }
      if (failure) fail_sample(s, index, failure);
    }
    // acq_rel: the last worker of a slab sees every other worker's slot.
    if (s.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) finish(*r, s);
  }
}

void loader_core::fail_sample(slab& s, std::size_t index, std::exception_ptr error) {
  std::string reason = what_of(error);
  if (m_opt.on_error == error_policy::fail) {
    std::lock_guard lock(s.error_mutex);
    if (!s.error) s.error = error;
    return;
  }
  std::string sample = m_ds.describe(index);
  std::lock_guard lock(m_skipped_mutex);
  if (!m_skipped_indices.insert(index).second) return;  // reported in an earlier epoch
  const std::string named = escape_bytes(sample);
  // "skipped a.jpg: a.jpg: empty file" says the name once
  const bool says_it = reason.compare(0, named.size() + 2, named + ": ") == 0;
  log("skipped " + named + ": " + (says_it ? reason.substr(named.size() + 2) : reason));
  m_skipped.push_back({std::move(sample), std::move(reason)});
}

std::size_t loader_core::close_gaps(slab& s) {
  std::size_t kept = 0;
  const bool gpu = s.gpu.size() >= s.count;
  for (std::size_t i = 0; i < s.count; ++i) {
    if (!s.ok[i]) continue;
    if (kept != i) {
      std::memmove(s.images + kept * m_plan.sample_bytes, s.images + i * m_plan.sample_bytes, m_plan.sample_bytes);
      s.labels[kept] = s.labels[i];
      s.indices[kept] = s.indices[i];
      s.ok[kept] = 1;
      s.ok[i] = 0;
      if (gpu) std::swap(s.gpu[kept], s.gpu[i]);  // (capacity kept for reuse)
    }
    ++kept;
  }
  s.count = kept;
  s.labels.resize(kept);
  s.indices.resize(kept);
  return kept;
}

void loader_core::finish(run& r, slab& s) {
  // Read before any give_back below: once given back, the producer may
  // refill the slab (and its seq) at once.
  const std::uint64_t seq = s.seq;
  delivery d;
  d.epoch = s.epoch;
  d.number = s.number;
  if (s.error) {
    d.what = delivery::kind::error;
    d.error = s.error;
    m_memory->give_back(&s);
    // Nothing after this batch is delivered; batches before it still are.
    std::uint64_t first = r.failed_at.load(std::memory_order_relaxed);
    while (seq < first && !r.failed_at.compare_exchange_weak(first, seq, std::memory_order_relaxed)) {
    }
  } else {
    const std::size_t kept = close_gaps(s);
    if (kept == 0 || r.skips(s)) {
      m_memory->give_back(&s);  // nothing to deliver: the sequence moves on
    } else {
      d.what = delivery::kind::batch;
      d.s = &s;
    }
  }
  r.emit(seq, std::move(d));
}

task<> loader_core::upload(std::shared_ptr<run> r) {
  co_await m_pool->schedule();
  while (std::optional<delivery> d = co_await r->ready.receive()) {
    if (d->what == delivery::kind::batch) {
      std::optional<int> b = co_await r->device_free.receive();
      if (!b) break;
      slab& s = *d->s;
      const auto i = static_cast<std::size_t>(*b);
      // decode="gpu": the batch's GPU decodes go on the copy stream first.
      bool deliver = true;
      std::exception_ptr gpu_failed;
      if (m_stage) {
        try {
          deliver = gpu_decode(s);
        } catch (...) {
          gpu_failed = std::current_exception();  // the device (cuda_error), or memory
        }
      }
      if (!deliver || gpu_failed) {
        const std::exception_ptr error = gpu_failed ? gpu_failed : s.error;
        m_stage->settle(m_uploader->copy_stream());  // the decoder's reads of the slots' works are done
        m_memory->give_back(&s);
        m_memory->give_back_buffer(*b);
        if (!error) continue;  // every sample of the batch failed and was skipped
        delivery e;
        e.what = delivery::kind::error;
        e.error = error;
        e.epoch = d->epoch;
        e.number = d->number;
        r->stopping.store(true, std::memory_order_relaxed);
        (void)co_await r->out.send(std::move(e));
        break;
      }
      stage_fill fill;
      fill.stage = m_stage.get();
      fill.s = &s;
      m_buffer_labels[i].assign(s.labels.begin(), s.labels.end());
      m_buffer_indices[i].assign(s.indices.begin(), s.indices.end());
      // The slab is lent until its copy is done (the host-free callback
      // gives it back). Buffer b stays the run's until the consumer takes
      // its batch (make_batch): a delivery dropped when the run stops
      // leaves it to reclaim(), like every buffer nobody holds.
      m_memory->lend(s);
      // Read before enqueue: once the copy is queued its host-free callback
      // may give the slab back, and the producer refill it, at any moment.
      const std::size_t count = s.count;
      const auto t0 = clock::now();
      std::exception_ptr failed;
      try {
        m_uploader->enqueue(
            i, reinterpret_cast<const std::uint8_t*>(s.images), count,
            [](void* ctx) {  // CUDA's callback thread: no CUDA calls here
              auto* done = static_cast<slab*>(ctx);
              done->pool->give_back(done);
            },
            &s, m_stage ? &fill : nullptr);
      } catch (...) {
        failed = std::current_exception();
      }
      if (failed) {
        // enqueue threw: its callback will not run, the slab is ours again.
        if (m_stage) m_stage->settle(m_uploader->copy_stream());
        m_memory->give_back(&s);
        m_memory->give_back_buffer(*b);
        delivery e;
        e.what = delivery::kind::error;
        e.error = failed;
        r->stopping.store(true, std::memory_order_relaxed);
        (void)co_await r->out.send(std::move(e));
        break;
      }
      m_upload_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
      m_upload_items.fetch_add(count, std::memory_order_relaxed);
      m_upload_bytes.fetch_add(count * m_plan.sample_bytes, std::memory_order_relaxed);
      d->device_buffer = *b;
    }
    if (!co_await r->out.send(std::move(*d))) break;
  }
}

tensor_view loader_core::layout_of(std::size_t n) const noexcept {
  tensor_view v;
  // The device converts the uint8 slab into m_opt.output; on the host (and
  // for host-converted uploads) the pipeline already wrote the output.
  const output_spec spec = m_uploader && !m_plan.host_converted ? m_opt.output : m_plan.pipe.output();
  v.dtype = spec.dtype;
  v.layout = spec.layout;
  const auto count = static_cast<std::int64_t>(n);
  const std::int64_t h = m_plan.sample_shape.height, w = m_plan.sample_shape.width;
  const std::int64_t c = m_plan.sample_shape.channels;
  if (spec.layout == layout::nhwc) {
    v.shape = {count, h, w, c};
  } else {
    v.shape = {count, c, h, w};
  }
  v.memory = m_uploader ? memory_kind::device : memory_kind::host;
  v.device = m_uploader ? m_opt.device : -1;
  return v;
}

batch loader_core::make_batch(delivery d) {
  batch b;
  auto lease = std::make_shared<batch_lease>();
  lease->core = shared_from_this();
  if (d.device_buffer >= 0) {
    const auto i = static_cast<std::size_t>(d.device_buffer);
    m_memory->lend_buffer(d.device_buffer);  // the consumer's from now on
    lease->device_buffer = d.device_buffer;
    b.m_labels = m_buffer_labels[i];
    b.m_indices = m_buffer_indices[i];
    b.m_images = layout_of(m_buffer_labels[i].size());
    b.m_images.data = m_uploader->output(i);
  } else {
    slab& s = *d.s;
    m_memory->lend(s);
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

}  // namespace ringfeed::detail
