// perf/bench/baseline_queue_bench.cpp — channel_bench's workloads on plain threads
// and the textbook bounded queue: one mutex, two condition variables
// (not_empty, not_full), notify_one after every push and pop.
//   pingpong/n:N       the benchmark thread and one helper thread pass an int
//                      back and forth through two queues of capacity 1.
//                      Items = N round trips.
//   mpmc/cap:64/n:N    two producer threads push N/2 ints each into one
//                      queue of capacity 64, two consumer threads drain it
//                      (impl mutex_cv.4threads: one thread per role, as
//                      plain-thread code would do it). Items = N values.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

using ringfeed::perf::bench_name;
using ringfeed::perf::harness;

constexpr long pingpong_round_trips = 10'000;
constexpr long mpmc_capacity = 64;
constexpr long mpmc_values = 200'000;

template <typename T>
class blocking_queue {
 public:
  explicit blocking_queue(std::size_t capacity) : m_capacity(capacity) {}

  /// Blocks while full; false once closed.
  bool push(T value) {
    {
      std::unique_lock lock(m_mutex);
      m_not_full.wait(lock, [this] { return m_items.size() < m_capacity || m_closed; });
      if (m_closed) return false;
      m_items.push_back(std::move(value));
    }
    m_not_empty.notify_one();
    return true;
  }

  /// Blocks while empty; nullopt once closed and drained.
  std::optional<T> pop() {
    std::optional<T> value;
    {
      std::unique_lock lock(m_mutex);
      m_not_empty.wait(lock, [this] { return !m_items.empty() || m_closed; });
      if (m_items.empty()) return std::nullopt;
      value.emplace(std::move(m_items.front()));
      m_items.pop_front();
    }
    m_not_full.notify_one();
    return value;
  }

  void close() {
    {
      std::lock_guard lock(m_mutex);
      m_closed = true;
    }
    m_not_empty.notify_all();
    m_not_full.notify_all();
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_not_empty;
  std::condition_variable m_not_full;
  std::deque<T> m_items;
  std::size_t m_capacity;
  bool m_closed = false;
};

void pingpong(benchmark::State& state, long n) {
  blocking_queue<int> ping(1);
  blocking_queue<int> pong(1);
  std::thread echo([&] {
    while (const auto v = ping.pop())
      if (!pong.push(*v)) break;
  });
  bool ok = true;
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) {
      ping.push(i);
      const auto back = pong.pop();
      if (!back || *back != i) ok = false;
    }
  }
  cpu.report(state);
  ping.close();
  pong.close();
  echo.join();
  if (!ok) state.SkipWithError("a value went missing or came back wrong");
  state.SetItemsProcessed(state.iterations() * n);
}

void mpmc(benchmark::State& state, long capacity, long n) {
  const long per_producer = n / 2;
  const long total = 2 * per_producer;
  const std::uint64_t expected_sum =
      static_cast<std::uint64_t>(total) * static_cast<std::uint64_t>(total - 1) / 2;
  bool ok = true;
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    blocking_queue<int> queue(static_cast<std::size_t>(capacity));
    std::uint64_t sum[2] = {0, 0};
    long count[2] = {0, 0};
    std::atomic<int> producers_left{2};
    std::vector<std::thread> threads;
    for (int p = 0; p < 2; ++p)
      threads.emplace_back([&, p] {
        const int first = p * static_cast<int>(per_producer);
        for (long i = 0; i < per_producer; ++i) queue.push(first + static_cast<int>(i));
        if (producers_left.fetch_sub(1, std::memory_order_acq_rel) == 1) queue.close();
      });
    for (int c = 0; c < 2; ++c)
      threads.emplace_back([&, c] {
        while (const auto v = queue.pop()) {
          sum[c] += static_cast<std::uint64_t>(*v);
          ++count[c];
        }
      });
    for (auto& t : threads) t.join();
    if (sum[0] + sum[1] != expected_sum || count[0] + count[1] != total) ok = false;
  }
  cpu.report(state);
  if (!ok) state.SkipWithError("values went missing or were duplicated");
  state.SetItemsProcessed(state.iterations() * total);
}

void register_all() {
  harness(
      benchmark::RegisterBenchmark(bench_name("mutex_cv", "pingpong", {{"n", pingpong_round_trips}}).c_str(),
                                   pingpong, pingpong_round_trips));
  harness(benchmark::RegisterBenchmark(
      bench_name("mutex_cv.4threads", "mpmc", {{"cap", mpmc_capacity}, {"n", mpmc_values}}).c_str(), mpmc,
      mpmc_capacity, mpmc_values));
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
