// io::source::open — which implementation reads a location (source.hpp).
#include <ringfeed/io/source.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

#include <ringfeed/io/location.hpp>

#include "io/lmdb/lmdb_source.hpp"
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

std::uint64_t source::file_size(const std::string& file) {
  throw std::system_error(ENOTSUP, std::generic_category(),
                          "cannot tell the size of '" + file + "' on " + std::string(scheme()) +
                              " storage without listing it");
}

std::string source::version(const std::string&) const { return {}; }

namespace detail {

std::string size_mtime_version(std::uint64_t size, std::int64_t mtime_sec, std::uint32_t mtime_nsec) {
  char text[96];
  std::snprintf(text, sizeof text, "size %llu mtime %lld.%09u", static_cast<unsigned long long>(size),
                static_cast<long long>(mtime_sec), mtime_nsec);
  return text;
}

}  // namespace detail

std::unique_ptr<source> source::open(const std::string& location, thread_pool& resume_on, source_options options) {
  std::unique_ptr<source> s;
  switch (classify_location_on_disk(location)) {
    case location_kind::http:
      s = detail::open_https_source(location, resume_on, options);
      break;
    case location_kind::s3:
      s = detail::open_s3_source(location, resume_on, options);
      break;
    case location_kind::nfs:
      s = detail::open_nfs_source(location, resume_on, options);
      break;
    case location_kind::lmdb:
      s = detail::open_lmdb_source(location, resume_on, options);
      break;
    case location_kind::local:
    case location_kind::other_url:  // read as a path, as before: its reads name it
      s = detail::open_local_source(location, resume_on, options, probe_local(location));
      break;
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
