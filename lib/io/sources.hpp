// Private: the io::source implementations, made by source::open
// (lib/io/source.cpp) and nothing else.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <ringfeed/io/source.hpp>

namespace ringfeed::io::detail {

/// Local files (a directory, a manifest, tar shards or one file) through a
/// reader: io_uring or pread, buffered or O_DIRECT; network mounts get the
/// network retry policy. lib/io/uring/local_source.cpp.
std::unique_ptr<source> open_local_source(const std::string& location, thread_pool& resume_on,
                                          const source_options& options, storage_info storage);

/// `nfs://server/export/dir` through one libnfs client. lib/io/nfs/nfs_source.cpp.
std::unique_ptr<source> open_nfs_source(const std::string& location, thread_pool& resume_on,
                                        const source_options& options);

/// `https://host/path` (or http://): objects read unsigned through one
/// libcurl multi client. lib/io/object/object_source.cpp.
std::unique_ptr<source> open_https_source(const std::string& location, thread_pool& resume_on,
                                          const source_options& options);

/// `s3://bucket/prefix`: objects SigV4-signed, the prefix listed with
/// ListObjectsV2. lib/io/object/s3_source.cpp.
std::unique_ptr<source> open_s3_source(const std::string& location, thread_pool& resume_on,
                                       const source_options& options);

/// `inner` with a read-through disk cache in options.cache_dir, written by
/// a thread of its own. lib/io/cache/cached_source.cpp.
std::unique_ptr<source> with_cache(std::unique_ptr<source> inner, const source_options& options);

/// A file's version from its attributes: "size <bytes> mtime <s>.<ns>",
/// what source::version() gives where the storage lists sizes and mtimes
/// (nfs://) and what the bytes cache keys a stat'ed file by.
std::string size_mtime_version(std::uint64_t size, std::int64_t mtime_sec, std::uint32_t mtime_nsec);

/// The depth a source of `storage` is sized for: options.depth, else the
/// storage's recommendation.
inline std::size_t depth_for(const source_options& options, const storage_info& storage) noexcept {
  return options.depth != 0 ? options.depth : storage.io_depth;
}

}  // namespace ringfeed::io::detail
