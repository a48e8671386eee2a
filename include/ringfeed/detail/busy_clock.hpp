// ringfeed::detail::busy_clock — the wall time during which at least one operation was in flight: the
// union of overlapping intervals, where a sum of their lengths counts a
// second of 32 concurrent reads as 32 seconds. Bytes over this time is a
// bandwidth; bytes over the sum is what one read saw.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace ringfeed::detail {

class busy_clock {
 public:
  using clock = std::chrono::steady_clock;

  /// An operation starts: the clock runs while any is in flight.
  void enter() {
    std::lock_guard lock(m_mutex);
    if (m_in_flight++ == 0) m_since = clock::now();
  }
  /// One ends (each enter() is matched by one leave(); see busy_clock::scope).
  void leave() {
    std::lock_guard lock(m_mutex);
    if (--m_in_flight == 0) m_busy += clock::now() - m_since;
  }
  /// enter() now, leave() when it goes out of scope (a throw included).
  class scope {
   public:
    explicit scope(busy_clock& c) : m_clock(c) { m_clock.enter(); }
    ~scope() { m_clock.leave(); }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    busy_clock& m_clock;
  };
  /// Nanoseconds busy so far, the interval still open included.
  [[nodiscard]] std::int64_t busy_ns() const {
    std::lock_guard lock(m_mutex);
    clock::duration d = m_busy;
    if (m_in_flight > 0) d += clock::now() - m_since;
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }

 private:
  mutable std::mutex m_mutex;
  int m_in_flight = 0;
  clock::time_point m_since{};
  clock::duration m_busy{};
};

}  // namespace ringfeed::detail
