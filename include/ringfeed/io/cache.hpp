// ringfeed::io::cache — a read-through disk cache of remote (NFS) samples on
// a local directory, bounded in bytes, least recently used evicted first.
//
// The loader asks get() before reading `nfs://...`; on a miss it reads the
// remote file and hands the bytes to put(). Keys carry the file's version
// (sample_cache_key), so a replaced file is a miss. A cache never fails a read: a
// damaged, missing or mismatched entry is a miss, a failed store is counted
// and logged once, and the remote read goes on.
//
// On disk, under `dir`:
//   <dir>/lock                 flock(2)ed by the one cache object using dir
//   <dir>/tmp/                 entries being written; emptied at start-up
//   <dir>/ab/ab12cd34ef56ab78  an entry: FNV-1a 64 of the key, in hex, under
//                              a fan-out directory named by its first byte
// An entry file is: 8 bytes magic "RFCACHE1", key length (u32 LE), the key,
// payload length (u64 LE), the payload. get() checks the magic, the key (so a
// hash collision is a miss, never another key's bytes) and that the file
// holds exactly the payload length: a short (torn, truncated) file is a miss
// and is removed.
//
// Crash safety: put() writes a temporary under tmp/ and rename(2)s it into
// place, without fsync. A process crash never leaves a partial file under an
// entry's name; after a power loss a file system may show a renamed file
// shorter than written (ext4 and XFS only commit a size once its data is
// written), which the length check turns into a miss. Entries from earlier
// runs are found at start-up, ordered by mtime (get() refreshes an entry's
// mtime at most every 10 minutes, so the order survives a restart), count
// towards max_bytes and are served.
//
// One cache object per directory: the constructor takes an exclusive flock
// on <dir>/lock and throws (EBUSY) if another object or process holds it,
// since two indexes of one directory would each evict by their own count.
//
// Thread safety: get(), put(), stats() and hit_rate() may be called from any
// number of threads at once. The index (hash → size, LRU position) is under
// one mutex; get() holds it only to look up and to move the entry, and reads
// the file outside it. put() writes the temporary outside it and renames and
// evicts under it, so the index and the directory always agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <ringfeed/io/buffer.hpp>
#include <ringfeed/log.hpp>

namespace ringfeed::io {

struct cache_options {
  /// Where entries live; created (with its parents) if missing. A local disk.
  std::filesystem::path dir;
  /// Bytes of entry files (payload + header) kept; least recently used
  /// entries are evicted to stay at or under it. Larger entries are rejected.
  std::uint64_t max_bytes = 10ull << 30;
  /// Where the one-off notices go (the first failed store). Empty: stderr.
  log_sink log;
};

struct cache_stats {
  std::uint64_t hits = 0;         ///< get() calls that returned the bytes
  std::uint64_t misses = 0;       ///< get() calls that did not
  std::uint64_t stores = 0;       ///< put() calls that stored an entry
  std::uint64_t evictions = 0;    ///< entries removed to stay under max_bytes
  std::uint64_t bytes = 0;        ///< bytes of entry files now held
  std::uint64_t rejected = 0;     ///< put() calls larger than max_bytes
  std::uint64_t errors = 0;       ///< put() calls that failed (disk full, I/O error)
  std::uint64_t invalidated = 0;  ///< entries get() found wrong (size, torn, gone) and dropped
  std::uint64_t entries = 0;      ///< entries now held
};

/// The key a read-through cache (source_options::cache_dir) keeps a
/// sample under: its file, ":<offset>" for a range, then "|" and `version`
/// when not empty (source::version(), or a local file's size and mtime), so
/// a file replaced by another of the same name and size is read anew. Does
/// not throw but std::bad_alloc.
[[nodiscard]] std::string sample_cache_key(std::string_view file, bool range, std::uint64_t offset,
                                           std::string_view version);

class cache {
 public:
  /// Opens (creating if missing) `options.dir`, locks it, removes leftover
  /// temporaries, and indexes the entries already there (evicting down to
  /// max_bytes if they exceed it). Throws std::system_error naming the
  /// directory when it cannot be created, opened or scanned, and with EBUSY
  /// when another cache object or process uses it.
  explicit cache(cache_options options);
  ~cache();
  cache(const cache&) = delete;
  cache& operator=(const cache&) = delete;

  /// If `key` (e.g. "nfs://server/export/a/b.jpg") is cached with exactly
  /// `expected_size` payload bytes (unknown_size: any size), reads it into
  /// `buffer` (buffer.bytes() is then the payload), marks it most recently
  /// used and returns true. Otherwise returns false and leaves buffer.size()
  /// 0; an entry of another size, or a file that is short, long or damaged,
  /// is removed. Any thread. Throws only std::bad_alloc (growing `buffer`).
  bool get(std::string_view key, std::uint64_t expected_size, read_buffer& buffer);

  /// Stores `bytes` under `key` (replacing an entry there), then evicts the
  /// least recently used entries until the total is at most max_bytes. An
  /// entry larger than max_bytes is not stored (stats().rejected). Failures
  /// are counted (stats().errors) and the first is logged; never throws.
  /// Any thread.
  void put(std::string_view key, std::span<const std::byte> bytes) noexcept;

  /// Counters; each is exact, the set is not one atomic snapshot. Any thread.
  [[nodiscard]] cache_stats stats() const;
  /// hits / (hits + misses); 0 before any get(). Any thread.
  [[nodiscard]] double hit_rate() const;

  [[nodiscard]] const std::filesystem::path& dir() const noexcept;
  [[nodiscard]] std::uint64_t max_bytes() const noexcept;
  /// The file an entry for `key` is (or would be) stored in.
  [[nodiscard]] std::filesystem::path file_of(std::string_view key) const;

 private:
  struct state;
  std::unique_ptr<state> m_state;
};

}  // namespace ringfeed::io
