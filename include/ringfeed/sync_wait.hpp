// ringfeed::sync_wait — run a task to completion from plain (non-coroutine) code.
#pragma once

#include <condition_variable>
#include <coroutine>
#include <exception>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <ringfeed/task.hpp>

namespace ringfeed {
namespace detail {

/// One-shot event. set() may be called from any thread; after wait() returns
/// the event may be destroyed at once: set() notifies while holding the
/// mutex, so it never touches the event after the waiter can observe `set`.
class blocking_event {
 public:
  void set() noexcept {
    std::lock_guard lock(m_mutex);
    m_set = true;
    m_cv.notify_one();
  }
  void wait() noexcept {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [this] { return m_set; });
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_set = false;
};

/// The coroutine sync_wait drives: it awaits the user's task and signals the
/// event from its final suspend point, leaving the frame for the caller to
/// destroy once wait() has returned.
class sync_wait_driver {
 public:
  struct promise_type {
    blocking_event* event = nullptr;

    sync_wait_driver get_return_object() noexcept {
      return sync_wait_driver{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    auto final_suspend() noexcept {
      struct signal {
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<promise_type> h) const noexcept {
          h.promise().event->set();  // last touch of anything the caller owns
        }
        void await_resume() const noexcept {}
      };
      return signal{};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // the body catches everything
  };

  explicit sync_wait_driver(std::coroutine_handle<promise_type> h) noexcept : m_handle(h) {}
  sync_wait_driver(sync_wait_driver&& o) noexcept : m_handle(std::exchange(o.m_handle, {})) {}
  sync_wait_driver(const sync_wait_driver&) = delete;
  sync_wait_driver& operator=(const sync_wait_driver&) = delete;
  sync_wait_driver& operator=(sync_wait_driver&&) = delete;
  ~sync_wait_driver() {
    if (m_handle) m_handle.destroy();
  }

  void run_and_wait() {
    blocking_event event;
    m_handle.promise().event = &event;
    m_handle.resume();
    event.wait();
  }

 private:
  std::coroutine_handle<promise_type> m_handle;
};

template <typename T>
using sync_wait_storage = std::conditional_t<std::is_void_v<T>, std::monostate,
                                             std::conditional_t<std::is_reference_v<T>,
                                                                std::add_pointer_t<T>,
                                                                std::optional<T>>>;

template <typename T>
sync_wait_driver make_sync_wait_driver(task<T>& t, sync_wait_storage<T>& out,
                                       std::exception_ptr& error) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(t);
    } else if constexpr (std::is_reference_v<T>) {
      out = std::addressof(co_await std::move(t));
    } else {
      out.emplace(co_await std::move(t));
    }
  } catch (...) {
    error = std::current_exception();
  }
}

}  // namespace detail

/// Starts `t` on the calling thread and blocks until it finishes, wherever it
/// finishes. Returns its value or rethrows its exception.
///
/// Must not be called from a thread the task needs in order to finish (for
/// example from a thread_pool worker of a one-thread pool the task hops to):
/// that deadlocks, as any blocking wait would.
template <typename T>
T sync_wait(task<T> t) {
  detail::sync_wait_storage<T> out{};
  std::exception_ptr error;
  auto driver = detail::make_sync_wait_driver<T>(t, out, error);
  driver.run_and_wait();
  if (error) std::rethrow_exception(error);
  if constexpr (std::is_void_v<T>) {
    return;
  } else if constexpr (std::is_reference_v<T>) {
    return *out;
  } else {
    return std::move(*out);
  }
}

}  // namespace ringfeed
