// ringfeed::data::tar_reader — walks the members of a tar archive without
// reading their data, for building shard indexes.
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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

/// Sequential reader of one archive's member headers. Not thread-safe;
/// move-only (owns a file descriptor).
class tar_reader {
 public:
  /// Opens `path`; throws std::system_error naming it.
  explicit tar_reader(const std::filesystem::path& path);
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
  std::string m_path;
  std::uint64_t m_size = 0;
  std::uint64_t m_next = 0;  // offset of the next header
  bool m_done = false;
  std::vector<std::pair<std::string, std::string>> m_global_pax;  // 'g' records so far
  std::string m_buffer;                 // read-ahead window
  std::uint64_t m_buffer_offset = 0;    // file offset of m_buffer[0]
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
