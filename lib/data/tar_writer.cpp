// tar_shard_writer: numbered ustar shards written through `<name>.tmp`,
// fsync and rename. The reader's side is lib/data/tar.cpp.
#include <ringfeed/data/tar.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "data/data_detail.hpp"

namespace ringfeed::data {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t block = 512;
constexpr std::size_t flush_bytes = 8u << 20;  // write(2) granularity

std::uint64_t padded(std::uint64_t n) { return (n + block - 1) / block * block; }

// The bytes a member takes: its header and its data padded to a block.
std::uint64_t footprint(const tar_file& f) { return block + padded(f.data.size()); }

// `value` as `digits` octal digits and a NUL, into field[0, digits + 1).
void put_octal(char* field, std::size_t digits, std::uint64_t value) {
  for (std::size_t k = digits; k-- > 0; value >>= 3) field[k] = static_cast<char>('0' + (value & 7));
  field[digits] = '\0';
}

// A POSIX ustar header for a regular file: mode 0644, uid/gid 0, mtime 0,
// no owner names, so the archive depends on the names and bytes only.
void put_header(char* h, std::string_view name, std::uint64_t size) {
  std::memset(h, 0, block);
  std::memcpy(h, name.data(), name.size());  // checked: at most 100 bytes
  put_octal(h + 100, 7, 0644);                // mode
  put_octal(h + 108, 7, 0);                   // uid
  put_octal(h + 116, 7, 0);                   // gid
  put_octal(h + 124, 11, size);               // size
  put_octal(h + 136, 11, 0);                  // mtime
  h[156] = '0';                               // typeflag: regular file
  std::memcpy(h + 257, "ustar", 6);           // magic, NUL included
  std::memcpy(h + 263, "00", 2);              // version
  put_octal(h + 329, 7, 0);                   // devmajor
  put_octal(h + 337, 7, 0);                   // devminor
  std::memset(h + 148, ' ', 8);               // checksum: summed as spaces
  unsigned sum = 0;
  for (std::size_t k = 0; k < block; ++k) sum += static_cast<unsigned char>(h[k]);
  put_octal(h + 148, 6, sum);  // six digits, NUL, and the space already there
}

void check(const tar_file& f) {
  const auto bad = [&f](const std::string& why) {
    return std::invalid_argument("ringfeed::data::tar_shard_writer: member '" + std::string(f.name) + "' " + why);
  };
  if (f.name.empty()) throw bad("has an empty name");
  if (f.name.size() > 100) throw bad("has a name longer than ustar's 100 bytes");
  if (f.name.find('\0') != std::string_view::npos) throw bad("has a NUL in its name");
  if (f.data.size() > tar_shard_writer::max_member_size)
    throw bad("holds " + std::to_string(f.data.size()) + " bytes, and a ustar member less than 8 GiB");
}

}  // namespace

tar_shard_writer::tar_shard_writer(fs::path dir, std::uint64_t shard_limit, std::string prefix)
    : m_dir(std::move(dir)), m_limit(shard_limit), m_prefix(std::move(prefix)) {}

tar_shard_writer::~tar_shard_writer() {
  if (m_fd >= 0) {
    ::close(std::exchange(m_fd, -1));
    ::unlink(tmp_path().c_str());
  }
}

void tar_shard_writer::add(std::span<const tar_file> group) {
  std::uint64_t need = 0;
  for (const tar_file& f : group) {
    check(f);
    need += footprint(f);
  }
  if (m_fd >= 0 && m_shard_groups > 0 && m_shard_bytes + need + 2 * block > m_limit) close_shard();
  if (m_fd < 0) open_shard();
  for (const tar_file& f : group) append(f);
  ++m_shard_groups;
}

void tar_shard_writer::finish() {
  if (m_fd < 0) return;
  close_shard();
  detail::unique_fd dir(::open(m_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir || ::fsync(dir.get()) != 0) detail::throw_errno(errno, "cannot sync directory", m_dir.native());
}

void tar_shard_writer::abandon() noexcept {
  if (m_fd >= 0) {
    ::close(std::exchange(m_fd, -1));
    ::unlink(tmp_path().c_str());
  }
  for (const auto& p : m_done) ::unlink(p.c_str());
}

std::string tar_shard_writer::shard_name(std::size_t index) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06zu.tar", index);
  return m_prefix + buf;
}

fs::path tar_shard_writer::final_path() const { return m_dir / shard_name(m_done.size()); }

fs::path tar_shard_writer::tmp_path() const { return m_dir / (shard_name(m_done.size()) + ".tmp"); }

void tar_shard_writer::open_shard() {
  const fs::path tmp = tmp_path();
  m_fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (m_fd < 0) detail::throw_errno(errno, "cannot create", tmp.native());
  m_shard_bytes = 0;
  m_shard_groups = 0;
}

void tar_shard_writer::append(const tar_file& f) {
  const std::size_t at = m_buffer.size();
  m_buffer.resize(at + footprint(f));  // zero-fills the padding
  put_header(m_buffer.data() + at, f.name, f.data.size());
  std::copy(f.data.begin(), f.data.end(), m_buffer.begin() + static_cast<std::ptrdiff_t>(at + block));
  m_shard_bytes += footprint(f);
  m_total += footprint(f);
  if (m_buffer.size() >= flush_bytes) flush();
}

void tar_shard_writer::flush() {
  std::span<const char> rest(m_buffer);
  while (!rest.empty()) {
    const ssize_t n = ::write(m_fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) detail::throw_errno(errno, "cannot write", tmp_path().native());
    rest = rest.subspan(static_cast<std::size_t>(n));
  }
  m_buffer.clear();
}

void tar_shard_writer::close_shard() {
  m_buffer.resize(m_buffer.size() + 2 * block);  // end of archive
  m_shard_bytes += 2 * block;
  m_total += 2 * block;
  flush();
  const fs::path tmp = tmp_path();
  if (::fsync(m_fd) != 0) detail::throw_errno(errno, "cannot sync", tmp.native());
  // NFS and full disks may only report a failed write at close.
  if (::close(std::exchange(m_fd, -1)) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    detail::throw_errno(err, "cannot write", tmp.native());
  }
  const fs::path final = final_path();
  if (::rename(tmp.c_str(), final.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    detail::throw_errno(err, "cannot rename " + tmp.native() + " to", final.native());
  }
  m_done.push_back(final);
}

}  // namespace ringfeed::data
