#include "data/index_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <system_error>

#include "data/data_detail.hpp"

namespace ringfeed::data::detail {
namespace {

constexpr double day_s = 24 * 3600;

double age_s(const struct stat& st, double now) { return now - static_cast<double>(st.st_mtim.tv_sec); }

// An index file of ours: folder-<hex>.idx, tar-<hex>.idx.
bool index_name(std::string_view name) {
  return (name.starts_with("folder-") || name.starts_with("tar-")) && name.ends_with(".idx");
}

// The temporary atomic_file writes one through (".<name>.tmp-<unique>").
bool temporary_name(std::string_view name) {
  if (!name.starts_with('.')) return false;
  const std::size_t tmp = name.find(".idx.tmp-");
  return tmp != std::string_view::npos && index_name(name.substr(1, tmp + 4 - 1));
}

}  // namespace

void index_cache_used(const std::filesystem::path& file) noexcept {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || age_s(st, wall_clock_now()) < day_s) return;
  const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  (void)::utimensat(AT_FDCWD, file.c_str(), times, 0);
}

std::size_t prune_index_cache(const std::filesystem::path& dir) noexcept {
  const double now = wall_clock_now();
  const std::filesystem::path marker = dir / ".pruned";
  struct stat st {};
  if (::stat(marker.c_str(), &st) == 0 && age_s(st, now) < day_s) return 0;
  // The marker first: processes indexing at the same time then skip.
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 0;  // not writable: neither are the indexes
  (void)::futimens(fd, nullptr);
  ::close(fd);
  const double max_age = std::chrono::duration<double>(index_cache_max_age).count();
  std::size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().native();
    const bool index = index_name(name);
    if (!index && !temporary_name(name)) continue;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (age_s(st, now) < (index ? max_age : day_s)) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace ringfeed::data::detail
