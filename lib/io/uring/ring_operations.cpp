// Each io_uring operation prepares its SQEs and completes itself on the
// ring thread, and hands its result, or its error naming the file, to the
// coroutine that awaited it (ring.hpp's *_operation).
#include "ring_state.hpp"

#include <ringfeed/text.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <system_error>

namespace ringfeed::io {

using namespace uring_detail;

static_assert(sizeof(struct statx) <= 256, "ring::statx_operation::m_statx is too small");
static_assert(alignof(ring::operation) > step_mask, "a read_file chain's step goes in the low bits of user_data");

// --- completion results (the awaiting thread) --------------------------------------

void ring::operation::throw_if_failed(std::string_view verb, std::string_view path) const {
  if (m_error == 0) return;
  std::string what(verb);
  what += " '";
  what += escape_bytes(path);  // a file name: bytes, not text
  what += '\'';
  throw std::system_error(std::error_code(m_error, std::system_category()), what);
}

file ring::openat_operation::await_resume() {
  throw_if_failed("open", m_path);
  return file{m_fd, std::move(m_path)};
}

file_info ring::statx_operation::await_resume() {
  throw_if_failed("statx", m_error_path.empty() ? std::string_view(m_path) : m_error_path);
  const auto* stx = reinterpret_cast<const struct statx*>(m_statx);
  file_info info;
  info.size = stx->stx_size;
  info.mode = stx->stx_mode;
  info.block_size = stx->stx_blksize;
  info.mtime_ns = static_cast<std::int64_t>(stx->stx_mtime.tv_sec) * 1'000'000'000 + stx->stx_mtime.tv_nsec;
  return info;
}

std::size_t ring::read_operation::await_resume() {
  if (m_error != 0) {
    std::string where = m_error_path.empty() ? "fd " + std::to_string(m_fd)
                                             : escape_bytes(m_error_path);
    where += m_offset == stream_position ? "' after " + std::to_string(m_done) + " bytes"
                                         : "' at offset " + std::to_string(m_offset + m_done);
    std::string what = "read '" + where;
    throw std::system_error(std::error_code(m_error, std::system_category()), what);
  }
  return m_done;
}

void ring::close_operation::await_resume() { throw_if_failed("close", m_path); }

bool ring::read_file_operation::await_ready() noexcept {
  if (m_ring->linked_reads()) return false;
  m_open_res = -EOPNOTSUPP;
  m_error = EOPNOTSUPP;
  return true;
}

std::size_t ring::read_file_operation::await_resume() {
  if (m_open_res < 0) throw_if_failed("open", *m_path);
  if (m_error != 0) {
    throw std::system_error(std::error_code(m_error, std::system_category()),
                            "read '" + escape_bytes(*m_path) + "' at offset 0");
  }
  return static_cast<std::size_t>(m_read_res);
}

// --- each operation prepares and completes itself (the ring thread) ------------------

ring::operation::outcome ring::operation::complete(state& s, std::uint64_t /*step*/, int res) noexcept {
  if (retryable(res)) return outcome::again;
  if (res < 0) s.fail(*this, res);
  return outcome::done;
}

void ring::openat_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_openat(sqe, m_dirfd, m_path.c_str(), m_flags | O_CLOEXEC, m_mode);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::openat_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res >= 0) {
    m_fd = res;
    return outcome::done;
  }
  return operation::complete(s, step, res);
}

void ring::statx_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_statx(sqe, m_dirfd, m_path.c_str(), m_at_flags, STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME,
                      reinterpret_cast<struct statx*>(m_statx));
  s.tag(sqe, *this);
}

void ring::read_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  const std::size_t len = std::min(m_buffer.size() - m_done, max_read_chunk);
  const std::uint64_t offset = m_offset == stream_position ? stream_position : m_offset + m_done;  // -1: current position
  io_uring_prep_read(sqe, m_fd, m_buffer.data() + m_done, static_cast<unsigned>(len), offset);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::read_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res <= 0) return operation::complete(s, step, res);  // a retry, an error, or 0: end of file
  m_done += static_cast<std::size_t>(res);
  // A short read continues from where it stopped.
  return m_once || m_done >= m_buffer.size() ? outcome::done : outcome::again;
}

void ring::close_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_close(sqe, m_fd);
  s.tag(sqe, *this);
}

void ring::sleep_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  auto* ts = reinterpret_cast<__kernel_timespec*>(m_timespec);
  ts->tv_sec = m_duration.count() / 1'000'000'000;
  ts->tv_nsec = m_duration.count() % 1'000'000'000;
  io_uring_prep_timeout(sqe, ts, 0, 0);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::sleep_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res == -ETIME) return outcome::done;  // the timeout expired: done
  return operation::complete(s, step, res);
}

// A chain must end (and free its slot) before another can start.
bool ring::read_file_operation::can_prepare(const state& s) const noexcept { return !s.free_slots.empty(); }

void ring::read_file_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  const auto self = reinterpret_cast<std::uint64_t>(static_cast<operation*>(this));
  m_slot = s.free_slots.back();
  s.free_slots.pop_back();
  m_pending_cqes = 3;
  m_open_res = m_read_res = 0;
  // No O_CLOEXEC: a direct descriptor is no descriptor, and the kernel
  // refuses the flag with a slot (EINVAL).
  io_uring_prep_openat_direct(sqe, AT_FDCWD, m_path->c_str(), m_flags & ~O_CLOEXEC, 0, m_slot);
  sqe->flags |= IOSQE_IO_LINK;  // a failed open cancels the read and the close
  io_uring_sqe_set_data64(sqe, self | open_step);
  io_uring_sqe* rd = io_uring_get_sqe(&s.uring);
  const auto len = static_cast<unsigned>(std::min(m_buffer.size(), max_read_chunk));
  io_uring_prep_read(rd, static_cast<int>(m_slot), m_buffer.data(), len, 0);
  rd->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;  // the close runs whatever the read gave
  io_uring_sqe_set_data64(rd, self);
  io_uring_sqe* cl = io_uring_get_sqe(&s.uring);
  io_uring_prep_close_direct(cl, m_slot);
  io_uring_sqe_set_data64(cl, self | close_step);
}

// Done once all three steps have completed, with the outcome set; the whole
// chain goes again on EINTR/EAGAIN (it is closed by then).
ring::operation::outcome ring::read_file_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (step == open_step)
    m_open_res = res;
  else if (step == close_step)
    s.free_slots.push_back(m_slot);  // the chain is done with it (closed, or never filled)
  else
    m_read_res = res;
  if (--m_pending_cqes != 0) return outcome::waiting;
  if (retryable(m_open_res) || retryable(m_read_res)) return outcome::again;
  if (m_open_res < 0)
    m_error = -m_open_res;
  else if (m_read_res < 0)
    m_error = -m_read_res;
  return outcome::done;
}

}  // namespace ringfeed::io
