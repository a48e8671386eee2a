// perf/bench/file_corpus.hpp — a directory of small files for the read benchmarks.
//
// small_file_corpus() creates it on first use in a fresh /tmp/ringfeed-perf-*
// directory: RINGFEED_BENCH_FILES files (default 2000) of 16–200 KiB, sizes
// and contents from a fixed seed, so ring_bench and baseline_pread_bench read
// the same bytes. It reads every file once (warm page cache) before any
// benchmark runs, and removes the directory when the process exits normally.
//
// Plain POSIX and the header-only ringfeed/random.hpp: the baselines use it
// too, and they do not link ringfeed.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <ringfeed/random.hpp>

#include "bench_support.hpp"

namespace ringfeed::perf {

/// Reads all of `path` into `buffer` (grown as needed) with
/// open → fstat → pread… → close. Returns the bytes read; throws
/// std::system_error on failure.
inline std::size_t pread_whole_file(const std::string& path, std::vector<std::byte>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::system_category(), "fstat " + path);
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (buffer.size() < size) buffer.resize(size);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, buffer.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::system_error(err, std::system_category(), "pread " + path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return done;
}

class file_corpus {
 public:
  file_corpus(std::size_t count, std::size_t min_bytes, std::size_t max_bytes, std::uint64_t seed) {
    char dir_template[] = "/tmp/ringfeed-perf-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr)
      throw std::system_error(errno, std::system_category(), "mkdtemp /tmp/ringfeed-perf-XXXXXX");
    m_dir = dir_template;
    splitmix64_rng rng(seed);
    std::vector<std::uint64_t> block((max_bytes + 7) / 8);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t size = min_bytes + rng.next() % (max_bytes - min_bytes + 1);
      for (auto& word : block) word = rng.next();
      char name[32];
      std::snprintf(name, sizeof name, "/f%05zu.bin", i);
      std::string path = m_dir + name;
      write_file(path, reinterpret_cast<const char*>(block.data()), size);
      m_paths.push_back(std::move(path));
      m_sizes.push_back(size);
      m_total += size;
      if (size > m_max) m_max = size;
    }
    warm();
  }

  ~file_corpus() {
    for (const auto& p : m_paths) ::unlink(p.c_str());
    ::rmdir(m_dir.c_str());
  }

  file_corpus(const file_corpus&) = delete;
  file_corpus& operator=(const file_corpus&) = delete;

  [[nodiscard]] std::size_t count() const noexcept { return m_paths.size(); }
  [[nodiscard]] const std::string& path(std::size_t i) const noexcept { return m_paths[i]; }
  [[nodiscard]] std::size_t size(std::size_t i) const noexcept { return m_sizes[i]; }
  [[nodiscard]] std::size_t total_bytes() const noexcept { return m_total; }
  [[nodiscard]] std::size_t max_size() const noexcept { return m_max; }
  [[nodiscard]] const std::string& dir() const noexcept { return m_dir; }

  /// Reads every file once, so the measured runs hit the page cache.
  void warm() const {
    std::vector<std::byte> buffer(m_max);
    std::size_t total = 0;
    for (const auto& p : m_paths) total += pread_whole_file(p, buffer);
    if (total != m_total) throw std::runtime_error("file_corpus: short read while warming " + m_dir);
  }

 private:
  static void write_file(const std::string& path, const char* data, std::size_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "create " + path);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        throw std::system_error(err, std::system_category(), "write " + path);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }

  std::string m_dir;
  std::vector<std::string> m_paths;
  std::vector<std::size_t> m_sizes;
  std::size_t m_total = 0;
  std::size_t m_max = 0;
};

inline constexpr std::size_t corpus_min_bytes = 16 * 1024;
inline constexpr std::size_t corpus_max_bytes = 200 * 1024;

/// Number of files in the shared corpus: RINGFEED_BENCH_FILES, default 2000.
inline long corpus_file_count() { return env_list("RINGFEED_BENCH_FILES", {2000}).front(); }

/// The process's corpus, created (and warmed) on first use, removed at exit.
inline const file_corpus& small_file_corpus() {
  static const file_corpus corpus(static_cast<std::size_t>(corpus_file_count()), corpus_min_bytes,
                                  corpus_max_bytes, 0x5EED'F11E'5ull);
  return corpus;
}

}  // namespace ringfeed::perf
