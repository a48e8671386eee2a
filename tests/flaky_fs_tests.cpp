// io::reader on a kernel-mounted file system that fails the way a network
// file system does: a FUSE file system served by this test (libfuse3's
// low-level API on a thread of its own) answers a chosen number of reads
// with EIO, then serves the bytes. The kernel forwards every read to it
// (direct_io: no page cache in between), so what the reader sees is what a
// flaky NFS or CIFS mount gives: read(2) failing with EIO, through io_uring
// or pread alike. Shown here: transient errors are retried with back-off and
// the bytes arrive intact; the retries are bounded and the final error names
// the file; errors that are not transient are not retried.
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/io/ring.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "test_support.hpp"

using ringfeed::detail::unique_fd;
using ringfeed::io::backend;
using ringfeed::io::read_buffer;
using ringfeed::io::reader;

namespace {

std::string why_no_fuse() {
  if (::geteuid() != 0) return "mounting a FUSE file system here needs root (fusermount3 is not used)";
  if (!unique_fd(::open("/dev/fuse", O_RDWR | O_CLOEXEC))) return std::string("cannot open /dev/fuse: ") + std::strerror(errno);
  return {};
}

ringfeed::test::skip_if_unavailable skip_without_fuse{why_no_fuse};

// One directory with `files` read-only files f0, f1, …: file i holds
// `size` bytes, byte k = (i * 31 + k) & 0xFF. The next `fail_reads` read
// requests fail with `fail_errno`.
class flaky_fs {
 public:
  static constexpr std::size_t files = 4;
  static constexpr std::size_t size = 50'000;

  std::atomic<int> fail_reads{0};
  std::atomic<int> fail_errno{EIO};
  std::atomic<int> reads_seen{0};

  static std::byte expected(std::size_t file, std::size_t k) {
    return static_cast<std::byte>((file * 31 + k) & 0xFF);
  }

  explicit flaky_fs(const std::string& mountpoint) : m_mountpoint(mountpoint) {
    fuse_lowlevel_ops ops{};
    ops.lookup = &flaky_fs::lookup;
    ops.getattr = &flaky_fs::getattr;
    ops.open = &flaky_fs::open;
    ops.read = &flaky_fs::read;
    const char* argv[] = {"flaky_fs"};
    fuse_args args = FUSE_ARGS_INIT(1, const_cast<char**>(argv));
    m_session = fuse_session_new(&args, &ops, sizeof ops, this);
    fuse_opt_free_args(&args);
    if (m_session == nullptr) throw std::runtime_error("fuse_session_new failed");
    if (fuse_session_mount(m_session, m_mountpoint.c_str()) != 0) {
      fuse_session_destroy(m_session);
      throw std::runtime_error("fuse_session_mount failed on " + m_mountpoint);
    }
    m_loop = std::thread([this] { fuse_session_loop(m_session); });
  }

  flaky_fs(const flaky_fs&) = delete;
  flaky_fs& operator=(const flaky_fs&) = delete;

  ~flaky_fs() {
    // Unmounting ends the connection: the loop's read of /dev/fuse fails
    // with ENODEV and it returns. Only then, on this thread, does libfuse
    // close the session's descriptor (it sees the connection gone and does
    // not unmount again) and free what it keeps.
    if (::umount2(m_mountpoint.c_str(), MNT_DETACH) != 0)
      std::fprintf(stderr, "flaky_fs: umount %s: %s\n", m_mountpoint.c_str(), std::strerror(errno));
    m_loop.join();
    fuse_session_unmount(m_session);
    fuse_session_destroy(m_session);
  }

  std::string path(std::size_t i) const { return m_mountpoint + "/f" + std::to_string(i); }

 private:
  static flaky_fs& self(fuse_req_t req) { return *static_cast<flaky_fs*>(fuse_req_userdata(req)); }

  // Inodes: 1 the root, 2 + i file i.
  static struct stat attr_of(fuse_ino_t ino) {
    struct stat st {};
    st.st_ino = ino;
    if (ino == FUSE_ROOT_ID) {
      st.st_mode = S_IFDIR | 0555;
      st.st_nlink = 2;
    } else {
      st.st_mode = S_IFREG | 0444;
      st.st_nlink = 1;
      st.st_size = size;
    }
    return st;
  }

  static void lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    std::size_t i = 0;
    if (parent != FUSE_ROOT_ID || name[0] != 'f' || std::sscanf(name + 1, "%zu", &i) != 1 || i >= files) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    fuse_entry_param e{};
    e.ino = 2 + i;
    e.attr = attr_of(e.ino);
    fuse_reply_entry(req, &e);
  }

  static void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    const struct stat st = attr_of(ino);
    fuse_reply_attr(req, &st, 0);
  }

  static void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (ino == FUSE_ROOT_ID) {
      fuse_reply_err(req, EISDIR);
      return;
    }
    fi->direct_io = 1;  // every read reaches us: nothing is served from the page cache
    fuse_reply_open(req, fi);
  }

  static void read(fuse_req_t req, fuse_ino_t ino, size_t want, off_t off, fuse_file_info*) {
    flaky_fs& fs = self(req);
    fs.reads_seen.fetch_add(1);
    // A failure consumed per request: fetch_sub past zero means none left.
    if (fs.fail_reads.fetch_sub(1) > 0) {
      fuse_reply_err(req, fs.fail_errno.load());
      return;
    }
    const std::size_t file = ino - 2;
    const std::size_t from = std::min<std::size_t>(static_cast<std::size_t>(off), size);
    const std::size_t n = std::min(want, size - from);
    std::vector<std::byte> out(n);
    for (std::size_t k = 0; k < n; ++k) out[k] = expected(file, from + k);
    fuse_reply_buf(req, reinterpret_cast<const char*>(out.data()), n);
  }

  std::string m_mountpoint;
  fuse_session* m_session = nullptr;
  std::thread m_loop;
};

bool holds_file(std::span<const std::byte> got, std::size_t file) {
  if (got.size() != flaky_fs::size) return false;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (got[k] != flaky_fs::expected(file, k)) return false;
  return true;
}

// The backends to run each case on: io_uring where this kernel allows it, and pread.
std::vector<backend> backends() {
  std::vector<backend> out;
  if (ringfeed::io::ring::unavailable_reason().empty()) out.push_back(backend::uring);
  out.push_back(backend::pread);
  return out;
}

const char* name_of(backend kind) { return kind == backend::uring ? "io_uring" : "pread"; }

std::unique_ptr<reader> make_reader(ringfeed::thread_pool& pool, backend kind, unsigned retries,
                                    std::chrono::milliseconds deadline = {}) {
  ringfeed::io::reader_options o;
  o.kind = kind;
  o.depth = 4;
  o.retry.retries = retries;
  o.retry.backoff = std::chrono::milliseconds(20);
  o.retry.deadline = deadline;
  return reader::create(pool, std::move(o));
}

}  // namespace

TEST_CASE("transient EIO from a mounted file system is retried with back-off; the bytes arrive intact",
          "[reader][retry]") {
  ringfeed::test::watchdog dog("flaky fs retries", std::chrono::seconds(60));
  ringfeed::test::temp_dir dir;
  flaky_fs fs(dir.path().string());
  ringfeed::thread_pool pool(2);
  for (backend kind : backends()) {
    INFO(name_of(kind));
    auto r = make_reader(pool, kind, 3);
    read_buffer buffer;
    fs.reads_seen = 0;
    fs.fail_reads = 2;  // the first two attempts fail, the third succeeds
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(holds_file(ringfeed::sync_wait(r->read_file(fs.path(1), buffer)), 1));
    const auto waited = std::chrono::steady_clock::now() - t0;
    REQUIRE(r->stats().retries == 2);
    REQUIRE(waited >= std::chrono::milliseconds(20 + 40));  // backed off 20 ms, then 40 ms
    REQUIRE(fs.reads_seen.load() >= 3);
    // With nothing failing, every file reads in one go.
    for (std::size_t i = 0; i < flaky_fs::files; ++i)
      REQUIRE(holds_file(ringfeed::sync_wait(r->read_file(fs.path(i), buffer)), i));
    REQUIRE(r->stats().retries == 2);
    REQUIRE(r->stats().files == 1 + flaky_fs::files);
  }
}

TEST_CASE("retries are bounded: a file that keeps failing is an error naming it after retries + 1 attempts",
          "[reader][retry]") {
  ringfeed::test::watchdog dog("flaky fs bound", std::chrono::seconds(60));
  ringfeed::test::temp_dir dir;
  flaky_fs fs(dir.path().string());
  ringfeed::thread_pool pool(2);
  for (backend kind : backends()) {
    INFO(name_of(kind));
    auto r = make_reader(pool, kind, 2);
    read_buffer buffer;
    fs.reads_seen = 0;
    fs.fail_reads = 1'000'000;
    try {
      (void)ringfeed::sync_wait(r->read_file(fs.path(2), buffer));
      FAIL("a file whose every read fails was read");
    } catch (const std::system_error& e) {
      REQUIRE(e.code().value() == EIO);
      REQUIRE_THAT(e.what(), Catch::Contains(fs.path(2)));
    }
    REQUIRE(fs.reads_seen.load() == 3);  // the first attempt and 2 retries, no more
    REQUIRE(r->stats().retries == 2);
    fs.fail_reads = 0;
    REQUIRE(holds_file(ringfeed::sync_wait(r->read_file(fs.path(2), buffer)), 2));  // and it recovers
  }
}

TEST_CASE("a tar-range read keeps the deadline: retries stop when the next one could not start in time",
          "[reader][retry][deadline]") {
  ringfeed::test::watchdog dog("flaky fs range deadline", std::chrono::seconds(60));
  ringfeed::test::temp_dir dir;
  flaky_fs fs(dir.path().string());
  ringfeed::thread_pool pool(2);
  for (backend kind : backends()) {
    INFO(name_of(kind));
    // Back-off 20, 40, 80 ms fits the 200 ms deadline; the fourth retry
    // (160 ms more) would start past it. Without the deadline all 6 retries
    // are made (20 + 40 + … + 640 ms).
    auto r = make_reader(pool, kind, 6, std::chrono::milliseconds(200));
    const reader::handle shard = r->open(fs.path(3));
    read_buffer buffer;
    fs.fail_reads = 1'000'000;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      (void)ringfeed::sync_wait(r->read_range(shard, 1000, 4000, buffer));
      FAIL("a range whose every read fails was read");
    } catch (const std::system_error& e) {
      REQUIRE(e.code().value() == EIO);
      REQUIRE_THAT(e.what(), Catch::Contains(fs.path(3)));
    }
    const auto waited = std::chrono::steady_clock::now() - t0;
    REQUIRE(r->stats().retries == 3);
    REQUIRE(waited < std::chrono::milliseconds(200 + 500));  // the deadline, plus scheduling slack
    fs.fail_reads = 0;
    const auto bytes = ringfeed::sync_wait(r->read_range(shard, 1000, 4000, buffer));
    REQUIRE(bytes.size() == 4000);
    for (std::size_t k = 0; k < bytes.size(); ++k) REQUIRE(bytes[k] == flaky_fs::expected(3, 1000 + k));
  }
}

TEST_CASE("an error that is not transient is not retried", "[reader][retry]") {
  ringfeed::test::temp_dir dir;
  flaky_fs fs(dir.path().string());
  ringfeed::thread_pool pool(1);
  for (backend kind : backends()) {
    INFO(name_of(kind));
    auto r = make_reader(pool, kind, 3);
    read_buffer buffer;
    fs.reads_seen = 0;
    fs.fail_errno = EACCES;
    fs.fail_reads = 1;
    REQUIRE_THROWS_WITH(ringfeed::sync_wait(r->read_file(fs.path(0), buffer)),
                        Catch::Contains(fs.path(0)) && Catch::Contains("denied"));
    REQUIRE(fs.reads_seen.load() == 1);
    REQUIRE(r->stats().retries == 0);
    fs.fail_errno = EIO;
    fs.fail_reads = 0;
    REQUIRE_THROWS_WITH(ringfeed::sync_wait(r->read_file(fs.path(9), buffer)),
                        Catch::Contains(fs.path(9)) && Catch::Contains("No such file"));
    REQUIRE(r->stats().retries == 0);
  }
}
