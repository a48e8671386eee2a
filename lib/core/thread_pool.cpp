#include <ringfeed/thread_pool.hpp>

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include <ringfeed/detail/work_stealing_deque.hpp>

// Sleep protocol.
//
// A worker that finds no work announces itself (m_sleepers += 1, seq_cst),
// looks everywhere once more, and only then waits for a wake-up token.
// A poster publishes its item (a seq_cst store of the deque's bottom, or a
// seq_cst increment of the injection queue's size), then loads m_sleepers
// (seq_cst). This is Dekker's handshake: in the single total order of seq_cst
// operations either the poster's load follows the announcement (so it hands
// out a token) or the sleeper's re-check follows the publication (so it sees
// the item). Tokens are counted under m_sleep_mutex, so a token handed out
// before the sleeper reaches its wait is not lost.

namespace ringfeed {
namespace {

thread_local const thread_pool* t_pool = nullptr;
thread_local void* t_worker = nullptr;  // the thread_pool::worker this thread runs

// Take from the LIFO slot at most this many times in a row; then the slot's
// item goes to the back of the injection queue, so two coroutines handing
// work back and forth cannot starve the rest of the worker's queue.
constexpr unsigned lifo_streak_limit = 16;
// Every this many iterations a worker serves the injection queue first, so
// outside posts are not starved by workers that always have local work.
constexpr std::uint32_t global_queue_interval = 61;
// How long a worker that ran out of work keeps looking before it sleeps.
// Work usually comes in bursts (a batch of I/O completions, a fork-join
// level): finding it while still awake saves a futex wake-up and a context
// switch (tens of microseconds on a VM) per burst. Bounded, so an idle pool
// still burns next to nothing.
constexpr auto search_before_sleep = std::chrono::microseconds(50);

// CPUs this process may run on: its affinity mask (taskset, cpusets, Slurm
// or Kubernetes CPU pinning), not every CPU of the machine, which is what
// std::thread::hardware_concurrency() counts. 0 when it cannot be read.
std::size_t allowed_cpus() noexcept {
  for (int n = 1024; n <= (1 << 16); n *= 4) {  // a mask larger than the kernel's, however many CPUs
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return 0;
    const std::size_t bytes = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(bytes, set);
    const int rc = sched_getaffinity(0, bytes, set);
    const int count = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    const int err = errno;
    CPU_FREE(set);
    if (rc == 0) return static_cast<std::size_t>(count);
    if (err != EINVAL) return 0;
  }
  return 0;
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

struct alignas(detail::cache_line_size) thread_pool::worker {
  explicit worker(std::size_t i) : index(i), rng(0x9E3779B97F4A7C15ull * (i + 1)) {}

  std::size_t index;
  std::uint64_t rng;                // owner only
  unsigned lifo_streak = 0;         // owner only
  std::uint32_t tick = 0;           // owner only
  std::atomic<work_item*> lifo{nullptr};
  detail::work_stealing_deque<work_item*> deque;
  std::thread thread;

  std::uint64_t next_random() noexcept {  // xorshift64
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  }
};

std::size_t thread_pool::default_thread_count(std::size_t threads) noexcept {
  if (threads != 0) return threads;
  if (const std::size_t allowed = allowed_cpus(); allowed > 0) return allowed;
  return std::max(1u, std::thread::hardware_concurrency());
}

thread_pool::thread_pool(std::size_t threads) {
  threads = default_thread_count(threads);
  m_workers.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) m_workers.push_back(std::make_unique<worker>(i));
  // Threads start only once every worker exists: they steal from each other.
  std::size_t started = 0;
  try {
    for (; started < threads; ++started)
      m_workers[started]->thread = std::thread([this, started] { run_worker(started); });
  } catch (...) {
    {
      std::lock_guard lock(m_sleep_mutex);
      m_stopping.store(true, std::memory_order_release);
    }
    m_sleep_cv.notify_all();
    for (std::size_t i = 0; i < started; ++i) m_workers[i]->thread.join();
    throw;
  }
}

thread_pool::~thread_pool() {
  {
    // Under the mutex, so a worker between its predicate check and its wait
    // cannot miss the notification.
    std::lock_guard lock(m_sleep_mutex);
    m_stopping.store(true, std::memory_order_release);
  }
  m_sleep_cv.notify_all();
  for (auto& w : m_workers) w->thread.join();
  // acquire: pairs with the posters' release decrement (see m_outside_posters).
  while (m_outside_posters.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

bool thread_pool::on_worker_thread() const noexcept { return t_pool == this; }

void thread_pool::post(work_item& item) noexcept {
  item.next = nullptr;
  if (t_pool == this) {
    auto& self = *static_cast<worker*>(t_worker);
    // acq_rel: release publishes item.handle to a thief that takes the slot;
    // acquire pairs with the release of whoever put the displaced item there.
    work_item* displaced = self.lifo.exchange(&item, std::memory_order_acq_rel);
    if (displaced == nullptr) return;  // this worker runs it next; no one to wake
    self.deque.push(displaced);
    wake(1);
    return;
  }
  m_outside_posters.fetch_add(1, std::memory_order_relaxed);
  push_global(&item, &item, 1);
  wake(1);
  m_outside_posters.fetch_sub(1, std::memory_order_release);  // last touch of the pool
}

void thread_pool::post_list(work_item* first, std::size_t count) noexcept {
  if (first == nullptr) return;
  work_item* last = first;
  while (last->next != nullptr) last = last->next;
  const bool outside = t_pool != this;
  if (outside) m_outside_posters.fetch_add(1, std::memory_order_relaxed);
  push_global(first, last, count);
  wake(count);
  if (outside) m_outside_posters.fetch_sub(1, std::memory_order_release);
}

void thread_pool::push_global(work_item* first, work_item* last, std::size_t count) noexcept {
  std::lock_guard lock(m_global_mutex);
  m_global.push_back_list(first, last);
  // seq_cst: the publication half of the sleep handshake (see top of file).
  m_global_size.fetch_add(count, std::memory_order_seq_cst);
}

void thread_pool::wake(std::size_t how_many) noexcept {
  // seq_cst: the poster's half of the handshake; pairs with the sleeper's
  // seq_cst increment of m_sleepers.
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) return;
  std::size_t grant = 0;
  {
    std::lock_guard lock(m_sleep_mutex);
    const std::size_t sleepers = m_sleepers.load(std::memory_order_relaxed);
    if (sleepers > m_wakeups) grant = std::min(how_many, sleepers - m_wakeups);
    m_wakeups += grant;
  }
  if (grant == 1)
    m_sleep_cv.notify_one();
  else if (grant > 1)
    m_sleep_cv.notify_all();
}

work_item* thread_pool::pop_global() {
  // seq_cst load: also used in the sleeper's re-check (handshake).
  if (m_global_size.load(std::memory_order_seq_cst) == 0) return nullptr;
  std::lock_guard lock(m_global_mutex);
  work_item* item = m_global.pop_front();
  if (item == nullptr) return nullptr;
  m_global_size.fetch_sub(1, std::memory_order_relaxed);
  return item;
}

work_item* thread_pool::steal_from_others(worker& self, bool take_lifo) {
  const std::size_t n = m_workers.size();
  if (n < 2) return nullptr;
  const std::size_t start = static_cast<std::size_t>(self.next_random() % n);
  for (std::size_t k = 0; k < n; ++k) {
    worker& victim = *m_workers[(start + k) % n];
    if (&victim == &self) continue;
    if (auto stolen = victim.deque.steal()) return *stolen;
  }
  // Deques are empty: take a LIFO item that its owner has not got to (the
  // owner may be busy with one long item). Only on the last look before
  // sleeping: a spinning thief taking every continuation would bounce them
  // between cores.
  if (!take_lifo) return nullptr;
  for (std::size_t k = 0; k < n; ++k) {
    worker& victim = *m_workers[(start + k) % n];
    if (&victim == &self || victim.lifo.load(std::memory_order_relaxed) == nullptr) continue;
    if (work_item* item = victim.lifo.exchange(nullptr, std::memory_order_acq_rel)) return item;
  }
  return nullptr;
}

work_item* thread_pool::find_work(worker& self, bool last_look) {
  if (++self.tick % global_queue_interval == 0) {
    if (work_item* item = pop_global()) return item;
  }
  if (self.lifo_streak < lifo_streak_limit) {
    if (work_item* item = self.lifo.exchange(nullptr, std::memory_order_acq_rel)) {
      ++self.lifo_streak;
      return item;
    }
  } else if (work_item* item = self.lifo.exchange(nullptr, std::memory_order_acq_rel)) {
    push_global(item, item, 1);  // to the back of the FIFO queue
  }
  self.lifo_streak = 0;
  if (auto item = self.deque.pop()) return *item;
  if (work_item* item = pop_global()) return item;
  return steal_from_others(self, last_look);
}

void thread_pool::run_worker(std::size_t index) {
  worker& self = *m_workers[index];
  t_pool = this;
  t_worker = &self;
  for (;;) {
    work_item* item = find_work(self, false);
    if (item == nullptr) {
      const auto give_up = std::chrono::steady_clock::now() + search_before_sleep;
      do {
        for (int i = 0; i < 16; ++i) cpu_relax();
        item = find_work(self, false);
      } while (item == nullptr && std::chrono::steady_clock::now() < give_up);
    }
    if (item == nullptr) {
      m_sleepers.fetch_add(1, std::memory_order_seq_cst);  // announce (handshake)
      item = find_work(self, true);                         // re-check everything
      if (item == nullptr) {
        if (m_stopping.load(std::memory_order_acquire)) {
          m_sleepers.fetch_sub(1, std::memory_order_relaxed);
          break;  // drained: nothing queued anywhere and no more posts may come
        }
        sleep_until_woken();
      }
      m_sleepers.fetch_sub(1, std::memory_order_relaxed);
      if (item == nullptr) continue;
    }
    item->handle.resume();  // `item` may be gone now: never touch it again
  }
  t_pool = nullptr;
  t_worker = nullptr;
}

void thread_pool::sleep_until_woken() {
  std::unique_lock lock(m_sleep_mutex);
  m_sleep_cv.wait(lock, [this] {
    return m_wakeups > 0 || m_stopping.load(std::memory_order_relaxed);
  });
  if (m_wakeups > 0) --m_wakeups;
}

}  // namespace ringfeed
