// The loader's shard streamer (loader_options::stream_shards): one coroutine
// per run reads the shards in the epoch's read order, front to back, in
// windows of stream_read_size bytes, and hands each needed sample's bytes to
// the worker whose job it is through the run's stream_store. See
// loader_stream.hpp for the hand-off and data::shard_stream_order for the
// order.
#include <algorithm>
#include <vector>

#include "loader_core.hpp"

namespace ringfeed::detail {

data::stream_order loader_core::stream_order_of(std::uint64_t epoch) const {
  return data::shard_stream_order(m_stream_shard_of, m_stream_offset_of, m_ds.shards().size(), m_opt.sampler.seed, epoch,
                                  m_opt.shuffle_buffer, m_opt.sampler.shuffle);
}

task<> loader_core::stream(std::shared_ptr<run> r, std::uint64_t epoch, std::size_t first_batch) {
  co_await m_pool->schedule();
  io::read_buffer window_buffer(m_opt.stream_read_size + io::read_buffer::alignment);
  std::vector<std::uint8_t> needed(m_ds.size());
  for (std::uint64_t e = epoch;; ++e, first_batch = 0) {
    const data::stream_order order = stream_order_of(e);
    // Samples this run delivers: from the resume point to the last full
    // batch (drop_last) or the end.
    const std::size_t end = std::min(order.emit.size(), m_plan.batches_per_epoch * m_opt.batch_size);
    std::fill(needed.begin(), needed.end(), 0);
    for (std::size_t p = first_batch * m_opt.batch_size; p < end; ++p) needed[order.emit[p]] = 1;

    std::uint32_t shard = data::no_shard;
    std::uint64_t window_start = 0;
    std::span<const std::byte> window;
    std::exception_ptr window_error;
    for (const std::size_t i : order.read) {
      if (!needed[i]) continue;
      if (!co_await r->store.room()) co_return;
      const data::sample_location loc = m_ds.location(i);
      const bool inside = loc.shard == shard && loc.offset >= window_start &&
                          loc.offset + loc.size <= window_start + window.size();
      if (!inside) {
        // The next window starts at this member: members are in file order.
        shard = loc.shard;
        window_start = loc.offset;
        window_error = nullptr;
        const std::uint64_t left = m_ds.shards()[shard].size - loc.offset;
        const auto len = static_cast<std::size_t>(
            std::min<std::uint64_t>(left, std::max<std::uint64_t>(m_opt.stream_read_size, loc.size)));
        const auto t0 = clock::now();
        try {
          io::sample_ref ref;
          ref.file = m_ds.shards()[shard].path;
          ref.range = true;
          ref.offset = loc.offset;
          ref.size = len;
          window = co_await m_src->read(ref, window_buffer);
          m_read_bytes.fetch_add(window.size(), std::memory_order_relaxed);
        } catch (...) {
          window_error = std::current_exception();
          window = {};
        }
        m_read_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count(),
                          std::memory_order_relaxed);
      }
      stream_item item;
      if (window_error) {
        item.error = window_error;
      } else {
        const std::byte* p = window.data() + (loc.offset - window_start);
        item.bytes.assign(p, p + loc.size);
      }
      m_read_items.fetch_add(1, std::memory_order_relaxed);
      r->store.put(stream_key(e, i), std::move(item));
    }
  }
}

}  // namespace ringfeed::detail
