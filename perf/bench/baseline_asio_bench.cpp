// perf/bench/baseline_asio_bench.cpp — thread_pool_bench's workloads on
// boost::asio::thread_pool (header-only Asio).
//
// Fairness: an asio::thread_pool with `workers` threads; the benchmark thread
// posts and then blocks on the same kind of mutex + condition variable event
// sync_wait uses.
//   roundtrip_external  post an empty handler that sets the event.
//   yield_chain/n:N     a handler on the pool re-posts its successor N times.
//   fork_join/k:K       a handler on the pool posts K tiny_work() handlers;
//                       each decrements an atomic count and the last one
//                       sets the event.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstdint>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace asio = boost::asio;
using ringfeed::perf::bench_name;
using ringfeed::perf::harness;
using ringfeed::perf::one_shot_event;

constexpr long yield_chain_length = 1000;
const std::vector<long> fork_join_sizes = {10'000, 100'000};

void roundtrip_external(benchmark::State& state, std::size_t workers) {
  asio::thread_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    asio::post(pool, [&done] { done.set(); });
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());
  pool.join();
}

struct chain_step {
  asio::thread_pool* pool;
  long left;
  one_shot_event* done;
  void operator()() const {
    if (left > 0)
      asio::post(*pool, chain_step{pool, left - 1, done});
    else
      done->set();
  }
};

void yield_chain(benchmark::State& state, std::size_t workers, long n) {
  asio::thread_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    asio::post(pool, chain_step{&pool, n, &done});  // the initial hop, then n re-posts
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * n);
  pool.join();
}

void fork_join(benchmark::State& state, std::size_t workers, long k) {
  asio::thread_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    std::atomic<long> remaining{k};
    asio::post(pool, [&pool, &done, &remaining, k] {
      for (long i = 0; i < k; ++i)
        asio::post(pool, [&done, &remaining, i] {
          ringfeed::perf::tiny_work(static_cast<std::uint64_t>(i));
          // acq_rel: the last decrement sees every other handler's work.
          if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done.set();
        });
    });
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * k);
  pool.join();
}

void register_all() {
  for (const long w : ringfeed::perf::worker_counts()) {
    const auto workers = static_cast<std::size_t>(w);
    harness(benchmark::RegisterBenchmark(bench_name("asio", "roundtrip_external", {{"workers", w}}).c_str(),
                                         roundtrip_external, workers));
    harness(benchmark::RegisterBenchmark(
        bench_name("asio", "yield_chain", {{"n", yield_chain_length}, {"workers", w}}).c_str(), yield_chain,
        workers, yield_chain_length));
    for (const long k : fork_join_sizes)
      harness(benchmark::RegisterBenchmark(
          bench_name("asio", "fork_join", {{"k", k}, {"workers", w}}).c_str(), fork_join, workers, k));
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
