// io::reader on real files: both backends, buffered and O_DIRECT, whole
// files and ranges at unaligned offsets, the fallback where a file system
// refuses O_DIRECT, and the deadline that keeps a stuck open from hanging.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/io/ring.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "files.hpp"
#include "test_support.hpp"

using ringfeed::detail::unique_fd;
using ringfeed::io::backend;
using ringfeed::io::read_buffer;
using ringfeed::io::reader;

namespace {

using ringfeed::test::random_bytes;
using ringfeed::test::same;
using ringfeed::test::write_file;

// True when `dir` accepts O_DIRECT (most disk file systems; not tmpfs).
bool supports_direct(const std::string& dir) {
  const std::string probe = dir + "/.direct-probe";
  write_file(probe, std::vector<std::byte>(4096));
  const bool ok = static_cast<bool>(unique_fd(::open(probe.c_str(), O_RDONLY | O_DIRECT)));
  ::unlink(probe.c_str());
  return ok;
}

struct logged {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view l) {
      std::lock_guard lock(m);
      lines.emplace_back(l);
    };
  }
};

std::unique_ptr<reader> make(ringfeed::thread_pool& pool, backend kind, bool direct, logged& log) {
  ringfeed::io::reader_options o;
  o.kind = kind;
  o.depth = 8;
  o.direct = direct;
  o.log = log.sink();
  return reader::create(pool, std::move(o));
}

}  // namespace

TEST_CASE("whole files arrive exactly, every size around the block and buffer edges", "[reader]") {
  ringfeed::test::temp_dir dir;
  const std::string d = dir.path().string();
  const std::vector<std::size_t> sizes = {0, 1, 511, 4095, 4096, 4097, 65536, 100000, 262144, 262145, 1048579};
  std::vector<std::vector<std::byte>> contents;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    contents.push_back(random_bytes(sizes[i], i));
    write_file(d + "/f" + std::to_string(i), contents.back());
  }
  const bool direct_ok = supports_direct(d);
  ringfeed::thread_pool pool(2);
  for (backend kind : {backend::uring, backend::pread}) {
    for (bool direct : {false, true}) {
      if (kind == backend::uring && !ringfeed::io::ring::unavailable_reason().empty()) continue;
      CAPTURE(static_cast<int>(kind), direct);
      logged log;
      auto r = make(pool, kind, direct, log);
      read_buffer buffer;  // one buffer for all: it grows and is reused, as in the loader
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        CAPTURE(sizes[i]);
        const auto bytes = ringfeed::sync_wait(r->read_file(d + "/f" + std::to_string(i), buffer));
        REQUIRE(same(bytes, contents[i]));
      }
      REQUIRE(r->direct() == (direct && direct_ok));
      REQUIRE(r->stats().files == sizes.size());
    }
  }
}

TEST_CASE("ranges at unaligned offsets, and a range past the end names the file", "[reader]") {
  ringfeed::test::temp_dir dir;
  const std::string path = dir.path().string() + "/shard.tar";
  const auto content = random_bytes(1 << 20, 7);
  write_file(path, content);
  ringfeed::thread_pool pool(2);
  for (backend kind : {backend::uring, backend::pread}) {
    for (bool direct : {false, true}) {
      if (kind == backend::uring && !ringfeed::io::ring::unavailable_reason().empty()) continue;
      CAPTURE(static_cast<int>(kind), direct);
      logged log;
      auto r = make(pool, kind, direct, log);
      const auto h = r->open(path);
      read_buffer buffer;
      for (std::uint64_t offset : {0ull, 1ull, 511ull, 4096ull, 12345ull, (1ull << 20) - 5000}) {
        for (std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{5000}}) {
          CAPTURE(offset, size);
          const auto bytes = ringfeed::sync_wait(r->read_range(h, offset, size, buffer));
          REQUIRE(bytes.size() == size);
          REQUIRE(std::memcmp(bytes.data(), content.data() + offset, size) == 0);
        }
      }
      REQUIRE_THROWS_WITH(ringfeed::sync_wait(r->read_range(h, (1 << 20) - 10, 100, buffer)),
                          Catch::Contains(path) && Catch::Contains("ends at byte 1048576"));
    }
  }
}

TEST_CASE("a missing file is an error naming it", "[reader]") {
  ringfeed::thread_pool pool(1);
  for (backend kind : {backend::automatic, backend::pread}) {
    logged log;
    auto r = make(pool, kind, false, log);
    read_buffer buffer;
    REQUIRE_THROWS_WITH(ringfeed::sync_wait(r->read_file("/nonexistent/ringfeed/x.jpg", buffer)),
                        Catch::Contains("/nonexistent/ringfeed/x.jpg") && Catch::Contains("No such file"));
  }
}

TEST_CASE("where O_DIRECT is refused, reads go on buffered and one line says so", "[reader]") {
  // ramfs has no direct I/O at all (tmpfs has had it since Linux 6.6).
  ringfeed::test::temp_dir dir;
  const std::string d = dir.path().string() + "/ramfs";
  std::filesystem::create_directory(d);
  if (std::system(("mount -t ramfs ringfeed-test '" + d + "' 2>/dev/null").c_str()) != 0) {
    SUCCEED("cannot mount a ramfs here (needs root): the refusal path is not exercised");
    return;
  }
  struct unmount {
    std::string d;
    ~unmount() { (void)std::system(("umount '" + d + "'").c_str()); }
  } cleanup{d};
  const auto content = random_bytes(30000, 3);
  for (int i = 0; i < 3; ++i) write_file(d + "/" + std::to_string(i), content);
  ringfeed::thread_pool pool(2);
  for (backend kind : {backend::automatic, backend::pread}) {
    logged log;
    auto r = make(pool, kind, true, log);
    read_buffer buffer;
    for (int i = 0; i < 3; ++i)
      REQUIRE(same(ringfeed::sync_wait(r->read_file(d + "/" + std::to_string(i), buffer)), content));
    REQUIRE_FALSE(r->direct());
    REQUIRE(log.lines.size() == 1);
    REQUIRE_THAT(log.lines[0], Catch::Contains("O_DIRECT refused") && Catch::Contains(d + "/0"));
    // A shard opened afterwards is buffered from the start.
    const auto h = r->open(d + "/1");
    REQUIRE(ringfeed::sync_wait(r->read_range(h, 5, 10, buffer)).size() == 10);
  }
}

TEST_CASE("a deadline turns an open that never completes into ETIMEDOUT naming the file", "[reader][deadline]") {
  if (const auto why = ringfeed::io::ring::unavailable_reason(); !why.empty()) {
    SUCCEED(why);
    return;
  }
  ringfeed::test::watchdog guard("deadline test", std::chrono::seconds(60));
  ringfeed::test::temp_dir dir;
  // Opening a FIFO for reading blocks until a writer comes: none will.
  const std::string fifo = dir.path().string() + "/stuck";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  ringfeed::thread_pool pool(1);
  ringfeed::io::reader_options o;
  o.kind = backend::uring;
  o.retry.deadline = std::chrono::milliseconds(300);
  o.retry.retries = 2;  // ETIMEDOUT is retried, within the deadline only
  auto r = reader::create(pool, std::move(o));
  read_buffer buffer;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)ringfeed::sync_wait(r->read_file(fifo, buffer));
    FAIL("a read of a FIFO without a writer completed");
  } catch (const std::system_error& e) {
    REQUIRE(e.code().value() == ETIMEDOUT);
    REQUIRE_THAT(e.what(), Catch::Contains(fifo));
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  REQUIRE(elapsed >= std::chrono::milliseconds(300));
  REQUIRE(elapsed < std::chrono::seconds(5));
  REQUIRE(r->stats().timeouts >= 1);
}

TEST_CASE("ring sleep_for waits without a thread", "[reader]") {
  if (const auto why = ringfeed::io::ring::unavailable_reason(); !why.empty()) {
    SUCCEED(why);
    return;
  }
  ringfeed::thread_pool pool(1);
  ringfeed::io::ring ring(pool);
  const auto t0 = std::chrono::steady_clock::now();
  ringfeed::sync_wait([&]() -> ringfeed::task<> { co_await ring.sleep_for(std::chrono::milliseconds(50)); }());
  REQUIRE(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(50));
}
