// The loader's shard streamer (loader_options::stream_shards). Per run, two
// coroutines: the window reader plans each epoch's reads (tar shards in the
// epoch's read order, front to back, in windows of stream_read_size bytes
// holding the samples the run needs) and reads them, several at once; the
// streamer takes the windows in read order and hands each sample's bytes to
// the worker whose job it is through the run's stream_store. See
// loader_stream.hpp for the hand-off and data::shard_stream_order for the
// order.
#include <algorithm>
#include <system_error>
#include <vector>

#include <ringfeed/text.hpp>
#include <ringfeed/when_all.hpp>

#include "loader_core.hpp"

namespace ringfeed::detail {

std::size_t loader_core::stream_buffer() const noexcept { return std::min(m_opt.shuffle_buffer, m_ds.size()); }

data::stream_order loader_core::stream_order_of(std::uint64_t epoch) const {
  return data::shard_stream_order(m_stream_shard_of, m_stream_offset_of, m_ds.shards().size(), m_opt.sampler.seed, epoch,
                                  stream_buffer(), m_opt.sampler.shuffle);
}

std::vector<stream_window> loader_core::plan_windows(std::uint64_t epoch, std::size_t first_batch) const {
  const data::stream_order order = stream_order_of(epoch);
  // Samples this run delivers: from the resume point to the last full
  // batch (drop_last) or the end.
  // (and not past options.end).
  const std::size_t end =
      std::min(order.emit.size(), batches_to_read(epoch, m_plan.batches_per_epoch) * m_opt.batch_size);
  std::vector<std::uint8_t> needed(m_ds.size(), 0);
  for (std::size_t p = first_batch * m_opt.batch_size; p < end; ++p) needed[order.emit[p]] = 1;
  std::vector<stream_window> windows;
  for (const std::size_t i : order.read) {
    if (!needed[i]) continue;
    const data::sample_location loc = m_ds.location(i);
    stream_window* last = windows.empty() ? nullptr : &windows.back();
    if (last == nullptr || loc.shard != last->shard || loc.offset < last->start ||
        loc.offset + loc.size > last->start + last->length) {
      // The next window starts at this member: members are in file order.
      const std::uint64_t left = m_ds.shards()[loc.shard].size - loc.offset;
      stream_window w;
      w.epoch = epoch;
      w.shard = loc.shard;
      w.start = loc.offset;
      w.length = static_cast<std::size_t>(
          std::min<std::uint64_t>(left, std::max<std::uint64_t>(m_opt.stream_read_size, loc.size)));
      windows.push_back(std::move(w));
      last = &windows.back();
    }
    last->samples.push_back(i);
  }
  return windows;
}

task<stream_window> loader_core::read_window(stream_window w) {
  const auto t0 = clock::now();
  try {
    io::sample_ref ref;
    ref.file = m_ds.shards()[w.shard].path;
    ref.range = true;
    ref.offset = w.start;
    ref.size = w.length;
    w.buffer = io::read_buffer(w.length + io::read_buffer::alignment);
    w.bytes = co_await m_src->read(ref, w.buffer);
    m_read_bytes.fetch_add(w.bytes.size(), std::memory_order_relaxed);
  } catch (...) {
    w.error = std::current_exception();
    w.bytes = {};
  }
  m_read_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count(),
                      std::memory_order_relaxed);
  co_return w;
}

// The run is held (unnamed, still in the frame): its scope outlives this task.
task<> loader_core::read_windows(std::shared_ptr<run> /*r*/, std::shared_ptr<channel<stream_window>> out,
                                 std::size_t at_once, std::uint64_t epoch, std::size_t first_batch) {
  // Closed however this returns (past options.end, or a failure the run
  // reports): the streamer takes what was sent, then ends.
  struct closer {
    channel<stream_window>& c;
    ~closer() { c.close(); }
  } close_on_exit{*out};
  co_await m_pool->schedule();
  for (std::uint64_t e = epoch; !past_end(e); ++e, first_batch = 0) {
    std::vector<stream_window> windows = plan_windows(e, first_batch);
    for (std::size_t k = 0; k < windows.size(); k += at_once) {
      std::vector<task<stream_window>> reads;
      for (std::size_t j = k; j < std::min(windows.size(), k + at_once); ++j)
        reads.push_back(read_window(std::move(windows[j])));
      // read_window keeps its failure in the window: when_all never throws.
      std::vector<stream_window> done = co_await when_all(std::move(reads));
      for (stream_window& w : done)
        if (!co_await out->send(std::move(w))) co_return;  // the streamer stopped
    }
  }
}

task<> loader_core::stream(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch) {
  co_await m_pool->schedule();
  const std::size_t at_once = stream_windows_in_flight(m_opt.memory_budget, m_opt.stream_read_size);
  auto windows = std::make_shared<channel<stream_window>>(at_once, *m_pool);
  // Closed however this returns: the reader's next send sees it and ends.
  struct closer {
    channel<stream_window>& c;
    ~closer() { c.close(); }
  } close_on_exit{*windows};
  r->scope.spawn(failing_to_consumer(r, read_windows(r, windows, at_once, epoch, first_batch)));
  while (std::optional<stream_window> w = co_await windows->receive()) {
    for (const std::size_t i : w->samples) {
      if (!co_await r->store.room()) co_return;
      const data::sample_location loc = m_ds.location(i);
      stream_item item;
      if (w->error) {
        item.error = w->error;
      } else if (loc.offset - w->start + loc.size > w->bytes.size()) {
        item.error = std::make_exception_ptr(std::system_error(
            EIO, std::generic_category(),
            "read '" + escape_bytes(m_ds.shards()[w->shard].path) + "': the shard ends at byte " +
                std::to_string(w->start + w->bytes.size()) + ", inside a member it was indexed with"));
      } else {
        const std::byte* p = w->bytes.data() + (loc.offset - w->start);
        item.bytes.assign(p, p + loc.size);
      }
      m_read_items.fetch_add(1, std::memory_order_relaxed);
      r->store.put(stream_key(w->epoch, i), std::move(item));
    }
  }
}

}  // namespace ringfeed::detail
