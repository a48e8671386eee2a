#include <ringfeed/io/reader.hpp>
#include <ringfeed/text.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include <ringfeed/io/ring.hpp>

#include "io/uring/read_plan.hpp"

namespace ringfeed::io {

using detail::read_plan;

namespace {

constexpr int read_flags = O_RDONLY | O_CLOEXEC;

int errno_of(const std::system_error& e) noexcept { return retry_policy::errno_of(e); }

std::system_error read_error(int err, const std::string& path, std::uint64_t offset) {
  return std::system_error(err, std::system_category(),
                           "read '" + escape_bytes(path) + "' at offset " + std::to_string(offset));
}

}  // namespace

struct reader::state {
  std::atomic<bool> direct{false};
  std::atomic<bool> refusal_logged{false};
  std::atomic<std::uint64_t> files{0}, ranges{0}, bytes{0}, retries{0}, timeouts{0};
  std::mutex opened_mutex;
  std::deque<file> opened;  // deque: references stay valid as it grows
};

reader::reader(thread_pool& resume_on, reader_options options)
    : m_resume_on(resume_on), m_options(std::move(options)), m_state(std::make_unique<state>()) {
  if (m_options.network) {
    if (m_options.direct) log("the files are on a network file system: reading them buffered, not with O_DIRECT");
    m_options.direct = false;
    m_options.retry = m_options.retry.or_defaults(retry_policy::network());
  }
  m_state->direct.store(m_options.direct, std::memory_order_relaxed);
}

reader::~reader() = default;

bool reader::direct() const noexcept { return m_state->direct.load(std::memory_order_relaxed); }

void reader::log(std::string_view line) const { log_line(m_options.log, line); }

void reader::refuse_direct(const std::string& path) noexcept {
  m_state->direct.store(false, std::memory_order_relaxed);
  if (!m_state->refusal_logged.exchange(true, std::memory_order_relaxed)) {
    try {
      log("O_DIRECT refused for '" + escape_bytes(path) +
          "' (EINVAL: the file system does not support direct I/O); reading buffered");
    } catch (...) {  // logging must not fail a read
    }
  }
}

reader_stats reader::stats() const noexcept {
  const state& s = *m_state;
  return {s.files.load(std::memory_order_relaxed), s.ranges.load(std::memory_order_relaxed),
          s.bytes.load(std::memory_order_relaxed), s.retries.load(std::memory_order_relaxed),
          s.timeouts.load(std::memory_order_relaxed)};
}

reader::handle reader::open(const std::string& path) {
  int fd = -1;
  if (direct()) {
    fd = ::open(path.c_str(), read_flags | O_DIRECT);
    if (fd < 0 && errno == EINVAL) refuse_direct(path);
  }
  if (fd < 0) fd = ::open(path.c_str(), read_flags);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "open '" + escape_bytes(path) + "'");
  std::lock_guard lock(m_state->opened_mutex);
  m_state->opened.emplace_back(fd, path);
  return m_state->opened.size() - 1;
}

// Both entry points: one attempt, then the retry policy (retry.hpp):
// transient errors retried with exponential back-off, never past the deadline.
task<std::span<const std::byte>> reader::retrying(const std::function<task<std::span<const std::byte>>()>& attempt_once,
                                                  std::atomic<std::uint64_t>& done) {
  const auto start = std::chrono::steady_clock::now();
  const retry_policy& policy = m_options.retry;
  for (unsigned attempt = 0;; ++attempt) {
    std::exception_ptr error;
    int err = 0;
    try {
      const std::span<const std::byte> out = co_await attempt_once();
      done.fetch_add(1, std::memory_order_relaxed);
      m_state->bytes.fetch_add(out.size(), std::memory_order_relaxed);
      co_return out;
    } catch (const std::system_error& e) {
      error = std::current_exception();
      err = retry_policy::errno_of(e);
    }
    if (err == ETIMEDOUT) m_state->timeouts.fetch_add(1, std::memory_order_relaxed);
    if (!policy.may_retry(err, attempt, std::chrono::steady_clock::now() - start)) std::rethrow_exception(error);
    m_state->retries.fetch_add(1, std::memory_order_relaxed);
    co_await back_off(policy.delay(attempt));
  }
}

task<std::span<const std::byte>> reader::read_file(const std::string& path, read_buffer& buffer) {
  co_return co_await retrying([&] { return read_file_once(path, buffer, direct()); }, m_state->files);
}

task<std::span<const std::byte>> reader::read_range(handle h, std::uint64_t offset, std::size_t size,
                                                    read_buffer& buffer) {
  const file* f = nullptr;
  {
    std::lock_guard lock(m_state->opened_mutex);
    if (h >= m_state->opened.size()) throw std::out_of_range("ringfeed::io::reader: no open file " + std::to_string(h));
    f = &m_state->opened[h];
  }
  // A file opened with O_DIRECT stays so: its flag decides, not direct().
  const int fl = ::fcntl(f->fd(), F_GETFL);
  const bool direct = fl >= 0 && (fl & O_DIRECT) != 0;
  co_return co_await retrying([&] { return read_range_once(f->fd(), f->path(), offset, size, buffer, direct); },
                              m_state->ranges);
}

namespace {

// --- io_uring ------------------------------------------------------------------

class uring_reader final : public reader {
 public:
  uring_reader(thread_pool& resume_on, reader_options options, const ring_options& ro)
      : reader(resume_on, std::move(options)), m_ring(resume_on, ro) {}

  std::string_view backend_name() const noexcept override { return "io_uring"; }

 protected:
  task<std::span<const std::byte>> read_file_once(const std::string& path, read_buffer& buffer,
                                                  bool direct) override {
    std::exception_ptr error;
    int err = 0;
    read_plan plan = read_plan::whole(buffer, direct, m_options.network);
    if (m_ring.linked_reads() && !m_options.network) {
      // Open, read and close in one linked submission; a file larger than
      // the buffer (or an O_DIRECT read that ended on a block boundary)
      // goes on below from where this read stopped.
      std::size_t n = 0;
      try {
        n = co_await m_ring.read_file(path, read_flags | (direct ? O_DIRECT : 0), plan.next());
      } catch (const std::system_error& e) {
        error = std::current_exception();
        err = errno_of(e);
      }
      if (error) {
        if (!(direct && err == EINVAL)) std::rethrow_exception(error);
        refuse_direct(path);  // refused by the open or by the read itself
        co_return co_await read_file_once(path, buffer, false);
      }
      if (plan.advance(n)) co_return plan.result(path);
    }
    file f;
    try {
      f = co_await m_ring.openat(path, read_flags | (direct ? O_DIRECT : 0));
    } catch (const std::system_error& e) {
      error = std::current_exception();
      err = errno_of(e);
    }
    if (error) {
      if (!(direct && err == EINVAL)) std::rethrow_exception(error);
      refuse_direct(path);
      co_return co_await read_file_once(path, buffer, false);
    }
    for (;;) {
      const std::span<std::byte> dst = plan.next();
      std::size_t n = 0;
      try {
        n = co_await m_ring.read_some_at(f, dst, plan.offset());
      } catch (const std::system_error& e) {
        error = std::current_exception();
        err = errno_of(e);
      }
      if (error) {
        if (!(direct && err == EINVAL && plan.first())) std::rethrow_exception(error);
        refuse_direct(path);  // opened, but the file system refuses the read itself
        f = file();
        co_return co_await read_file_once(path, buffer, false);
      }
      if (plan.advance(n)) break;
    }
    co_await m_ring.close(std::move(f));
    co_return plan.result(path);
  }

  task<std::span<const std::byte>> read_range_once(int fd, const std::string& path, std::uint64_t offset,
                                                   std::size_t size, read_buffer& buffer, bool direct) override {
    read_plan plan = read_plan::range(buffer, offset, size, direct);
    for (;;) {
      const std::span<std::byte> dst = plan.next();
      std::size_t n = 0;
      try {
        n = co_await m_ring.read_some_at(fd, dst, plan.offset());
      } catch (const std::system_error& e) {
        throw read_error(e.code().value(), path, plan.offset());  // the ring names the descriptor only
      }
      if (plan.advance(n)) break;
    }
    co_return plan.result(path);
  }

  task<> back_off(std::chrono::milliseconds d) override { co_await m_ring.sleep_for(d); }

 private:
  ring m_ring;
};

// --- pread threads -------------------------------------------------------------

class pread_reader final : public reader {
 public:
  pread_reader(thread_pool& resume_on, reader_options options, std::size_t threads)
      : reader(resume_on, std::move(options)), m_io(threads) {}

  std::string_view backend_name() const noexcept override { return "pread"; }

 protected:
  task<std::span<const std::byte>> read_file_once(const std::string& path, read_buffer& buffer,
                                                  bool direct) override {
    co_return co_await on_io_thread([&] { return read_file_blocking(path, buffer, direct); });
  }

  task<std::span<const std::byte>> read_range_once(int fd, const std::string& path, std::uint64_t offset,
                                                   std::size_t size, read_buffer& buffer, bool direct) override {
    co_return co_await on_io_thread([&] {
      read_plan plan = read_plan::range(buffer, offset, size, direct);
      while (!plan.advance(read_some(fd, path, plan))) {
      }
      return plan.result(path);
    });
  }

  task<> back_off(std::chrono::milliseconds d) override {
    co_await m_io.schedule();  // sleeps an I/O thread, never a decode thread
    std::this_thread::sleep_for(d);
    co_await m_resume_on.schedule();
  }

 private:
  // Runs `fn` on an I/O thread and resumes on the decode pool, its result
  // or exception with it.
  template <typename Fn>
  task<std::span<const std::byte>> on_io_thread(Fn fn) {
    co_await m_io.schedule();
    std::exception_ptr error;
    std::span<const std::byte> out;
    try {
      out = fn();
    } catch (...) {
      error = std::current_exception();
    }
    co_await m_resume_on.schedule();
    if (error) std::rethrow_exception(error);
    co_return out;
  }

  // One pread(2) of the plan's next span (EINTR retried).
  static std::size_t read_some(int fd, const std::string& path, read_plan& plan) {
    for (;;) {
      const std::span<std::byte> dst = plan.next();
      const ssize_t r = ::pread(fd, dst.data(), dst.size(), static_cast<off_t>(plan.offset()));
      if (r >= 0) return static_cast<std::size_t>(r);
      if (errno != EINTR) throw read_error(errno, path, plan.offset());
    }
  }

  std::span<const std::byte> read_file_blocking(const std::string& path, read_buffer& buffer, bool direct) {
    const int fd = ::open(path.c_str(), read_flags | (direct ? O_DIRECT : 0));
    if (fd < 0) {
      const int err = errno;
      if (direct && err == EINVAL) {
        refuse_direct(path);
        return read_file_blocking(path, buffer, false);
      }
      throw std::system_error(err, std::system_category(), "open '" + escape_bytes(path) + "'");
    }
    const file f(fd, path);  // closes on every way out
    read_plan plan = read_plan::whole(buffer, direct, m_options.network);
    try {
      while (!plan.advance(read_some(fd, path, plan))) {
      }
    } catch (const std::system_error& e) {
      if (!(direct && e.code().value() == EINVAL && plan.first())) throw;
      refuse_direct(path);
      return read_file_blocking(path, buffer, false);
    }
    return plan.result(path);
  }

  thread_pool m_io;
};

}  // namespace

std::unique_ptr<reader> reader::create(thread_pool& resume_on, reader_options options) {
  if (options.depth == 0) options.depth = 64;
  const bool network = options.network;
  if (options.kind != backend::pread) {
    ring_options ro;
    ro.entries = static_cast<unsigned>(std::max<std::size_t>(64, options.depth * 2));
    ro.deadline = (network ? options.retry.or_defaults(retry_policy::network()) : options.retry).deadline;
    try {
      return std::make_unique<uring_reader>(resume_on, options, ro);
    } catch (const ring_unavailable& e) {
      if (options.kind == backend::uring) throw;
      log_line(options.log, std::string("io_uring unavailable, reading with pread threads: ") + e.what());
    }
  }
  const std::size_t threads = options.pread_threads ? options.pread_threads : std::min<std::size_t>(options.depth, 16);
  return std::make_unique<pread_reader>(resume_on, std::move(options), std::max<std::size_t>(threads, 1));
}

}  // namespace ringfeed::io
