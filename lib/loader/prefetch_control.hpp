// Private: how many batches the loader prepares ahead (issue 39). The
// depth grows while the consumer waits for batches and shrinks while
// finished batches wait for the consumer, within [floor, cap]: the cap is
// prefetch_batches (torch's prefetch_factor) or what memory_budget holds.
// The rule sees events, never clocks, so tests drive it step by step;
// the loader reports the events from next() (loader_core.cpp) and the
// slab pool follows the depth (slab_pool.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <ringfeed/loader/stats.hpp>

namespace ringfeed::detail {

class prefetch_control {
 public:
  struct limits {
    std::size_t floor = 1;  ///< batches ahead at least (the slab being filled)
    std::size_t cap = 1;    ///< at most: prefetch_batches, or what the budget holds
    std::size_t start = 2;  ///< where it begins (clamped into [floor, cap])
    /// Deliveries in a row with a batch to spare behind them before the
    /// depth drops by one: a slow consumer gives memory back, a jittery one
    /// keeps it.
    std::size_t shrink_after = 3;
    std::size_t history = 64;  ///< depth changes kept (the latest)
  };

  explicit prefetch_control(limits l);

  /// next() found no batch ready and had to wait: one more batch ahead,
  /// up to the cap. Call it before the delivered() of that batch.
  void consumer_waited();
  /// A batch went to the consumer with `ready_behind` more already
  /// finished behind it; after shrink_after of those in a row (no wait
  /// between), one batch less ahead, down to the floor.
  void delivered(std::size_t ready_behind);
  /// The memory for more than `depth` batches ahead could not be had: that
  /// (at least the floor) is the cap from now on, and the depth within it.
  void cap(std::size_t depth);

  [[nodiscard]] std::size_t depth() const noexcept { return m_depth; }
  /// The stats() view: depth, lowest and highest reached, bounds, events,
  /// the latest changes.
  [[nodiscard]] prefetch_stats stats() const;

 private:
  void set_depth(std::size_t d);

  limits m_limits;
  std::size_t m_depth;
  std::size_t m_low, m_high;
  std::size_t m_spare_streak = 0;  // deliveries in a row with a batch to spare
  std::uint64_t m_batches = 0;     // delivered so far
  std::uint64_t m_waits = 0;
  std::uint64_t m_spare = 0;
  std::uint64_t m_changes = 0;
  std::vector<prefetch_change> m_history;  // the latest m_limits.history changes, oldest first
};

}  // namespace ringfeed::detail
