// perf/bench/baseline_pread_bench.cpp — ring_bench's workload with plain syscalls.
//
//   read_small_files/files:F  read every file of the shared corpus
//                             (file_corpus.hpp, page cache warm) with
//                             open → fstat → pread… → close:
//     pread.1thread   one loop on the benchmark thread;
//     pread.2threads  two threads, thread t reads files t, t + 2, t + 4, …
//                     (started per iteration: ~100 µs against tens of ms).
// Reported: bytes_per_second and items_per_second (files/s).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "file_corpus.hpp"

namespace {

using ringfeed::perf::bench_name;
using ringfeed::perf::file_corpus;
using ringfeed::perf::harness;

std::uint64_t read_share(const file_corpus& corpus, std::size_t first, std::size_t stride,
                         std::vector<std::byte>& buffer) {
  std::uint64_t bytes = 0;
  for (std::size_t i = first; i < corpus.count(); i += stride)
    bytes += ringfeed::perf::pread_whole_file(corpus.path(i), buffer);
  return bytes;
}

void read_small_files(benchmark::State& state, std::size_t threads) {
  const file_corpus& corpus = ringfeed::perf::small_file_corpus();
  std::vector<std::vector<std::byte>> buffers(threads, std::vector<std::byte>(corpus.max_size()));
  std::vector<std::uint64_t> bytes(threads);
  std::vector<std::exception_ptr> errors(threads);
  bool ok = true;
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    if (threads == 1) {
      try {
        bytes[0] = read_share(corpus, 0, 1, buffers[0]);
      } catch (...) {
        errors[0] = std::current_exception();
      }
    } else {
      std::vector<std::thread> pool;
      for (std::size_t t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          try {
            bytes[t] = read_share(corpus, t, threads, buffers[t]);
          } catch (...) {
            errors[t] = std::current_exception();
          }
        });
      for (auto& th : pool) th.join();
    }
    std::uint64_t total = 0;
    for (std::size_t t = 0; t < threads; ++t) {
      if (errors[t]) {
        try {
          std::rethrow_exception(errors[t]);
        } catch (const std::exception& e) {
          state.SkipWithError(e.what());
          return;
        }
      }
      total += bytes[t];
    }
    if (total != corpus.total_bytes()) ok = false;
  }
  cpu.report(state);
  if (!ok) state.SkipWithError("read fewer bytes than the corpus holds");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(corpus.count()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(corpus.total_bytes()));
}

void register_all() {
  const long files = ringfeed::perf::corpus_file_count();
  harness(benchmark::RegisterBenchmark(
              bench_name("pread.1thread", "read_small_files", {{"files", files}}).c_str(), read_small_files,
              std::size_t{1}),
          benchmark::kMillisecond);
  harness(benchmark::RegisterBenchmark(
              bench_name("pread.2threads", "read_small_files", {{"files", files}}).c_str(), read_small_files,
              std::size_t{2}),
          benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
