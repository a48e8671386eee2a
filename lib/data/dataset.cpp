// The dataset value type, source strings and shard patterns.
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/location.hpp>
#include <ringfeed/io/url.hpp>
#include <ringfeed/text.hpp>

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "data/data_detail.hpp"

namespace ringfeed::data {
namespace {

// "<path>[:<line>]: <reason>", built by appending (GCC 12 -O3 warns
// -Wrestrict, falsely, on the equivalent chain of operator+).
std::string error_text(const std::string& path, const std::string& reason, std::size_t line) {
  // The path is bytes from outside (a file name): quoted escaped.
  std::string what = escape_bytes(path);
  if (line != 0) {
    what += ':';
    what += std::to_string(line);
  }
  what += ": ";
  what += reason;
  return what;
}

}  // namespace

dataset_error::dataset_error(std::string path, const std::string& reason, std::size_t line)
    : std::runtime_error(error_text(path, reason, line)),
      m_path(std::move(path)),
      m_line(line) {}

void sample_location::full_path(std::string& out) const {
  out.clear();
  if (base.empty() || (!path.empty() && path.front() == '/')) {
    out.append(path);
    return;
  }
  out.append(base);
  if (out.back() != '/') out.push_back('/');
  out.append(path);
}

namespace detail {

void string_table::append(const string_table& other) {
  const std::uint64_t shift = m_chars.size();
  m_chars.append(other.m_chars);
  m_ends.reserve(m_ends.size() + other.m_ends.size());
  for (const std::uint64_t e : other.m_ends) m_ends.push_back(e + shift);
}

void string_table::assign(std::string chars, std::vector<std::uint64_t> ends) {
  std::uint64_t previous = 0;
  for (const std::uint64_t e : ends) {
    if (e < previous) throw std::invalid_argument("string_table: decreasing end offsets");
    previous = e;
  }
  if (previous != chars.size()) throw std::invalid_argument("string_table: end offsets do not cover the characters");
  m_chars = std::move(chars);
  m_ends = std::move(ends);
}

}  // namespace detail

dataset::dataset(detail::dataset_contents contents) : m_c(std::move(contents)) {
  const std::size_t n = m_c.labels.size();
  if (m_c.names.size() != n) throw std::invalid_argument("dataset: names and labels differ in count");
  if (m_c.kind == dataset_kind::lmdb && (m_c.offsets.size() != n || m_c.sizes.size() != n)) {
    throw std::invalid_argument("dataset: LMDB sample arrays differ in count");
  }
  if (m_c.kind == dataset_kind::tar_shards) {
    if (m_c.shard_of.size() != n || m_c.offsets.size() != n || m_c.sizes.size() != n) {
      throw std::invalid_argument("dataset: tar sample arrays differ in count");
    }
    for (const std::uint32_t s : m_c.shard_of) {
      if (s >= m_c.shards.size()) throw std::invalid_argument("dataset: sample refers to a missing shard");
    }
  } else if (m_c.kind != dataset_kind::lmdb && !m_c.sizes.empty() && m_c.sizes.size() != n) {
    throw std::invalid_argument("dataset: sizes and labels differ in count");
  }
  if (!m_c.classes.empty()) {
    m_num_classes = m_c.classes.size();
  } else {
    std::int64_t max = -1;
    for (const std::int64_t l : m_c.labels) max = std::max(max, l);
    // In size_t: a label of INT64_MAX (found by fuzz_manifest) must not overflow.
    m_num_classes = max < 0 ? 0 : static_cast<std::size_t>(max) + 1;
  }
}

sample_location dataset::location(std::size_t i) const noexcept {
  sample_location loc;
  if (m_c.kind == dataset_kind::lmdb) {  // the image bytes inside record `name`
    loc.path = m_c.names[i];
    loc.offset = m_c.offsets[i];
    loc.size = m_c.sizes[i];
    return loc;
  }
  if (m_c.kind == dataset_kind::tar_shards) {
    loc.shard = m_c.shard_of[i];
    loc.path = m_c.shards[loc.shard].path;
    loc.offset = m_c.offsets[i];
    loc.size = m_c.sizes[i];
    return loc;
  }
  loc.path = m_c.names[i];
  if (loc.path.empty() || loc.path.front() != '/') loc.base = m_c.root;
  if (!m_c.sizes.empty()) loc.size = m_c.sizes[i];
  return loc;
}

io::sample_ref dataset::ref(std::size_t i, std::string& scratch) const {
  const sample_location loc = location(i);
  io::sample_ref r;
  if (m_c.kind == dataset_kind::tar_shards || m_c.kind == dataset_kind::lmdb) {
    r.file = loc.path;
    r.range = true;
    r.offset = loc.offset;
  } else {
    loc.full_path(scratch);
    r.file = scratch;
  }
  r.size = loc.size;
  return r;
}

std::string dataset::path(std::size_t i) const {
  std::string out;
  location(i).full_path(out);
  return out;
}

std::string dataset::describe(std::size_t i) const {
  if (m_c.kind == dataset_kind::tar_shards) {
    return m_c.shards[m_c.shard_of[i]].path + ":" + std::string(m_c.names[i]);
  }
  if (m_c.kind == dataset_kind::lmdb) return m_c.root + ":" + std::string(m_c.names[i]);
  return path(i);
}

const std::vector<std::string_view>& image_extensions() noexcept {
  static const std::vector<std::string_view> list{".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                                  ".pgm", ".tif",  ".tiff", ".webp"};
  return list;
}

bool has_image_extension(std::string_view name) noexcept {
  for (const std::string_view ext : image_extensions()) {
    if (ends_with_ci(name, ext)) return true;
  }
  return false;
}

// --- braces and globs ----------------------------------------------------

namespace {

bool has_glob_chars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::filesystem::path absolute_path(const std::filesystem::path& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal();
}

// The non-hidden `.tar` regular files of a directory, sorted by bytes;
// `has_subdir` tells whether it also holds a non-hidden sub-directory.
std::vector<std::filesystem::path> tar_files_in(const std::filesystem::path& dir, bool& has_subdir) {
  std::vector<std::filesystem::path> out;
  has_subdir = false;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) detail::throw_errno(errno, "cannot list", dir.native());
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.empty() || name.front() == '.') continue;
    unsigned char type = e->d_type;
    if (type == DT_LNK || type == DT_UNKNOWN) {
      struct stat st {};
      if (::stat((dir / std::string(name)).c_str(), &st) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_DIR) has_subdir = true;
    if (type == DT_REG && ends_with_ci(name, ".tar")) out.push_back(dir / std::string(name));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.native() < b.native(); });
  return out;
}

}  // namespace

// One brace grammar for local patterns and URLs: io::expand_braces (`\{`
// escapes, `{a..e}` letter ranges, the expansion limit).
std::vector<std::string> expand_braces(std::string_view pattern) { return io::expand_braces(pattern); }

std::vector<std::filesystem::path> expand_shard_pattern(std::string_view pattern) {
  std::vector<std::filesystem::path> out;
  std::vector<std::string> pieces;
  try {
    pieces = expand_braces(pattern);
  } catch (const std::invalid_argument& e) {
    throw dataset_error(std::string(pattern), e.what());
  }
  for (const std::string& piece : pieces) {
    if (has_glob_chars(piece)) {
      glob_t g{};
      const int rc = ::glob(piece.c_str(), GLOB_NOSORT, nullptr, &g);
      std::vector<std::string> matches;
      if (rc == 0) {
        for (std::size_t k = 0; k < g.gl_pathc; ++k) {
          struct stat st {};
          const std::string_view m = g.gl_pathv[k];
          if (m.find(".ringfeed.idx") != std::string_view::npos) continue;  // our own shard indexes
          if (::stat(g.gl_pathv[k], &st) == 0 && S_ISREG(st.st_mode)) matches.emplace_back(m);
        }
      }
      ::globfree(&g);
      if (rc != 0 && rc != GLOB_NOMATCH) throw dataset_error(piece, "cannot expand the glob");
      if (matches.empty()) throw dataset_error(piece, "no shard matches this pattern");
      std::sort(matches.begin(), matches.end());
      for (auto& m : matches) out.push_back(absolute_path(m));
    } else {
      struct stat st {};
      if (::stat(piece.c_str(), &st) != 0) detail::throw_errno(errno, "cannot open shard", piece);
      if (!S_ISREG(st.st_mode)) throw dataset_error(piece, "not a regular file");
      out.push_back(absolute_path(piece));
    }
  }
  return out;
}

source_kind detect_source_kind(std::string_view source) {
  switch (io::classify_location(source)) {
    case io::location_kind::local:
      break;
    case io::location_kind::nfs:
      throw dataset_error(std::string(source),
                          "an nfs:// source is opened by the loader (an ImageFolder on the export, listed with "
                          "libnfs), not by data::open_dataset; or mount the export and pass the local path");
    default: {
      const std::string name = detail::ascii_lower(io::location_scheme(source));
      throw dataset_error(std::string(source), "unsupported URL scheme '" + escape_bytes(name) + "://'");
    }
  }
  if (source.find('{') != std::string_view::npos || has_glob_chars(source)) return source_kind::tar_shards;
  if (ends_with_ci(source, ".tar")) return source_kind::tar_shards;
  if (ends_with_ci(source, ".csv") || ends_with_ci(source, ".tsv")) return source_kind::manifest;
  const std::string path(source);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) detail::throw_errno(errno, "cannot open dataset source", path);
  if (S_ISDIR(st.st_mode)) {
    bool has_subdir = false;
    const auto tars = tar_files_in(path, has_subdir);
    return !tars.empty() && !has_subdir ? source_kind::tar_shards : source_kind::image_folder;
  }
  throw dataset_error(path, "cannot tell what kind of dataset this is: expected a directory (ImageFolder or .tar "
                            "shards), a .csv/.tsv manifest, or .tar shards (a file, glob or {a..b} pattern)");
}

dataset open_dataset(std::string_view source, const dataset_options& options) {
  source_kind kind = options.kind;
  if (kind == source_kind::auto_detect) kind = detect_source_kind(source);
  detail::dataset_contents contents;
  switch (kind) {
    case source_kind::image_folder:
      contents = detail::image_folder_contents(std::filesystem::path(source), options);
      break;
    case source_kind::manifest:
      contents = detail::manifest_contents(std::filesystem::path(source), options);
      break;
    case source_kind::tar_shards: {
      const std::string path(source);
      struct stat st {};
      if (!has_glob_chars(source) && source.find('{') == std::string_view::npos && ::stat(path.c_str(), &st) == 0 &&
          S_ISDIR(st.st_mode)) {
        bool has_subdir = false;
        auto tars = tar_files_in(path, has_subdir);
        if (tars.empty()) throw dataset_error(path, "no .tar shard in this directory");
        for (auto& t : tars) t = absolute_path(t);
        contents = detail::tar_contents(tars, options);
      } else {
        contents = detail::tar_contents(expand_shard_pattern(source), options);
      }
      break;
    }
    case source_kind::lmdb:
      throw dataset_error(std::string(source), "an LMDB database is read through an io::source: "
                                                 "open_dataset(io::source&) or a loader");
    case source_kind::auto_detect:
      throw std::invalid_argument("open_dataset: bad source_kind");
  }
  contents.source = std::string(source);
  return dataset(std::move(contents));
}

dataset scan_image_folder(const std::filesystem::path& root, const dataset_options& options) {
  return dataset(detail::image_folder_contents(root, options));
}

dataset scan_listed_image_folder(std::string root, const directory_lister& list, const dataset_options& options) {
  return dataset(detail::listed_image_folder_contents(std::move(root), list, options));
}

dataset read_manifest(const std::filesystem::path& manifest, const dataset_options& options) {
  return dataset(detail::manifest_contents(manifest, options));
}

dataset index_tar_shards(const std::vector<std::filesystem::path>& shards, const dataset_options& options) {
  return dataset(detail::tar_contents(shards, options));
}

}  // namespace ringfeed::data
