// ringfeed::io::object_url — `s3://bucket/key` and `http(s)://host[:port]/path`
// locations, and the WebDataset ways of naming many of them: brace
// expansion (`shard-{000000..001023}.tar`), `::`-separated lists, and text
// files of URLs.
//
// Pure parsing: no I/O except read_url_list(), any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ringfeed::io {

enum class url_scheme { s3, http, https };

struct object_url {
  url_scheme scheme = url_scheme::s3;
  /// s3: the bucket. http(s): the host name or address (IPv6 without brackets).
  std::string host;
  /// http(s): the port; 0: the scheme's default. Always 0 for s3.
  std::uint16_t port = 0;
  /// s3: the key, raw, without a leading '/' (empty: the whole bucket);
  /// everything after the bucket's '/', '?' and '#' included (as the AWS CLI reads it).
  /// http(s): the path as written, starting with '/' (percent escapes kept:
  /// it goes on the wire as is).
  std::string path;
  /// http(s): the query without '?', as written (presigned URLs). Empty for s3.
  std::string query;

  /// Whether `text` starts with s3://, http:// or https:// (any case).
  /// Same as `is_object_kind(classify_location(text))` (location.hpp).
  [[nodiscard]] static bool is_url(std::string_view text) noexcept;
  /// Parses one URL. Throws std::invalid_argument naming the URL and the
  /// reason: another scheme, no bucket or host, a bad port, user info,
  /// a fragment on http(s), control bytes.
  [[nodiscard]] static object_url parse(std::string_view url);

  /// `host[:port]` as the Host header carries it (brackets for IPv6).
  [[nodiscard]] std::string authority() const;
  /// The URL again (s3://bucket/key, https://host:port/path?query).
  [[nodiscard]] std::string str() const;
  /// The location `ref` names, read relative to this one as a manifest's
  /// entries are: a URL stays itself; "/x" is the bucket's key "x" (s3) or
  /// the host's path "/x"; anything else is taken relative to this URL's
  /// "directory" (what comes before its last '/'). "./" and "../" steps are
  /// resolved; "../" above the root throws.
  [[nodiscard]] object_url resolve(std::string_view ref) const;
  /// The last path segment ("shard-000001.tar"; "" for a prefix ending in '/').
  [[nodiscard]] std::string_view file_name() const noexcept;

  friend bool operator==(const object_url&, const object_url&) = default;
};

/// The most names one pattern may expand to; more throws.
inline constexpr std::size_t max_brace_expansion = 10'000'000;

/// Brace expansion as WebDataset (Python's braceexpand) does it:
/// `{a,b,c}` lists (nested, empty items allowed), `{0..9}` and `{9..0}`
/// integer ranges with an optional step `{0..10..2}`, zero-padded to the
/// wider bound when either bound has a leading zero (`{000..255}`), and
/// `{a..e}` letter ranges; several groups give their product, left group
/// slowest. A group that is neither (`{x}`, `{}`) stays literal; `\{`,
/// `\}` and `\,` are literal characters (the backslash dropped). Throws
/// std::invalid_argument naming the pattern on unbalanced braces or past
/// max_brace_expansion names.
[[nodiscard]] std::vector<std::string> expand_braces(std::string_view pattern);

/// A WebDataset URL spec: `::`-separated patterns (not inside an IPv6
/// literal's brackets), each brace-expanded, in order; empty parts skipped.
[[nodiscard]] std::vector<std::string> expand_url_spec(std::string_view spec);

/// The URLs in a text file: one per line, blank lines and lines starting
/// with '#' skipped, surrounding blanks trimmed, each line brace-expanded.
/// Throws std::system_error naming the file when it cannot be read, and
/// std::invalid_argument naming the file and line on a bad pattern.
[[nodiscard]] std::vector<std::string> read_url_list(const std::filesystem::path& file);

}  // namespace ringfeed::io
