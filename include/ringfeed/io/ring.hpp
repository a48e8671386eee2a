// ringfeed::io::ring — an io_uring reactor with its own thread.
//
// Coroutines on any thread start operations (openat, statx, read_at, close);
// each operation object lives in the awaiting coroutine's frame and is linked
// into a lock-free submission list. The ring thread moves everything queued
// into SQEs and submits them with one io_uring_enter, reaps completions in
// batches (collect, advance the CQ, and only then act on them), retries
// -EINTR/-EAGAIN and continues short reads itself, and posts the finished
// operations' coroutines to the executor given at construction (a
// thread_pool).
//
// A coroutine may also move onto the ring thread (`co_await r.schedule()`).
// Operations started from the ring thread complete there: after a batch of
// completions is reaped and the CQ advanced, their coroutines are resumed on
// the ring thread, start their next operations, and everything they started
// goes to the kernel in one io_uring_enter. This is the fast path for chains
// of small I/O (open, statx, read, close), as fio does it: no cross-thread
// hand-off per step. Such coroutines must only do light work there and hop
// to the pool (`co_await pool.schedule()`) for anything heavy.
//
// Whole small files in one submission (`read_file`): openat into a slot of
// the ring's registered file table, a read of that slot and a close of it go
// to the kernel as one linked chain (IOSQE_IO_LINK, then IOSQE_IO_HARDLINK
// so the close runs whatever the read gave), and the coroutine is resumed
// once, when all three are done: one round trip per file instead of three.
// Direct descriptors are what makes the link possible: the read names the
// slot, which is known before the open completes. Available where the
// kernel can register a sparse file table (Linux 5.19) and the ring has no
// deadline (linked timeouts need each step on its own); `linked_reads()`
// says so, and callers use openat/read/close otherwise.
//
// Shape follows libunifex's io_uring_context and Seastar's reactor backend.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/executor.hpp>

struct io_uring_sqe;  // liburing stays out of the public interface

namespace ringfeed::io {

/// Thrown by ring's constructor when io_uring cannot be used in this process
/// (blocked by seccomp, disabled by sysctl, missing from the kernel, or
/// lacking an operation ringfeed needs). what() says why and how to enable
/// it; code() carries the errno. Callers fall back to plain syscalls.
class ring_unavailable : public std::system_error {
 public:
  using std::system_error::system_error;
};

/// An owned file descriptor plus the path it was opened from (for errors).
/// Move-only; the destructor closes a still-open descriptor with close(2).
class file {
 public:
  file() noexcept = default;
  file(int fd, std::string path) noexcept : m_fd(fd), m_path(std::move(path)) {}

  [[nodiscard]] int fd() const noexcept { return m_fd.get(); }
  [[nodiscard]] const std::string& path() const noexcept { return m_path; }
  [[nodiscard]] bool is_open() const noexcept { return static_cast<bool>(m_fd); }
  /// Gives up ownership: the caller must close the returned descriptor.
  [[nodiscard]] int release() noexcept { return m_fd.release(); }

 private:
  ringfeed::detail::unique_fd m_fd;
  std::string m_path;
};

/// What statx reports that ringfeed uses.
struct file_info {
  std::uint64_t size = 0;
  std::uint32_t mode = 0;
  std::uint32_t block_size = 0;  // preferred I/O size
  std::int64_t mtime_ns = 0;
};

struct ring_options {
  /// Submission queue entries (rounded up to a power of two by the kernel);
  /// the completion queue has twice as many, and at most that many
  /// operations are in the kernel at once (the rest wait their turn).
  unsigned entries = 256;
  /// Kernel-side submission polling. Off by default: it burns a core.
  bool sqpoll = false;
  unsigned sqpoll_idle_ms = 50;
  /// Deadline of each openat, statx and read, enforced in the kernel by a
  /// linked timeout (IORING_OP_LINK_TIMEOUT): past it the operation is
  /// cancelled and fails with ETIMEDOUT. For network file systems, where a
  /// dead server would otherwise block a read for minutes. 0: none.
  std::chrono::nanoseconds deadline{0};
  /// Register a sparse file table so that read_file can link openat, read
  /// and close (ignored with a deadline, or where the kernel refuses).
  bool linked_reads = true;
};

/// Counters, read with relaxed loads: a consistent snapshot only when idle.
struct ring_stats {
  std::uint64_t submitted = 0;      // SQEs handed to the kernel (retries included)
  std::uint64_t completed = 0;      // operations finished and posted
  std::uint64_t retries = 0;        // resubmissions: EINTR, EAGAIN, short reads
  std::uint64_t enter_calls = 0;    // io_uring_submit / submit_and_wait calls
  std::uint64_t timeouts = 0;      // operations cancelled by ring_options::deadline
};

class ring {
  struct state;  // the ring thread's state, in ring.cpp

 public:
  /// Sets up the ring and starts its thread. Completed operations resume on
  /// `resume_on`, which must outlive the ring.
  /// Throws ring_unavailable if io_uring cannot be used here.
  explicit ring(executor& resume_on, ring_options options = {});

  /// Lets every operation already started finish and posts its coroutine,
  /// then stops the thread. Must not run while another thread may still
  /// start operations on this ring.
  ~ring();

  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  /// Base of every operation: the awaitable's state while the kernel has it.
  /// Each kind prepares its own SQEs and applies its own completions (on
  /// the ring thread), so adding a kind edits no central switch.
  class operation {
   public:
    operation(const operation&) = delete;
    operation& operator=(const operation&) = delete;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept;

   protected:
    /// What one completion did to an operation.
    enum class outcome : std::uint8_t {
      done,     ///< finished: resume its coroutine
      waiting,  ///< more completions of its chain are to come
      again,    ///< submit it again (EINTR, EAGAIN, a short read)
    };
    /// `cqes`: completions one submission posts, 0 for an operation that
    /// never enters the kernel (schedule). `deadline_bound`: a linked
    /// timeout enforces ring_options::deadline on it.
    operation(ring& r, std::uint8_t cqes, bool deadline_bound) noexcept
        : m_ring(&r), m_cqes(cqes), m_deadline_bound(deadline_bound) {}
    virtual ~operation() = default;  // never deleted through a base pointer; virtual for -Wnon-virtual-dtor
    /// Throws std::system_error(m_error, "<verb> '<path>'") if it failed.
    void throw_if_failed(std::string_view verb, std::string_view path) const;

    // The ring thread's side (ring thread only).
    /// Whether it can be prepared now; false holds it, and the operations
    /// behind it, until a completion.
    [[nodiscard]] virtual bool can_prepare(const state&) const noexcept { return true; }
    /// Fills its SQEs, `sqe` the first: one per completion it posts, plus
    /// the linked timeout of a deadline-bound operation (the ring made room
    /// for all of them), and tags each with its user_data.
    virtual void prepare(state& s, io_uring_sqe* sqe) noexcept = 0;
    /// Applies one completion: `res` is the CQE's, `step` the low bits of
    /// its user_data (which step of a chain). The default retries EINTR and
    /// EAGAIN and records any other error.
    [[nodiscard]] virtual outcome complete(state& s, std::uint64_t step, int res) noexcept;

    ring* m_ring;
    int m_error = 0;  // errno on failure

   private:
    friend class ring;
    work_item m_item;
    operation* m_next = nullptr;  // submission list link
    std::uint8_t m_cqes;
    bool m_deadline_bound;
    bool m_resume_on_ring = false;  // started on the ring thread: resume it there
  };

  class schedule_operation final : public operation {
   public:
    explicit schedule_operation(ring& r) noexcept : operation(r, 0, false) {}
    void await_resume() const noexcept {}

   private:
    void prepare(state&, io_uring_sqe*) noexcept override {}  // never called: no kernel
  };

  class openat_operation final : public operation {
   public:
    openat_operation(ring& r, int dirfd, std::string path, int flags, unsigned mode)
        : operation(r, 1, true), m_dirfd(dirfd), m_path(std::move(path)), m_flags(flags), m_mode(mode) {}
    /// The opened file; throws std::system_error naming the path on failure.
    file await_resume();

   private:
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    outcome complete(state& s, std::uint64_t step, int res) noexcept override;
    int m_dirfd;
    std::string m_path;
    int m_flags;
    unsigned m_mode;
    int m_fd = -1;
  };

  class statx_operation final : public operation {
   public:
    statx_operation(ring& r, int dirfd, std::string path, int at_flags, std::string_view error_path)
        : operation(r, 1, true), m_dirfd(dirfd), m_path(std::move(path)), m_at_flags(at_flags),
          m_error_path(error_path) {}
    /// Throws std::system_error naming the path on failure.
    file_info await_resume();

   private:
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    int m_dirfd;
    std::string m_path;
    int m_at_flags;
    std::string_view m_error_path;
    alignas(8) std::byte m_statx[256];  // struct statx, kept out of this header
  };

  class read_operation final : public operation {
   public:
    read_operation(ring& r, int fd, std::span<std::byte> buffer, std::uint64_t offset,
                   std::string_view error_path, bool once = false) noexcept
        : operation(r, 1, true), m_fd(fd), m_buffer(buffer), m_offset(offset), m_error_path(error_path),
          m_once(once) {}
    /// Bytes read: buffer.size(), or fewer only at end of file (read_at); what
    /// one read(2) gave (read_some_at). Throws std::system_error naming the
    /// path on failure.
    std::size_t await_resume();

   private:
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    outcome complete(state& s, std::uint64_t step, int res) noexcept override;
    int m_fd;
    std::span<std::byte> m_buffer;
    std::uint64_t m_offset;
    std::string_view m_error_path;
    std::size_t m_done = 0;
    bool m_once = false;
  };

  class read_file_operation final : public operation {
   public:
    read_file_operation(ring& r, const std::string& path, int flags, std::span<std::byte> buffer) noexcept
        : operation(r, 3, false), m_path(&path), m_flags(flags), m_buffer(buffer) {}
    /// On a ring without linked_reads() it completes at once with EOPNOTSUPP.
    bool await_ready() noexcept;
    /// Bytes the one read gave: fewer than buffer.size() is the end of the
    /// file (for O_DIRECT, a count that is not block aligned); all of it
    /// may mean more follows, which the caller reads with openat/read_at.
    /// The file is closed either way. Throws std::system_error naming the
    /// path ("open '…'" or "read '…' at offset 0").
    std::size_t await_resume();

   private:
    bool can_prepare(const state& s) const noexcept override;
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    outcome complete(state& s, std::uint64_t step, int res) noexcept override;
    const std::string* m_path;  // the caller's, alive until resumed
    int m_flags;
    std::span<std::byte> m_buffer;
    int m_open_res = 0;
    int m_read_res = 0;
    unsigned m_slot = 0;
    std::uint8_t m_pending_cqes = 0;  // of the chain's three
  };

  class sleep_operation final : public operation {
   public:
    sleep_operation(ring& r, std::chrono::nanoseconds d) noexcept : operation(r, 1, false), m_duration(d) {}
    void await_resume() const noexcept {}

   private:
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    outcome complete(state& s, std::uint64_t step, int res) noexcept override;
    std::chrono::nanoseconds m_duration;
    alignas(8) std::byte m_timespec[16];  // struct __kernel_timespec
  };

  class close_operation final : public operation {
   public:
    close_operation(ring& r, file&& f) noexcept
        : operation(r, 1, false), m_path(f.path()), m_fd(f.release()) {}
    /// Throws std::system_error naming the path if close(2) reported an
    /// error (the descriptor is released either way).
    void await_resume();

   private:
    void prepare(state& s, io_uring_sqe* sqe) noexcept override;
    std::string m_path;
    int m_fd;
  };

  /// Opens `path` (relative paths against `dirfd`). Any thread.
  [[nodiscard]] openat_operation openat(std::string path, int flags = 0 /* O_RDONLY */,
                                        unsigned mode = 0, int dirfd = -100 /* AT_FDCWD */) {
    return openat_operation{*this, dirfd, std::move(path), flags, mode};
  }

  /// statx of a path (follows symlinks). Any thread.
  [[nodiscard]] statx_operation statx(std::string path) {
    return statx_operation{*this, -100, path, 0, {}};
  }
  /// statx of an open file. `f` must outlive the operation. Any thread.
  [[nodiscard]] statx_operation statx(const file& f);

  /// Offset meaning "the descriptor's current position", for pipes and other
  /// streams (the position then advances as io_uring reads).
  static constexpr std::uint64_t stream_position = ~std::uint64_t{0};

  /// Reads up to buffer.size() bytes at `offset`, continuing short reads until
  /// the buffer is full or the file ends. `f` and `buffer` must outlive the
  /// operation. Any thread.
  [[nodiscard]] read_operation read_at(const file& f, std::span<std::byte> buffer, std::uint64_t offset) noexcept {
    return read_operation{*this, f.fd(), buffer, offset, f.path()};
  }
  /// One read(2) of up to buffer.size() bytes at `offset`: a short count is
  /// returned as is (end of file, or for O_DIRECT a read the caller
  /// continues at an aligned offset). Saves the extra read that read_at
  /// needs to see end of file. Any thread.
  [[nodiscard]] read_operation read_some_at(const file& f, std::span<std::byte> buffer, std::uint64_t offset) noexcept {
    return read_operation{*this, f.fd(), buffer, offset, f.path(), true};
  }
  [[nodiscard]] read_operation read_some_at(int fd, std::span<std::byte> buffer, std::uint64_t offset) noexcept {
    return read_operation{*this, fd, buffer, offset, {}, true};
  }
  /// Opens `path` with `flags`, reads up to buffer.size() bytes from offset
  /// 0 and closes it, as one linked chain (see the top of this file).
  /// Requires linked_reads(). `path` and `buffer` must outlive the
  /// operation. Any thread.
  [[nodiscard]] read_file_operation read_file(const std::string& path, int flags,
                                              std::span<std::byte> buffer) noexcept {
    return read_file_operation{*this, path, flags, buffer};
  }
  /// Whether read_file may be used on this ring.
  [[nodiscard]] bool linked_reads() const noexcept;

  /// Resumes after `d` (an io_uring timeout: no thread sleeps). Any thread.
  [[nodiscard]] sleep_operation sleep_for(std::chrono::nanoseconds d) noexcept { return sleep_operation{*this, d}; }

  /// As above, for a bare descriptor (errors then name the descriptor).
  [[nodiscard]] read_operation read_at(int fd, std::span<std::byte> buffer, std::uint64_t offset) noexcept {
    return read_operation{*this, fd, buffer, offset, {}};
  }

  /// Closes `f` on the ring (it no longer owns the descriptor). Any thread.
  [[nodiscard]] close_operation close(file&& f) noexcept { return close_operation{*this, std::move(f)}; }

  /// `co_await r.schedule()` continues the coroutine on the ring thread.
  /// Any thread.
  [[nodiscard]] schedule_operation schedule() noexcept { return schedule_operation{*this}; }

  /// True when called on this ring's thread.
  [[nodiscard]] bool on_ring_thread() const noexcept;

  [[nodiscard]] ring_stats stats() const noexcept;

  /// Human-readable reason io_uring cannot be used here, or empty if it can.
  /// Tries to set up (and tears down) a tiny ring.
  [[nodiscard]] static std::string unavailable_reason();

 private:
  void submit(operation& op) noexcept;
  void run();

  std::unique_ptr<state> m_state;
  std::thread m_thread;
};

}  // namespace ringfeed::io
