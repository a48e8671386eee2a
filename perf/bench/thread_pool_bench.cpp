// perf/bench/thread_pool_bench.cpp — ringfeed::thread_pool scheduling costs.
//
// Workloads (baselines with the same names: baseline_tbb_bench.cpp,
// baseline_asio_bench.cpp):
//   roundtrip_external  a non-pool thread sync_waits a task that hops onto
//                       the pool and returns: post + wake a worker + wake the
//                       waiter. Time per round trip.
//   yield_chain/n:N     one coroutine already on the pool re-schedules itself
//                       N times (`co_await pool.schedule()` as a yield).
//                       Items = N yields.
//   fork_join/k:K       a task on the pool starts K children that each hop
//                       onto the pool and do tiny_work(); joined with
//                       when_all(std::vector<task<>>) (impl ringfeed.when_all)
//                       or async_scope (impl ringfeed.scope). Items = K.
// Every workload takes `workers` (RINGFEED_BENCH_THREADS, default 2).
#include <ringfeed/async_scope.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace rf = ringfeed;
using ringfeed::perf::bench_name;
using ringfeed::perf::harness;

constexpr long yield_chain_length = 1000;
const std::vector<long> fork_join_sizes = {10'000, 100'000};

rf::task<> hop(rf::thread_pool& pool) { co_await pool.schedule(); }

void roundtrip_external(benchmark::State& state, std::size_t workers) {
  rf::thread_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) rf::sync_wait(hop(pool));
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());
}

rf::task<> yield_chain(rf::thread_pool& pool, long n) {
  co_await pool.schedule();
  for (long i = 0; i < n; ++i) co_await pool.schedule();
}

void yield_chain_bench(benchmark::State& state, std::size_t workers, long n) {
  rf::thread_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) rf::sync_wait(yield_chain(pool, n));
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * n);
}

// `done` is null in timed runs; the untimed check run counts completions.
rf::task<> child(rf::thread_pool& pool, std::uint64_t i, std::atomic<long>* done) {
  co_await pool.schedule();
  ringfeed::perf::tiny_work(i);
  if (done != nullptr) done->fetch_add(1, std::memory_order_relaxed);
}

rf::task<> fork_join_when_all(rf::thread_pool& pool, long k, std::atomic<long>* done) {
  co_await pool.schedule();
  std::vector<rf::task<>> children;
  children.reserve(static_cast<std::size_t>(k));
  for (long i = 0; i < k; ++i) children.push_back(child(pool, static_cast<std::uint64_t>(i), done));
  co_await rf::when_all(std::move(children));
}

rf::task<> fork_join_scope(rf::thread_pool& pool, long k, std::atomic<long>* done) {
  co_await pool.schedule();
  rf::async_scope scope;
  for (long i = 0; i < k; ++i) scope.spawn(child(pool, static_cast<std::uint64_t>(i), done));
  co_await scope.join();
}

template <typename ForkJoin>
void fork_join_bench(benchmark::State& state, std::size_t workers, long k, ForkJoin fork_join) {
  rf::thread_pool pool(workers);
  std::atomic<long> done{0};
  rf::sync_wait(fork_join(pool, k, &done));  // untimed correctness check
  if (done.load() != k) {
    state.SkipWithError(("only " + std::to_string(done.load()) + " of " + std::to_string(k) +
                         " children ran before the join completed")
                            .c_str());
    return;
  }
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) rf::sync_wait(fork_join(pool, k, nullptr));
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * k);
}

void register_all() {
  for (const long w : ringfeed::perf::worker_counts()) {
    const auto workers = static_cast<std::size_t>(w);
    harness(benchmark::RegisterBenchmark(
        bench_name("ringfeed", "roundtrip_external", {{"workers", w}}).c_str(), roundtrip_external, workers));
    harness(benchmark::RegisterBenchmark(
        bench_name("ringfeed", "yield_chain", {{"n", yield_chain_length}, {"workers", w}}).c_str(),
        yield_chain_bench, workers, yield_chain_length));
    for (const long k : fork_join_sizes) {
      harness(benchmark::RegisterBenchmark(
          bench_name("ringfeed.when_all", "fork_join", {{"k", k}, {"workers", w}}).c_str(),
          [workers, k](benchmark::State& state) { fork_join_bench(state, workers, k, fork_join_when_all); }));
      harness(benchmark::RegisterBenchmark(
          bench_name("ringfeed.scope", "fork_join", {{"k", k}, {"workers", w}}).c_str(),
          [workers, k](benchmark::State& state) { fork_join_bench(state, workers, k, fork_join_scope); }));
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
