// ringfeed::channel<T> — a bounded multi-producer multi-consumer channel.
//
// A ring buffer of `capacity` slots under a mutex, with FIFO lists of
// suspended senders and receivers. A send to a waiting receiver hands the
// value over directly; a receive from a full channel refills the freed slot
// from the oldest waiting sender. Capacity 0 makes a rendezvous channel.
//
// Waiters are never resumed under the lock: the waking side collects them
// and, after unlocking, posts them to the channel's executor (or, with no
// executor, resumes them on its own thread before continuing).
//
// Shape follows folly's coro/BoundedQueue.h; unlike libcoro's ring_buffer,
// the destructor never blocks.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include <ringfeed/detail/intrusive_fifo.hpp>
#include <ringfeed/executor.hpp>

namespace ringfeed {

template <typename T>
  requires std::is_move_constructible_v<T>
class channel {
 public:
  /// A channel holding up to `capacity` values. Woken waiters are posted to
  /// `resume_on` when given; otherwise the thread that wakes them resumes
  /// them itself, after releasing the lock, before its own operation returns.
  explicit channel(std::size_t capacity, executor* resume_on = nullptr)
      : m_capacity(capacity),
        m_slots(capacity > 0 ? std::make_unique<std::optional<T>[]>(capacity) : nullptr),
        m_executor(resume_on) {}
  channel(std::size_t capacity, executor& resume_on) : channel(capacity, &resume_on) {}

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Never blocks. Destroying a channel that still has suspended waiters
  /// would strand them forever, so that aborts with a message: close() the
  /// channel and let the waiters finish first.
  ~channel() {
    if (!m_senders.empty() || !m_receivers.empty()) {
      std::fputs("ringfeed::channel destroyed with suspended waiters; close() it first\n", stderr);
      std::abort();
    }
  }

  class send_operation;
  class receive_operation;

  /// `co_await ch.send(v)`: true once `v` is in the channel or handed to a
  /// receiver; suspends while the channel is full; false if the channel is
  /// (or becomes, while waiting) closed, in which case `v` is dropped.
  [[nodiscard]] send_operation send(T value) { return send_operation{*this, std::move(value)}; }

  /// `co_await ch.receive()`: the oldest value; suspends while the channel is
  /// empty; std::nullopt once it is closed and every value has been received.
  [[nodiscard]] receive_operation receive() noexcept { return receive_operation{*this}; }

  /// Sends without waiting: true if `value` went into the channel or to a
  /// waiting receiver; false (value dropped) if the channel is full or
  /// closed. Any thread, from plain code too: this is how callbacks that
  /// cannot await (a CUDA host function, a destructor) hand values back.
  bool try_send(T value) {
    waiter* woken = nullptr;
    {
      std::lock_guard lock(m_mutex);
      if (m_closed) return false;
      if (receive_operation* r = m_receivers.pop_front()) {
        r->m_value.emplace(std::move(value));
        woken = r;
      } else if (m_size < m_capacity) {
        m_slots[(m_head + m_size) % m_capacity].emplace(std::move(value));
        ++m_size;
      } else {
        return false;
      }
    }
    resume_all(woken);
    return true;
  }

  /// Closes the channel: later sends return false, receives drain what is
  /// buffered and then return std::nullopt, and every waiter is woken.
  /// Any thread; idempotent.
  void close() noexcept {
    waiter* woken = nullptr;
    {
      std::lock_guard lock(m_mutex);
      if (m_closed) return;
      m_closed = true;
      for (send_operation* s = m_senders.take_all(); s != nullptr; s = s->m_next_waiter) {
        s->m_result = false;
        woken = push_front(woken, s);
      }
      // With values buffered there are no waiting receivers, so all of them
      // see "closed and drained".
      for (receive_operation* r = m_receivers.take_all(); r != nullptr; r = r->m_next_waiter)
        woken = push_front(woken, r);
    }
    resume_all(woken);
  }

  [[nodiscard]] bool is_closed() const {
    std::lock_guard lock(m_mutex);
    return m_closed;
  }

  /// Values buffered now (a snapshot).
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(m_mutex);
    return m_size;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return m_capacity; }

 private:
  // A suspended operation. `item` is what gets posted or resumed;
  // `next_woken` links the operations one lock hold wakes.
  struct waiter {
    work_item item;
    waiter* next_woken = nullptr;
  };

 public:
  class send_operation : private waiter {
   public:
    send_operation(channel& ch, T&& value) : m_channel(&ch), m_value(std::move(value)) {}
    bool await_ready() const noexcept { return false; }
    /// Does the whole send under the lock; suspends only when it must wait.
    bool await_suspend(std::coroutine_handle<> h) {
      this->item.handle = h;
      return m_channel->send_or_wait(*this);
    }
    bool await_resume() const noexcept { return m_result; }

   private:
    friend class channel;
    channel* m_channel;
    T m_value;
    bool m_result = false;
    send_operation* m_next_waiter = nullptr;
  };

  class receive_operation : private waiter {
   public:
    explicit receive_operation(channel& ch) noexcept : m_channel(&ch) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      this->item.handle = h;
      return m_channel->receive_or_wait(*this);
    }
    std::optional<T> await_resume() noexcept(std::is_nothrow_move_constructible_v<T>) {
      return std::move(m_value);
    }

   private:
    friend class channel;
    channel* m_channel;
    std::optional<T> m_value;
    receive_operation* m_next_waiter = nullptr;
  };

 private:
  // Returns true if `op` now waits (suspend), false if it completed.
  bool send_or_wait(send_operation& op) {
    waiter* woken = nullptr;
    {
      std::lock_guard lock(m_mutex);
      if (m_closed) {
        op.m_result = false;
        return false;
      }
      if (receive_operation* r = m_receivers.pop_front()) {
        // A waiting receiver means the buffer is empty: hand over directly.
        r->m_value.emplace(std::move(op.m_value));
        woken = r;
      } else if (m_size < m_capacity) {
        m_slots[(m_head + m_size) % m_capacity].emplace(std::move(op.m_value));
        ++m_size;
      } else {
        m_senders.push_back(&op);
        return true;
      }
      op.m_result = true;
    }
    resume_all(woken);  // outside the lock; `op` completes after this
    return false;
  }

  bool receive_or_wait(receive_operation& op) {
    waiter* woken = nullptr;
    {
      std::lock_guard lock(m_mutex);
      if (m_size > 0) {
        std::optional<T>& front = m_slots[m_head];
        op.m_value.emplace(std::move(*front));
        front.reset();
        m_head = (m_head + 1) % m_capacity;
        --m_size;
        if (send_operation* s = m_senders.pop_front()) {  // refill the freed slot
          m_slots[(m_head + m_size) % m_capacity].emplace(std::move(s->m_value));
          ++m_size;
          s->m_result = true;
          woken = s;
        }
      } else if (send_operation* s = m_senders.pop_front()) {
        // Empty buffer with a waiting sender: only with capacity 0.
        op.m_value.emplace(std::move(s->m_value));
        s->m_result = true;
        woken = s;
      } else if (m_closed) {
        op.m_value.reset();
      } else {
        m_receivers.push_back(&op);
        return true;
      }
    }
    resume_all(woken);
    return false;
  }

  static waiter* push_front(waiter* list, waiter* w) noexcept {
    w->next_woken = list;
    return w;
  }

  // Called without the lock. Reads the executor and each link before
  // resuming: a resumed coroutine may destroy its operation, or the channel.
  void resume_all(waiter* w) noexcept {
    executor* const ex = m_executor;
    while (w != nullptr) {
      waiter* next = w->next_woken;
      if (ex != nullptr)
        ex->post(w->item);
      else
        w->item.handle.resume();
      w = next;
    }
  }

  mutable std::mutex m_mutex;
  const std::size_t m_capacity;
  std::unique_ptr<std::optional<T>[]> m_slots;
  std::size_t m_head = 0;  // guarded by m_mutex
  std::size_t m_size = 0;  // guarded by m_mutex
  bool m_closed = false;   // guarded by m_mutex
  detail::intrusive_fifo<send_operation, &send_operation::m_next_waiter> m_senders;       // guarded by m_mutex
  detail::intrusive_fifo<receive_operation, &receive_operation::m_next_waiter> m_receivers;  // guarded by m_mutex
  executor* m_executor;
};

}  // namespace ringfeed
