// detail::atomic_file: temporary, write, (sync), rename (atomic_file.hpp).
#include <ringfeed/detail/atomic_file.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <random>
#include <system_error>
#include <utility>

namespace ringfeed::detail {
namespace {

[[noreturn]] void fail(int err, const std::string& what) { throw std::system_error(err, std::generic_category(), what); }

std::string unique_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t seed = std::random_device{}();
  return std::to_string(static_cast<std::uint64_t>(::getpid())) + "-" + std::to_string(seed % 1000000) + "-" +
         std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
}

// The directory part of `name` ("." when none), for syncing it.
std::string directory_of(const std::string& name) {
  const auto slash = name.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : name.substr(0, slash);
}

}  // namespace

atomic_file::atomic_file(std::filesystem::path final_path, options o)
    : atomic_file(AT_FDCWD, {}, final_path.native(), std::move(o)) {}

atomic_file::atomic_file(int dir_fd, std::string temp, std::string final_name, options o)
    : m_dir(dir_fd), m_temp(std::move(temp)), m_final(std::move(final_name)), m_sync(o.sync) {
  if (m_temp.empty()) m_temp = o.temp_name;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  if (m_temp.empty()) {
    const std::filesystem::path f(m_final);
    m_temp = (f.parent_path() / ("." + f.filename().native() + ".tmp-" + unique_suffix())).native();
    flags |= O_EXCL;
  } else if (m_temp.find('/') == std::string::npos && m_dir == AT_FDCWD) {
    m_temp = (std::filesystem::path(m_final).parent_path() / m_temp).native();
    flags |= O_TRUNC;
  } else {
    flags |= O_TRUNC;
  }
  m_fd = unique_fd(::openat(m_dir, m_temp.c_str(), flags, 0644));
  if (!m_fd) fail(errno, "cannot create " + m_temp);
}

atomic_file::atomic_file(atomic_file&& o) noexcept
    : m_dir(o.m_dir), m_temp(std::move(o.m_temp)), m_final(std::move(o.m_final)), m_sync(o.m_sync),
      m_fd(std::move(o.m_fd)), m_written(o.m_written), m_done(std::exchange(o.m_done, true)) {}

atomic_file::~atomic_file() {
  if (m_done) return;
  m_fd.reset();
  ::unlinkat(m_dir, m_temp.c_str(), 0);
}

void atomic_file::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(m_fd.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno, "cannot write " + m_temp);
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

int atomic_file::try_commit() noexcept {
  if (m_done) return 0;
  if (!m_written) {
    if (m_sync && ::fsync(m_fd.get()) != 0) return errno;
    // NFS and full disks may report a failed write only at close.
    if (const int err = m_fd.close(); err != 0) return err;
    m_written = true;
  }
  if (::renameat(m_dir, m_temp.c_str(), m_dir, m_final.c_str()) != 0) return errno;
  m_done = true;
  if (m_sync) {
    unique_fd dir(::openat(m_dir, directory_of(m_final).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir || ::fsync(dir.get()) != 0) return errno;
  }
  return 0;
}

void atomic_file::commit() {
  const bool renamed_before = m_done;
  if (const int err = try_commit(); err != 0) {
    const bool renamed = m_done && !renamed_before;
    if (!renamed) {
      m_fd.reset();
      ::unlinkat(m_dir, m_temp.c_str(), 0);
      m_done = true;
    }
    fail(err, (renamed ? "cannot sync the directory of " : "cannot write ") + m_final);
  }
}

void write_file_atomically(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> parts,
                           atomic_file::options o) {
  atomic_file f(path, std::move(o));
  for (const auto& p : parts) f.write(p);
  f.commit();
}

}  // namespace ringfeed::detail
