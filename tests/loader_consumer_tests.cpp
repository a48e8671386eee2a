// The loader from the consumer's side, on real photos: the consumer APIs
// (co_await, Asio, next_handoff, epoch ranges), the error policies, the
// memory bound however slow the consumer, and the host and pread
// fallbacks. The loader's own order, pixels and determinism are in
// loader_tests.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <ringfeed/loader/asio.hpp>
#include <ringfeed/cuda/device.hpp>
#include <ringfeed/data/sampler.hpp>
#include <ringfeed/io/ring.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/next_handoff.hpp>
#include <ringfeed/sync_wait.hpp>

#include "image_test_data.hpp"
#include "loader_fixtures.hpp"
#include "no_io_uring.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::output_spec;
using ringfeed::batch;
using ringfeed::loader;

using namespace ringfeed::test;  // the fixtures

namespace {

long rss_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  return -1;
}

}  // namespace

TEST_CASE("on_error skip leaves bad files out and names each with its reason", "[loader]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path() / "ds", 1);
  const fs::path bad = ringfeed::test::image_data::dir() / "bad";
  fs::copy_file(bad / "truncated.jpg", tmp.path() / "truncated.jpg");
  fs::copy_file(bad / "text.jpg", tmp.path() / "text.jpg");
  {
    // A manifest: 8 photos with a truncated JPEG, a text file and a missing
    // file among them.
    std::ofstream m(tmp.path() / "list.csv");
    for (int i = 0; i < 8; ++i) {
      m << "ds/class0/" << photo_names[i] << "," << i << "\n";
      if (i == 1) m << "truncated.jpg,100\n";
      if (i == 4) m << "text.jpg,101\n";
      if (i == 6) m << "missing.jpg,102\n";
    }
  }
  auto o = base_options(tmp.path() / "list.csv");
  o.sampler.shuffle = false;
  o.batch_size = 11;  // one batch
  std::vector<std::string> logged;
  std::mutex log_mutex;
  o.log = [&](std::string_view line) {
    std::lock_guard lock(log_mutex);
    logged.emplace_back(line);
  };
  o.on_error = ringfeed::error_policy::skip;
  loader l(o);
  auto b = ringfeed::sync_wait(l.next());
  REQUIRE(b);
  REQUIRE(b->size() == 8);  // compacted, slot order kept
  for (std::size_t k = 0; k < 8; ++k) REQUIRE(b->labels()[k] == static_cast<std::int64_t>(k));
  const auto st = l.stats();
  REQUIRE(st.skipped.size() == 3);
  std::map<std::string, std::string> reasons;
  for (const auto& s : st.skipped) reasons[fs::path(s.path).filename().string()] = s.reason;
  REQUIRE(reasons.size() == 3);
  REQUIRE_THAT(reasons["missing.jpg"], Catch::Contains("No such file"));
  REQUIRE_FALSE(reasons["truncated.jpg"].empty());
  REQUIRE_FALSE(reasons["text.jpg"].empty());
  REQUIRE_FALSE(ringfeed::sync_wait(l.next()));
  std::lock_guard lock(log_mutex);
  REQUIRE(logged.size() == 3);  // one line per skipped file
}

TEST_CASE("on_error fail delivers what came before, then throws naming the file", "[loader]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path() / "ds", 2);  // 16 photos
  fs::copy_file(ringfeed::test::image_data::dir() / "bad" / "corrupt.jpg", root / "class1" / "zz_corrupt.jpg");
  auto o = base_options(root);
  o.sampler.shuffle = false;
  o.batch_size = 4;  // the bad file is sample 16, in batch 4
  loader l(o);
  for (int k = 0; k < 4; ++k) REQUIRE(ringfeed::sync_wait(l.next()));
  REQUIRE_THROWS_WITH(ringfeed::sync_wait(l.next()), Catch::Contains("zz_corrupt.jpg"));
  REQUIRE_THROWS_WITH(ringfeed::sync_wait(l.next()), Catch::Contains("zz_corrupt.jpg"));  // sticky
  // The same error through a next_handoff: handed back, or rethrown by take().
  const auto h = ringfeed::next_handoff::start(l);
  while (!h->wait_for(std::chrono::milliseconds(5))) {
  }
  std::optional<batch> none;
  const std::exception_ptr error = h->take(none);
  REQUIRE(error);
  REQUIRE_FALSE(none);
  REQUIRE_THROWS_WITH(std::rethrow_exception(error), Catch::Contains("zz_corrupt.jpg"));
  const auto again = ringfeed::next_handoff::start(l);
  while (!again->wait_for(std::chrono::milliseconds(5))) {
  }
  REQUIRE_THROWS_WITH(again->take(), Catch::Contains("zz_corrupt.jpg"));
}

TEST_CASE("prefetch never runs past the memory budget, however slow the consumer", "[loader][memory]") {
  ringfeed::test::watchdog dog("loader memory bound", std::chrono::seconds(120));
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 8);  // 64 samples
  auto o = base_options(root);
  o.pipeline = ringfeed::image::pipeline::val(256, 224, ringfeed::image::pipeline_mode::fast);
  o.sampler.shuffle = false;
  o.output = output_spec::float32_nchw();  // 602 KB per sample
  o.batch_size = 4;                            // 2.3 MiB slabs
  o.memory_budget = 3 * 4 * 3 * 224 * 224 * 4 + 4096 * 3;  // 3 slabs: 2 batches ahead
  o.threads = 2;

  SECTION("a budget below two batches is refused, with the numbers") {
    o.memory_budget = 4 * 3 * 224 * 224 * 4;
    REQUIRE_THROWS_WITH(loader(o), Catch::Contains("memory_budget") && Catch::Contains("at least 2"));
  }
  SECTION("decoded samples never exceed delivered + prefetch, and RSS stays within budget + a constant") {
    std::ofstream("/proc/self/clear_refs") << "5";  // reset the peak RSS
    const long before = rss_kib("VmRSS:");
    loader l(o);
    const auto st0 = l.stats();
    REQUIRE(st0.prefetch_batches == 2);  // the cap the budget sets (prefetch adapts below it)
    const std::size_t batches = l.batches_per_epoch();
    for (std::size_t k = 0; k < batches; ++k) {
      // The consumer is slow: before taking batch k it waits until the
      // loader has finished two items (batch k and the next one, or the
      // epoch's end), then checks it did no more than the cap allows
      // (batches k .. k+2, running on into the next epoch near the end).
      // Polling a counter with a deadline, not a sleep.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (l.stats().prefetch.ready < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      const auto st = l.stats();
      REQUIRE(st.prefetch.ready >= 2);
      REQUIRE(st.decode.items >= (k + 1) * 4);
      REQUIRE(st.decode.items <= (k + 3) * 4);
      REQUIRE(st.prefetch.slabs <= 3);
      auto b = ringfeed::sync_wait(l.next());
      REQUIRE(b);
    }
    CHECK(l.stats().prefetch.depth == 1);  // a consumer this slow needs one batch ahead
    const long peak = rss_kib("VmHWM:");
    // Slabs (6.9 MiB) + read buffers and decode workspaces; 64 batches of
    // floats (38 MiB) would not fit. Sanitizers' shadow memory would.
    INFO("peak RSS grew by " << (peak - before) / 1024 << " MiB");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    REQUIRE(peak - before < 32 * 1024);
#endif
  }
}

TEST_CASE("consumer APIs: co_await next(), async_next with Asio tokens, epoch ranges", "[loader]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 2);  // 16 samples, 4 batches of 5/5/5/1
  auto o = base_options(root);

  SECTION("co_await in a coroutine") {
    loader l(o);
    std::size_t images = ringfeed::sync_wait([](loader& ld) -> ringfeed::task<std::size_t> {
      std::size_t n = 0;
      while (auto b = co_await ld.next()) n += b->size();
      co_return n;
    }(l));
    REQUIRE(images == 16);
  }
  SECTION("async_next with use_future") {
    loader l(o);
    std::size_t images = 0;
    for (;;) {
      std::future<std::optional<batch>> f = ringfeed::async_next(l, boost::asio::use_future);
      auto b = f.get();
      if (!b) break;
      images += b->size();
    }
    REQUIRE(images == 16);
  }
  SECTION("async_next with callbacks runs them on the io_context's thread") {
    loader l(o);
    boost::asio::io_context io;
    std::size_t images = 0;
    int batches = 0;
    bool on_io_thread = true;
    std::function<void()> ask;
    const auto io_thread = std::this_thread::get_id();
    ask = [&] {
      ringfeed::async_next(l, boost::asio::bind_executor(io, [&](std::exception_ptr e, std::optional<batch> b) {
        on_io_thread = on_io_thread && std::this_thread::get_id() == io_thread;
        REQUIRE_FALSE(e);
        if (!b) return;
        images += b->size();
        ++batches;
        ask();
      }));
    };
    ask();
    io.run();  // returns when no more work: the last completion asked for nothing more
    REQUIRE(images == 16);
    REQUIRE(batches == 4);
    REQUIRE(on_io_thread);
  }
  SECTION("next_handoff: waited for in slices, taken once it is here, then the epoch's end") {
    loader l(o);
    std::vector<std::size_t> got;
    for (;;) {
      const auto h = ringfeed::next_handoff::start(l);
      while (!h->wait_for(std::chrono::milliseconds(5))) {
      }
      const std::optional<batch> b = h->take();
      if (!b) break;
      got.insert(got.end(), b->indices().begin(), b->indices().end());
    }
    const ringfeed::data::sampler s(16, o.sampler);
    REQUIRE(got == s.indices(0));
  }
  SECTION("blocking epoch ranges, and set_epoch repositions") {
    loader l(o);
    std::vector<std::size_t> e3;
    for (batch& b : l.epoch(3)) {
      REQUIRE(b.epoch() == 3);
      e3.insert(e3.end(), b.indices().begin(), b.indices().end());
    }
    REQUIRE(e3.size() == 16);
    const ringfeed::data::sampler s(16, o.sampler);
    REQUIRE(e3 == s.indices(3));
    // Half an epoch, then jump: nothing of the old epoch leaks through.
    auto b = ringfeed::sync_wait(l.next());
    REQUIRE(b->epoch() == 4);
    b.reset();
    std::size_t n = 0;
    for (batch& x : l.epoch(9)) {
      REQUIRE(x.epoch() == 9);
      n += x.size();
    }
    REQUIRE(n == 16);
  }
}

TEST_CASE("without a CUDA device the loader says why, once, and delivers host batches", "[loader][cuda]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 1);
  auto o = base_options(root);
  o.device = 0;
  std::vector<std::string> logged;
  o.log = [&](std::string_view line) { logged.emplace_back(line); };
  const auto probe = ringfeed::cuda::probe_devices();
  if (probe.available()) {
    SUCCEED("a device exists: the device path is tested in cuda_tests");
    return;
  }
  loader l(o);
  REQUIRE_FALSE(l.uses_device());
  REQUIRE(l.host_reason().find(probe.reason) != std::string::npos);
  REQUIRE(logged.size() == 1);
  REQUIRE(logged[0].find(probe.reason) != std::string::npos);
  auto b = ringfeed::sync_wait(l.next());
  REQUIRE(b->images().memory == ringfeed::memory_kind::host);
}

TEST_CASE("io_uring blocked by seccomp: pread fallback with one log line saying why", "[loader][fallback]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path(), 2);
  // Reference output with io_uring, before anything is blocked.
  const auto reference = first_epoch(base_options(root));
  // The filter is for good: apply it in a child process. Exit codes say
  // which expectation failed.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!ringfeed::test::block_io_uring_setup()) ::_exit(10);
    std::vector<std::string> logged;
    auto c = base_options(root);
    c.log = [&](std::string_view line) { logged.emplace_back(line); };
    try {
      loader l(c);
      if (l.stats().backend != "pread") ::_exit(11);
      const auto got = drain_epoch(l);
      if (got.size() != reference.size()) ::_exit(12);
      for (std::size_t k = 0; k < got.size(); ++k)
        if (got[k].pixels != reference[k].pixels || got[k].indices != reference[k].indices) ::_exit(13);
    } catch (...) {
      ::_exit(14);
    }
    if (logged.size() != 1 || logged[0].find("io_uring") == std::string::npos ||
        logged[0].find("EPERM") == std::string::npos || logged[0].find("seccomp") == std::string::npos)
      ::_exit(15);
    c.io = ringfeed::io_backend::uring;  // forcing io_uring now fails, saying why
    try {
      loader l(c);
      ::_exit(16);
    } catch (const ringfeed::io::ring_unavailable& e) {
      if (std::string(e.what()).find("seccomp") == std::string::npos) ::_exit(17);
    } catch (...) {
      ::_exit(18);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}
