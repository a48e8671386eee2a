// Private: one run of the loader's pipeline. A *run* is one continuous
// production, from (epoch, batch) onwards through the following epochs,
// until it is stopped (set_epoch, destruction, or a failure). It owns its
// channels and coroutines:
//
//   producer ──jobs──► workers ──(sequencer, in order)──► ready
//        ▲                                                          │
//        └──────────── free slabs ◄── batch lease / host-free ◄─────┘
//                                              (device: uploader ─► out)
//
// The memory it fills belongs to the slab_pool, not to the run.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/channel.hpp>
#include <ringfeed/thread_pool.hpp>

#include "loader_stream.hpp"
#include "slab_pool.hpp"

namespace ringfeed::detail {

/// What travels to the consumer, in order. Its slab or device buffer is the
/// run's until the consumer makes a batch of it (make_batch lends it then):
/// a delivery dropped when the run stops (set_epoch, a failed send, the
/// loader's end) needs nothing done, reclaim() finds its memory idle.
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

struct run {
  /// `workers` worker coroutines will run; when they outnumber io_depth,
  /// reads take one of io_depth read slots.
  run(thread_pool& pool, bool device_path, std::size_t slabs, std::size_t io_depth, std::size_t workers,
      std::size_t device_buffers, std::size_t stream_capacity);

  const bool device_path;    // batches go through the uploader
  channel<slab*> free;
  channel<job> jobs;
  channel<delivery> ready;   // sequencer → uploader (device) or consumer (host)
  channel<delivery> out;     // uploader → consumer (device path only)
  channel<int> device_free;  // device buffers not lent to the consumer
  stream_store store;        // stream_shards: streamer → workers
  // Reads in flight stay within io_depth when there are more workers than
  // that (threads > io_depth): a worker takes a slot for its read and gives
  // it back before it decodes. Unused (and empty) otherwise.
  const bool gate_reads;
  channel<std::uint8_t> read_slots;
  async_scope scope;
  std::atomic<bool> stopping{false};  // shut down: skip all remaining work
  // set_order(): this run delivers that one epoch in this order, then ends.
  std::shared_ptr<const std::vector<std::size_t>> order;
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

  [[nodiscard]] channel<delivery>& consumer_channel() noexcept { return device_path ? out : ready; }
  /// Emits `d` as item `seq`, and every item after it that is waiting.
  void emit(std::uint64_t seq, delivery d);
  void stop() noexcept;
  /// A coroutine of the run failed outside any sample (out of memory while
  /// planning an epoch, say): the consumer gets `error` as its next item
  /// and the run makes nothing more. The first failure only.
  void fail(std::exception_ptr error) noexcept;
  std::atomic<bool> failed{false};
};

/// Runs `body`, one of run `r`'s coroutines; an exception it lets out goes
/// to the consumer (run::fail) instead of waiting in the scope for a join
/// that only a delivery would bring.
task<> failing_to_consumer(std::shared_ptr<run> r, task<> body);

}  // namespace ringfeed::detail
