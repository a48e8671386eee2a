#include "prefetch_control.hpp"

#include <algorithm>

namespace ringfeed::detail {

prefetch_control::prefetch_control(limits l) : m_limits(l) {
  m_limits.floor = std::max<std::size_t>(m_limits.floor, 1);
  m_limits.cap = std::max(m_limits.cap, m_limits.floor);
  m_limits.shrink_after = std::max<std::size_t>(m_limits.shrink_after, 1);
  m_depth = std::clamp(m_limits.start, m_limits.floor, m_limits.cap);
  m_low = m_high = m_depth;
  m_history.push_back({0, m_depth});
}

void prefetch_control::consumer_waited() {
  ++m_waits;
  m_spare_streak = 0;
  if (m_depth < m_limits.cap) set_depth(m_depth + 1);
}

void prefetch_control::delivered(std::size_t ready_behind) {
  ++m_batches;
  if (ready_behind == 0) {
    m_spare_streak = 0;  // just in time: the depth is right
    return;
  }
  ++m_spare;
  if (++m_spare_streak < m_limits.shrink_after) return;
  m_spare_streak = 0;
  if (m_depth > m_limits.floor) set_depth(m_depth - 1);
}

void prefetch_control::cap(std::size_t depth) {
  m_limits.cap = std::max(depth, m_limits.floor);
  if (m_depth > m_limits.cap) set_depth(m_limits.cap);
}

void prefetch_control::set_depth(std::size_t d) {
  m_depth = d;
  m_low = std::min(m_low, d);
  m_high = std::max(m_high, d);
  ++m_changes;
  if (m_limits.history == 0) return;
  if (m_history.size() == m_limits.history) m_history.erase(m_history.begin());
  m_history.push_back({m_batches, d});
}

prefetch_stats prefetch_control::stats() const {
  prefetch_stats s;
  s.depth = m_depth;
  s.low = m_low;
  s.high = m_high;
  s.floor = m_limits.floor;
  s.cap = m_limits.cap;
  s.consumer_waits = m_waits;
  s.spare_deliveries = m_spare;
  s.changes = m_changes;
  s.history = m_history;
  return s;
}

}  // namespace ringfeed::detail
