// ringfeed::async_scope — structured fire-and-forget.
//
// spawn() starts a task at once and lets the caller go on; join() completes
// when every spawned task has finished. The count of live tasks starts at 1
// (the scope's own reference, dropped by join()), so the count can reach zero
// only after join() has been called. The first exception thrown by a spawned
// task is kept and rethrown by join(); later ones are dropped.
//
// Shape follows cppcoro's async_scope.hpp and folly's coro/AsyncScope.h.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stop_token>
#include <utility>

#include <ringfeed/task.hpp>

namespace ringfeed {

class async_scope {
 public:
  async_scope() noexcept = default;
  async_scope(const async_scope&) = delete;
  async_scope& operator=(const async_scope&) = delete;

  /// Aborts the process (with a message) if join() was not awaited to
  /// completion: destroying a scope with tasks still running would leave
  /// them referring to freed state.
  ~async_scope() {
    if (!m_joined) {
      std::fputs("ringfeed::async_scope destroyed without co_await join()\n", stderr);
      std::abort();
    }
  }

  /// Starts `t` on the calling thread; returns when it first suspends (or
  /// finishes). Any thread, any number of times, but not after join() has
  /// completed.
  void spawn(task<> t) {
    m_count.fetch_add(1, std::memory_order_relaxed);  // the scope's own +1 keeps it above 0
    detached run = make_detached(this, std::move(t));
    run.handle.promise().scope = this;
    run.handle.resume();  // the frame destroys itself when the task is done
  }

  /// The scope's stop source: spawned tasks that take get_token() see it.
  [[nodiscard]] std::stop_token get_token() const noexcept { return m_stop.get_token(); }

  /// Asks every task watching get_token() to stop. Any thread.
  void request_stop() noexcept { m_stop.request_stop(); }

  /// Completes once every spawned task has finished; rethrows the first
  /// exception one of them threw. Await it exactly once.
  [[nodiscard]] task<> join() {
    co_await join_awaiter{this};
    m_joined = true;
    std::exception_ptr e;
    {
      std::lock_guard lock(m_error_mutex);
      e = std::exchange(m_error, nullptr);
    }
    if (e) std::rethrow_exception(e);
  }

 private:
  struct detached {
    struct promise_type {
      async_scope* scope = nullptr;

      detached get_return_object() noexcept {
        return {std::coroutine_handle<promise_type>::from_promise(*this)};
      }
      std::suspend_always initial_suspend() noexcept { return {}; }
      auto final_suspend() noexcept {
        struct finish {
          bool await_ready() const noexcept { return false; }
          std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
            async_scope* s = h.promise().scope;
            h.destroy();  // nothing of this frame is touched after this line
            return s->finished_one();
          }
          void await_resume() const noexcept {}
        };
        return finish{};
      }
      void return_void() noexcept {}
      void unhandled_exception() noexcept { std::terminate(); }  // the body catches
    };
    std::coroutine_handle<promise_type> handle;
  };

  static detached make_detached(async_scope* self, task<> t) {
    try {
      co_await std::move(t);
    } catch (...) {
      self->record(std::current_exception());
    }
  }

  void record(std::exception_ptr e) noexcept {
    std::lock_guard lock(m_error_mutex);
    if (!m_error) m_error = std::move(e);
  }

  /// Drops one count; returns the joiner to resume if this was the last.
  /// acq_rel: the release publishes the finished task's effects; the acquire
  /// on the final decrement makes all of them visible to the joiner.
  std::coroutine_handle<> finished_one() noexcept {
    if (m_count.fetch_sub(1, std::memory_order_acq_rel) == 1) return m_joiner;
    return std::noop_coroutine();
  }

  struct join_awaiter {
    async_scope* scope;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) noexcept {
      scope->m_joiner = h;  // written before the decrement that may publish it
      return scope->m_count.fetch_sub(1, std::memory_order_acq_rel) != 1;
    }
    void await_resume() const noexcept {}
  };

  std::atomic<std::size_t> m_count{1};
  std::coroutine_handle<> m_joiner;
  std::mutex m_error_mutex;
  std::exception_ptr m_error;
  std::stop_source m_stop;
  bool m_joined = false;
};

}  // namespace ringfeed
