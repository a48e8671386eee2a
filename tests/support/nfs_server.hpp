// A real NFS server for the tests (and perf/nfs_depth_bench): nfs-ganesha
// (VFS FSAL) on 127.0.0.1, NFSv3 over TCP, exporting a fresh directory of
// random files and photos, started as a child process and stopped at exit.
// It needs root, ganesha.nfsd and rpcbind, and free NFS ports; start() says
// why not where it cannot run, and callers skip with that reason.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <ringfeed/io/nfs.hpp>
#include <ringfeed/task.hpp>

#include "test_support.hpp"

namespace ringfeed::test::nfs {

inline constexpr const char* host = "127.0.0.1";
inline constexpr std::uint16_t nfs_port = 2049;
inline constexpr std::uint16_t mount_port = 20048;
inline constexpr const char* export_name = "/ringfeed";  // the export as NFSv3 mounts it (Mount_Path_Pseudo)

/// A file of the export and the bytes it holds.
struct test_file {
  std::string name;  // relative to the export root
  std::vector<std::byte> bytes;
};

/// nfs-ganesha serving a temp directory on 127.0.0.1. One per process (it
/// takes the NFS ports); killed when the process exits, and by the kernel
/// (PR_SET_PDEATHSIG) if the process dies first. Not thread-safe.
class ganesha_server {
 public:
  ganesha_server() = default;
  ganesha_server(const ganesha_server&) = delete;
  ganesha_server& operator=(const ganesha_server&) = delete;
  ~ganesha_server() { stop(); }

  /// Creates the export and starts the server: "" when it serves mounts,
  /// else why it cannot run here.
  std::string start();
  /// Starts ganesha again after kill() (same export, same files); "" or why not.
  std::string restart() { return running() ? std::string() : launch(); }
  /// A fresh server process (same export): what earlier cases left in the
  /// old one (connections, caches, threads) does not weigh on a measurement.
  std::string relaunch() {
    stop();
    return launch();
  }

  [[nodiscard]] bool running() const noexcept { return m_pid > 0; }
  [[nodiscard]] pid_t pid() const noexcept { return m_pid; }

  /// SIGKILL: the server dies mid-whatever, as a crashed or fenced one does.
  void kill();
  /// SIGSTOP, and wait until every thread of the server is stopped: a hung
  /// server that keeps its connections open. True once it is.
  bool freeze();
  void thaw();
  void stop();

  /// What ganesha said: its warnings and errors (less the usual noise of a
  /// machine without D-Bus or Kerberos), then the last lines of its log.
  [[nodiscard]] std::string log_tail(std::size_t lines = 8) const;

  /// The exported directory; `imgs/` under it is an ImageFolder of photos.
  [[nodiscard]] const std::filesystem::path& export_dir() const noexcept { return m_export; }
  /// Every regular file in the export, names relative to its root.
  [[nodiscard]] const std::vector<test_file>& files() const noexcept { return m_files; }
  /// The 200 files of 20-200 KiB at the top level (the depth workload).
  [[nodiscard]] const std::vector<test_file>& top_files() const noexcept { return m_top; }

 private:
  void make_export();
  std::string launch();
  bool all_threads_stopped() const;
  void reap();

  std::optional<temp_dir> m_dir;
  std::filesystem::path m_export;
  std::string m_ganesha;
  std::vector<test_file> m_files;
  std::vector<test_file> m_top;
  pid_t m_pid = -1;
};

/// The process's one server (not started until start() is called).
ganesha_server& server();

/// nfs://127.0.0.1/ringfeed/<name>
std::string url_of(const std::string& name);

/// What happened to one read (written by the reading coroutine, read after join).
struct outcome {
  std::chrono::steady_clock::time_point start, end;
  bool ok = false;
  int error = 0;
  std::string what;
};

/// Reads files[i % files.size()] for i in [0, count) with `depth` reads in
/// flight on `client`, compares each with the local bytes and records it in
/// outcomes[i] (sized `count` by the caller), counting `finished`. Never
/// throws.
ringfeed::task<> read_many(ringfeed::io::nfs_client& client, const std::vector<test_file>& files, std::size_t count,
                           std::size_t depth, std::vector<outcome>& outcomes, std::atomic<std::size_t>& finished);

}  // namespace ringfeed::test::nfs
