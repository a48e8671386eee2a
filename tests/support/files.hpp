// Files and bytes for the tests: deterministic random contents, writing and
// reading whole files, comparing. Every helper throws std::runtime_error
// naming the path when the file system refuses (a test case that throws
// fails with that message).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/random.hpp>

namespace ringfeed::test {

/// `n` bytes, a pure function of (n, seed).
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  ringfeed::splitmix64_rng rng(seed);
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t word = rng.next();
    std::memcpy(out.data() + i, &word, std::min<std::size_t>(8, n - i));
  }
  return out;
}

/// Equal sizes and bytes.
inline bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

/// Writes `bytes` to `p` (replacing it), creating missing parent directories.
inline void write_file(const std::filesystem::path& p, std::span<const std::byte> bytes) {
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}
inline void write_file(const std::filesystem::path& p, std::string_view text) {
  write_file(p, std::as_bytes(std::span(text.data(), text.size())));
}

/// The whole of `p`, in one read, not a character at a time: the sanitizer
/// builds compile tests at -Og, where an istreambuf_iterator loop made the
/// crash tests' shard comparisons most of their run time.
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  std::string s(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(s.data(), static_cast<std::streamsize>(s.size()))) throw std::runtime_error("cannot read " + p.string());
  return s;
}
/// The same as bytes.
inline std::vector<std::byte> read_file(const std::filesystem::path& p) {
  const std::string s = read_text(p);
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

/// Exactly `size` bytes of `path` at `offset`, with pread(2).
inline std::string pread_exact(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  const ringfeed::detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "open " + path);
  std::string out(size, '\0');
  const ssize_t n = ::pread(fd.get(), out.data(), out.size(), static_cast<off_t>(offset));
  if (n != static_cast<ssize_t>(size))
    throw std::runtime_error("pread " + path + ": " + std::to_string(n) + " of " + std::to_string(size) + " bytes");
  return out;
}

}  // namespace ringfeed::test
