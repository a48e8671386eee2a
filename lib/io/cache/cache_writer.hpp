// Private: cache entries stored off the reading threads, for the
// read-through cache source (cached_source.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <ringfeed/io/cache.hpp>

namespace ringfeed::io::detail {

/// Writes cache entries on a thread of its own, so that filling the cache
/// (a file create, write and rename per sample) never holds a decode
/// thread. put() copies the bytes into a queue bounded by `max_bytes`; a
/// store that does not fit is dropped (the sample is read remotely again
/// next time) and counted. The destructor writes what is queued, then stops.
class cache_writer {
 public:
  cache_writer(cache& c, std::size_t max_bytes);
  ~cache_writer();
  cache_writer(const cache_writer&) = delete;
  cache_writer& operator=(const cache_writer&) = delete;
  /// Any thread. Returns false if the store was dropped (queue full).
  bool put(std::string_view key, std::span<const std::byte> bytes);
  [[nodiscard]] std::uint64_t dropped() const noexcept { return m_dropped.load(std::memory_order_relaxed); }

 private:
  void run();
  cache& m_cache;
  const std::size_t m_max_bytes;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::pair<std::string, std::vector<std::byte>>> m_queue;  // guarded by m_mutex
  std::size_t m_queued_bytes = 0;                                     // guarded by m_mutex
  bool m_stop = false;                                                // guarded by m_mutex
  std::atomic<std::uint64_t> m_dropped{0};
  std::thread m_thread;  // last: started once the rest is constructed
};

}  // namespace ringfeed::io::detail
