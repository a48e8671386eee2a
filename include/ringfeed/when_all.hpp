// ringfeed::when_all — await several tasks at once.
//
// Each child is started in turn on the awaiting thread; a child that hops to
// an executor (`co_await pool.schedule()`, an I/O operation) returns control
// here, so the next child starts while it runs elsewhere. The awaiting
// coroutine resumes on the thread of whichever child finishes last. If any
// children fail, the first exception to occur is rethrown after all of them
// have finished (no child is ever abandoned while it runs).
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ringfeed/task.hpp>

namespace ringfeed {
namespace detail {

/// Counts outstanding children plus one for the awaiting coroutine, so that
/// children finishing while the parent is still starting them cannot resume
/// the parent early. Holds the first exception thrown by any child.
class when_all_latch {
 public:
  explicit when_all_latch(std::size_t children) noexcept : m_count(children + 1) {}

  /// Called by a finishing child. Returns true for the last one to arrive.
  /// acq_rel: the release publishes this child's result; the acquire makes
  /// every other child's result visible to the thread that resumes the parent.
  bool arrive() noexcept { return m_count.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  /// Records `e` if it is the first failure; later ones are dropped.
  void fail(std::exception_ptr e) noexcept {
    // relaxed: the flag only elects one writer. m_error itself is published
    // by the acq_rel decrement in arrive() that follows in the same child.
    if (!m_failed.exchange(true, std::memory_order_relaxed)) m_error = std::move(e);
  }

  void rethrow_if_failed() const {
    if (m_error) std::rethrow_exception(m_error);
  }

  std::coroutine_handle<> continuation() const noexcept { return m_continuation; }
  void set_continuation(std::coroutine_handle<> c) noexcept { m_continuation = c; }

 private:
  std::atomic<std::size_t> m_count;
  std::atomic<bool> m_failed{false};
  std::exception_ptr m_error;
  std::coroutine_handle<> m_continuation;
};

/// A child coroutine: runs one task, stores its result, arrives at the latch.
class when_all_child {
 public:
  struct promise_type {
    when_all_latch* latch = nullptr;

    when_all_child get_return_object() noexcept {
      return when_all_child{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    auto final_suspend() noexcept {
      struct arrive_awaiter {
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
          when_all_latch& l = *h.promise().latch;
          return l.arrive() ? l.continuation() : std::noop_coroutine();
        }
        void await_resume() const noexcept {}
      };
      return arrive_awaiter{};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // bodies catch everything
  };

  explicit when_all_child(std::coroutine_handle<promise_type> h) noexcept : m_handle(h) {}
  when_all_child(when_all_child&& o) noexcept : m_handle(std::exchange(o.m_handle, {})) {}
  when_all_child(const when_all_child&) = delete;
  when_all_child& operator=(const when_all_child&) = delete;
  when_all_child& operator=(when_all_child&&) = delete;
  ~when_all_child() {
    if (m_handle) m_handle.destroy();
  }

  void start(when_all_latch& latch) noexcept {
    m_handle.promise().latch = &latch;
    m_handle.resume();
  }

 private:
  std::coroutine_handle<promise_type> m_handle;
};

template <typename T>
when_all_child make_when_all_child(task<T> t, std::optional<T>& out, when_all_latch& latch) {
  try {
    out.emplace(co_await std::move(t));
  } catch (...) {
    latch.fail(std::current_exception());
  }
}

inline when_all_child make_when_all_child(task<void> t, when_all_latch& latch) {
  try {
    co_await std::move(t);
  } catch (...) {
    latch.fail(std::current_exception());
  }
}

/// Starts every child, then drops the parent's own count. Suspends only if
/// some child is still running at that point.
template <typename Children>
struct when_all_awaiter {
  when_all_latch& latch;
  Children& children;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> parent) noexcept {
    latch.set_continuation(parent);
    for (auto& c : children) c.start(latch);
    return !latch.arrive();  // last to arrive: resume the parent right away
  }
  void await_resume() const noexcept {}
};

template <typename Children>
when_all_awaiter(when_all_latch&, Children&) -> when_all_awaiter<Children>;

}  // namespace detail

/// Awaits all tasks; yields their results in argument order. All-void
/// argument lists give task<void>; mixing void and non-void is rejected.
template <typename... Ts>
  requires(sizeof...(Ts) > 0)
task<std::conditional_t<(std::is_void_v<Ts> && ...), void, std::tuple<Ts...>>> when_all(
    task<Ts>... tasks) {
  static_assert((std::is_void_v<Ts> && ...) || (!std::is_void_v<Ts> && ...),
                "when_all: mix of task<void> and value tasks; await the void ones "
                "separately or give them a result");
  static_assert((!std::is_reference_v<Ts> && ...), "when_all: reference results are not supported");
  detail::when_all_latch latch(sizeof...(Ts));
  if constexpr ((std::is_void_v<Ts> && ...)) {
    std::vector<detail::when_all_child> children;
    children.reserve(sizeof...(Ts));
    (children.push_back(detail::make_when_all_child(std::move(tasks), latch)), ...);
    co_await detail::when_all_awaiter{latch, children};
    latch.rethrow_if_failed();
  } else {
    std::tuple<std::optional<Ts>...> results;
    std::vector<detail::when_all_child> children;
    children.reserve(sizeof...(Ts));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (children.push_back(
           detail::make_when_all_child(std::move(tasks), std::get<I>(results), latch)),
       ...);
    }(std::index_sequence_for<Ts...>{});
    co_await detail::when_all_awaiter{latch, children};
    latch.rethrow_if_failed();
    co_return std::apply(
        [](auto&... r) { return std::tuple<Ts...>(std::move(*r)...); }, results);
  }
}

/// Awaits every task in `tasks`; results keep the vector's order.
template <typename T>
task<std::vector<T>> when_all(std::vector<task<T>> tasks) {
  static_assert(!std::is_reference_v<T>, "when_all: reference results are not supported");
  detail::when_all_latch latch(tasks.size());
  std::vector<std::optional<T>> results(tasks.size());
  std::vector<detail::when_all_child> children;
  children.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i)
    children.push_back(detail::make_when_all_child(std::move(tasks[i]), results[i], latch));
  co_await detail::when_all_awaiter{latch, children};
  latch.rethrow_if_failed();
  std::vector<T> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  co_return out;
}

/// Awaits every task in `tasks` (void results).
inline task<void> when_all(std::vector<task<void>> tasks) {
  detail::when_all_latch latch(tasks.size());
  std::vector<detail::when_all_child> children;
  children.reserve(tasks.size());
  for (auto& t : tasks) children.push_back(detail::make_when_all_child(std::move(t), latch));
  co_await detail::when_all_awaiter{latch, children};
  latch.rethrow_if_failed();
}

}  // namespace ringfeed
