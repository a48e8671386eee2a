// Pinned memory in pieces: see pinned_pool.hpp.
#include "pinned_pool.hpp"

#include <algorithm>
#include <iterator>

#include "device_api.hpp"

namespace ringfeed::cuda {
namespace {

constexpr std::size_t align = 256;
constexpr std::size_t min_growth = std::size_t{1} << 20;

constexpr std::size_t round_up(std::size_t n, std::size_t a) noexcept { return (n + a - 1) / a * a; }

struct pending_release {
  pinned_pool* pool;
  void* p;
};

void release_now(void* ctx) {
  auto* r = static_cast<pending_release*>(ctx);
  r->pool->release(r->p);
  delete r;
}

}  // namespace

pinned_pool::pinned_pool(device_api& api, std::size_t reserve, std::size_t limit)
    : m_api(api), m_limit(limit), m_grow(std::max(min_growth, round_up(reserve / 4, align))) {
  if (limit != 0) reserve = std::min(reserve, limit);
  if (reserve == 0) return;
  std::lock_guard lock(m_mutex);
  add_chunk(round_up(reserve, align));
}

pinned_pool::~pinned_pool() {
  for (std::byte* c : m_chunks) m_api.deallocate_pinned(c);
}

void pinned_pool::add_chunk(std::size_t bytes) {
  auto* c = static_cast<std::byte*>(m_api.allocate_pinned(bytes));
  m_chunks.push_back(c);
  m_chunk_ends[c] = bytes;
  m_free[c] = bytes;
  m_counters.pinned += bytes;
}

void* pinned_pool::allocate(std::size_t bytes) {
  const std::size_t n = round_up(std::max<std::size_t>(bytes, 1), align);
  std::unique_lock lock(m_mutex);
  for (;;) {
    // Best fit: the smallest free piece that holds it.
    auto best = m_free.end();
    for (auto it = m_free.begin(); it != m_free.end(); ++it)
      if (it->second >= n && (best == m_free.end() || it->second < best->second)) best = it;
    if (best != m_free.end()) {
      std::byte* p = best->first;
      const std::size_t left = best->second - n;
      m_free.erase(best);
      if (left > 0) m_free[p + n] = left;
      m_used[p] = n;
      m_counters.in_use += n;
      m_counters.peak = std::max(m_counters.peak, m_counters.in_use);
      return p;
    }
    const std::size_t grow = std::max(n, m_grow);
    if (m_limit != 0 && m_counters.pinned + grow > m_limit) {
      ++m_counters.refused;
      return nullptr;
    }
    // Pinned without the lock: a release_after's host function may need it
    // while the driver holds cudaHostAlloc. Counted at once, so that
    // threads growing together stay within the limit.
    m_counters.pinned += grow;
    ++m_counters.growths;
    lock.unlock();
    void* c = nullptr;
    try {
      c = m_api.allocate_pinned(grow);
    } catch (...) {
      lock.lock();
      m_counters.pinned -= grow;
      --m_counters.growths;
      throw;
    }
    lock.lock();
    auto* chunk = static_cast<std::byte*>(c);
    m_chunks.push_back(chunk);
    m_chunk_ends[chunk] = grow;
    m_free[chunk] = grow;
  }
}

void pinned_pool::give_back(std::byte* p) {
  const auto used = m_used.find(p);
  if (used == m_used.end()) return;  // not the pool's: nothing to do
  std::size_t n = used->second;
  m_used.erase(used);
  m_counters.in_use -= n;
  // Merge with the free neighbours of the same chunk.
  auto next = m_free.find(p + n);
  if (next != m_free.end() && m_chunk_ends.count(p + n) == 0) {
    n += next->second;
    m_free.erase(next);
  }
  auto after = m_free.upper_bound(p);
  if (after != m_free.begin() && m_chunk_ends.count(p) == 0) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == p) {
      prev->second += n;
      return;
    }
  }
  m_free[p] = n;
}

void pinned_pool::release(void* p) noexcept {
  if (p == nullptr) return;
  std::lock_guard lock(m_mutex);
  give_back(static_cast<std::byte*>(p));
}

void pinned_pool::release_after(void* p, stream_t s) noexcept {
  if (p == nullptr) return;
  pending_release* r = nullptr;
  try {
    r = new pending_release{this, p};
    m_api.launch_host_func(s, &release_now, r);
  } catch (...) {
    delete r;
    release(p);
  }
}

pinned_pool::counters pinned_pool::stats() const {
  std::lock_guard lock(m_mutex);
  return m_counters;
}

}  // namespace ringfeed::cuda
