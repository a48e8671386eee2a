// perf/bench/ring_bench.cpp — reading many small files through ringfeed::io::ring.
//
// Workload (baselines with the same name: baseline_pread_bench.cpp):
//   read_small_files/files:F  read every file of the shared corpus
//                             (file_corpus.hpp: F files of 16–200 KiB, page
//                             cache warm) completely, once per iteration.
// `depth` coroutines (RINGFEED_BENCH_DEPTH, default 32) share one io::ring
// whose completions resume on a thread_pool of `workers` threads
// (RINGFEED_BENCH_THREADS, default 2); coroutine j reads files j, j + depth,
// j + 2·depth, … each with
//   *.statx:       openat → statx(file) → read_at → close
//   *.known_size:  openat → read_at (size from the index) → close
//   *.linked:      ring::read_file: openat into a registered file slot,
//                  read and close as one linked chain, one resumption
// ringfeed.<how>          the coroutines start on the pool, so every step
//                         is resumed on a pool worker;
// ringfeed.on_ring.<how>  they first `co_await ring.schedule()`, so every
//                         step is resumed on the ring thread itself (the
//                         fast path for chains of small I/O).
// ringfeed.sqpoll.<how>   as ringfeed.<how> on a ring with IORING_SETUP_SQPOLL
//                         (a kernel thread polls the submission queue: no
//                         io_uring_enter per batch, but it occupies a core
//                         while busy; ring_options::sqpoll, off by default).
// Reported: bytes_per_second, items_per_second (files/s), and per-file ring
// counters (io_uring_enter calls, retries).
#include <ringfeed/io/ring.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "file_corpus.hpp"

namespace {

namespace rf = ringfeed;
using ringfeed::perf::bench_name;
using ringfeed::perf::file_corpus;
using ringfeed::perf::harness;

enum class size_source { statx, known, linked };
enum class run_on { pool, ring_thread };

rf::task<> read_share(rf::thread_pool& pool, rf::io::ring& ring, const file_corpus& corpus, std::size_t first,
                      std::size_t stride, size_source how, run_on where, std::vector<std::byte>& buffer,
                      std::uint64_t& bytes) {
  if (where == run_on::ring_thread)
    co_await ring.schedule();
  else
    co_await pool.schedule();
  for (std::size_t i = first; i < corpus.count(); i += stride) {
    if (how == size_source::linked) {
      bytes += co_await ring.read_file(corpus.path(i), 0 /* O_RDONLY */, buffer);
      continue;
    }
    rf::io::file f = co_await ring.openat(corpus.path(i));
    const std::size_t size =
        how == size_source::statx ? static_cast<std::size_t>((co_await ring.statx(f)).size) : corpus.size(i);
    bytes += co_await ring.read_at(f, std::span<std::byte>(buffer.data(), std::min(size, buffer.size())), 0);
    co_await ring.close(std::move(f));
  }
}

void read_small_files(benchmark::State& state, std::size_t workers, std::size_t depth, size_source how,
                      run_on where, bool sqpoll) {
  const file_corpus& corpus = ringfeed::perf::small_file_corpus();
  rf::thread_pool pool(workers);
  std::optional<rf::io::ring> ring;
  try {
    rf::io::ring_options ro;
    ro.sqpoll = sqpoll;
    ring.emplace(pool, ro);
  } catch (const rf::io::ring_unavailable& e) {
    state.SkipWithError(e.what());
    return;
  }
  std::vector<std::vector<std::byte>> buffers(depth, std::vector<std::byte>(corpus.max_size()));
  std::vector<std::uint64_t> bytes(depth);
  auto read_all = [&]() -> std::uint64_t {
    std::vector<rf::task<>> readers;
    readers.reserve(depth);
    for (std::size_t j = 0; j < depth; ++j) {
      bytes[j] = 0;
      readers.push_back(read_share(pool, *ring, corpus, j, depth, how, where, buffers[j], bytes[j]));
    }
    rf::sync_wait(rf::when_all(std::move(readers)));
    std::uint64_t total = 0;
    for (const auto b : bytes) total += b;
    return total;
  };

  const rf::io::ring_stats before = ring->stats();
  bool ok = true;
  const ringfeed::perf::cpu_meter cpu;
  try {
    for (auto _ : state)
      if (read_all() != corpus.total_bytes()) ok = false;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  cpu.report(state);
  const rf::io::ring_stats after = ring->stats();
  if (!ok) state.SkipWithError("read fewer bytes than the corpus holds");
  const auto files = static_cast<double>(state.iterations()) * static_cast<double>(corpus.count());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(corpus.count()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(corpus.total_bytes()));
  state.counters["enter_per_file"] = static_cast<double>(after.enter_calls - before.enter_calls) / files;
  state.counters["retry_per_file"] = static_cast<double>(after.retries - before.retries) / files;
}

void register_all() {
  const long files = ringfeed::perf::corpus_file_count();
  struct variant {
    const char* impl;
    size_source how;
    run_on where;
    bool sqpoll = false;
  };
  constexpr variant variants[] = {
      {"ringfeed.statx", size_source::statx, run_on::pool},
      {"ringfeed.known_size", size_source::known, run_on::pool},
      {"ringfeed.on_ring.statx", size_source::statx, run_on::ring_thread},
      {"ringfeed.on_ring.known_size", size_source::known, run_on::ring_thread},
      {"ringfeed.linked", size_source::linked, run_on::pool},
      {"ringfeed.on_ring.linked", size_source::linked, run_on::ring_thread},
      {"ringfeed.sqpoll.known_size", size_source::known, run_on::pool, true},
      {"ringfeed.sqpoll.on_ring.known_size", size_source::known, run_on::ring_thread, true},
  };
  for (const long w : ringfeed::perf::worker_counts()) {
    for (const long d : ringfeed::perf::env_list("RINGFEED_BENCH_DEPTH", {32})) {
      for (const variant& v : variants) {
        harness(
            benchmark::RegisterBenchmark(
                bench_name(v.impl, "read_small_files", {{"files", files}, {"depth", d}, {"workers", w}})
                    .c_str(),
                read_small_files, static_cast<std::size_t>(w), static_cast<std::size_t>(d), v.how, v.where,
                v.sqpoll),
            benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
