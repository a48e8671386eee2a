// io::source::open — which implementation reads a location (source.hpp).
#include <ringfeed/io/source.hpp>

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <system_error>

#include <ringfeed/io/nfs.hpp>

#include "io/lmdb_source.hpp"
#include "io/sources.hpp"

namespace ringfeed::io {

namespace {

// What holds a local location: the location itself, or (a shard pattern
// like `dir/{000..009}.tar`, a glob) the nearest directory above it that
// exists.
storage_info probe_local(const std::string& location) {
  std::string at = location;
  struct stat st {};
  while (!at.empty() && ::stat(at.c_str(), &st) != 0) {
    const auto slash = at.find_last_of('/');
    if (slash == std::string::npos) {
      at.assign(1, '.');  // not = ".": GCC 12 -Wrestrict false positive (PR 105651)
      break;
    }
    at.resize(slash == 0 ? 1 : slash);  // the parent ("/" for a top-level entry)
  }
  return probe_source(at.empty() ? "." : at);
}

}  // namespace

source::~source() = default;

bool is_object_location(std::string_view location) noexcept {
  std::string head(location.substr(0, 8));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return head.starts_with("s3://") || head.starts_with("https://") || head.starts_with("http://");
}

std::uint64_t source::file_size(const std::string& file) {
  throw std::system_error(ENOTSUP, std::generic_category(),
                          "cannot tell the size of '" + file + "' on " + std::string(scheme()) +
                              " storage without listing it");
}

std::unique_ptr<source> source::open(const std::string& location, thread_pool& resume_on, source_options options) {
  std::unique_ptr<source> s;
  if (detail::is_http_location(location)) {
    s = detail::open_https_source(location, resume_on, options);
  } else if (is_object_location(location)) {
    s = detail::open_s3_source(location, resume_on, options);
  } else if (nfs_url::is_nfs(location)) {
    s = detail::open_nfs_source(location, resume_on, options);
  } else if (is_lmdb_location(location)) {
    s = detail::open_lmdb_source(location, resume_on, options);
  } else {
    s = detail::open_local_source(location, resume_on, options, probe_local(location));
  }
  if (options.cache_dir.empty()) return s;
  if (s->storage().device != device_class::network) {
    log_line(options.log, "cache_dir '" + options.cache_dir.string() + "' not used: '" + location +
                              "' is on local storage (the cache keeps samples of nfs:// sources and network "
                              "file systems)");
    return s;
  }
  return detail::with_cache(std::move(s), options);
}

}  // namespace ringfeed::io
