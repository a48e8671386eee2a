// ringfeed::detail::path_inside — whether one path is another or lies
// inside it: the one check behind "an output inside the source is refused"
// (the CLI's export and pack, the loader's pixel cache_dir).
#pragma once

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace ringfeed::detail {

/// Whether `inner` is `outer` or lies inside it, both resolved as far as
/// they exist (symbolic links, ".."); false when either cannot be resolved.
/// Compared part by part: /data/train2 is not inside /data/train.
inline bool path_inside(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  std::error_code ec;
  // (absolute first: weakly_canonical leaves a relative path whose first
  // part does not exist yet relative)
  const std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(outer, ec), ec);
  if (ec) return false;
  const std::filesystem::path at = std::filesystem::weakly_canonical(std::filesystem::absolute(inner, ec), ec);
  if (ec) return false;
  return std::mismatch(root.begin(), root.end(), at.begin(), at.end()).first == root.end();
}

}  // namespace ringfeed::detail
