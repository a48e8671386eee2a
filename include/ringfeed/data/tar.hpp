// ringfeed::data::tar_reader — walks the members of a tar archive without
// reading their data, for building shard indexes; tar_shard_writer — writes
// numbered ustar shards (what `ringfeed pack` makes).
//
// Understands ustar (name + prefix), GNU (`././@LongLink` long names, type
// 'L'; long link names 'K' skipped; base-256 sizes) and pax (type 'x'
// records `path` and `size`; global 'g' records folded into later 'x' headers
// exactly as Python's tarfile does). When several extension headers precede
// a member, the first one's name wins, as in tarfile. A member's data is
// skipped by seeking, so listing costs about one small read per member.
//
// Stricter than tarfile where it would silently lose data: a bad header
// checksum or a member running past the end of the file is an error (tarfile
// stops there quietly). A zero block or the end of the file at a header
// boundary ends the archive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/detail/atomic_file.hpp>
#include <ringfeed/detail/unique_fd.hpp>

namespace ringfeed::data {

/// One archive member, extension headers already applied.
struct tar_member {
  std::string name;               ///< full name (GNU/pax long names applied, ustar prefix joined)
  char type = '0';                ///< typeflag: '0'/'\0' file, '5' directory, '2' symlink, …
  std::uint64_t header_offset = 0;  ///< offset of the member's own 512-byte header
  std::uint64_t data_offset = 0;    ///< offset of its first data byte
  std::uint64_t size = 0;           ///< data bytes

  /// A regular file, as tarfile's isreg(): types '0', '\0' and '7'.
  [[nodiscard]] bool is_regular() const noexcept { return type == '0' || type == '\0' || type == '7'; }
};

/// Reads up to out.size() bytes at `offset` of an archive that is not a
/// local file (an object in object storage); returns the count, fewer only
/// where the archive ends. Throws naming the archive on failure.
using tar_read_function = std::function<std::size_t(std::uint64_t offset, std::span<char> out)>;

/// Sequential reader of one archive's member headers. Not thread-safe;
/// move-only (owns a file descriptor).
class tar_reader {
 public:
  /// Opens `path`; throws std::system_error naming it.
  explicit tar_reader(const std::filesystem::path& path);
  /// An archive of `size` bytes named `name` (a URL) read through `read`,
  /// in windows of `window` bytes: object storage wants few large ranged
  /// GETs (8-16 MiB parts), not one per header.
  tar_reader(std::string name, std::uint64_t size, tar_read_function read, std::size_t window);
  ~tar_reader();
  tar_reader(tar_reader&& other) noexcept;
  tar_reader& operator=(tar_reader&& other) noexcept;
  tar_reader(const tar_reader&) = delete;
  tar_reader& operator=(const tar_reader&) = delete;

  /// The next member (any type; extension headers are consumed, not
  /// returned), or nullopt at the end of the archive. Throws dataset_error
  /// for a malformed header (naming the archive and the offset),
  /// std::system_error for read errors.
  [[nodiscard]] std::optional<tar_member> next();

  /// Reads exactly out.size() bytes at `offset`; throws dataset_error if the
  /// file ends first, std::system_error on a read error.
  void read_at(std::uint64_t offset, std::span<char> out);

  /// The archive's size in bytes when it was opened.
  [[nodiscard]] std::uint64_t file_size() const noexcept { return m_size; }
  [[nodiscard]] const std::string& path() const noexcept { return m_path; }

 private:
  // Returns a view of [offset, offset + n) from the read-ahead window,
  // refilling it; n <= window size. Empty view at end of file.
  std::string_view window(std::uint64_t offset, std::size_t n);

  ringfeed::detail::unique_fd m_fd;
  tar_read_function m_read;         // set: not a local file
  std::size_t m_window = 32 * 1024;  // bytes per read-ahead window
  std::string m_path;
  std::uint64_t m_size = 0;
  std::uint64_t m_next = 0;  // offset of the next header
  bool m_done = false;
  std::vector<std::pair<std::string, std::string>> m_global_pax;  // 'g' records so far
  std::string m_buffer;                 // read-ahead window
  std::uint64_t m_buffer_offset = 0;    // file offset of m_buffer[0]
};

/// One regular file to write as a tar member.
struct tar_file {
  std::string_view name;        ///< 1 to 100 bytes, no NUL (a plain ustar name field)
  std::span<const char> data;   ///< the member's bytes, at most tar_shard_writer::max_member_size
};

/// Writes tar shards `<prefix>000000.tar`, `<prefix>000001.tar`, … into a
/// directory: POSIX ustar, regular files of mode 0644, uid/gid 0, mtime 0
/// and no owner names, so the bytes depend on the names and data only.
/// Members go in groups (a WebDataset sample: `<key>.jpg` + `<key>.cls`)
/// that never straddle two shards; a shard is closed before a group would
/// take it past `shard_limit` bytes (end-of-archive blocks included), unless
/// it holds no group yet.
///
/// Until it is closed a shard exists only as `<name>.tmp`; closing writes the
/// end-of-archive blocks, fsyncs, and renames it to its final name, so no
/// torn shard ever has one. Data are written in chunks of a few MiB.
///
/// Not thread-safe; not copyable or movable (owns a file descriptor and the
/// tmp file). The destructor removes a tmp file still open (its shard is
/// lost), never the finished shards. After an exception from add() or
/// finish() the writer is only good for abandon() or destruction.
class tar_shard_writer {
 public:
  /// The largest member ustar's 11 octal digits can carry (8 GiB - 1).
  static constexpr std::uint64_t max_member_size = (std::uint64_t{1} << 33) - 1;

  /// Writes into `dir`, which must exist; nothing is created before the
  /// first add(). Existing files of the same names are replaced.
  tar_shard_writer(std::filesystem::path dir, std::uint64_t shard_limit, std::string prefix = "shard-");
  ~tar_shard_writer();
  tar_shard_writer(const tar_shard_writer&) = delete;
  tar_shard_writer& operator=(const tar_shard_writer&) = delete;

  /// Appends `group`'s members, in order, to the current shard, first
  /// closing it if the group would take it past the limit. Throws
  /// std::invalid_argument (nothing written) for a bad name or a member
  /// over max_member_size, std::system_error naming the file when it cannot
  /// be created or written.
  void add(std::span<const tar_file> group);
  void add(std::initializer_list<tar_file> group) { add(std::span<const tar_file>(group.begin(), group.size())); }

  /// Closes (ends, fsyncs, renames) the current shard and fsyncs the
  /// directory, so that the finished shards' names are durable too.
  /// add() after finish() starts the next shard.
  void finish();

  /// After a failure: removes the tmp file and every shard this writer
  /// finished.
  void abandon() noexcept;

  /// The finished shards, in order.
  [[nodiscard]] const std::vector<std::filesystem::path>& paths() const noexcept { return m_done; }
  [[nodiscard]] std::size_t shards() const noexcept { return m_done.size(); }
  /// Bytes of all shards so far, the open one included.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return m_total; }
  /// The file name of shard `index`: `<prefix>NNNNNN.tar`.
  [[nodiscard]] std::string shard_name(std::size_t index) const;

 private:
  [[nodiscard]] std::filesystem::path final_path() const;
  void open_shard();
  void append(const tar_file& f);
  void flush();
  void close_shard();

  std::filesystem::path m_dir;
  std::uint64_t m_limit;
  std::string m_prefix;
  std::optional<ringfeed::detail::atomic_file> m_file;  // the open shard
  std::vector<char> m_buffer;                  // written at flush()
  std::vector<std::filesystem::path> m_done;   // finished shards, in order
  std::uint64_t m_shard_bytes = 0;
  std::size_t m_shard_groups = 0;
  std::uint64_t m_total = 0;
};

/// WebDataset's split of a member name (webdataset.tariterators.base_plus_ext,
/// the regex `^((?:.*/|)[^.]+)[.]([^/]*)$`): key = the name up to the first
/// dot of some path suffix, suffix = the rest. nullopt when the regex would
/// not match (no dot in the basename, …). The suffix is not lowercased.
struct webdataset_name {
  std::string_view key;
  std::string_view suffix;
};
[[nodiscard]] std::optional<webdataset_name> split_webdataset_name(std::string_view member_name) noexcept;

/// True for names webdataset skips as metadata: `__…__` without a slash, or
/// matching `__[^/]*__($|/)` at the start.
[[nodiscard]] bool is_webdataset_meta(std::string_view member_name) noexcept;

}  // namespace ringfeed::data
