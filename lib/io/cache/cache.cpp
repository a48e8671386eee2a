// ringfeed::io::cache — see cache.hpp.
#include <ringfeed/io/cache.hpp>

#include <ringfeed/detail/atomic_file.hpp>
#include <ringfeed/text.hpp>

#include <ringfeed/detail/unique_fd.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>


namespace ringfeed::io {


namespace {

constexpr std::array<char, 8> magic = {'R', 'F', 'C', 'A', 'C', 'H', 'E', '1'};
/// magic, key length (u32), payload length (u64); the key goes between.
constexpr std::uint64_t fixed_header = 8 + 4 + 8;
/// get() rewrites an entry's mtime (the LRU order a restart sees) at most
/// this often: one metadata write per entry per interval, not per hit.
constexpr std::time_t mtime_refresh_s = 600;

std::uint64_t fnv1a64(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr char hex_digits[] = "0123456789abcdef";

/// "ab/ab12cd34ef56ab78": an entry's name relative to the cache directory.
struct entry_name {
  std::array<char, 20> text{};
  [[nodiscard]] const char* c_str() const noexcept { return text.data(); }
};

entry_name name_of(std::uint64_t h) noexcept {
  entry_name n;
  for (int i = 0; i < 16; ++i) n.text[3 + i] = hex_digits[(h >> (60 - 4 * i)) & 0xf];
  n.text[0] = n.text[3];
  n.text[1] = n.text[4];
  n.text[2] = '/';
  n.text[19] = '\0';
  return n;
}

bool parse_hex(std::string_view s, std::uint64_t& out) noexcept {
  std::uint64_t v = 0;
  for (const char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else
      return false;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  out = v;
  return true;
}

void store_le(std::byte* p, std::uint64_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint64_t load_le(const std::byte* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

using ringfeed::detail::unique_fd;

struct dir_closer {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};
using dir_stream = std::unique_ptr<DIR, dir_closer>;

/// A directory stream on `name` relative to `at`; null with errno set.
dir_stream open_dir(int at, const char* name) {
  const int fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    errno = err;
  }
  return dir_stream(d);
}

void advance(iovec*& iov, int& n, std::size_t done) noexcept {
  while (n > 0 && done >= iov->iov_len) {
    done -= iov->iov_len;
    ++iov;
    --n;
  }
  if (n > 0) {
    iov->iov_base = static_cast<char*>(iov->iov_base) + done;
    iov->iov_len -= done;
  }
}

/// Reads into `iov` from offset 0 until `want` bytes are in (a regular file
/// answers in one call), the file ends, or an error (-1, errno). May read
/// past `want` into the iovecs that follow it.
ssize_t read_at_least(int fd, iovec* iov, int n, std::size_t want) noexcept {
  std::size_t total = 0;
  while (n > 0 && total < want) {
    const ssize_t r = ::preadv(fd, iov, n, static_cast<off_t>(total));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    total += static_cast<std::size_t>(r);
    advance(iov, n, static_cast<std::size_t>(r));
  }
  return static_cast<ssize_t>(total);
}

enum class verdict : std::uint8_t { ok, other_key, damaged };

verdict check_header(const std::byte* head, std::string_view key, std::uint64_t payload) noexcept {
  if (std::memcmp(head, magic.data(), magic.size()) != 0) return verdict::damaged;
  if (load_le(head + 8, 4) != key.size()) return verdict::other_key;
  if (!key.empty() && std::memcmp(head + 12, key.data(), key.size()) != 0) return verdict::other_key;
  if (load_le(head + 12 + key.size(), 8) != payload) return verdict::damaged;
  return verdict::ok;
}

}  // namespace

struct cache::state {
  struct entry {
    std::uint64_t size = 0;        ///< of the file: header + payload
    std::uint64_t generation = 0;  ///< changes when the file is replaced
    std::time_t disk_time = 0;     ///< the file's mtime as we last set or saw it
    std::list<std::uint64_t>::iterator lru;
  };

  cache_options options;
  unique_fd root;
  unique_fd lock_file;

  mutable std::mutex mutex;
  // Guarded by `mutex`, and so is every rename and unlink of an entry file,
  // which keeps the index and the directory in agreement.
  std::unordered_map<std::uint64_t, entry> index;
  std::list<std::uint64_t> lru;  ///< hashes, least recently used first
  std::uint64_t bytes = 0;
  std::uint64_t stores = 0;
  std::uint64_t evictions = 0;
  std::uint64_t invalidated = 0;
  std::uint64_t generation = 0;

  // Plain counters read only by stats(): relaxed, nothing is ordered by them.
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> temp_sequence{0};  // unique temporary names, no ordering
  std::atomic<bool> error_logged{false};

  void log(std::string_view line) const { log_line(options.log, line); }

  /// Removes an entry and its file. Caller holds `mutex`.
  void remove_locked(std::unordered_map<std::uint64_t, entry>::iterator it) noexcept {
    ::unlinkat(root.get(), name_of(it->first).c_str(), 0);
    bytes -= it->second.size;
    lru.erase(it->second.lru);
    index.erase(it);
  }

  /// Evicts least recently used entries until bytes <= max_bytes. Caller
  /// holds `mutex` (or is the constructor).
  void evict_locked() noexcept {
    while (bytes > options.max_bytes && !lru.empty()) {
      remove_locked(index.find(lru.front()));
      ++evictions;
    }
  }

  /// get() found the file of entry `h` wrong: drop it unless it was replaced
  /// since get() looked it up.
  void drop_if_current(std::uint64_t h, std::uint64_t seen_generation) noexcept {
    const std::lock_guard lock(mutex);
    const auto it = index.find(h);
    if (it == index.end() || it->second.generation != seen_generation) return;
    remove_locked(it);
    ++invalidated;
  }

  void store_failed(std::string_view key, const char* step, int err) noexcept {
    errors.fetch_add(1, std::memory_order_relaxed);
    // exchange: exactly one thread logs, whichever fails first.
    if (error_logged.exchange(true, std::memory_order_relaxed)) return;
    try {
      // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false
      // positive) on "'" + string + "'".
      std::string line = "cache: ";
      if (err == ENOSPC || err == EDQUOT) {
        line += "the file system of '";
      } else {
        line += "cannot store '";
        line += escape_bytes(key);
        line += "' in '";
      }
      line += escape_bytes(options.dir.native());
      line += err == ENOSPC || err == EDQUOT ? "' is full (" : "' (";
      line += step;
      line += ": ";
      line += std::system_category().message(err);
      line += "); reads go on from the source, uncached; further failures are only counted (stats().errors)";
      log(line);
    } catch (...) {  // logging must not fail a read
    }
  }

  [[noreturn]] void fail(int err, const char* what) const {
    throw std::system_error(err, std::system_category(),
                            std::string("ringfeed cache: cannot ") + what + " '" + escape_bytes(options.dir.native()) + "'");
  }

  void remove_temporaries() {
    if (::mkdirat(root.get(), "tmp", 0755) != 0 && errno != EEXIST) fail(errno, "create tmp/ in");
    const dir_stream d = open_dir(root.get(), "tmp");
    if (!d) fail(errno, "open tmp/ in");
    while (const dirent* e = ::readdir(d.get())) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      ::unlinkat(::dirfd(d.get()), e->d_name, 0);  // a directory (not ours) stays
    }
  }

  void scan() {
    struct found {
      std::uint64_t hash;
      std::uint64_t size;
      timespec mtime;
    };
    std::vector<found> files;
    const dir_stream top = open_dir(root.get(), ".");
    if (!top) fail(errno, "scan");
    while (const dirent* e = ::readdir(top.get())) {
      const std::string_view fan = e->d_name;
      std::uint64_t ignored;
      if (fan.size() != 2 || !parse_hex(fan, ignored)) continue;
      const dir_stream sub = open_dir(root.get(), e->d_name);
      if (!sub) continue;  // not a directory
      while (const dirent* f = ::readdir(sub.get())) {
        const std::string_view name = f->d_name;
        std::uint64_t h;
        if (name.size() != 16 || name.substr(0, 2) != fan || !parse_hex(name, h)) continue;
        struct stat st {};
        if (::fstatat(::dirfd(sub.get()), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
          continue;
        if (static_cast<std::uint64_t>(st.st_size) < fixed_header) {  // cannot even hold a header
          ::unlinkat(::dirfd(sub.get()), f->d_name, 0);
          continue;
        }
        files.push_back({h, static_cast<std::uint64_t>(st.st_size), st.st_mtim});
      }
    }
    std::sort(files.begin(), files.end(), [](const found& a, const found& b) {
      if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
      if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
      return a.hash < b.hash;
    });
    index.reserve(files.size());
    for (const found& f : files) {
      entry& e = index[f.hash];
      e.size = f.size;
      e.generation = ++generation;
      e.disk_time = f.mtime.tv_sec;
      e.lru = lru.insert(lru.end(), f.hash);
      bytes += f.size;
    }
    evict_locked();
  }
};

cache::cache(cache_options options) : m_state(std::make_unique<state>()) {
  state& s = *m_state;
  s.options = std::move(options);
  if (s.options.dir.empty())
    throw std::system_error(EINVAL, std::system_category(), "ringfeed cache: no directory given");
  std::error_code ec;
  std::filesystem::create_directories(s.options.dir, ec);
  if (ec) s.fail(ec.value(), "create");
  s.root = unique_fd(::open(s.options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!s.root) s.fail(errno, "open");
  s.lock_file = unique_fd(::openat(s.root.get(), "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!s.lock_file) s.fail(errno, "create the lock file in");
  if (::flock(s.lock_file.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      throw std::system_error(EBUSY, std::system_category(),
                              "ringfeed cache: '" + escape_bytes(s.options.dir.native()) +
                                  "' is in use by another cache (in this or another process); give each its own "
                                  "directory");
    s.fail(errno, "lock");
  }
  s.remove_temporaries();
  s.scan();
}

cache::~cache() = default;

bool cache::get(std::string_view key, std::uint64_t expected_size, read_buffer& buffer) {
  state& s = *m_state;
  buffer.set_size(0);
  const std::uint64_t h = fnv1a64(key);
  const std::uint64_t header = fixed_header + key.size();
  std::uint64_t file_size = 0;
  std::uint64_t generation = 0;
  bool refresh_mtime = false;
  {
    const std::lock_guard lock(s.mutex);
    const auto it = s.index.find(h);
    if (it == s.index.end()) {
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    state::entry& e = it->second;
    const bool size_differs =
        expected_size != unknown_size && (expected_size > e.size || e.size - expected_size != header);
    if (size_differs || e.size < header) {
      s.remove_locked(it);
      ++s.invalidated;
      s.misses.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    file_size = e.size;
    generation = e.generation;
    s.lru.splice(s.lru.end(), s.lru, e.lru);
    const std::time_t now = std::time(nullptr);
    if (now - e.disk_time >= mtime_refresh_s) {
      e.disk_time = now;
      refresh_mtime = true;
    }
  }

  const std::uint64_t payload = file_size - header;
  const unique_fd fd(::openat(s.root.get(), name_of(h).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) s.drop_if_current(h, generation);
    s.misses.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  thread_local std::vector<std::byte> head;
  head.resize(header);
  buffer.reserve(payload);
  std::byte spare{};  // a byte past the end: the file is longer than indexed
  std::array<iovec, 3> iov{{{head.data(), header}, {buffer.data(), payload}, {&spare, 1}}};
  const ssize_t got = read_at_least(fd.get(), iov.data(), static_cast<int>(iov.size()), file_size);
  const verdict v = got != static_cast<ssize_t>(file_size) ? verdict::damaged : check_header(head.data(), key, payload);
  if (v != verdict::ok) {
    // Another key with the same hash keeps its entry; anything else is dropped.
    if (v == verdict::damaged) s.drop_if_current(h, generation);
    s.misses.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (refresh_mtime) {
    const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(fd.get(), times);  // best effort: only the order after a restart
  }
  buffer.set_size(payload);
  s.hits.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void cache::put(std::string_view key, std::span<const std::byte> bytes) noexcept {
  state& s = *m_state;
  try {
    const std::uint64_t header = fixed_header + key.size();
    const std::uint64_t size = header + bytes.size();
    if (key.size() > 0xffffffffu || size > s.options.max_bytes) {
      s.rejected.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::uint64_t h = fnv1a64(key);
    const entry_name final_name = name_of(h);
    std::array<char, 48> temp_name{};
    std::snprintf(temp_name.data(), temp_name.size(), "tmp/%s.%llu", final_name.c_str() + 3,
                  static_cast<unsigned long long>(s.temp_sequence.fetch_add(1, std::memory_order_relaxed)));

    thread_local std::vector<std::byte> head;
    head.resize(header);
    std::memcpy(head.data(), magic.data(), magic.size());
    store_le(head.data() + 8, key.size(), 4);
    if (!key.empty()) std::memcpy(head.data() + 12, key.data(), key.size());
    store_le(head.data() + 12 + key.size(), bytes.size(), 8);

    // Written under tmp/ and renamed into its fan-out directory (the one
    // temporary-and-rename helper, atomic_file); not synced: a cache entry
    // lost in a crash is fetched again, and a torn one is never visible.
    std::optional<ringfeed::detail::atomic_file> file;
    try {
      try {
        file.emplace(s.root.get(), temp_name.data(), final_name.c_str(), ringfeed::detail::atomic_file::options{});
      } catch (const std::system_error& e) {
        if (e.code().value() != ENOENT) throw;
        ::mkdirat(s.root.get(), "tmp", 0755);  // tmp/ removed under us
        file.emplace(s.root.get(), temp_name.data(), final_name.c_str(), ringfeed::detail::atomic_file::options{});
      }
    } catch (const std::system_error& e) {
      return s.store_failed(key, "create", e.code().value());
    }
    try {
      file->write(std::span<const std::byte>(head.data(), header));
      file->write(bytes);
    } catch (const std::system_error& e) {
      return s.store_failed(key, "write", e.code().value());
    }

    std::list<std::uint64_t> node{h};  // allocated before the lock, spliced in under it
    const std::time_t now = std::time(nullptr);
    std::unique_lock lock(s.mutex);
    const auto [it, inserted] = s.index.try_emplace(h);  // before the rename: may throw
    int err = file->try_commit();
    if (err == ENOENT) {  // first entry in this fan-out directory
      const std::array<char, 3> fan{final_name.text[0], final_name.text[1], '\0'};
      ::mkdirat(s.root.get(), fan.data(), 0755);
      err = file->try_commit();
    }
    if (err != 0) {
      if (inserted) s.index.erase(it);
      lock.unlock();
      return s.store_failed(key, "rename", err);
    }
    state::entry& e = it->second;
    if (inserted) {
      e.lru = node.begin();  // stays valid across the splice
      s.lru.splice(s.lru.end(), node);
    } else {
      s.bytes -= e.size;
      s.lru.splice(s.lru.end(), s.lru, e.lru);
    }
    e.size = size;
    e.generation = ++s.generation;
    e.disk_time = now;
    s.bytes += size;
    ++s.stores;
    s.evict_locked();
  } catch (...) {  // std::bad_alloc: a cache must not fail a read
    s.errors.fetch_add(1, std::memory_order_relaxed);
  }
}

cache_stats cache::stats() const {
  const state& s = *m_state;
  cache_stats out;
  {
    const std::lock_guard lock(s.mutex);
    out.stores = s.stores;
    out.evictions = s.evictions;
    out.bytes = s.bytes;
    out.invalidated = s.invalidated;
    out.entries = s.index.size();
  }
  out.hits = s.hits.load(std::memory_order_relaxed);
  out.misses = s.misses.load(std::memory_order_relaxed);
  out.rejected = s.rejected.load(std::memory_order_relaxed);
  out.errors = s.errors.load(std::memory_order_relaxed);
  return out;
}

double cache::hit_rate() const {
  const state& s = *m_state;
  const auto hits = static_cast<double>(s.hits.load(std::memory_order_relaxed));
  const auto misses = static_cast<double>(s.misses.load(std::memory_order_relaxed));
  return hits + misses == 0 ? 0.0 : hits / (hits + misses);
}

const std::filesystem::path& cache::dir() const noexcept { return m_state->options.dir; }

std::uint64_t cache::max_bytes() const noexcept { return m_state->options.max_bytes; }

std::filesystem::path cache::file_of(std::string_view key) const {
  return m_state->options.dir / name_of(fnv1a64(key)).c_str();
}

}  // namespace ringfeed::io
