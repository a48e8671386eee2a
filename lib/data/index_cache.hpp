// The upkeep of the dataset index cache (cache_dir(options): the
// folder-*.idx and tar-*.idx files ImageFolder scans and tar shard indexes
// leave there). Every index of every folder or shard ever opened would stay
// forever; instead an index not used for `index_cache_max_age` is removed.
// "Used" is the file's mtime: written when made, refreshed when read (at most
// once a day, one utimensat). The sweep runs when an index is written, at
// most once a day per directory (the `.pruned` marker's mtime), so a data
// set of thousands of shards does not list the directory thousands of times.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>

namespace ringfeed::data::detail {

inline constexpr std::chrono::hours index_cache_max_age{24 * 30};

/// The cached index `file` was just read: keeps it from the sweep.
void index_cache_used(const std::filesystem::path& file) noexcept;

/// An index was just written into `dir`: removes the folder-*.idx and
/// tar-*.idx files there unused for index_cache_max_age, and temporaries
/// of a writer killed mid-write (".<name>.tmp-*") older than a day, unless
/// a sweep of `dir` ran in the last day. Returns how many it removed.
/// Nothing else in `dir` is touched; errors are ignored (the cache is an
/// optimisation).
std::size_t prune_index_cache(const std::filesystem::path& dir) noexcept;

}  // namespace ringfeed::data::detail
