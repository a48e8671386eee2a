// ringfeed::thread_pool — a work-stealing executor for coroutines.
//
// Each worker owns a Chase–Lev deque and a one-item LIFO slot. Work posted
// from a worker goes to that worker's LIFO slot (the continuation just
// scheduled runs next, while its data is hot) and the item it displaces to
// the worker's deque, where idle workers steal it. Work posted from other
// threads goes to a shared FIFO injection queue. Idle workers sleep on a
// condition variable and are woken when work appears, so an idle pool burns
// no CPU.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <ringfeed/detail/intrusive_fifo.hpp>
#include <ringfeed/executor.hpp>

namespace ringfeed {

class thread_pool final : public executor {
 public:
  /// Starts `threads` workers (at least one; 0 means one per CPU this
  /// process may run on: its affinity mask, as taskset, cpusets and Slurm
  /// set it, not every CPU of the machine).
  explicit thread_pool(std::size_t threads = 0);
  /// The workers thread_pool(threads) starts (reads the calling thread's
  /// affinity mask when `threads` is 0).
  [[nodiscard]] static std::size_t default_thread_count(std::size_t threads) noexcept;

  /// Runs every item already queued or queued by running items, then joins
  /// the workers. Must not be called from one of this pool's workers. No
  /// thread outside the pool may post while the destructor runs.
  ~thread_pool();

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Awaitable returned by schedule(): suspends the awaiting coroutine and
  /// resumes it on one of the pool's workers.
  class schedule_operation {
   public:
    explicit schedule_operation(thread_pool& pool) noexcept : m_pool(&pool) {}
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> awaiting) noexcept {
      m_item.handle = awaiting;
      m_pool->post(m_item);  // `this` may be gone once post() has published it
    }
    void await_resume() const noexcept {}

   private:
    thread_pool* m_pool;
    work_item m_item;
  };

  /// `co_await pool.schedule()` continues the coroutine on a worker. Any
  /// thread; from a worker it also serves as a yield point.
  [[nodiscard]] schedule_operation schedule() noexcept { return schedule_operation{*this}; }

  /// See executor::post. Any thread.
  void post(work_item& item) noexcept override;

  /// See executor::post_list. Any thread.
  void post_list(work_item* first, std::size_t count) noexcept override;

  /// Number of worker threads.
  [[nodiscard]] std::size_t thread_count() const noexcept { return m_workers.size(); }

  /// True when the calling thread is one of this pool's workers.
  [[nodiscard]] bool on_worker_thread() const noexcept;

 private:
  struct worker;

  void run_worker(std::size_t index);
  work_item* find_work(worker& self, bool last_look);
  void push_global(work_item* first, work_item* last, std::size_t count) noexcept;
  work_item* pop_global();
  work_item* steal_from_others(worker& self, bool take_lifo);
  bool any_work_visible();
  void wake(std::size_t how_many) noexcept;
  void sleep_until_woken();

  std::vector<std::unique_ptr<worker>> m_workers;

  // Injection queue: FIFO, intrusive, for posts from outside the pool.
  alignas(64) std::mutex m_global_mutex;
  detail::intrusive_fifo<work_item, &work_item::next> m_global;  // guarded by m_global_mutex
  // Hint read without the lock to skip locking an empty queue; exact under it.
  std::atomic<std::size_t> m_global_size{0};

  // Sleep protocol (see thread_pool.cpp).
  alignas(64) std::atomic<std::size_t> m_sleepers{0};
  std::mutex m_sleep_mutex;
  std::condition_variable m_sleep_cv;
  std::size_t m_wakeups = 0;  // guarded by m_sleep_mutex
  std::atomic<bool> m_stopping{false};
  // Outside threads inside post()/post_list(): their item may run, and its
  // owner destroy the pool, before they finish waking a worker, so the
  // destructor waits for this to drop to zero.
  std::atomic<unsigned> m_outside_posters{0};
};

}  // namespace ringfeed
