// Private: the arithmetic of reading a whole file or a range of one, shared
// by every reader backend so that the io_uring coroutines and the blocking
// pread loop cannot drift apart. A plan says where the next read goes and
// digests what each read returned; the backend only issues the reads.
//
//   read_plan p = read_plan::whole(buffer, direct, until_zero);
//   do { auto dst = p.next(); n = read(fd, dst, p.offset()); } while (!p.advance(n));
//   return p.result(path);
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

#include <ringfeed/io/buffer.hpp>

namespace ringfeed::io::detail {

class read_plan {
 public:
  /// Whole file. Buffered: a short read is the end (or, `until_zero`, only
  /// a read of 0 bytes is: network file systems may return less). Direct:
  /// reads stay block aligned; a read short of a block is the end.
  static read_plan whole(read_buffer& b, bool direct, bool until_zero) {
    read_plan p(b, direct);
    p.m_whole = true;
    p.m_until_zero = until_zero;
    if (b.capacity() < min_chunk) b.reserve(first_chunk);
    return p;
  }

  /// `size` bytes at `offset`. Direct: the aligned blocks around them are
  /// read and result() points into them.
  static read_plan range(read_buffer& b, std::uint64_t offset, std::size_t size, bool direct) {
    read_plan p(b, direct);
    p.m_offset = offset;
    p.m_size = size;
    p.m_start = direct ? offset / read_buffer::alignment * read_buffer::alignment : offset;
    const std::uint64_t end = direct ? read_buffer::round_up(offset + size) : offset + size;
    p.m_total = static_cast<std::size_t>(end - p.m_start);
    b.reserve(p.m_total);
    return p;
  }

  /// Where the next read goes (never empty).
  [[nodiscard]] std::span<std::byte> next() {
    if (m_whole && m_buffer->capacity() - m_got < min_chunk) {
      m_buffer->set_size(m_got);  // what reserve() keeps
      m_buffer->reserve(m_got + std::max(m_got, first_chunk));  // doubles: few reads for large files
    }
    const std::size_t limit = m_whole ? m_buffer->capacity() : m_total;
    m_asked = limit - m_got;
    return {m_buffer->data() + m_got, m_asked};
  }
  /// The file offset of next()'s read.
  [[nodiscard]] std::uint64_t offset() const noexcept { return m_start + m_got; }
  /// Nothing has been read yet (O_DIRECT refusals show on the first read).
  [[nodiscard]] bool first() const noexcept { return m_got == 0; }

  /// Digests the count the read returned; true when no more reads are needed.
  bool advance(std::size_t n) noexcept {
    m_got += n;
    if (n == 0) return true;
    if (!m_whole && m_got >= m_total) return true;
    if (n < m_asked) {
      if (m_direct) return n % read_buffer::alignment != 0;  // aligned and short: go on at an aligned offset
      return m_whole ? !m_until_zero : false;
    }
    return false;
  }

  /// The bytes asked for; for a range the file ending first is EIO naming
  /// `path` and where it ended.
  [[nodiscard]] std::span<const std::byte> result(const std::string& path) const {
    if (m_whole) {
      m_buffer->set_size(m_got);
      return {m_buffer->data(), m_got};
    }
    const std::size_t skip = static_cast<std::size_t>(m_offset - m_start);
    if (m_got < skip + m_size)
      throw std::system_error(EIO, std::generic_category(),
                              "read '" + path + "': the file ends at byte " + std::to_string(m_start + m_got) +
                                  ", inside bytes [" + std::to_string(m_offset) + ", " +
                                  std::to_string(m_offset + m_size) + ")");
    m_buffer->set_size(skip + m_size);
    return {m_buffer->data() + skip, m_size};
  }

 private:
  static constexpr std::size_t min_chunk = 64 * 1024;
  static constexpr std::size_t first_chunk = 256 * 1024;

  read_plan(read_buffer& b, bool direct) : m_buffer(&b), m_direct(direct) {}

  read_buffer* m_buffer;
  bool m_direct;
  bool m_whole = false;
  bool m_until_zero = false;
  std::uint64_t m_offset = 0;  // range: first byte wanted
  std::size_t m_size = 0;      // range: bytes wanted
  std::uint64_t m_start = 0;   // file offset of buffer byte 0
  std::size_t m_total = 0;     // range: bytes to read from m_start
  std::size_t m_got = 0;       // bytes in the buffer
  std::size_t m_asked = 0;     // size of the last next()
};

}  // namespace ringfeed::io::detail
