// ringfeed::pixel_cache on its own (issue 40): entries read back exactly,
// across objects and processes' packs; what a killed writer, a flipped
// byte or a full budget leave is dropped or refused, never served; many
// threads storing and reading at once (ThreadSanitizer in CI).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <ringfeed/detail/busy_clock.hpp>
#include <ringfeed/io/buffer.hpp>
#include <ringfeed/loader/pixel_cache.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "test_support.hpp"

using ringfeed::pixel_cache;
using ringfeed::pixel_cache_options;
using ringfeed::image::image_view;

namespace {

// A w × h RGB image whose bytes depend on `seed`, with padded rows (stride
// > width * 3) so store() has to pack them.
struct test_image {
  int width, height;
  std::vector<std::uint8_t> bytes;  // rows of width * 3 + 5
  test_image(int w, int h, int seed) : width(w), height(h), bytes(static_cast<std::size_t>((w * 3 + 5) * h)) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>((i * 31 + seed * 7) & 0xff);
  }
  [[nodiscard]] image_view view() const { return {bytes.data(), width, height, 3, width * 3 + 5}; }
  // The pixels without the padding: what a read gives back.
  [[nodiscard]] std::vector<std::uint8_t> packed() const {
    std::vector<std::uint8_t> out;
    for (int y = 0; y < height; ++y) out.insert(out.end(), view().row(y), view().row(y) + width * 3);
    return out;
  }
};

// The pixels of a read (rows packed, as the cache returns them). No Catch2
// assertion here: the threads of the concurrency test call it, and Catch2's
// assertions are not thread-safe.
std::vector<std::uint8_t> bytes_of(const image_view& v) {
  if (v.stride != v.width * v.channels) return {};  // never equal to an image's pixels
  return {v.data, v.data + static_cast<std::size_t>(v.stride) * v.height};
}

pixel_cache_options options_for(const std::filesystem::path& dir, std::uint64_t max_bytes = 1ull << 30) {
  pixel_cache_options o;
  o.dir = dir;
  o.max_bytes = max_bytes;
  o.log = [](std::string_view) {};
  return o;
}

pixel_cache::key key(int n) { return pixel_cache::key_of("decode v1", "sample " + std::to_string(n)); }

std::filesystem::path only_file(const std::filesystem::path& dir, const std::string& ext) {
  std::filesystem::path found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ext) {
      REQUIRE(found.empty());
      found = e.path();
    }
  REQUIRE(!found.empty());
  return found;
}

}  // namespace

TEST_CASE("pixel cache: stored pixels read back exactly, here and in a later object", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  const test_image a(37, 21, 1), b(64, 48, 2);
  {
    pixel_cache c(options_for(tmp.path()));
    c.start_reads(pool);
    CHECK_FALSE(ringfeed::sync_wait(c.read(key(1), buffer)));
    CHECK(c.store(key(1), a.view()));
    CHECK(c.store(key(2), b.view()));
    CHECK_FALSE(c.store(key(1), b.view()));  // present: the first stays
    const auto got = ringfeed::sync_wait(c.read(key(1), buffer));
    REQUIRE(got);
    CHECK((got->width == 37 && got->height == 21 && got->channels == 3));
    CHECK(bytes_of(*got) == a.packed());
    const auto counters = c.counters();
    CHECK((counters.hits == 1 && counters.misses == 1 && counters.stores == 2 && counters.entries == 2));
    CHECK(counters.bytes == 4096 + 12288);  // each entry on 4 KiB boundaries
    c.stop_reads();
  }
  pixel_cache again(options_for(tmp.path()));
  again.start_reads(pool);
  CHECK(again.counters().entries == 2);
  const auto got = ringfeed::sync_wait(again.read(key(2), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == b.packed());
  CHECK_FALSE(ringfeed::sync_wait(again.read(pixel_cache::key_of("decode v2", "sample 2"), buffer)));
  again.stop_reads();
  const auto info = pixel_cache::inspect(tmp.path());
  CHECK((info.entries == 2 && info.packs == 1 && info.torn == 0 && info.pixel_bytes == 37 * 21 * 3 + 64 * 48 * 3));
}

// Whether this file system answers preadv2(RWF_NOWAIT) from its page cache
// (ext4, xfs and btrfs do): a file just written, read back without waiting.
bool nowait_reads_work(const std::filesystem::path& dir) {
  const std::string path = (dir / "nowait-probe").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  char data[4096] = {1}, back[4096];
  const bool written = ::pwrite(fd, data, sizeof data, 0) == static_cast<ssize_t>(sizeof data);
  iovec iov{back, sizeof back};
  const bool works = written && ::preadv2(fd, &iov, 1, 0, RWF_NOWAIT) == static_cast<ssize_t>(sizeof back);
  ::close(fd);
  std::filesystem::remove(path);
  return works;
}

TEST_CASE("pixel cache: a hit the page cache holds is read on the calling thread", "[pixel_cache]") {
  // Entries just written are in the page cache: read() copies them itself
  // (counted as resident_reads), the same bytes as through the ring.
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  std::vector<test_image> images;
  for (int n = 0; n < 6; ++n) images.emplace_back(40 + n, 30, n);
  {
    pixel_cache w(options_for(tmp.path()));
    for (int n = 0; n < 6; ++n) REQUIRE(w.store(key(n), images[static_cast<std::size_t>(n)].view()));
  }
  pixel_cache r(options_for(tmp.path()));
  r.start_reads(pool);
  for (int n = 0; n < 6; ++n) {
    const auto got = ringfeed::sync_wait(r.read(key(n), buffer));
    REQUIRE(got);
    CHECK(bytes_of(*got) == images[static_cast<std::size_t>(n)].packed());
  }
  const auto counters = r.counters();
  CHECK(counters.hits == 6);
  if (counters.direct)
    CHECK(counters.resident_reads == 0);  // O_DIRECT: never through the page cache
  else if (nowait_reads_work(tmp.path()))
    CHECK(counters.resident_reads == 6);
  else
    WARN("this file system refuses RWF_NOWAIT reads: every hit went through the ring");
  r.stop_reads();

  // With O_DIRECT asked for (and taken), every read goes to the disk.
  auto o = options_for(tmp.path());
  o.direct = true;
  pixel_cache d(o);
  d.start_reads(pool);
  const auto got = ringfeed::sync_wait(d.read(key(2), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == images[2].packed());
  if (d.counters().direct) CHECK(d.counters().resident_reads == 0);
  d.stop_reads();
}

TEST_CASE("pixel cache: two writers on one directory keep packs of their own", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  const test_image a(8, 8, 1), b(9, 9, 2);
  {
    pixel_cache one(options_for(tmp.path())), two(options_for(tmp.path()));
    CHECK(one.store(key(1), a.view()));
    CHECK(two.store(key(2), b.view()));
    CHECK(two.store(key(1), b.view()));  // `two` did not know one's: a duplicate, the first found wins
  }
  pixel_cache three(options_for(tmp.path()));
  three.start_reads(pool);
  CHECK(three.counters().entries == 2);
  const auto info = pixel_cache::inspect(tmp.path());
  CHECK((info.packs == 2 && info.duplicates == 1));
  const auto got = ringfeed::sync_wait(three.read(key(2), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == b.packed());
  three.stop_reads();
}

TEST_CASE("pixel cache: a writer killed mid-entry leaves every complete entry usable", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  const test_image a(10, 10, 1), b(20, 20, 2), c(30, 30, 3);
  {
    pixel_cache w(options_for(tmp.path()));
    REQUIRE(w.store(key(1), a.view()));
    REQUIRE(w.store(key(2), b.view()));
    REQUIRE(w.store(key(3), c.view()));
  }
  const auto index = only_file(tmp.path(), ".index");
  const auto data = only_file(tmp.path(), ".data");
  SECTION("a record cut short") {
    std::filesystem::resize_file(index, 2 * 64 + 40);
  }
  SECTION("pixels cut short: the last record points past the pack's end") {
    std::filesystem::resize_file(data, 2 * 4096 + 100);
  }
  SECTION("a record torn inside (its own checksum fails)") {
    std::fstream f(index, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * 64 + 20);
    f.put('\x55');
  }
  pixel_cache r(options_for(tmp.path()));
  r.start_reads(pool);
  const auto counters = r.counters();
  CHECK(counters.entries == 2);
  CHECK(counters.torn == 1);
  const auto got = ringfeed::sync_wait(r.read(key(2), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == b.packed());
  CHECK_FALSE(ringfeed::sync_wait(r.read(key(3), buffer)));
  r.stop_reads();
}

// Rows [top, bottom) of `img` packed: what a read of stripes holding them gives.
std::vector<std::uint8_t> rows_of(const test_image& img, int top, int bottom) {
  const auto all = img.packed();
  const auto row = static_cast<std::ptrdiff_t>(img.width) * 3;
  return {all.begin() + top * row, all.begin() + bottom * row};
}

TEST_CASE("pixel cache: an entry of several stripes is read only where asked, each stripe checked",
          "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  // 600-byte rows: stripes of 109 rows (64 KiB / 600), so 3 of them.
  const test_image a(200, 300, 1), b(200, 300, 2);
  {
    pixel_cache w(options_for(tmp.path()));
    REQUIRE(w.store(key(1), a.view()));
    REQUIRE(w.store(key(2), b.view()));
  }
  const auto rows = [](int top, int bottom) {
    return [=](ringfeed::image::size2 size) {
      // Only called with the stored image's size.
      return size == ringfeed::image::size2{200, 300} ? std::pair{top, bottom} : std::pair{0, 0};
    };
  };
  SECTION("reads cover the stripes of the rows asked, no more") {
    pixel_cache r(options_for(tmp.path()));
    r.start_reads(pool);
    auto got = ringfeed::sync_wait(r.read(key(1), buffer, rows(150, 160)));
    REQUIRE(got);
    CHECK((got->top == 109 && got->rows.height == 109 && got->size == ringfeed::image::size2{200, 300}));
    CHECK(bytes_of(got->rows) == rows_of(a, 109, 218));
    got = ringfeed::sync_wait(r.read(key(1), buffer, rows(100, 300)));
    REQUIRE(got);
    CHECK((got->top == 0 && got->rows.height == 300));
    CHECK(bytes_of(got->rows) == a.packed());
    got = ringfeed::sync_wait(r.read(key(2), buffer, rows(299, 300)));
    REQUIRE(got);
    CHECK((got->top == 218 && got->rows.height == 82));
    CHECK(bytes_of(got->rows) == rows_of(b, 218, 300));
    CHECK(r.counters().bytes_read == 600u * (109 + 300 + 82));
    r.stop_reads();
  }
  SECTION("a flipped byte in a stripe read drops the entry; stripes not read are not judged") {
    {
      std::fstream f(only_file(tmp.path(), ".data"), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(600 * 5);  // entry 1, stripe 0
      f.put(static_cast<char>(a.packed()[600 * 5] ^ 1));
    }
    pixel_cache r(options_for(tmp.path()));
    r.start_reads(pool);
    const auto got = ringfeed::sync_wait(r.read(key(1), buffer, rows(120, 130)));
    REQUIRE(got);
    CHECK(bytes_of(got->rows) == rows_of(a, 109, 218));
    CHECK_FALSE(ringfeed::sync_wait(r.read(key(1), buffer, rows(0, 10))));
    CHECK(r.counters().corrupt == 1);
    CHECK_FALSE(ringfeed::sync_wait(r.read(key(1), buffer, rows(120, 130))));  // dropped
    CHECK(ringfeed::sync_wait(r.read(key(2), buffer, rows(0, 10))));
    r.stop_reads();
  }
  // A record is 64 bytes and 3 stripe sums padded to 16: 80 bytes.
  const auto index = only_file(tmp.path(), ".index");
  REQUIRE(std::filesystem::file_size(index) == 160);
  SECTION("stripe sums cut short: the writer died appending them") {
    std::filesystem::resize_file(index, 80 + 64 + 8);
    pixel_cache r(options_for(tmp.path()));
    CHECK((r.counters().entries == 1 && r.counters().torn == 1));
  }
  SECTION("a stripe sum flipped in the index: that entry is torn, the next still read") {
    {
      std::fstream f(index, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(64 + 4);
      f.put('\x55');
    }
    pixel_cache r(options_for(tmp.path()));
    r.start_reads(pool);
    CHECK((r.counters().entries == 1 && r.counters().torn == 1));
    const auto got = ringfeed::sync_wait(r.read(key(2), buffer));
    REQUIRE(got);
    CHECK(bytes_of(*got) == b.packed());
    r.stop_reads();
  }
}

TEST_CASE("pixel cache: pixels that fail their checksum are dropped, never served", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  const test_image a(16, 16, 1);
  {
    pixel_cache w(options_for(tmp.path()));
    REQUIRE(w.store(key(1), a.view()));
  }
  {
    std::fstream f(only_file(tmp.path(), ".data"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put(static_cast<char>(a.packed()[100] ^ 1));
  }
  std::vector<std::string> lines;
  auto o = options_for(tmp.path());
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  pixel_cache r(o);
  r.start_reads(pool);
  CHECK_FALSE(ringfeed::sync_wait(r.read(key(1), buffer)));
  CHECK(r.counters().corrupt == 1);
  CHECK(r.counters().entries == 0);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("fails its checksum"));
  // The caller decodes it again and stores it: the new entry is served.
  CHECK(r.store(key(1), a.view()));
  const auto got = ringfeed::sync_wait(r.read(key(1), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == a.packed());
  r.stop_reads();
}

TEST_CASE("pixel cache: a pack that cannot be read is a miss, never an error", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  const test_image a(16, 16, 1);
  {
    pixel_cache w(options_for(tmp.path()));
    REQUIRE(w.store(key(1), a.view()));
  }
  std::vector<std::string> lines;
  auto o = options_for(tmp.path());
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  pixel_cache r(o);
  r.start_reads(pool);
  std::filesystem::remove(only_file(tmp.path(), ".data"));  // gone between the open and the read
  CHECK_FALSE(ringfeed::sync_wait(r.read(key(1), buffer)));
  CHECK(r.counters().corrupt == 1);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("cannot be read"));
  r.stop_reads();
}

TEST_CASE("pixel cache: a full budget stops filling, once, and keeps what it has", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  std::vector<std::string> lines;
  auto o = options_for(tmp.path(), 2 * 4096);
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  pixel_cache c(o);
  const test_image small(10, 10, 1);
  CHECK(c.store(key(1), small.view()));
  CHECK(c.store(key(2), small.view()));
  CHECK_FALSE(c.store(key(3), small.view()));
  CHECK_FALSE(c.store(key(4), small.view()));
  const auto counters = c.counters();
  CHECK((counters.entries == 2 && counters.stores == 2 && counters.not_stored == 2 && !counters.filling));
  CHECK_THAT(counters.reason, Catch::StartsWith("full"));
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("not adding entries"));
}

TEST_CASE("pixel cache: a directory that cannot be made is an error naming it", "[pixel_cache]") {
  ringfeed::test::temp_dir tmp;
  std::ofstream(tmp.path() / "file") << "x";
  try {
    pixel_cache c(options_for(tmp.path() / "file" / "pixels"));
    FAIL("no error");
  } catch (const std::system_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("file/pixels"));
  }
}

TEST_CASE("pixel cache: threads storing and reading at once", "[pixel_cache][concurrency]") {
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  pixel_cache c(options_for(tmp.path()));
  c.start_reads(pool);
  constexpr int threads = 4, per_thread = 40;
  std::vector<test_image> images;
  for (int n = 0; n < per_thread; ++n) images.emplace_back(5 + n % 7, 3 + n % 5, n);
  std::vector<std::thread> workers;
  std::vector<int> wrong(threads, 0);
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      ringfeed::io::read_buffer buffer;
      for (int n = 0; n < per_thread; ++n) {
        // Every thread stores every image (all but one store of each is refused) and reads one back.
        (void)c.store(key(n), images[static_cast<std::size_t>(n)].view());
        const auto got = ringfeed::sync_wait(c.read(key((n + t) % per_thread), buffer));
        if (got && bytes_of(*got) != images[static_cast<std::size_t>((n + t) % per_thread)].packed()) ++wrong[t];
      }
    });
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t) CHECK(wrong[t] == 0);
  const auto counters = c.counters();
  CHECK(counters.entries == per_thread);
  CHECK(counters.stores == per_thread);
  CHECK(counters.hits + counters.misses == threads * per_thread);
  c.stop_reads();
}

TEST_CASE("pixel cache: kill -9 while filling leaves every complete entry usable", "[pixel_cache][fork]") {
  // A child process fills the cache with known images until the parent,
  // having seen some records land, kills it with SIGKILL mid-stream.
  ringfeed::test::temp_dir tmp;
  struct child_process {  // killed and reaped whatever happens in the test
    pid_t pid = -1;
    ~child_process() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } filler;
  filler.pid = ::fork();
  REQUIRE(filler.pid >= 0);
  if (filler.pid == 0) {  // bounded by the 1 GiB budget; killed long before
    pixel_cache w(options_for(tmp.path()));
    for (int n = 0;; ++n) (void)w.store(key(n), test_image(50 + n % 13, 40 + n % 7, n).view());
  }
  const pid_t child = filler.pid;
  std::filesystem::path index;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {  // until the child has written 200 records (polling the file it appends to)
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path(), ec))
      if (e.path().extension() == ".index") index = e.path();
    if (!index.empty() && std::filesystem::file_size(index, ec) >= 200 * 64) break;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::yield();
  }
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  filler.pid = -1;
  REQUIRE(WIFSIGNALED(status));

  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  pixel_cache r(options_for(tmp.path()));
  r.start_reads(pool);
  const auto counters = r.counters();
  INFO(counters.entries << " entries, " << counters.torn << " torn");
  CHECK(counters.entries >= 200);
  CHECK(counters.torn <= 1);  // at most the record being appended when the signal came
  for (std::uint64_t n = 0; n < counters.entries; ++n) {
    const int i = static_cast<int>(n);
    const auto got = ringfeed::sync_wait(r.read(key(i), buffer));
    REQUIRE(got);
    REQUIRE(bytes_of(*got) == test_image(50 + i % 13, 40 + i % 7, i).packed());
  }
  CHECK(r.counters().corrupt == 0);
  r.stop_reads();
}

TEST_CASE("pixel cache: a write error (a full disk) stops filling, never the reader", "[pixel_cache]") {
  // RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG, as ENOSPC would.
  ringfeed::test::temp_dir tmp;
  ringfeed::thread_pool pool(2);
  ringfeed::io::read_buffer buffer;
  std::vector<std::string> lines;
  auto o = options_for(tmp.path());
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  pixel_cache c(o);
  c.start_reads(pool);
  const test_image small(40, 40, 1);  // 4800 bytes: one 4 KiB-aligned entry of 8 KiB
  struct rlimit before {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = before;
  limited.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  int stored = 0;
  for (int n = 0; n < 20; ++n) stored += c.store(key(n), small.view()) ? 1 : 0;
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  CHECK(stored == 8);  // 8 entries of 8 KiB fill the 64 KiB
  const auto counters = c.counters();
  CHECK_FALSE(counters.filling);
  CHECK_THAT(counters.reason, Catch::Contains("failed"));
  REQUIRE(lines.size() == 1);
  // What was written is still served.
  const auto got = ringfeed::sync_wait(c.read(key(7), buffer));
  REQUIRE(got);
  CHECK(bytes_of(*got) == small.packed());
  c.stop_reads();
}

TEST_CASE("busy_clock: overlapping reads count their wall time once", "[pixel_cache]") {
  // The cache's read bandwidth is bytes over this time: a sum of the reads'
  // times (two here, 32 on a ring) would make it look two (32) times slower.
  ringfeed::detail::busy_clock c;
  CHECK(c.busy_ns() == 0);
  const auto t0 = std::chrono::steady_clock::now();
  {
    const ringfeed::detail::busy_clock::scope a(c);
    const ringfeed::detail::busy_clock::scope b(c);
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(5)) {
    }
    CHECK(c.busy_ns() > 0);  // an open interval counts as it runs
  }
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  const std::int64_t once = c.busy_ns();
  CHECK(once >= 5'000'000);
  CHECK(once <= wall.count());
  CHECK(c.busy_ns() == once);  // stopped with the last one out
}
