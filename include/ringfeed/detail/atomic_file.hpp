// ringfeed::detail::atomic_file — the one way ringfeed writes a file that
// readers must see whole or not at all: written under a temporary name in
// the final file's directory, then renamed over the final name (rename(2)
// is atomic within a file system). Index files, `ringfeed export`/`gen`
// outputs, `ringfeed pack`'s shards and class list, and the read-through
// cache's entries all go through it.
//
// With `sync`, the file is fsync'ed before the rename and the directory
// after it, so the final name survives a power loss with the new bytes
// (pack's shards); without it, a crash may lose the file but never exposes
// a torn one. A temporary that is never committed is unlinked by the
// destructor. Not thread-safe; move-only.
#pragma once

#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <ringfeed/detail/unique_fd.hpp>

namespace ringfeed::detail {

class atomic_file {
 public:
  struct options {
    /// fsync the file before the rename and its directory after.
    bool sync = false;
    /// The temporary's name in the same directory; "": a hidden unique one
    /// (".<name>.tmp-<unique>"). A fixed name is truncated if it exists.
    std::string temp_name;
  };

  /// Creates the temporary for `final_path`. Throws std::system_error
  /// naming the temporary and the reason.
  explicit atomic_file(std::filesystem::path final_path, options o);
  explicit atomic_file(std::filesystem::path final_path) : atomic_file(std::move(final_path), options{}) {}
  /// Relative to the directory `dir_fd` (openat/renameat): `temp` and
  /// `final_name` may hold sub-directories of it. For callers that keep a
  /// directory open (the cache). Throws as above.
  atomic_file(int dir_fd, std::string temp, std::string final_name, options o);
  ~atomic_file();
  atomic_file(atomic_file&&) noexcept;
  atomic_file& operator=(atomic_file&&) = delete;
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;

  /// Appends `bytes`. Throws std::system_error naming the temporary.
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }

  /// Syncs (with options.sync), closes and renames into place. Throws
  /// std::system_error naming the final path; the temporary is removed.
  void commit();
  /// commit() without throwing: 0, or the errno of the step that failed.
  /// A failed rename keeps the temporary, so the caller may fix the cause
  /// (create a missing directory) and call it again; the destructor removes
  /// it otherwise.
  [[nodiscard]] int try_commit() noexcept;

  [[nodiscard]] const std::string& temp_path() const noexcept { return m_temp; }
  [[nodiscard]] const std::string& final_path() const noexcept { return m_final; }

 private:
  int m_dir = -100;  // AT_FDCWD
  std::string m_temp;
  std::string m_final;
  bool m_sync = false;
  unique_fd m_fd;
  bool m_written = false;  // closed (and synced): only the rename is left
  bool m_done = false;
};

/// Writes `parts`, in order, to `path` through an atomic_file. Throws
/// std::system_error naming the file.
void write_file_atomically(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> parts,
                           atomic_file::options o = {});

}  // namespace ringfeed::detail
