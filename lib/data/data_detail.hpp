// Private helpers of the data layer: a small parallel-for,
// index-file encoding, cache placement and Python's string order.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/tar.hpp>
#include <ringfeed/detail/unique_fd.hpp>

namespace ringfeed::data::detail {

using ringfeed::detail::unique_fd;

/// Throws std::system_error(errno) with "<what> <path>" as the message.
[[noreturn]] void throw_errno(int err, std::string_view what, std::string_view path);

/// Runs fn(i) for i in [0, count) on up to `threads` threads (the caller is
/// one of them). The first exception stops the hand-out of further items
/// and is rethrown once every thread has finished.
void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn);

/// The scan/index thread count for `options` and `items` work items.
[[nodiscard]] unsigned scan_threads(const dataset_options& options, std::size_t items) noexcept;

/// 64-bit hash of bytes (word-at-a-time, SplitMix64 mixing). For cache keys
/// and index checksums, not security.
[[nodiscard]] std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0) noexcept;

/// The cache directory for `options`, or nullopt when none is configured.
[[nodiscard]] std::optional<std::filesystem::path> cache_dir(const dataset_options& options);

/// An mtime with nanoseconds, plus the inode, as stat(2) reports them.
struct file_stamp {
  std::uint64_t ino = 0;
  std::int64_t mtime_sec = 0;
  std::int64_t mtime_nsec = 0;
  std::uint64_t size = 0;
  friend bool operator==(const file_stamp&, const file_stamp&) = default;
};
[[nodiscard]] file_stamp stamp_of(const struct stat& st) noexcept;

/// Seconds since the epoch, CLOCK_REALTIME (what file mtimes are compared to).
[[nodiscard]] double wall_clock_now() noexcept;

/// A file whose mtime is this close to "now" may still be changing within the
/// file system's timestamp granularity: its index is not cached (the racy-git
/// rule), so a change made in the same tick is never missed.
inline constexpr double racy_window_seconds = 2.0;
[[nodiscard]] inline bool is_racy(const file_stamp& s, double now) noexcept {
  return static_cast<double>(s.mtime_sec) + static_cast<double>(s.mtime_nsec) * 1e-9 >= now - racy_window_seconds;
}

// --- index files ---------------------------------------------------------

/// Appends fixed-width little-endian-as-host values; index files record the
/// host's byte order and are rebuilt on a host of the other order.
class index_writer {
 public:
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void i64(std::int64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    m_out.append(s);
  }
  template <class T>
  void array(const std::vector<T>& v) {
    u64(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
  void raw(const void* p, std::size_t n) { m_out.append(static_cast<const char*>(p), n); }
  /// Appends the checksum of everything so far and returns the bytes.
  [[nodiscard]] std::string finish();

 private:
  std::string m_out;
};

/// Reads what index_writer wrote; every read is bounds-checked and throws
/// std::runtime_error on truncation (a corrupt index is rebuilt, never trusted).
class index_reader {
 public:
  /// Verifies the trailing checksum; throws std::runtime_error if it fails.
  explicit index_reader(std::string bytes);
  std::uint32_t u32() { return pod<std::uint32_t>(); }
  std::uint64_t u64() { return pod<std::uint64_t>(); }
  std::int64_t i64() { return pod<std::int64_t>(); }
  std::string str() {
    const std::size_t n = count(1);
    std::string s(m_bytes.data() + m_pos, n);
    m_pos += n;
    return s;
  }
  std::string bytes(std::size_t n) {
    need(n);
    std::string s(m_bytes.data() + m_pos, n);
    m_pos += n;
    return s;
  }
  template <class T>
  std::vector<T> array() {
    const std::size_t n = count(sizeof(T));
    std::vector<T> v(n);
    if (n != 0) std::memcpy(v.data(), m_bytes.data() + m_pos, n * sizeof(T));
    m_pos += n * sizeof(T);
    return v;
  }
  [[nodiscard]] bool at_end() const noexcept { return m_pos == m_end; }

 private:
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, m_bytes.data() + m_pos, sizeof(T));
    m_pos += sizeof(T);
    return v;
  }
  std::size_t count(std::size_t element_size);
  void need(std::size_t n) const;

  std::string m_bytes;
  std::size_t m_pos = 0;
  std::size_t m_end = 0;  // before the checksum
};

/// Magic (8 bytes) + format version + byte-order mark, shared by all index files.
void write_index_header(index_writer& w, std::string_view magic, std::uint32_t version);
/// True when the header matches (magic, version and this host's byte order).
[[nodiscard]] bool read_index_header(index_reader& r, std::string_view magic, std::uint32_t version);

/// Reads a whole file; nullopt when it cannot be opened or read.
[[nodiscard]] std::optional<std::string> read_whole_file(const std::filesystem::path& path);

/// Writes `bytes` to `path` atomically (a unique temporary in the same
/// directory, then rename). Returns "" on success, else the reason.
[[nodiscard]] std::string write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// --- names -----------------------------------------------------------------

/// True when `s` is valid UTF-8 by Python's strict decoder's rules (no
/// overlong forms, no surrogates, nothing above U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view s) noexcept;

/// A byte string whose byte order equals the order of Python str values
/// that os.fsdecode gives: `s` itself when valid UTF-8; otherwise each
/// undecodable byte b becomes the code point U+DC00+b (surrogateescape),
/// re-encoded in generalized UTF-8, which preserves code point order.
[[nodiscard]] std::string python_sort_key(std::string_view s);

/// ASCII lowercase copy.
[[nodiscard]] std::string ascii_lower(std::string_view s);

/// Parses an optionally signed decimal integer surrounded by optional ASCII
/// whitespace (Python's int(str) for plain decimals, `_` separators
/// included). nullopt when it is not one or overflows int64.
[[nodiscard]] std::optional<std::int64_t> parse_int(std::string_view text) noexcept;

// --- the scanners (public functions wrap these; open_dataset sets `source`) --

[[nodiscard]] dataset_contents image_folder_contents(const std::filesystem::path& root, const dataset_options& options);
[[nodiscard]] dataset_contents listed_image_folder_contents(std::string root, const directory_lister& list,
                                                            const dataset_options& options);
[[nodiscard]] dataset_contents manifest_contents(const std::filesystem::path& manifest, const dataset_options& options);
/// A manifest's text, named `path` in errors; names kept as written (the
/// caller resolves relative ones).
[[nodiscard]] dataset_contents manifest_text_contents(std::string_view text, const std::string& path);
/// Tar shards that are not local files (object storage): each opened by
/// `open` (a tar_reader reading through the source), indexed concurrently,
/// not cached on disk. Shard paths are the URLs as given.
[[nodiscard]] dataset_contents remote_tar_contents(const std::vector<std::string>& urls,
                                                   const std::function<tar_reader(const std::string&)>& open,
                                                   const dataset_options& options);
[[nodiscard]] dataset_contents tar_contents(const std::vector<std::filesystem::path>& shards,
                                            const dataset_options& options);

}  // namespace ringfeed::data::detail
