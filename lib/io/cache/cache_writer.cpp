// io::detail::cache_writer: cache entries stored off the decode threads.
#include "io/cache/cache_writer.hpp"

namespace ringfeed::io::detail {

// --- cache writer --------------------------------------------------------------------

cache_writer::cache_writer(cache& c, std::size_t max_bytes)
    : m_cache(c), m_max_bytes(max_bytes), m_thread([this] { run(); }) {}

cache_writer::~cache_writer() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_one();
  m_thread.join();
}

bool cache_writer::put(std::string_view key, std::span<const std::byte> bytes) {
  {
    std::lock_guard lock(m_mutex);
    if (m_queued_bytes + bytes.size() > m_max_bytes && !m_queue.empty()) {
      m_dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    m_queue.emplace_back(std::string(key), std::vector<std::byte>(bytes.begin(), bytes.end()));
    m_queued_bytes += bytes.size();
  }
  m_wake.notify_one();
  return true;
}

void cache_writer::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
    if (m_queue.empty()) return;  // stopping, and everything is written
    auto item = std::move(m_queue.front());
    m_queue.pop_front();
    lock.unlock();
    m_cache.put(item.first, item.second);  // never throws
    lock.lock();
    m_queued_bytes -= item.second.size();
  }
}

}  // namespace ringfeed::io::detail
