// Soak: one loader runs 30 epochs over a small ImageFolder holding a few bad
// files, with on_error = skip. After the first epoch, open file
// descriptors, threads and resident memory must stay flat (within small
// constants: a leak of one descriptor, thread or buffer per epoch or per
// file shows), every epoch must deliver exactly the good samples, and the
// skipped list must name the same bad files, once each. Label `soak`:
// `ctest -L soak` runs it alone, `ctest -LE soak` leaves it out; CI runs it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <ringfeed/loader/loader.hpp>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace data = ringfeed::test::image_data;

namespace {

std::size_t open_fds() {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()));
}

// The process's own threads. io_uring's io-wq workers ("iou-wrk-<tid>",
// and "iou-sqp-<tid>" for SQPOLL) are listed under /proc/self/task too, but
// the kernel starts them on demand for operations that block and retires
// them when idle, so their number moves between epochs (kernel 6.18 under
// ASan showed one more from epoch 16 on): not the loader's, not a leak.
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);  // (a task that exited meanwhile reads "": counted, as before)
  }
  return names;
}

std::size_t threads() {
  const auto names = thread_names();
  return static_cast<std::size_t>(
      std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.rfind("iou-", 0) != 0; }));
}

// VmRSS in KiB.
std::uint64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;  // quarantined and shadow memory grow RSS by design
#else
constexpr bool sanitized = false;
#endif

}  // namespace

TEST_CASE("30 epochs with bad files: descriptors, threads and RSS stay flat; the same files are skipped",
          "[soak][loader]") {
  ringfeed::test::watchdog dog("soak", std::chrono::seconds(600));
  ringfeed::test::temp_dir tmp;
  const fs::path root = tmp.path() / "folder";
  // 2 classes of 48 photos each (8 photos, copied), and 3 bad files.
  std::vector<fs::path> photos;
  for (const auto& e : fs::directory_iterator(data::dir() / "photos")) photos.push_back(e.path());
  std::sort(photos.begin(), photos.end());
  REQUIRE(photos.size() >= 8);
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(root / cls);
    for (int i = 0; i < 48; ++i)
      fs::copy_file(photos[static_cast<std::size_t>(i) % photos.size()], root / cls / ("p" + std::to_string(i) + ".jpg"));
  }
  fs::copy_file(data::dir() / "bad" / "truncated.jpg", root / "a" / "zz_truncated.jpg");
  fs::copy_file(data::dir() / "bad" / "text.jpg", root / "b" / "zz_text.jpg");
  fs::copy_file(data::dir() / "bad" / "empty.jpg", root / "b" / "zz_empty.jpg");

  ringfeed::loader_options o;
  o.source = root.string();
  o.dataset.use_cache = false;
  o.pipeline = ringfeed::image::pipeline::train(64, ringfeed::image::pipeline_mode::fast);
  o.output = ringfeed::output_spec::float32_nchw();
  o.batch_size = 16;
  o.threads = 2;
  o.device = -1;
  o.on_error = ringfeed::error_policy::skip;
  o.log = [](std::string_view) {};
  ringfeed::loader l(o);

  const std::size_t total = 96 + 3;
  std::set<std::size_t> first_epoch;
  std::size_t fds0 = 0, threads0 = 0;
  std::uint64_t rss0 = 0, rss_max = 0;
  std::vector<std::string> skipped0;
  for (std::uint64_t epoch = 0; epoch < 30; ++epoch) {
    CAPTURE(epoch);
    std::multiset<std::size_t> delivered;
    for (ringfeed::batch& b : l.epoch(epoch)) delivered.insert(b.indices().begin(), b.indices().end());
    REQUIRE(delivered.size() == total - 3);  // every good sample, once
    const std::set<std::size_t> unique(delivered.begin(), delivered.end());
    REQUIRE(unique.size() == delivered.size());
    std::vector<std::string> skipped;
    for (const auto& s : l.stats().skipped) skipped.push_back(s.path);
    if (epoch == 0) {
      first_epoch = unique;
      skipped0 = skipped;
      REQUIRE(skipped0.size() == 3);
      fds0 = open_fds();
      threads0 = threads();
      rss0 = rss_kib();
      continue;
    }
    CHECK(unique == first_epoch);
    CHECK(skipped == skipped0);  // the same three, reported once each
    CHECK(open_fds() <= fds0 + 2);
    INFO("threads: " << [] {
      std::string all;
      for (const auto& n : thread_names()) all += n + ' ';
      return all;
    }());
    CHECK(threads() <= threads0 + 1);
    rss_max = std::max(rss_max, rss_kib());
  }
  WARN("after epoch 0: " << fds0 << " fds, " << threads0 << " threads, " << rss0 / 1024 << " MiB RSS; most later: "
                         << rss_max / 1024 << " MiB" << (sanitized ? " (sanitizer build: RSS not checked)" : ""));
  if (!sanitized) CHECK(rss_max <= rss0 + 24 * 1024);  // 24 MiB: allocator slack, not one buffer per epoch
}
