// Private: shard streaming's hand-off between the one streamer coroutine,
// which reads tar shards front to back in large reads, and the decode
// workers, which take each sample's bytes by key when their job comes.
//
// The store is bounded: the streamer waits for room() before each sample,
// and a take() frees one place. Its capacity must exceed the shuffle buffer
// plus the samples the workers may be waiting for at once (see
// loader_core::start_run), or the streamer could wait for room that only a
// sample it has not read yet would free.
//
// Waiters are resumed by posting to the executor, never inline under the
// lock. close() (run stopped) resumes everyone: room() gives false, take()
// nullopt.
#pragma once

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <ringfeed/executor.hpp>
#include <ringfeed/io/buffer.hpp>

namespace ringfeed::detail {

struct stream_item {
  std::vector<std::byte> bytes;
  std::exception_ptr error;  // the read of its window failed
};

/// One read of a tar shard: bytes [start, start + length) of shard `shard`,
/// holding the needed samples `samples` (dataset indices, in file order).
/// The window reader fills `buffer`/`bytes` (or `error`) and hands windows,
/// in read order, to the streamer, which splits them into stream_items.
struct stream_window {
  std::uint64_t epoch = 0;
  std::uint32_t shard = 0;
  std::uint64_t start = 0;
  std::size_t length = 0;
  std::vector<std::size_t> samples;
  io::read_buffer buffer;
  std::span<const std::byte> bytes;
  std::exception_ptr error;
};

/// Windows read at once by the window reader: memory_budget / 8 holds the
/// 2·k + 1 windows alive at most (k being read, k queued, one split), k in
/// [1, 4]. Four 8 MiB parts in flight cover object storage's first-byte
/// latency; one window at a time left the decoders waiting on each read.
[[nodiscard]] inline std::size_t stream_windows_in_flight(std::size_t memory_budget,
                                                          std::size_t read_size) noexcept {
  const std::size_t fit = memory_budget / 8 / std::max<std::size_t>(read_size, 1);
  return std::clamp<std::size_t>((fit > 0 ? fit - 1 : 0) / 2, 1, 4);
}

class stream_store {
 public:
  stream_store(executor& ex, std::size_t capacity) : m_ex(ex), m_capacity(capacity) {}
  stream_store(const stream_store&) = delete;
  stream_store& operator=(const stream_store&) = delete;

  class room_operation {
   public:
    explicit room_operation(stream_store& s) noexcept : m_store(s) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) noexcept {
      m_item.handle = h;
      std::lock_guard lock(m_store.m_mutex);
      if (m_store.m_closed) return false;
      if (m_store.m_held < m_store.m_capacity) {
        ++m_store.m_held;
        m_result = true;
        return false;
      }
      m_store.m_room_waiter = this;
      return true;
    }
    bool await_resume() const noexcept { return m_result; }

   private:
    friend class stream_store;
    stream_store& m_store;
    work_item m_item;
    bool m_result = false;
  };

  class take_operation {
   public:
    take_operation(stream_store& s, std::uint64_t key) noexcept : m_store(s), m_key(key) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      m_item.handle = h;
      work_item* wake = nullptr;
      {
        std::lock_guard lock(m_store.m_mutex);
        if (m_store.m_closed) return false;
        if (auto it = m_store.m_ready.find(m_key); it != m_store.m_ready.end()) {
          m_result = std::move(it->second);
          m_store.m_ready.erase(it);
          wake = m_store.release_locked();
        } else {
          m_store.m_waiting.emplace(m_key, this);
          return true;
        }
      }
      if (wake != nullptr) m_store.m_ex.post(*wake);
      return false;
    }
    std::optional<stream_item> await_resume() noexcept { return std::move(m_result); }

   private:
    friend class stream_store;
    stream_store& m_store;
    std::uint64_t m_key;
    work_item m_item;
    std::optional<stream_item> m_result;
  };

  /// Streamer only: waits until the store may hold one more sample; false
  /// once closed.
  [[nodiscard]] room_operation room() noexcept { return room_operation{*this}; }

  /// Streamer only, after room(): the bytes (or read error) of `key`.
  void put(std::uint64_t key, stream_item item) {
    work_item* wake_taker = nullptr;
    work_item* wake_room = nullptr;
    {
      std::lock_guard lock(m_mutex);
      if (m_closed) return;
      if (auto it = m_waiting.find(key); it != m_waiting.end()) {
        take_operation* t = it->second;
        m_waiting.erase(it);
        t->m_result = std::move(item);
        wake_taker = &t->m_item;
        wake_room = release_locked();
      } else {
        m_ready.emplace(key, std::move(item));
      }
    }
    if (wake_taker != nullptr) m_ex.post(*wake_taker);
    if (wake_room != nullptr) m_ex.post(*wake_room);
  }

  /// Workers: the sample `key`, once put; nullopt once closed. Each key is
  /// taken exactly once.
  [[nodiscard]] take_operation take(std::uint64_t key) noexcept { return take_operation{*this, key}; }

  /// Resumes every waiter empty-handed and drops what is held. Idempotent.
  void close() {
    std::vector<work_item*> wake;
    {
      std::lock_guard lock(m_mutex);
      if (m_closed) return;
      m_closed = true;
      for (auto& [key, t] : m_waiting) wake.push_back(&t->m_item);
      m_waiting.clear();
      m_ready.clear();
      if (m_room_waiter != nullptr) wake.push_back(&std::exchange(m_room_waiter, nullptr)->m_item);
    }
    for (work_item* w : wake) m_ex.post(*w);
  }

 private:
  // One sample left the store: give its place to a waiting streamer, if any
  // (returned, to be posted after unlocking).
  work_item* release_locked() noexcept {
    if (m_room_waiter != nullptr) {
      room_operation* r = std::exchange(m_room_waiter, nullptr);
      r->m_result = true;  // the freed place passes straight to it: m_held unchanged
      return &r->m_item;
    }
    --m_held;
    return nullptr;
  }

  executor& m_ex;
  std::size_t m_capacity;
  std::mutex m_mutex;
  std::size_t m_held = 0;  // places reserved by room() and not yet freed by a take
  bool m_closed = false;
  std::unordered_map<std::uint64_t, stream_item> m_ready;
  std::unordered_map<std::uint64_t, take_operation*> m_waiting;
  room_operation* m_room_waiter = nullptr;
};

}  // namespace ringfeed::detail
