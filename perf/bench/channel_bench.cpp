// perf/bench/channel_bench.cpp — ringfeed::channel hand-off costs.
//
// Workloads (baselines with the same names: baseline_queue_bench.cpp):
//   pingpong/n:N            two coroutines on a thread_pool pass an int back
//                           and forth through two channel<int>(1, pool).
//                           Items = N round trips.
//   mpmc/cap:64/n:N         two producers send N/2 ints each into one
//                           channel<int>(64, pool), two consumers drain it;
//                           the channel is closed when both producers are
//                           done. Items = N values.
// Every workload takes `workers` (RINGFEED_BENCH_THREADS, default 2). Each
// benchmark checks the values it received.
#include <ringfeed/channel.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include <atomic>
#include <cstdint>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace rf = ringfeed;
using ringfeed::perf::bench_name;
using ringfeed::perf::harness;

constexpr long pingpong_round_trips = 10'000;
constexpr long mpmc_capacity = 64;
constexpr long mpmc_values = 200'000;

rf::task<> pinger(rf::thread_pool& pool, rf::channel<int>& out, rf::channel<int>& in, long n,
                  std::atomic<bool>& ok) {
  co_await pool.schedule();
  for (int i = 0; i < n; ++i) {
    const bool sent = co_await out.send(i);
    const auto back = co_await in.receive();
    if (!sent || !back || *back != i) ok = false;
  }
}

rf::task<> ponger(rf::thread_pool& pool, rf::channel<int>& in, rf::channel<int>& out, long n,
                  std::atomic<bool>& ok) {
  co_await pool.schedule();
  for (long i = 0; i < n; ++i) {
    const auto v = co_await in.receive();
    if (!v || !co_await out.send(*v)) ok = false;
  }
}

void pingpong(benchmark::State& state, std::size_t workers, long n) {
  rf::thread_pool pool(workers);
  rf::channel<int> ping(1, pool);
  rf::channel<int> pong(1, pool);
  std::atomic<bool> ok{true};  // written (false) only on failure, by any thread
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    rf::sync_wait(rf::when_all(pinger(pool, ping, pong, n, ok), ponger(pool, ping, pong, n, ok)));
  }
  cpu.report(state);
  if (!ok) state.SkipWithError("a value went missing or came back wrong");
  state.SetItemsProcessed(state.iterations() * n);
}

rf::task<> producer(rf::thread_pool& pool, rf::channel<int>& ch, int first, long count,
                    std::atomic<bool>& ok) {
  co_await pool.schedule();
  for (long i = 0; i < count; ++i)
    if (!co_await ch.send(first + static_cast<int>(i))) ok = false;
}

rf::task<> producers_then_close(rf::thread_pool& pool, rf::channel<int>& ch, long per_producer,
                                std::atomic<bool>& ok) {
  co_await rf::when_all(producer(pool, ch, 0, per_producer, ok),
                        producer(pool, ch, static_cast<int>(per_producer), per_producer, ok));
  ch.close();
}

rf::task<> consumer(rf::thread_pool& pool, rf::channel<int>& ch, std::uint64_t& sum, long& count) {
  co_await pool.schedule();
  while (const auto v = co_await ch.receive()) {
    sum += static_cast<std::uint64_t>(*v);
    ++count;
  }
}

void mpmc(benchmark::State& state, std::size_t workers, long capacity, long n) {
  rf::thread_pool pool(workers);
  const long per_producer = n / 2;
  const long total = 2 * per_producer;
  const std::uint64_t expected_sum =
      static_cast<std::uint64_t>(total) * static_cast<std::uint64_t>(total - 1) / 2;
  std::atomic<bool> ok{true};  // written (false) only on failure, by any thread
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    rf::channel<int> ch(static_cast<std::size_t>(capacity), pool);
    std::uint64_t sum[2] = {0, 0};
    long count[2] = {0, 0};
    rf::sync_wait(rf::when_all(producers_then_close(pool, ch, per_producer, ok),
                               consumer(pool, ch, sum[0], count[0]), consumer(pool, ch, sum[1], count[1])));
    if (sum[0] + sum[1] != expected_sum || count[0] + count[1] != total) ok = false;
  }
  cpu.report(state);
  if (!ok) state.SkipWithError("values went missing, were duplicated, or a send failed");
  state.SetItemsProcessed(state.iterations() * total);
}

void register_all() {
  for (const long w : ringfeed::perf::worker_counts()) {
    const auto workers = static_cast<std::size_t>(w);
    harness(benchmark::RegisterBenchmark(
        bench_name("ringfeed", "pingpong", {{"n", pingpong_round_trips}, {"workers", w}}).c_str(), pingpong,
        workers, pingpong_round_trips));
    harness(benchmark::RegisterBenchmark(
        bench_name("ringfeed", "mpmc", {{"cap", mpmc_capacity}, {"n", mpmc_values}, {"workers", w}}).c_str(),
        mpmc, workers, mpmc_capacity, mpmc_values));
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
