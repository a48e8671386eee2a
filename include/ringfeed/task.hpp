// ringfeed::task<T> — a lazy, move-only coroutine with symmetric transfer.
//
// A task does nothing until it is awaited. Awaiting it stores the awaiter as
// the task's continuation and transfers control to the task's body; when the
// body finishes, its final awaiter transfers control straight back to the
// continuation (symmetric transfer), so chains of any depth and loops of
// synchronously-completing tasks never grow the stack. A value or an
// exception is delivered to the awaiter.
//
// The flat-stack guarantee needs the compiler to emit symmetric transfer as
// a tail call: GCC does at -O2 (-foptimize-sibling-calls), not at -O0/-O1 nor
// under ASan/TSan instrumentation, where very deep chains of synchronously
// completing awaits can overflow the stack.
//
// Shape follows cppcoro's task.hpp and libcoro's task.hpp.
#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <variant>

namespace ringfeed {

template <typename T = void>
class task;

namespace detail {

class task_promise_base {
 public:
  struct final_awaiter {
    bool await_ready() const noexcept { return false; }

    template <typename Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) noexcept {
      // The continuation is set by whoever awaited us; a task that was never
      // awaited cannot reach final_suspend (tasks are lazy).
      return h.promise().m_continuation;
    }

    void await_resume() noexcept {}
  };

  std::suspend_always initial_suspend() noexcept { return {}; }
  final_awaiter final_suspend() noexcept { return {}; }

  void set_continuation(std::coroutine_handle<> c) noexcept { m_continuation = c; }

 private:
  std::coroutine_handle<> m_continuation = std::noop_coroutine();
};

template <typename T>
class task_promise final : public task_promise_base {
 public:
  task<T> get_return_object() noexcept;

  void unhandled_exception() noexcept { m_result.template emplace<2>(std::current_exception()); }

  template <typename U = T>
    requires std::is_convertible_v<U&&, T>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    m_result.template emplace<1>(std::forward<U>(value));
  }

  T& result() & {
    rethrow_if_failed();
    return std::get<1>(m_result);
  }

  T&& result() && {
    rethrow_if_failed();
    return std::move(std::get<1>(m_result));
  }

 private:
  void rethrow_if_failed() {
    if (m_result.index() == 2) std::rethrow_exception(std::get<2>(m_result));
  }

  std::variant<std::monostate, T, std::exception_ptr> m_result;
};

template <>
class task_promise<void> final : public task_promise_base {
 public:
  task<void> get_return_object() noexcept;

  void unhandled_exception() noexcept { m_exception = std::current_exception(); }
  void return_void() noexcept {}

  void result() {
    if (m_exception) std::rethrow_exception(m_exception);
  }

 private:
  std::exception_ptr m_exception;
};

template <typename T>
class task_promise<T&> final : public task_promise_base {
 public:
  task<T&> get_return_object() noexcept;

  void unhandled_exception() noexcept { m_exception = std::current_exception(); }
  void return_value(T& value) noexcept { m_value = std::addressof(value); }

  T& result() {
    if (m_exception) std::rethrow_exception(m_exception);
    return *m_value;
  }

 private:
  T* m_value = nullptr;
  std::exception_ptr m_exception;
};

}  // namespace detail

/// A lazily started coroutine producing a T (or nothing, for task<>).
///
/// Contract:
/// - Move-only. Destroying a task that was never awaited destroys its frame
///   without running the body.
/// - Await it at most once (`co_await std::move(t)` or `co_await t`); the
///   awaiting coroutine resumes on whichever thread the task finishes on.
/// - An exception escaping the body is rethrown from the `co_await`.
/// - Awaiting an empty (moved-from) task is undefined behaviour.
template <typename T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;
  using value_type = T;

  task() noexcept = default;
  explicit task(std::coroutine_handle<promise_type> h) noexcept : m_handle(h) {}
  task(task&& other) noexcept : m_handle(std::exchange(other.m_handle, {})) {}
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      if (m_handle) m_handle.destroy();
      m_handle = std::exchange(other.m_handle, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() {
    if (m_handle) m_handle.destroy();
  }

  /// True when the task holds a coroutine (was not moved from).
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(m_handle); }

  /// True once the body has run to completion (value or exception stored).
  [[nodiscard]] bool is_ready() const noexcept { return !m_handle || m_handle.done(); }

  auto operator co_await() & noexcept { return awaiter<false>{m_handle}; }
  auto operator co_await() && noexcept { return awaiter<true>{m_handle}; }

 private:
  template <bool Rvalue>
  struct awaiter {
    std::coroutine_handle<promise_type> handle;

    bool await_ready() const noexcept { return !handle || handle.done(); }

    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
      handle.promise().set_continuation(awaiting);
      return handle;  // symmetric transfer into the task body
    }

    decltype(auto) await_resume() {
      if constexpr (std::is_void_v<T>) {
        handle.promise().result();
      } else if constexpr (std::is_reference_v<T>) {
        return handle.promise().result();
      } else if constexpr (Rvalue) {
        // By value: `auto&& x = co_await make();` must not dangle once the
        // temporary task (and its frame) is destroyed.
        return T(std::move(handle.promise()).result());
      } else {
        return handle.promise().result();
      }
    }
  };

  std::coroutine_handle<promise_type> m_handle;
};

namespace detail {

template <typename T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>{std::coroutine_handle<task_promise>::from_promise(*this)};
}

inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>{std::coroutine_handle<task_promise>::from_promise(*this)};
}

template <typename T>
task<T&> task_promise<T&>::get_return_object() noexcept {
  return task<T&>{std::coroutine_handle<task_promise>::from_promise(*this)};
}

}  // namespace detail

}  // namespace ringfeed
