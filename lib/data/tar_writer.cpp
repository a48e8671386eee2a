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

tar_shard_writer::~tar_shard_writer() = default;  // an open shard's temporary is removed

void tar_shard_writer::add(std::span<const tar_file> group) {
  std::uint64_t need = 0;
  for (const tar_file& f : group) {
    check(f);
    need += footprint(f);
  }
  if (m_file && m_shard_groups > 0 && m_shard_bytes + need + 2 * block > m_limit) close_shard();
  if (!m_file) open_shard();
  for (const tar_file& f : group) append(f);
  ++m_shard_groups;
}

void tar_shard_writer::finish() {
  if (!m_file) return;
  close_shard();  // synced, renamed, directory synced
}

void tar_shard_writer::abandon() noexcept {
  m_file.reset();  // removes the open shard's temporary
  for (const auto& p : m_done) ::unlink(p.c_str());
}

std::string tar_shard_writer::shard_name(std::size_t index) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06zu.tar", index);
  return m_prefix + buf;
}

fs::path tar_shard_writer::final_path() const { return m_dir / shard_name(m_done.size()); }

void tar_shard_writer::open_shard() {
  // `<name>.tmp`: the name a re-run of `ringfeed pack` recognizes and clears.
  m_file.emplace(final_path(), ringfeed::detail::atomic_file::options{.sync = true,
                                                                       .temp_name = shard_name(m_done.size()) + ".tmp"});
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
  m_file->write(std::as_bytes(std::span<const char>(m_buffer)));
  m_buffer.clear();
}

void tar_shard_writer::close_shard() {
  m_buffer.resize(m_buffer.size() + 2 * block);  // end of archive
  m_shard_bytes += 2 * block;
  m_total += 2 * block;
  flush();
  const fs::path final = final_path();
  ringfeed::detail::atomic_file file = std::move(*m_file);
  m_file.reset();
  file.commit();  // fsync, close (NFS may report a failed write only there), rename, fsync the directory
  m_done.push_back(final);
}

}  // namespace ringfeed::data
