#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/io/ring.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "files.hpp"
#include "no_io_uring.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::detail::unique_fd;
using ringfeed::sync_wait;
using ringfeed::task;
using ringfeed::thread_pool;
using ringfeed::io::file;
using ringfeed::io::ring;

static ringfeed::test::skip_if_unavailable skip_without_uring{[] { return ring::unavailable_reason(); }};

namespace {

using ringfeed::test::random_bytes;
using ringfeed::test::write_file;

// What the loader does per sample: open, size, read, close, all on the ring.
task<std::vector<std::byte>> read_whole(thread_pool& pool, ring& r, std::string path) {
  co_await pool.schedule();
  file f = co_await r.openat(path, O_RDONLY);
  const auto info = co_await r.statx(f);
  std::vector<std::byte> data(info.size);
  const std::size_t n = co_await r.read_at(f, data, 0);
  if (n != data.size()) throw std::runtime_error("short read of " + path);
  co_await r.close(std::move(f));
  co_return data;
}

}  // namespace

TEST_CASE("reads many files concurrently, byte for byte", "[ring][stress]") {
  ringfeed::test::watchdog dog("many files", std::chrono::seconds(240));
  ringfeed::test::temp_dir dir;
  std::mt19937 rng(7);
  std::vector<std::vector<std::byte>> contents;
  std::vector<std::string> paths;
  for (int i = 0; i < 600; ++i) {
    std::size_t size = rng() % 300'000;
    if (i % 50 == 0) size = 0;                  // empty files
    if (i % 50 == 1) size = 4096 * (1 + i % 7);  // exact page multiples
    contents.push_back(random_bytes(size, static_cast<std::uint32_t>(i)));
    paths.push_back((dir.path() / ("f" + std::to_string(i) + ".bin")).string());
    write_file(paths.back(), contents.back());
  }
  thread_pool pool(2);
  ring r(pool, {.entries = 16});  // fewer kernel slots than reads: the pending queue is used
  std::vector<task<std::vector<std::byte>>> reads;
  for (const auto& p : paths) reads.push_back(read_whole(pool, r, p));
  const auto results = sync_wait(ringfeed::when_all(std::move(reads)));
  REQUIRE(results.size() == contents.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    INFO(paths[i]);
    REQUIRE(results[i] == contents[i]);
  }
  const auto st = r.stats();
  REQUIRE(st.completed == 4 * paths.size());
  REQUIRE(st.enter_calls < st.submitted);  // submissions were batched
}

TEST_CASE("reads at and past end of file", "[ring]") {
  ringfeed::test::temp_dir dir;
  const auto data = random_bytes(10'000, 1);
  const std::string path = (dir.path() / "ten_k").string();
  write_file(path, data);
  thread_pool pool(1);
  ring r(pool);
  auto body = [&]() -> task<> {
    file f = co_await r.openat(path);
    std::vector<std::byte> buf(4096);
    // Crossing the end: only what exists.
    REQUIRE(co_await r.read_at(f, buf, 8'000) == 2'000);
    REQUIRE(std::memcmp(buf.data(), data.data() + 8'000, 2'000) == 0);
    // At and beyond the end: nothing, no error.
    REQUIRE(co_await r.read_at(f, buf, 10'000) == 0);
    REQUIRE(co_await r.read_at(f, buf, 1'000'000) == 0);
    // An empty buffer reads nothing.
    REQUIRE(co_await r.read_at(f, std::span<std::byte>{}, 0) == 0);
    // A bare descriptor works too.
    REQUIRE(co_await r.read_at(f.fd(), buf, 0) == 4096);
    REQUIRE(std::memcmp(buf.data(), data.data(), 4096) == 0);
  };
  sync_wait(body());
}

TEST_CASE("a large file arrives whole", "[ring]") {
  ringfeed::test::temp_dir dir;
  const auto data = random_bytes(24u << 20, 3);  // 24 MiB
  const std::string path = (dir.path() / "big").string();
  write_file(path, data);
  thread_pool pool(2);
  ring r(pool);
  REQUIRE(sync_wait(read_whole(pool, r, path)) == data);
}

TEST_CASE("a missing file's error names the path and carries ENOENT", "[ring]") {
  ringfeed::test::temp_dir dir;
  const std::string missing = (dir.path() / "no_such_image.JPEG").string();
  thread_pool pool(1);
  ring r(pool);
  auto open_missing = [&]() -> task<> { (void)co_await r.openat(missing); };
  try {
    sync_wait(open_missing());
    FAIL("opening a missing file succeeded");
  } catch (const std::system_error& e) {
    REQUIRE(e.code().value() == ENOENT);
    REQUIRE_THAT(e.what(), Catch::Contains(missing));
    REQUIRE_THAT(e.what(), Catch::Contains("open"));
  }
  auto stat_missing = [&]() -> task<> { (void)co_await r.statx(missing); };
  REQUIRE_THROWS_WITH(sync_wait(stat_missing()), Catch::Contains(missing));
}

TEST_CASE("a read error names the path and the offset", "[ring]") {
  ringfeed::test::temp_dir dir;
  thread_pool pool(1);
  ring r(pool);
  const std::string d = dir.path().string();
  auto read_dir = [&]() -> task<> {
    file f = co_await r.openat(d, O_RDONLY | O_DIRECTORY);
    std::vector<std::byte> buf(16);
    (void)co_await r.read_at(f, buf, 0);
  };
  try {
    sync_wait(read_dir());
    FAIL("reading a directory succeeded");
  } catch (const std::system_error& e) {
    REQUIRE(e.code().value() == EISDIR);
    REQUIRE_THAT(e.what(), Catch::Contains(d) && Catch::Contains("offset 0"));
  }
}

TEST_CASE("statx reports size and type; openat honours dirfd", "[ring]") {
  ringfeed::test::temp_dir dir;
  write_file(dir.path() / "a.bin", random_bytes(1234, 9));
  thread_pool pool(1);
  ring r(pool);
  auto body = [&]() -> task<> {
    const auto by_path = co_await r.statx((dir.path() / "a.bin").string());
    REQUIRE(by_path.size == 1234);
    REQUIRE(S_ISREG(by_path.mode));
    file d = co_await r.openat(dir.path().string(), O_RDONLY | O_DIRECTORY);
    file f = co_await r.openat("a.bin", O_RDONLY, 0, d.fd());  // relative to the directory
    REQUIRE(f.path() == "a.bin");
    REQUIRE((co_await r.statx(f)).size == 1234);
    co_await r.close(std::move(f));
    REQUIRE_FALSE(f.is_open());  // NOLINT: moved-from, by contract closed
  };
  sync_wait(body());
}

TEST_CASE("short reads are continued until the buffer is full", "[ring]") {
  // A pipe holds at most 64 KiB, so a 1 MiB read can only be satisfied in
  // pieces: the ring must keep reading where each piece ended.
  ringfeed::test::watchdog dog("pipe short reads", std::chrono::seconds(60));
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  unique_fd read_end(fds[0]);
  unique_fd write_end(fds[1]);
  const auto data = random_bytes(1u << 20, 11);
  std::thread writer([&] {
    std::size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::write(write_end.get(), data.data() + off, std::min<std::size_t>(8192, data.size() - off));
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    write_end.reset();  // end of stream
  });
  thread_pool pool(1);
  ring r(pool);
  std::vector<std::byte> buf(data.size() + 100);  // more than will ever come
  auto body = [&]() -> task<std::size_t> { co_return co_await r.read_at(read_end.get(), buf, ring::stream_position); };
  const std::size_t n = sync_wait(body());
  writer.join();
  REQUIRE(n == data.size());  // stopped at end of stream, not at the first piece
  REQUIRE(std::memcmp(buf.data(), data.data(), data.size()) == 0);
  REQUIRE(r.stats().retries > 0);
}

TEST_CASE("the destructor lets operations in flight finish and resume", "[ring]") {
  ringfeed::test::watchdog dog("ring drain", std::chrono::seconds(60));
  ringfeed::test::temp_dir dir;
  const auto data = random_bytes(100'000, 5);
  write_file(dir.path() / "x", data);
  thread_pool pool(2);
  const unique_fd fd(::open((dir.path() / "x").c_str(), O_RDONLY));
  REQUIRE(fd);
  std::vector<std::vector<std::byte>> bufs(64, std::vector<std::byte>(data.size()));
  std::vector<std::size_t> got(bufs.size(), 0);
  ringfeed::async_scope scope;
  {
    ring r(pool);
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      auto one = [](ring& rr, int f, std::vector<std::byte>& b, std::size_t& out) -> task<> {
        out = co_await rr.read_at(f, b, 0);  // the only operation: nothing is started after ~ring
      };
      scope.spawn(one(r, fd.get(), bufs[i], got[i]));
    }
  }  // ~ring waits for all 64 reads
  sync_wait(scope.join());
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    REQUIRE(got[i] == data.size());
    REQUIRE(bufs[i] == data);
  }
}

TEST_CASE("when seccomp blocks io_uring, construction fails with ring_unavailable saying why",
          "[ring][fallback]") {
  thread_pool pool(1);
  bool installed = false;
  std::string reason;
  std::string what;
  int code = 0;
  // A thread of its own: seccomp filters are per thread, and this one must
  // not leak into the rest of the test process.
  std::thread t([&] {
    installed = ringfeed::test::block_io_uring_setup();
    if (!installed) return;
    reason = ring::unavailable_reason();
    try {
      ring r(pool);
    } catch (const ringfeed::io::ring_unavailable& e) {
      what = e.what();
      code = e.code().value();
    }
  });
  t.join();
  REQUIRE(installed);
  REQUIRE(code == EPERM);
  REQUIRE_THAT(what, Catch::Contains("io_uring is unavailable") && Catch::Contains("seccomp"));
  REQUIRE_THAT(reason, Catch::Contains("seccomp"));
  // The same process still has io_uring on other threads.
  REQUIRE(ring::unavailable_reason().empty());
}

TEST_CASE("coroutines on the ring thread chain operations there, batched into few syscalls",
          "[ring][stress]") {
  ringfeed::test::watchdog dog("ring-affine readers", std::chrono::seconds(120));
  ringfeed::test::temp_dir dir;
  std::vector<std::vector<std::byte>> contents;
  std::vector<std::string> paths;
  for (int i = 0; i < 400; ++i) {
    contents.push_back(random_bytes(1000 + static_cast<std::size_t>(i) * 97, static_cast<std::uint32_t>(i)));
    paths.push_back((dir.path() / ("g" + std::to_string(i))).string());
    write_file(paths.back(), contents.back());
  }
  thread_pool pool(2);
  ring r(pool);
  std::atomic<std::size_t> next{0};
  std::atomic<int> off_ring_steps{0};
  std::vector<std::vector<std::byte>> results(paths.size());
  auto reader = [&]() -> task<> {
    co_await r.schedule();
    for (std::size_t i; (i = next.fetch_add(1)) < paths.size();) {
      file f = co_await r.openat(paths[i]);
      if (!r.on_ring_thread()) off_ring_steps.fetch_add(1);
      const auto info = co_await r.statx(f);
      results[i].resize(info.size);
      (void)co_await r.read_at(f, results[i], 0);
      co_await r.close(std::move(f));
      if (!r.on_ring_thread()) off_ring_steps.fetch_add(1);
    }
    co_await pool.schedule();  // and back to the pool for heavy work
    if (!pool.on_worker_thread()) off_ring_steps.fetch_add(1000);
  };
  std::vector<task<>> readers;
  for (int i = 0; i < 32; ++i) readers.push_back(reader());
  sync_wait(ringfeed::when_all(std::move(readers)));
  REQUIRE(off_ring_steps.load() == 0);
  for (std::size_t i = 0; i < paths.size(); ++i) REQUIRE(results[i] == contents[i]);
  const auto st = r.stats();
  INFO(st.submitted << " SQEs in " << st.enter_calls << " io_uring_enter calls");
  REQUIRE(st.submitted == 4 * paths.size());
  REQUIRE(st.submitted >= 4 * st.enter_calls);  // 32 readers' steps share each syscall
}

TEST_CASE("read_file opens, reads and closes each file in one linked submission", "[ring][stress]") {
  ringfeed::test::watchdog dog("linked reads", std::chrono::seconds(120));
  ringfeed::test::temp_dir dir;
  constexpr std::size_t buffer_size = 64 * 1024;
  std::mt19937 rng(11);
  std::vector<std::vector<std::byte>> contents;
  std::vector<std::string> paths;
  for (int i = 0; i < 500; ++i) {
    std::size_t size = rng() % (2 * buffer_size);  // a quarter larger than the buffer
    if (i % 50 == 0) size = 0;
    if (i % 50 == 1) size = buffer_size;  // exactly the buffer: all of it comes back
    contents.push_back(random_bytes(size, static_cast<std::uint32_t>(i)));
    paths.push_back((dir.path() / ("l" + std::to_string(i))).string());
    write_file(paths.back(), contents.back());
  }
  thread_pool pool(2);
  ring r(pool, {.entries = 8});  // a few file slots for 500 files: each must come back
  REQUIRE(r.linked_reads());
  std::atomic<std::size_t> next{0};
  std::vector<std::vector<std::byte>> got(paths.size());
  auto reader = [&]() -> task<> {
    co_await pool.schedule();
    std::vector<std::byte> buffer(buffer_size);
    for (std::size_t i; (i = next.fetch_add(1)) < paths.size();) {
      const std::size_t n = co_await r.read_file(paths[i], O_RDONLY, buffer);
      got[i].assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
  };
  std::vector<task<>> readers;
  for (int i = 0; i < 24; ++i) readers.push_back(reader());
  sync_wait(ringfeed::when_all(std::move(readers)));
  for (std::size_t i = 0; i < paths.size(); ++i) {
    INFO(paths[i]);
    const std::size_t expect = std::min(contents[i].size(), buffer_size);
    REQUIRE(got[i].size() == expect);
    REQUIRE(std::equal(got[i].begin(), got[i].end(), contents[i].begin()));
  }
  const auto st = r.stats();
  REQUIRE(st.completed == paths.size());      // one resumption per file
  REQUIRE(st.submitted == 3 * paths.size());  // open + read + close, as one chain
}

TEST_CASE("read_file errors name the file; the file slot comes back after each", "[ring]") {
  ringfeed::test::temp_dir dir;
  const std::string missing = (dir.path() / "no_such_image.JPEG").string();
  const std::string good = (dir.path() / "good").string();
  const auto data = random_bytes(5000, 4);
  write_file(good, data);
  thread_pool pool(1);
  ring r(pool, {.entries = 4});  // three file slots: a leaked one would soon stop every read below
  REQUIRE(r.linked_reads());
  std::vector<std::byte> buffer(8192);
  auto read = [&](const std::string& p) -> task<std::size_t> { co_return co_await r.read_file(p, O_RDONLY, buffer); };
  for (int i = 0; i < 20; ++i) {
    try {  // the open fails: the read and close are cancelled
      (void)sync_wait(read(missing));
      FAIL("reading a missing file succeeded");
    } catch (const std::system_error& e) {
      REQUIRE(e.code().value() == ENOENT);
      REQUIRE_THAT(e.what(), Catch::Contains("open '" + missing + "'"));
    }
    try {  // the open succeeds and the read fails: the close still runs
      (void)sync_wait(read(dir.path().string()));
      FAIL("reading a directory succeeded");
    } catch (const std::system_error& e) {
      REQUIRE(e.code().value() == EISDIR);
      REQUIRE_THAT(e.what(), Catch::Contains("read '" + dir.path().string() + "' at offset 0"));
    }
    REQUIRE(sync_wait(read(good)) == data.size());
    REQUIRE(std::equal(data.begin(), data.end(), buffer.begin()));
  }
}

TEST_CASE("read_file on a ring without linked reads fails at once with EOPNOTSUPP", "[ring]") {
  ringfeed::test::temp_dir dir;
  const std::string path = (dir.path() / "f").string();
  write_file(path, random_bytes(10, 5));
  thread_pool pool(1);
  for (const ringfeed::io::ring_options& o :
       {ringfeed::io::ring_options{.linked_reads = false},
        ringfeed::io::ring_options{.deadline = std::chrono::seconds(5)}}) {  // linked timeouts need single steps
    ring r(pool, o);
    REQUIRE_FALSE(r.linked_reads());
    std::vector<std::byte> buffer(16);
    auto read = [&]() -> task<std::size_t> { co_return co_await r.read_file(path, O_RDONLY, buffer); };
    REQUIRE_THROWS_WITH(sync_wait(read()), Catch::Contains(path) && Catch::Contains("not supported"));
  }
}
