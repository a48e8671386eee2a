// io::classify_location: the kind of storage a location names (location.hpp).
#include <ringfeed/io/location.hpp>

#include <sys/stat.h>

#include <array>
#include <string>
#include <utility>

#include <ringfeed/io/nfs.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/io/url.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::io {

namespace {

bool is_ascii_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool is_scheme_char(char c) noexcept {
  return is_ascii_letter(c) || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

bool is_directory(const std::string& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `data.mdb`, or a path whose last component is `data.mdb`.
bool names_data_file(std::string_view path) noexcept {
  constexpr std::string_view data_mdb = "data.mdb";
  return path == data_mdb || (path.size() > data_mdb.size() && path.ends_with(data_mdb) &&
                              path[path.size() - data_mdb.size() - 1] == '/');
}

// A local path naming an LMDB database: a directory holding data.mdb, or
// the data.mdb file itself.
bool holds_lmdb(std::string_view location) noexcept {
  try {
    const std::string path(location);
    if (is_directory(path)) return is_regular_file(path + "/data.mdb");
    return names_data_file(path) && is_regular_file(path);
  } catch (...) {  // std::bad_alloc: not worth an exception here
    return false;
  }
}

}  // namespace

std::string_view location_scheme(std::string_view text) noexcept {
  const std::size_t end = text.find("://");
  if (end == std::string_view::npos || end == 0 || !is_ascii_letter(text.front())) return {};
  for (std::size_t i = 1; i < end; ++i) {
    if (!is_scheme_char(text[i])) return {};
  }
  return text.substr(0, end);
}

location_kind classify_location(std::string_view text) noexcept {
  const std::string_view scheme = location_scheme(text);
  if (scheme.empty()) return location_kind::local;
  constexpr std::array<std::pair<std::string_view, location_kind>, 5> known{{
      {"s3", location_kind::s3},
      {"http", location_kind::http},
      {"https", location_kind::http},
      {"nfs", location_kind::nfs},
      {"lmdb", location_kind::lmdb},
  }};
  for (const auto& [name, kind] : known) {
    if (scheme.size() == name.size() && starts_with_ci(scheme, name)) return kind;
  }
  return location_kind::other_url;
}

location_kind classify_location_on_disk(std::string_view location) noexcept {
  const location_kind kind = classify_location(location);
  return kind == location_kind::local && holds_lmdb(location) ? location_kind::lmdb : kind;
}

// The older predicates, kept for their callers.

bool object_url::is_url(std::string_view text) noexcept { return is_object_kind(classify_location(text)); }

bool nfs_url::is_nfs(std::string_view text) noexcept { return classify_location(text) == location_kind::nfs; }

bool is_object_location(std::string_view location) noexcept { return is_object_kind(classify_location(location)); }

bool is_lmdb_location(std::string_view location) noexcept {
  return classify_location_on_disk(location) == location_kind::lmdb;
}

}  // namespace ringfeed::io
