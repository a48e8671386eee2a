// perf/bench/bench_support.hpp — the harness every ringfeed micro-benchmark shares.
//
// Naming: every benchmark is registered as `<impl>/<workload>[/<arg>:<n>...]`.
// `impl` is `ringfeed` or `ringfeed.<variant>` for ringfeed's own code and a
// short baseline name otherwise (`tbb`, `asio`, `mutex_cv`, `pread.1thread`).
// perf/compare/compare_runtime.py pairs each ringfeed row with every baseline row
// whose `<workload>/<args>` part is identical, so a ringfeed benchmark and
// its baselines must use the same workload name, arguments and per-item work.
//
// Statistics: every benchmark measures wall-clock time (the work runs on
// other threads, so the main thread's CPU time means nothing) and adds
// `min` and `max` to Google Benchmark's mean/median/stddev/cv, so a run with
// --benchmark_repetitions=N reports the median and both spreads. Each also
// reports `cores` (cpu_meter): the CPU the whole process burned per second
// of wall time, which exposes pools that spin while idle.
//
// Baselines include this too: it uses only ringfeed's header-only sync_wait
// event, so they link no ringfeed code.
#pragma once

#include <benchmark/benchmark.h>

#include <ringfeed/sync_wait.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringfeed::perf {

/// Positive integers from a comma-separated environment variable (for
/// example RINGFEED_BENCH_THREADS=1,2,4), or `fallback` when it is unset or
/// holds nothing usable.
inline std::vector<long> env_list(const char* name, std::vector<long> fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr) return fallback;
  std::vector<long> out;
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (end != item.c_str() && v > 0) out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (out.empty()) {
    std::fprintf(stderr, "ignoring %s='%s': expected positive integers separated by commas\n", name, text);
    return fallback;
  }
  return out;
}

/// Worker-thread counts to measure: RINGFEED_BENCH_THREADS, default 2 (the
/// reference machine has two cores).
inline std::vector<long> worker_counts() { return env_list("RINGFEED_BENCH_THREADS", {2}); }

/// `impl/workload/name:value/...`
inline std::string bench_name(std::string_view impl, std::string_view workload,
                              std::initializer_list<std::pair<std::string_view, long>> args = {}) {
  std::string name(impl);
  name += '/';
  name += workload;
  for (const auto& [key, value] : args) {
    name += '/';
    name += key;
    name += ':';
    name += std::to_string(value);
  }
  return name;
}

inline double min_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}
inline double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

/// Applies the shared settings: wall-clock time, min/max statistics, unit.
inline benchmark::internal::Benchmark* harness(benchmark::internal::Benchmark* b,
                                               benchmark::TimeUnit unit = benchmark::kMicrosecond) {
  return b->UseRealTime()->Unit(unit)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
}

/// The per-item work of the fork-join benchmarks: a dependent chain of eight
/// multiply-adds (a few nanoseconds), identical for ringfeed and baselines.
inline void tiny_work(std::uint64_t seed) noexcept {
  std::uint64_t x = seed;
  for (int i = 0; i < 8; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  benchmark::DoNotOptimize(x);
}

/// Measures how many cores the whole process kept busy (process CPU time /
/// wall time) between construction and report(): a pool that spins while
/// idle buys latency with CPU, and this counter shows the price. Construct it
/// just before the timed loop; call report() right after it.
class cpu_meter {
 public:
  cpu_meter() noexcept : m_cpu(process_cpu_seconds()), m_wall(std::chrono::steady_clock::now()) {}

  void report(benchmark::State& state) const {
    const double cpu = process_cpu_seconds() - m_cpu;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_wall).count();
    if (wall > 0) state.counters["cores"] = cpu / wall;
  }

 private:
  static double process_cpu_seconds() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

  double m_cpu;
  std::chrono::steady_clock::time_point m_wall;
};

/// One-shot event: ringfeed's own sync_wait event (header-only), so that
/// round-trip baselines pay exactly the wake-up ringfeed pays.
using one_shot_event = ringfeed::detail::blocking_event;

/// Initialises Google Benchmark, runs what `register_all` registered, shuts
/// down. Registration first, so --benchmark_list_tests sees everything.
template <typename Register>
int run_main(int argc, char** argv, Register register_all) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

/// The loop of the per-op image benchmarks (geometry_bench, color_bench):
/// `op(src, dst)` per iteration into one reused buffer; an op that throws
/// marks the benchmark skipped with its message.
template <class Src, class Buffer, class Op>
void run_image_op(benchmark::State& state, const Src& src, Buffer& dst, const Op& op) {
  try {
    for (auto _ : state) {
      op(src, dst);
      benchmark::DoNotOptimize(dst.data());
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace ringfeed::perf
