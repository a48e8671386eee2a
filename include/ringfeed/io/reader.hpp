// ringfeed::io::reader — how the loader (and `ringfeed bench`) get a
// sample's bytes, whatever the storage: one interface, three backends.
//
//  - io_uring: openat → read → close on one ring, `depth` files in flight,
//    no statx (a read that comes back short is the end of the file), and one
//    read at an offset for a range of a file held open (tar shards). Local
//    files go to the kernel as one linked chain each (ring::read_file: the
//    open lands in a registered file slot that the read and close name), so
//    a file that fits the buffer costs one submission and one wake-up.
//  - pread: the same on a pool of threads doing blocking calls, for where
//    io_uring cannot be set up (Docker's default seccomp profile, ENOSYS,
//    kernel.io_uring_disabled); backend::automatic falls back to it with one
//    log line saying why and how to enable io_uring.
//  - nfs: `nfs://server/export/...` paths through libnfs (see nfs.hpp),
//    chosen by the path, beside either of the above for local paths.
//
// O_DIRECT (`direct`): reads bypass the page cache into 4096-byte aligned
// buffers, in whole aligned blocks; the file's end is the first read that
// comes back short of a block. A file system that refuses O_DIRECT (EINVAL:
// tmpfs, overlayfs on some kernels, FUSE) is read buffered from then on, and
// one log line says so. Network file systems are always read buffered.
//
// Network file systems (`network` set: the loader sets it for kernel NFS
// and CIFS mounts, which its storage probe finds by statfs): each openat and
// read carries a deadline (an io_uring linked timeout), and transient errors
// are retried with back-off inside it: retry_policy::network() (retry.hpp),
// the same policy for whole files and tar ranges, settable anywhere; so a
// dead server yields an error naming the file instead of a hang. The pread
// backend cannot interrupt a blocked read(2): there the deadline is checked
// between retries only.
//
// Thread safety: read_file and read_range may be awaited from any number of
// coroutines at once. Each call resumes its caller on `resume_on`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <ringfeed/io/buffer.hpp>
#include <ringfeed/log.hpp>
#include <ringfeed/io/retry.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

namespace ringfeed::io {

/// Which I/O path reads local files.
enum class backend : std::uint8_t {
  automatic,  ///< io_uring, else pread threads (with one log line saying why)
  uring,      ///< io_uring or ring_unavailable
  pread,      ///< a pool of threads doing open/pread/close
};

/// The user-facing names: "auto", "uring", "pread". Throws
/// std::invalid_argument naming `name` and listing the accepted names.
[[nodiscard]] backend parse_backend(std::string_view name);

/// How local files are read: what a reader takes, and what an io::source
/// (source.hpp) passes on to the reader of a local location.
struct read_options {
  backend kind = backend::automatic;
  /// Reads in flight the reader is sized for (ring entries; pread threads);
  /// 0: 64 for a reader, the storage's recommendation for a source.
  std::size_t depth = 0;
  /// Threads doing blocking reads for backend::pread; 0: min(depth, 16).
  std::size_t pread_threads = 0;
  /// O_DIRECT reads (bypass the page cache). Buffered where refused, with
  /// one log line.
  bool direct = false;
  /// Deadline per operation and retries of transient errors (retry.hpp);
  /// fields left 0 take the storage's defaults: none locally,
  /// retry_policy::network() on network storage.
  retry_policy retry{};
  /// Where one-off notices go (fallbacks, refusals). Empty: stderr.
  log_sink log;
};

struct reader_options : read_options {
  /// The files are on a network file system: buffered reads, read until a
  /// read returns 0, deadline and retries on (see above).
  bool network = false;
};

using reader_stats = read_counters;

class reader {
 public:
  /// Handle of a file held open for read_range.
  using handle = std::size_t;

  /// A reader whose reads resume on `resume_on` (which must outlive it).
  /// Throws ring_unavailable for backend::uring without io_uring.
  static std::unique_ptr<reader> create(thread_pool& resume_on, reader_options options);

  virtual ~reader();
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// "io_uring" or "pread".
  [[nodiscard]] virtual std::string_view backend_name() const noexcept = 0;
  /// Whether reads still bypass the page cache (false once refused).
  [[nodiscard]] bool direct() const noexcept;

  /// The whole file at `path`, read into `buffer` (grown as needed, never
  /// shrunk). Returns a view of the bytes, valid until `buffer` is reused.
  /// Throws std::system_error naming the file and the reason.
  [[nodiscard]] task<std::span<const std::byte>> read_file(const std::string& path, read_buffer& buffer);

  /// Opens `path` to be read in ranges for the reader's life (tar shards).
  /// Blocking; any thread. Throws std::system_error naming the file.
  handle open(const std::string& path);
  /// `size` bytes at `offset` of an opened file. A file ending first is an
  /// error (EIO, "ends at byte N").
  [[nodiscard]] task<std::span<const std::byte>> read_range(handle h, std::uint64_t offset, std::size_t size,
                                                            read_buffer& buffer);

  [[nodiscard]] reader_stats stats() const noexcept;

 protected:
  struct state;
  explicit reader(thread_pool& resume_on, reader_options options);

  /// One attempt, no retries. Backends implement these.
  virtual task<std::span<const std::byte>> read_file_once(const std::string& path, read_buffer& buffer,
                                                          bool direct) = 0;
  virtual task<std::span<const std::byte>> read_range_once(int fd, const std::string& path,
                                                           std::uint64_t offset, std::size_t size,
                                                           read_buffer& buffer, bool direct) = 0;
  /// One attempt after another, as the retry policy allows; counts the
  /// success in `done` (files or ranges).
  task<std::span<const std::byte>> retrying(const std::function<task<std::span<const std::byte>>()>& attempt_once,
                                            std::atomic<std::uint64_t>& done);
  /// Waits `d` before a retry without holding a thread where possible.
  virtual task<> back_off(std::chrono::milliseconds d) = 0;

  /// Called by a backend when O_DIRECT was refused for `path` (EINVAL).
  void refuse_direct(const std::string& path) noexcept;
  void log(std::string_view line) const;

  thread_pool& m_resume_on;
  reader_options m_options;
  std::unique_ptr<state> m_state;
};

}  // namespace ringfeed::io
