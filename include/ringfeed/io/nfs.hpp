// ringfeed::io::nfs_client — `nfs://` reads through libnfs's async API.
//
// One libnfs context (one TCP connection to the server's NFS service, NFSv3)
// is driven by one I/O thread running a Boost.Asio io_context: the context's
// socket is watched for the readiness libnfs asks for (nfs_which_events),
// nfs_service() runs when it comes, and libnfs is touched on that thread
// only (its contexts are not thread-safe). Coroutines on any thread post
// their requests to it; up to `max_in_flight` calls are outstanding on the
// one connection at once, pipelined (requests queued together leave in one
// TCP segment). The steps of one read (open, fstat, pread, close) follow each
// other on the I/O thread without a hand-off per step; the awaiting
// coroutine is resumed on the executor given at construction, never inline.
//
// Every operation (mount, open, fstat, pread, listing) has its own deadline,
// enforced by an Asio timer: past it the operation fails with ETIMEDOUT and
// a reply that arrives later is dropped. ESTALE, EIO, ETIMEDOUT and EAGAIN
// are retried with exponential back-off inside that deadline. libnfs
// reconnects by itself when the server closes the connection; while the
// server cannot be reached, operations fail at once (EIO, naming the file,
// after the configured retries) instead of waiting for it, and reconnecting
// goes on in the background, spaced out, while there is demand.
//
// libnfs 4.0 mounts through the server's portmapper (port 111) unless the
// ports are given in nfs_options.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/executor.hpp>
#include <ringfeed/io/buffer.hpp>
#include <ringfeed/io/retry.hpp>
#include <ringfeed/task.hpp>

namespace ringfeed::io {

struct nfs_options {
  /// Deadline and retries (retry.hpp), per operation (mount, open, fstat,
  /// each pread, close, listing), retries and time spent waiting for a free
  /// slot included: past the deadline the operation fails with ETIMEDOUT
  /// naming the file. The deadline is also libnfs's own RPC timeout
  /// (rounded up to whole seconds, as libnfs 4.0 requires). ESTALE, EIO,
  /// ETIMEDOUT and EAGAIN are retried after backoff, 2×backoff…; a retry
  /// that could not start before the deadline is not made: the operation
  /// fails with ETIMEDOUT at once, naming the last error.
  retry_policy retry = retry_policy::network();
  /// libnfs calls outstanding on the one context; more wait their turn.
  unsigned max_in_flight = 64;
  /// The server's NFS and MOUNT ports; 0: ask its portmapper.
  std::uint16_t nfs_port = 0;
  std::uint16_t mount_port = 0;
};

/// `nfs://server[:port]/export/path`, split. The export is the first path
/// component, or everything before a `//` for exports deeper than one
/// component: `nfs://srv/data/sets//train/a.jpg` is export `/data/sets`,
/// path `/train/a.jpg`. `path` is empty for a URL naming the export alone.
/// (nfs_client names files plainly, export and path joined by one '/'.)
struct nfs_url {
  std::string server;       ///< host name or address (IPv6 without brackets)
  std::uint16_t port = 0;   ///< 0: not given
  std::string export_path;  ///< starts with '/'
  std::string path;         ///< starts with '/', or empty

  /// Whether `text` starts with `nfs://` (the scheme in any case): what
  /// parse() accepts as an NFS URL at all. Same as
  /// `classify_location(text) == location_kind::nfs` (location.hpp).
  [[nodiscard]] static bool is_nfs(std::string_view text) noexcept;
  /// Throws std::invalid_argument naming the URL and the reason.
  static nfs_url parse(std::string_view url);
  /// Back to the `nfs://` form (with `//` where the export needs it).
  [[nodiscard]] std::string str() const;
};

/// Counters, named as every reader's (source_stats, reader_stats).
struct nfs_stats : read_counters {
  std::uint64_t requests = 0;     ///< operations started (mount, open, fstat, pread, close, listing)
  std::size_t max_in_flight = 0;  ///< most libnfs calls outstanding at once
};

/// Thread safety: read_file, read_range, list, stats and url may be called
/// from any number of threads at once (list not from the client's own I/O
/// thread). The executor passed at construction must outlive every
/// operation started on the client.
class nfs_client {
 public:
  /// Connects and mounts server:export_path (NFSv3), blocking for at most
  /// options.deadline (plus name resolution, which libnfs does blocking).
  /// Throws std::system_error naming "nfs://server/export" and libnfs's
  /// reason. Completions resume coroutines on `resume_on`.
  nfs_client(std::string server, std::string export_path, executor& resume_on, nfs_options options = {});

  /// Stops the I/O thread: outstanding operations complete at once with
  /// ECANCELED (their coroutines resumed on the executor), operations
  /// started later (by coroutines still holding a task of this client) fail
  /// the same way, and open file handles are released. Never waits for the
  /// server. Any thread, an executor thread included (no caller code ever
  /// runs on the client's I/O thread).
  ~nfs_client();

  nfs_client(const nfs_client&) = delete;
  nfs_client& operator=(const nfs_client&) = delete;

  /// The whole file at `path` (relative to the export root; a leading '/' is
  /// optional): open, fstat for the size, pread (in parallel chunks of the
  /// server's maximum read size), close, all async. Grows `buffer`, sets
  /// buffer.set_size(n) and returns n. Throws std::system_error whose what()
  /// names nfs://server/export/path and the reason. `buffer` must outlive
  /// the await. The steps run on the client's I/O thread; the awaiting
  /// coroutine resumes on the executor.
  [[nodiscard]] task<std::size_t> read_file(std::string path, read_buffer& buffer);

  /// `size` bytes at `offset` of `path` (a member of a tar shard): fewer only
  /// where the file ends. Errors as read_file.
  [[nodiscard]] task<std::size_t> read_range(std::string path, std::uint64_t offset, std::size_t size,
                                             read_buffer& buffer);

  struct entry {
    std::string name;
    bool is_directory = false;
    std::uint64_t size = 0;
    /// The modification time READDIRPLUS sent with the entry (0 and 0 when
    /// the server sent no attributes).
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
  };

  /// The directory `dir` (relative to the export root), sorted by name,
  /// without "." and "..". Blocks the calling thread (any thread but the
  /// client's I/O thread) for at most the deadline. Throws std::system_error
  /// naming the directory's nfs:// URL.
  std::vector<entry> list(const std::string& dir);

  /// Counters; a consistent snapshot only while idle.
  [[nodiscard]] nfs_stats stats() const;

  /// "nfs://server/export" ("nfs://server:port/export" with a port set).
  [[nodiscard]] std::string url() const;
  /// The URL of `path` under the export, as errors name it.
  [[nodiscard]] std::string url_of(std::string_view path) const;

 private:
  struct core;  // lib/io/nfs/nfs_core.hpp; shared with the operations in flight
  std::shared_ptr<core> m_core;
};

}  // namespace ringfeed::io
