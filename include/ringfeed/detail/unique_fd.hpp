// ringfeed::detail::unique_fd — the one move-only owner of a POSIX file
// descriptor (style rule 10: RAII for every C handle). The destructor closes
// a descriptor it still owns and ignores close(2)'s result; writers that must
// see a late write error (NFS, a full disk) call close() and check it.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ringfeed::detail {

class unique_fd {
 public:
  unique_fd() noexcept = default;
  /// Takes ownership of `fd`; a negative value (a failed open's -1) owns nothing.
  explicit unique_fd(int fd) noexcept : m_fd(fd) {}
  unique_fd(unique_fd&& other) noexcept : m_fd(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  [[nodiscard]] int get() const noexcept { return m_fd; }
  [[nodiscard]] explicit operator bool() const noexcept { return m_fd >= 0; }

  /// Gives up ownership: the caller must close the returned descriptor.
  [[nodiscard]] int release() noexcept { return std::exchange(m_fd, -1); }

  /// Closes the owned descriptor, if any, and owns `fd` instead.
  void reset(int fd = -1) noexcept {
    if (const int old = std::exchange(m_fd, fd); old >= 0) ::close(old);
  }

  /// Closes now and returns close(2)'s errno, 0 on success (EBADF when
  /// nothing is owned). The descriptor is released either way.
  [[nodiscard]] int close() noexcept {
    const int fd = release();
    if (fd < 0) return EBADF;
    return ::close(fd) == 0 ? 0 : errno;
  }

 private:
  int m_fd = -1;
};

}  // namespace ringfeed::detail
