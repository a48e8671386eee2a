// ringfeed::io::source — the one storage interface: the loader, `ringfeed
// bench` and `ringfeed pack` read every sample through it, whatever holds it.
//
// source::open(location) picks the implementation from the location:
//   https://host/path           objects over HTTP(S), unsigned (public or
//                               presigned URLs): libcurl's multi interface
//   s3://bucket/prefix          S3 or an S3-compatible store, SigV4-signed
//   nfs://server/export/dir     libnfs, NFSv3 (nfs.hpp): no mount needed
//   lmdb:///path/to/db, or a    LMDB, read-only and memory-mapped (lmdb.hpp)
//     directory with data.mdb
//   anything else               local files: io_uring, else pread threads
//                               (reader.hpp), buffered or O_DIRECT
// and, with options.cache_dir on network storage, wraps it in the
// read-through disk cache (cache.hpp), which owns its writer thread.
// A new kind of storage is one more implementation of this class and one
// line in open(); nothing above it changes.
//
// A source lists (for building a dataset index) and reads samples: a whole
// file or a byte range of one (a member of a tar shard, an image inside an
// LMDB record), as a coroutine, with the depth, deadline and retries of its
// storage (retry.hpp: network storage gets deadlines and retries, local
// storage neither).
//
// Thread safety: read(), list() and stats() may be called from any number
// of threads and coroutines at once. Reads resume their caller on the
// thread_pool given to open(), which must outlive the source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/io/buffer.hpp>
#include <ringfeed/log.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/io/retry.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

namespace ringfeed::io {

/// Which bytes a sample is.
struct sample_ref {
  /// The file (a local path; a URL under an nfs:// source; an LMDB key).
  std::string_view file;
  /// false: the whole file; true: `size` bytes at `offset`.
  bool range = false;
  std::uint64_t offset = 0;
  /// A range's length; for a whole file the size the index expects
  /// (unknown_size when it has none).
  std::uint64_t size = unknown_size;
};

/// One entry of a listing.
struct source_entry {
  std::string name;
  bool is_directory = false;
  std::uint64_t size = unknown_size;  ///< bytes of a file, when known
};

/// An object a listing holds that list() does not show, and why (object
/// storage: a key no directory tree can hold).
struct excluded_entry {
  std::string path;    ///< the object's URL
  std::string reason;
};

/// The local read options (reader.hpp), and a cache for network storage.
struct source_options : read_options {
  /// A local directory caching the samples of network storage (ignored, with
  /// one log line, for local storage); empty: no cache.
  std::filesystem::path cache_dir;
  std::uint64_t cache_bytes = 10ull << 30;
  /// Bytes queued for the cache's writer thread before stores are dropped.
  std::size_t cache_queue_bytes = std::size_t{64} << 20;
  /// s3:// endpoint, region, credentials, addressing (aws_config.hpp); unset
  /// fields come from the environment and profile as the AWS tools read them.
  s3_options s3;
};

/// Counters, named alike for every storage; a consistent snapshot only
/// while idle.
struct source_stats : read_counters {
  bool direct = false;         ///< local reads still bypass the page cache
  /// The read-through cache, when one is in use.
  bool cache = false;
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;
  std::uint64_t cache_stores = 0;
  std::uint64_t cache_evictions = 0;
  std::uint64_t cache_bytes = 0;    ///< bytes of entry files held now
  std::uint64_t cache_dropped = 0;  ///< stores dropped: the writer fell behind
};

class source {
 public:
  /// Opens `location` (see above). Blocking: an nfs:// source connects and
  /// mounts, an LMDB environment is mapped, io_uring is set up. Throws
  /// std::invalid_argument for a malformed URL, std::system_error naming the
  /// location for one that cannot be opened, ring_unavailable for
  /// backend::uring without io_uring.
  static std::unique_ptr<source> open(const std::string& location, thread_pool& resume_on,
                                      source_options options = {});

  virtual ~source();
  source(const source&) = delete;
  source& operator=(const source&) = delete;

  /// "file", "nfs", "lmdb", "https" or "s3" (a cache keeps its source's).
  [[nodiscard]] virtual std::string_view scheme() const noexcept = 0;
  /// How it reads: "io_uring", "pread", "libnfs", "lmdb".
  [[nodiscard]] virtual std::string_view backend_name() const noexcept = 0;
  /// The location as given to open().
  [[nodiscard]] const std::string& location() const noexcept { return m_location; }
  /// What the storage is, and what it recommends.
  [[nodiscard]] const storage_info& storage() const noexcept { return m_storage; }
  /// Reads in flight this source is sized for: what a caller should keep
  /// outstanding to reach its throughput.
  [[nodiscard]] std::size_t depth() const noexcept { return m_depth; }

  /// The entries of `dir` (relative to the location; "" for the location
  /// itself; components joined by '/'), sorted by name, without "." and
  /// "..". Blocking; any thread. Throws std::system_error naming the
  /// directory.
  [[nodiscard]] virtual std::vector<source_entry> list(const std::string& dir) = 0;

  /// What the listing holds but list() leaves out, each with the reason, in
  /// listing order (object storage: keys with an empty, "." or ".." path
  /// segment, or ending in '/'); lists first if nothing was listed yet, as
  /// list() does. Blocking; any thread. By default none: a file system's
  /// tree holds every name. Decorators (the cache) pass it on.
  [[nodiscard]] virtual std::vector<excluded_entry> excluded() { return {}; }

  /// A sample's bytes, read into `buffer` (grown as needed); the view is
  /// valid until `buffer` is reused. Throws std::system_error whose what()
  /// names the file and the reason (and the range, for one that the file
  /// ends inside). `buffer` must outlive the await.
  [[nodiscard]] virtual task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) = 0;

  [[nodiscard]] virtual source_stats stats() const = 0;

  /// Ends the reads now queued or in flight at once, failing them with
  /// ECANCELED, without waiting for the storage to answer; reads started
  /// after the call proceed. For shutdown: a loader stopping a run calls it
  /// so that a stalled server does not hold it for its timeouts. Any
  /// thread. By default nothing: local reads end by themselves, and the
  /// ring's deadline bounds NFS. `and_later`: reads started after the call
  /// fail at once with ECANCELED too, until resume_reads().
  virtual void cancel_reads(bool and_later = false) noexcept { static_cast<void>(and_later); }
  /// Ends cancel_reads(true): reads started from now on proceed.
  virtual void resume_reads() noexcept {}

  /// The size in bytes of `file` (as read() names it), for storage that
  /// cannot list it (an object named by URL: a HEAD request). Blocking; any
  /// thread but the resume_on pool's. Throws std::system_error naming the
  /// file; by default ENOTSUP (the storage lists its sizes instead).
  [[nodiscard]] virtual std::uint64_t file_size(const std::string& file);

  /// What tells this version of `file` from another of the same name and
  /// size, known without reading it: an object's ETag from the listing or
  /// the index made when the data set was opened, an LMDB database's
  /// modification time. "" when the storage knows none before a read (a
  /// local file: the caller stats it). Derived data kept across runs (the
  /// pixel cache) is keyed by it. Any thread; no I/O.
  [[nodiscard]] virtual std::string version(const std::string& file) const;
  /// Learns the versions of `files` (as read() names them) that the data
  /// set named without a listing (an s3:// manifest's keys), in few
  /// requests: s3:// lists the keys' common prefix with ListObjectsV2 and
  /// pins each key's ETag. Blocking; call before seal_versions(). Throws
  /// std::system_error naming the URL and key of a file the listing lacks
  /// (ENOENT), or the listing's error. By default nothing: the storage's
  /// listing told them, or it has no listing (https://). Decorators pass it on.
  virtual void pin_versions(std::span<const std::string> files) { static_cast<void>(files); }
  /// Called once the data set is opened: what reads learn from now on (an
  /// ETag first seen on a read) is not a version, so version() gives the
  /// same answer for a file all run long. Decorators pass it on.
  virtual void seal_versions() noexcept {}

 protected:
  source(std::string location, storage_info storage, std::size_t depth)
      : m_location(std::move(location)), m_storage(std::move(storage)), m_depth(depth) {}

 private:
  std::string m_location;
  storage_info m_storage;
  std::size_t m_depth;
};

/// Whether `location` names object storage: `s3://…`, `https://…` or
/// `http://…` (the scheme in any case; io::classify_location decides).
/// Does not throw.
[[nodiscard]] bool is_object_location(std::string_view location) noexcept;

/// Whether `location` names an LMDB database: `lmdb://…` (any case), or a
/// directory holding `data.mdb` (io::classify_location_on_disk). Does not
/// throw.
[[nodiscard]] bool is_lmdb_location(std::string_view location) noexcept;

}  // namespace ringfeed::io
