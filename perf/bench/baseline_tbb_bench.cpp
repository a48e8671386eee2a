// perf/bench/baseline_tbb_bench.cpp — thread_pool_bench's workloads on oneTBB.
//
// Fairness: a tbb::task_arena with `workers` slots, none reserved for the
// calling thread, and a global_control that lets TBB start that many worker
// threads (by default it allows cores - 1). Work enters the arena with
// enqueue() from the benchmark thread, which then blocks on the same kind of
// mutex + condition variable event sync_wait uses; it never helps run tasks.
//   roundtrip_external  enqueue an empty task that sets the event.
//   yield_chain/n:N     a task in the arena spawns its successor N times
//                       (task_group::run from inside the group; the root
//                       waits on the group), the TBB way to "continue later".
//   fork_join/k:K       a root task runs K tiny_work() tasks in a
//                       task_group and waits for them.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <cstdint>
#include <vector>

#include "bench_support.hpp"

namespace {

using ringfeed::perf::bench_name;
using ringfeed::perf::harness;
using ringfeed::perf::one_shot_event;

constexpr long yield_chain_length = 1000;
const std::vector<long> fork_join_sizes = {10'000, 100'000};

// Exactly `workers` TBB worker threads serve the arena.
struct tbb_pool {
  explicit tbb_pool(int workers)
      : limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(workers) + 1),
        arena(workers, 0) {
    arena.initialize();
  }
  tbb::global_control limit;
  tbb::task_arena arena;
};

void roundtrip_external(benchmark::State& state, int workers) {
  tbb_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    pool.arena.enqueue([&done] { done.set(); });
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());
}

struct chain_step {
  tbb::task_group* group;
  long left;
  void operator()() const {
    if (left > 0) group->run(chain_step{group, left - 1});
  }
};

void yield_chain(benchmark::State& state, int workers, long n) {
  tbb_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    pool.arena.enqueue([&done, n] {
      tbb::task_group group;
      group.run(chain_step{&group, n - 1});  // n runs after the initial hop, as in ringfeed's
      group.wait();
      done.set();
    });
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * n);
}

void fork_join(benchmark::State& state, int workers, long k) {
  tbb_pool pool(workers);
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    one_shot_event done;
    pool.arena.enqueue([&done, k] {
      tbb::task_group group;
      for (long i = 0; i < k; ++i)
        group.run([i] { ringfeed::perf::tiny_work(static_cast<std::uint64_t>(i)); });
      group.wait();
      done.set();
    });
    done.wait();
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations() * k);
}

void register_all() {
  for (const long w : ringfeed::perf::worker_counts()) {
    const int workers = static_cast<int>(w);
    harness(benchmark::RegisterBenchmark(bench_name("tbb", "roundtrip_external", {{"workers", w}}).c_str(),
                                         roundtrip_external, workers));
    harness(benchmark::RegisterBenchmark(
        bench_name("tbb", "yield_chain", {{"n", yield_chain_length}, {"workers", w}}).c_str(), yield_chain,
        workers, yield_chain_length));
    for (const long k : fork_join_sizes)
      harness(benchmark::RegisterBenchmark(bench_name("tbb", "fork_join", {{"k", k}, {"workers", w}}).c_str(),
                                           fork_join, workers, k));
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
