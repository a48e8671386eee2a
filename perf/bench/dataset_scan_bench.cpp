// perf/bench/dataset_scan_bench.cpp — how long an ImageFolder index takes to build.
//
// Workload: an ImageNet-shaped tree of F empty files (RINGFEED_BENCH_FILES,
// default 200000) spread over C class directories (RINGFEED_BENCH_CLASSES,
// default 1000), named like ImageNet's (n0xxxxxxx/n0xxxxxxx_<i>.JPEG). It is
// created once per process under $TMPDIR, outside the timed loops, with its
// mtimes set an hour back so the index may be cached, and removed at exit.
//   image_folder_scan/files:F    scan_image_folder with the cache off: list
//                                every class directory (d_type, no stat per
//                                file), sort as Python does, build the index
//   image_folder_cached/files:F  the same call with a valid cached index:
//                                read it, stat each directory to validate
// ringfeed            scan_threads = 8 (the default)
// ringfeed.1thread    scan_threads = 1
// The page cache and dentry cache are warm (the tree was just made): these
// are the CPU and syscall costs, not a cold disk's or NFS's latency, which
// the concurrent listing is there to hide. Reported: items_per_second
// (files indexed per second).
#include <ringfeed/data/dataset.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
using ringfeed::perf::bench_name;
using ringfeed::perf::harness;

class image_tree {
 public:
  image_tree(long files, long classes) : m_files(files) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/ringfeed-scan-bench-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    m_dir = tmpl;
    m_root = m_dir / "train";
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (long c = 0; c < classes; ++c) {
      const std::string cls = "n0" + std::to_string(1440764 + c * 97);
      const fs::path dir = m_root / cls;
      fs::create_directories(dir);
      const long begin = files * c / classes;
      const long end = files * (c + 1) / classes;
      for (long i = begin; i < end; ++i) {
        const std::string name = (dir / (cls + "_" + std::to_string(10026 + i * 7) + ".JPEG")).string();
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) throw std::runtime_error("cannot create " + name);
        ::close(fd);
      }
      fs::last_write_time(dir, old);
    }
    fs::last_write_time(m_root, old);
  }
  image_tree(const image_tree&) = delete;
  image_tree& operator=(const image_tree&) = delete;
  ~image_tree() {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  [[nodiscard]] const fs::path& root() const { return m_root; }
  [[nodiscard]] fs::path cache_dir() const { return m_dir / "cache"; }
  [[nodiscard]] long files() const { return m_files; }

 private:
  fs::path m_dir;
  fs::path m_root;
  long m_files;
};

long bench_files() { return ringfeed::perf::env_list("RINGFEED_BENCH_FILES", {200000}).front(); }

// Made on first use, so listing the benchmarks creates nothing.
const image_tree& tree() {
  static const image_tree t(bench_files(), ringfeed::perf::env_list("RINGFEED_BENCH_CLASSES", {1000}).front());
  return t;
}

void scan(benchmark::State& state, unsigned threads, bool cached) {
  const image_tree& t = tree();
  ringfeed::data::dataset_options opt;
  opt.scan_threads = threads;
  opt.cache_dir = t.cache_dir();
  opt.use_cache = cached;
  if (cached) {
    const auto first = ringfeed::data::scan_image_folder(t.root(), opt);  // writes the index
    if (!first.report().cache_note.empty()) state.SkipWithError(first.report().cache_note.c_str());
  }
  std::size_t size = 0;
  for (auto _ : state) {
    const auto ds = ringfeed::data::scan_image_folder(t.root(), opt);
    if (cached && !ds.report().from_cache) state.SkipWithError(ds.report().cache_note.c_str());
    size = ds.size();
    benchmark::DoNotOptimize(size);
  }
  if (size != static_cast<std::size_t>(t.files())) state.SkipWithError("wrong number of samples");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * t.files());
}

void register_all() {
  const long files = bench_files();
  for (const bool cached : {false, true}) {
    const char* workload = cached ? "image_folder_cached" : "image_folder_scan";
    harness(benchmark::RegisterBenchmark(bench_name("ringfeed", workload, {{"files", files}}).c_str(),
                                         [cached](benchmark::State& s) { scan(s, 0, cached); }),
            benchmark::kMillisecond);
    harness(benchmark::RegisterBenchmark(bench_name("ringfeed.1thread", workload, {{"files", files}}).c_str(),
                                         [cached](benchmark::State& s) { scan(s, 1, cached); }),
            benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
