// nfs_client against a real NFS server: nfs-ganesha (VFS FSAL) on 127.0.0.1,
// started here as a child process exporting a fresh directory of random
// files, and stopped at exit. Where it cannot run (not root, no ganesha or
// rpcbind, NFS ports taken, the server fails to come up) the whole
// executable is skipped with the reason and ganesha's log tail.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/io/cache.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/loader.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ringfeed::async_scope;
using ringfeed::sync_wait;
using ringfeed::task;
using ringfeed::thread_pool;
using ringfeed::io::nfs_client;
using ringfeed::io::nfs_options;
using ringfeed::io::nfs_url;
using ringfeed::io::read_buffer;
using steady = std::chrono::steady_clock;

namespace {

constexpr const char* host = "127.0.0.1";
constexpr std::uint16_t nfs_port = 2049;
constexpr std::uint16_t mount_port = 20048;
constexpr const char* export_name = "/ringfeed";  // the export as NFSv3 mounts it (Mount_Path_Pseudo)

struct test_file {
  std::string name;  // relative to the export root
  std::vector<std::byte> bytes;
};

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(v.data() + i, &word, std::min<std::size_t>(8, n - i));
  }
  return v;
}

double seconds_since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }

bool port_open(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Why `port` on 127.0.0.1 cannot be bound, or "".
std::string port_busy(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string why;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    why = "port " + std::to_string(port) + " on 127.0.0.1 is not free (" + std::strerror(errno) +
          "): another NFS server is running?";
  ::close(fd);
  return why;
}

std::string find_program(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin"}) {
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// Runs `argv` to completion (for rpcbind, which daemonizes); its exit status.
int run_program(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// nfs-ganesha serving a temp directory on 127.0.0.1, NFSv3 over TCP. One per
/// process (it takes the NFS ports); killed when the process exits, and by
/// the kernel (PR_SET_PDEATHSIG) if the process dies first.
class ganesha_server {
 public:
  ganesha_server() = default;
  ganesha_server(const ganesha_server&) = delete;
  ganesha_server& operator=(const ganesha_server&) = delete;
  ~ganesha_server() { stop(); }

  /// Creates the export and starts the server: "" when it serves mounts,
  /// else why it cannot run here.
  std::string start() {
    if (::geteuid() != 0)
      return "the NFS server test needs root (nfs-ganesha's VFS FSAL opens files by handle, "
             "which takes CAP_DAC_READ_SEARCH, and binds the privileged NFS ports)";
    m_ganesha = find_program("ganesha.nfsd");
    if (m_ganesha.empty()) return "ganesha.nfsd not found (apt-get install nfs-ganesha nfs-ganesha-vfs)";
    const std::string rpcbind = find_program("rpcbind");
    if (rpcbind.empty()) return "rpcbind not found (apt-get install rpcbind)";
    for (std::uint16_t port : {nfs_port, mount_port})
      if (std::string why = port_busy(port); !why.empty()) return why;
    if (!port_open(111)) {
      // rpcbind stays running afterwards, as the system's would.
      const int rc = run_program({rpcbind, "-w"});
      const auto until = steady::now() + 5s;
      while (!port_open(111) && steady::now() < until) std::this_thread::sleep_for(20ms);
      if (!port_open(111))
        return "rpcbind (" + rpcbind + " -w, exit status " + std::to_string(rc) +
               ") did not open port 111 within 5 s; ganesha needs it to register NFS and MOUNT";
    }
    try {
      make_export();
    } catch (const std::exception& e) {
      return std::string("cannot create the export directory: ") + e.what();
    }
    return launch();
  }

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
  void kill() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    reap();
  }
  /// SIGSTOP, and wait until every thread of the server is stopped: a hung
  /// server that keeps its connections open. True once it is.
  bool freeze() {
    if (m_pid <= 0) return false;
    ::kill(m_pid, SIGSTOP);
    const auto until = steady::now() + 5s;
    while (steady::now() < until) {
      if (all_threads_stopped()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  void thaw() {
    if (m_pid > 0) ::kill(m_pid, SIGCONT);
  }

  void stop() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGCONT);
    ::kill(m_pid, SIGTERM);
    const auto until = steady::now() + 3s;
    while (steady::now() < until) {
      if (::waitpid(m_pid, nullptr, WNOHANG) == m_pid) {
        m_pid = -1;
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    ::kill(m_pid, SIGKILL);
    reap();
  }

  /// What ganesha said: its warnings and errors (less the usual noise of a
  /// machine without D-Bus or Kerberos), then the last lines of its log.
  [[nodiscard]] std::string log_tail(std::size_t lines = 8) const {
    std::deque<std::string> important, tail;
    for (const fs::path& p : {m_dir->path() / "ganesha.log", m_dir->path() / "ganesha.out"}) {
      std::ifstream in(p);
      for (std::string line; std::getline(in, line);) {
        const bool severe = line.find(" :WARN :") != std::string::npos || line.find(" :CRIT :") != std::string::npos ||
                            line.find(" :MAJ :") != std::string::npos || line.find(" :FATAL :") != std::string::npos ||
                            p.filename() == "ganesha.out";
        const bool noise = line.find("DBUS") != std::string::npos || line.find("krb5") != std::string::npos ||
                           line.find("keytab") != std::string::npos || line.find("principal") != std::string::npos ||
                           line.find("realm") != std::string::npos || line.find("RADOS") != std::string::npos;
        if (severe && !noise) important.push_back(p.filename().string() + ": " + line);
        tail.push_back(p.filename().string() + ": " + line);
        if (important.size() > lines) important.pop_front();
        if (tail.size() > lines) tail.pop_front();
      }
    }
    std::string out;
    for (const auto& l : important) out += "\n  " + l;
    if (!tail.empty()) out += "\n  ... last lines:";
    for (const auto& l : tail) out += "\n  " + l;
    return out.empty() ? "\n  (no log)" : out;
  }

  /// The exported directory; `imgs/` under it is an ImageFolder of photos.
  [[nodiscard]] const fs::path& export_dir() const noexcept { return m_export; }
  /// Every regular file in the export, names relative to its root.
  [[nodiscard]] const std::vector<test_file>& files() const noexcept { return m_files; }
  /// The 200 files at the top level (the depth test's workload).
  [[nodiscard]] const std::vector<test_file>& top_files() const noexcept { return m_top; }

 private:
  void make_export() {
    m_dir.emplace();
    m_export = m_dir->path() / "export";
    fs::create_directories(m_export / "sub" / "deeper");
    std::mt19937 rng(2024);
    auto add = [&](const std::string& name, std::size_t size, bool top) {
      test_file f{name, random_bytes(size, static_cast<std::uint32_t>(rng()))};
      std::ofstream out(m_export / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(f.bytes.data()), static_cast<std::streamsize>(f.bytes.size()));
      if (!out) throw std::runtime_error("cannot write " + (m_export / name).string());
      if (top) m_top.push_back(f);
      m_files.push_back(std::move(f));
    };
    for (int i = 0; i < 200; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "img_%03d.bin", i);
      add(name, 20 * 1024 + rng() % (180 * 1024 + 1), true);
    }
    add("empty.bin", 0, false);
    add("sub/a.bin", 4096, false);
    add("sub/b.bin", 1'500'000, false);  // more than the server's 1 MiB maximum READ: libnfs splits it
    add("sub/deeper/c.bin", 777, false);
    // An ImageFolder for the loader: 2 classes of photos, one nested a level
    // down and one beside a directory whose name sorts around it ("a-b" vs "a/").
    const fs::path photos = ringfeed::test::image_data::dir() / "photos";
    const char* const names[] = {"astronaut.jpg", "chelsea.jpg", "coffee.jpg", "hubble.jpg", "rocket.jpg"};
    for (const char* cls : {"class0", "class1"}) {
      fs::create_directories(m_export / "imgs" / cls / "a" / "x");
      fs::create_directories(m_export / "imgs" / cls / "a-b");
      for (const char* n : names) fs::copy_file(photos / n, m_export / "imgs" / cls / n);
      fs::copy_file(photos / "brick_gray.jpg", m_export / "imgs" / cls / "a" / "x" / "brick_gray.jpg");
      fs::copy_file(photos / "grace_hopper.jpg", m_export / "imgs" / cls / "a-b" / "grace_hopper.jpg");
      fs::copy_file(photos / "coffee.jpg", m_export / "imgs" / cls / ".hidden.jpg");  // left out, as locally
      std::ofstream(m_export / "imgs" / cls / "notes.txt") << "not an image";
    }
    // A folder one of whose files a test removes after the loader listed it.
    fs::create_directories(m_export / "gone" / "class0");
    for (const char* n : {"astronaut.jpg", "coffee.jpg", "doomed.jpg"})
      fs::copy_file(photos / (std::string(n) == "doomed.jpg" ? "chelsea.jpg" : n), m_export / "gone" / "class0" / n);
    // ganesha runs as root with Squash = None; the directory is mode 0700.
    fs::permissions(m_dir->path(), fs::perms::owner_all);
  }

  std::string launch() {
    const fs::path dir = m_dir->path();
    const fs::path conf = dir / "ganesha.conf";
    const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
    {
      std::ofstream out(conf);
      out << "NFS_CORE_PARAM {\n"
             "  Protocols = 3;\n"  // NFSv4 would need state in /var/lib/nfs/ganesha
             "  NFS_Port = "
          << nfs_port << ";\n  MNT_Port = " << mount_port
          << ";\n"
             "  Enable_NLM = false;\n"
             "  Enable_RQUOTA = false;\n"
             "  Enable_UDP = false;\n"
             "  Bind_addr = 127.0.0.1;\n"
             "  Mount_Path_Pseudo = true;\n"  // NFSv3 mounts the Pseudo path: nfs://127.0.0.1/ringfeed
             // Worker threads sized to the machine, not ganesha's 256: on
             // a small one hundreds of threads contending for two cores
             // cost the server more CPU per request than the requests.
             "  Nb_Worker = "
          << workers << ";\n  RPC_Ioq_ThrdMax = " << workers
          << ";\n"
             "}\n"
             "NFSV4 { Graceless = true; }\n"
             "EXPORT {\n"
             "  Export_Id = 1;\n"
             "  Path = "
          << m_export.string() << ";\n  Pseudo = " << export_name
          << ";\n"
             "  Protocols = 3;\n"
             "  Transports = TCP;\n"
             "  SecType = sys;\n"
             "  Squash = None;\n"
             "  Access_Type = None;\n"
             "  CLIENT { Clients = 127.0.0.1; Access_Type = RW; }\n"
             "  FSAL { Name = VFS; }\n"
             "}\n"
             "LOG { Default_Log_Level = EVENT; }\n";
    }
    const std::string conf_s = conf.string(), log_s = (dir / "ganesha.log").string(),
                      pid_s = (dir / "ganesha.pid").string(), out_s = (dir / "ganesha.out").string();
    std::vector<std::string> argv = {m_ganesha, "-F", "-f", conf_s, "-L", log_s, "-p", pid_s, "-N", "NIV_EVENT"};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return std::string("fork: ") + std::strerror(errno);
    if (pid == 0) {  // async-signal-safe calls only from here to exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const int out = ::open(out_s.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    m_pid = pid;

    // Ready once a mount works: poll with bounded mount attempts.
    thread_pool pool(1);
    nfs_options quick;
    quick.retry.deadline = 1000ms;
    std::string last_error = "no mount attempted";
    const auto until = steady::now() + 30s;
    while (steady::now() < until) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        return m_ganesha + " exited during start-up (" +
               (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                  : "signal " + std::to_string(WTERMSIG(status))) +
               "); log tail:" + log_tail();
      }
      try {
        nfs_client probe(host, export_name, pool, quick);
        return {};
      } catch (const std::exception& e) {
        last_error = e.what();
      }
      std::this_thread::sleep_for(50ms);
    }
    std::string why = m_ganesha + " did not serve a mount of " + export_name + " within 30 s (last: " +
                      last_error + "); log tail:" + log_tail();
    stop();
    return why;
  }

  bool all_threads_stopped() const {
    std::error_code ec;
    std::size_t threads = 0;
    for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(m_pid) + "/task", ec)) {
      std::ifstream in(t.path() / "stat");
      std::string line;
      std::getline(in, line);
      const std::size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size()) return false;
      const char state = line[paren + 2];
      if (state != 'T' && state != 't') return false;
      ++threads;
    }
    return !ec && threads > 0;
  }

  void reap() {
    while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
  }

  std::optional<ringfeed::test::temp_dir> m_dir;
  fs::path m_export;
  std::string m_ganesha;
  std::vector<test_file> m_files;
  std::vector<test_file> m_top;
  pid_t m_pid = -1;
};

ganesha_server& server() {
  static ganesha_server s;
  return s;
}

/// CPU seconds used so far by this process and by the NFS server.
struct cpu_times {
  double client = 0, server = 0;
  cpu_times operator-(const cpu_times& o) const { return {client - o.client, server - o.server}; }
  cpu_times& operator+=(const cpu_times& o) {
    client += o.client;
    server += o.server;
    return *this;
  }
};

cpu_times cpu_seconds() {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  cpu_times t;
  t.client = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
             static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
  std::ifstream in("/proc/" + std::to_string(server().pid()) + "/stat");
  std::string line;
  std::getline(in, line);
  const std::size_t paren = line.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream fields(line.substr(paren + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15: utime, stime (clock ticks)
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    t.server = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return t;
}

void require_server() {
  if (const std::string why = server().restart(); !why.empty()) FAIL("cannot restart the NFS server: " << why);
}

std::string url_of(const std::string& name) { return std::string("nfs://") + host + export_name + "/" + name; }

// --- readers ----------------------------------------------------------------------------------

/// What happened to one read (written by the reading coroutine, read after join).
struct outcome {
  steady::time_point start, end;
  bool ok = false;
  int error = 0;
  std::string what;
};

/// Reads files[next++ % files.size()] until `count` reads were started:
/// compares each with the local bytes, records everything, never throws.
task<> reader(nfs_client& client, const std::vector<test_file>& files, std::size_t count,
              std::atomic<std::size_t>& next, std::vector<outcome>& outcomes, std::atomic<std::size_t>& finished) {
  read_buffer buffer;
  for (;;) {
    const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
    if (i >= count) co_return;
    const test_file& f = files[i % files.size()];
    outcome& o = outcomes[i];
    o.start = steady::now();
    try {
      const std::size_t n = co_await client.read_file(f.name, buffer);
      o.ok = n == f.bytes.size() && buffer.size() == n &&
             (n == 0 || std::memcmp(buffer.data(), f.bytes.data(), n) == 0);
      if (!o.ok) o.what = "wrong bytes: " + std::to_string(n) + " of " + std::to_string(f.bytes.size());
    } catch (const std::system_error& e) {
      o.error = e.code().value();
      o.what = e.what();
    } catch (const std::exception& e) {
      o.error = -1;
      o.what = e.what();
    }
    o.end = steady::now();
    finished.fetch_add(1, std::memory_order_release);
  }
}

task<> read_many(nfs_client& client, const std::vector<test_file>& files, std::size_t count, std::size_t depth,
                 std::vector<outcome>& outcomes, std::atomic<std::size_t>& finished) {
  std::atomic<std::size_t> next{0};
  async_scope scope;
  for (std::size_t d = 0; d < depth; ++d) scope.spawn(reader(client, files, count, next, outcomes, finished));
  co_await scope.join();
}

/// Reads every file once with `depth` in flight; fails the test on any
/// error or wrong byte; returns the seconds it took.
double read_all_checked(nfs_client& client, const std::vector<test_file>& files, std::size_t depth) {
  const std::size_t count = files.size();
  std::vector<outcome> outcomes(count);
  std::atomic<std::size_t> finished{0};
  const auto t0 = steady::now();
  sync_wait(read_many(client, files, count, depth, outcomes, finished));
  const double s = seconds_since(t0);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (outcomes[i].ok) continue;
    if (++bad <= 5) UNSCOPED_INFO(files[i % files.size()].name << ": " << outcomes[i].what);
  }
  REQUIRE(bad == 0);
  return s;
}


/// CPU seconds all processes have used so far (busy time in /proc/stat).
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return static_cast<double>(user + nice + system + irq + softirq) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// Waits up to `limit` for a quarter of a second in which the machine's CPUs
/// together are less than 10% busy, as perf/suite_measure.py does before it
/// measures: depth 32 is bound by the cores here, and a compile running
/// beside it would decide the ratio. True if it was quiet.
bool wait_for_quiet(std::chrono::milliseconds limit) {
  const auto until = steady::now() + limit;
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  while (steady::now() < until) {
    const double b0 = machine_busy_seconds();
    std::this_thread::sleep_for(250ms);
    if (machine_busy_seconds() - b0 < 0.1 * 0.25 * cores) return true;
  }
  return false;
}

/// A TCP relay on 127.0.0.1 that hands every byte on `one_way` after it
/// arrived, in each direction: the round trip of a network link, which
/// loopback lacks (a LAN's is 0.1-0.5 ms, a filer's reply adds to it).
/// Bandwidth is not limited. Each direction of a connection is a reader
/// thread, which stamps what it receives, and a writer thread, which sends
/// it when its time comes; a closed end is passed on as a shutdown.
class delay_link {
 public:
  delay_link(std::uint16_t target, std::chrono::microseconds one_way) : m_target(target), m_delay(one_way) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_listen < 0) throw std::system_error(errno, std::generic_category(), "delay_link: socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(m_listen, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(m_listen, 8) != 0 ||
        ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      const int e = errno;
      ::close(m_listen);
      throw std::system_error(e, std::generic_category(), "delay_link: bind/listen");
    }
    m_port = ntohs(a.sin_port);
    m_acceptor = std::thread([this] { accept_loop(); });
  }
  delay_link(const delay_link&) = delete;
  delay_link& operator=(const delay_link&) = delete;
  ~delay_link() {
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
      for (auto& d : m_directions) d.wake.notify_all();
      for (const int fd : m_fds) ::shutdown(fd, SHUT_RDWR);  // wakes the readers
    }
    ::shutdown(m_listen, SHUT_RDWR);  // wakes accept()
    m_acceptor.join();
    for (auto& t : m_threads) t.join();
    for (const int fd : m_fds) ::close(fd);
    ::close(m_listen);
  }
  [[nodiscard]] std::uint16_t port() const noexcept { return m_port; }

 private:
  struct chunk {
    steady::time_point due;
    std::vector<char> bytes;
  };
  struct direction {
    int from = -1, to = -1;
    std::deque<chunk> queue;
    bool closed = false;
    std::condition_variable wake;
  };

  void accept_loop() {
    for (;;) {
      const int client = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // shut down
      }
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(m_target);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (server >= 0) ::close(server);
        ::close(client);
        continue;
      }
      const int one = 1;
      for (const int fd : {client, server}) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(m_mutex);
      m_fds.push_back(client);
      m_fds.push_back(server);
      if (m_stopping) {
        for (const int fd : {client, server}) ::shutdown(fd, SHUT_RDWR);
        return;
      }
      for (auto [from, to] : {std::pair{client, server}, std::pair{server, client}}) {
        direction& d = m_directions.emplace_back();
        d.from = from;
        d.to = to;
        m_threads.emplace_back([this, &d] { read_side(d); });
        m_threads.emplace_back([this, &d] { write_side(d); });
      }
    }
  }

  void read_side(direction& d) {
    std::vector<char> buffer(256 * 1024);
    for (;;) {
      const ssize_t n = ::recv(d.from, buffer.data(), buffer.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      const auto now = steady::now();
      std::lock_guard lock(m_mutex);
      if (n <= 0) {
        d.closed = true;
        d.wake.notify_all();
        return;
      }
      d.queue.push_back({now + m_delay, std::vector<char>(buffer.data(), buffer.data() + n)});
      d.wake.notify_all();
    }
  }

  void write_side(direction& d) {
    for (;;) {
      chunk c;
      {
        std::unique_lock lock(m_mutex);
        d.wake.wait(lock, [&] { return m_stopping || d.closed || !d.queue.empty(); });
        if (m_stopping) return;
        if (d.queue.empty()) {  // the sender closed and everything it sent was delivered
          ::shutdown(d.to, SHUT_WR);
          return;
        }
        c = std::move(d.queue.front());
        d.queue.pop_front();
      }
      std::this_thread::sleep_until(c.due);  // the link's latency, not a synchronization
      for (std::size_t off = 0; off < c.bytes.size();) {
        const ssize_t n = ::send(d.to, c.bytes.data() + off, c.bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          ::shutdown(d.from, SHUT_RDWR);  // the receiver is gone: end the other side too
          return;
        }
        off += static_cast<std::size_t>(n);
      }
    }
  }

  std::uint16_t m_target;
  std::chrono::microseconds m_delay;
  int m_listen = -1;
  std::uint16_t m_port = 0;
  std::mutex m_mutex;
  bool m_stopping = false;
  std::vector<int> m_fds;
  std::list<direction> m_directions;  // stable addresses for the threads
  std::vector<std::thread> m_threads;
  std::thread m_acceptor;
};

/// Files/s at depth 1 and at depth 32, best of `rounds` interleaved runs
/// each, with the CPU both sides used.
struct depth_result {
  double ips1 = 0, ips32 = 0;
  cpu_times cpu1, cpu32;
  int quiet = 0;
  [[nodiscard]] double ratio() const { return ips32 / ips1; }
};

depth_result measure_depths(nfs_client& client, const std::vector<test_file>& files, int rounds) {
  read_all_checked(client, files, 32);  // warm the server's caches
  // Best of `rounds` for each depth, interleaved: the machine is shared, and
  // one hiccup should not decide the ratio. CPU time is counted too (this
  // process and the server), which shows whether a depth is bound by
  // latency or by the machine's cores.
  double best1 = 1e9, best32 = 1e9;
  depth_result r;
  for (int round = 0; round < rounds; ++round) {
    r.quiet += wait_for_quiet(10s);
    cpu_times cpu = cpu_seconds();
    best1 = std::min(best1, read_all_checked(client, files, 1));
    r.cpu1 += cpu_seconds() - cpu;
    r.quiet += wait_for_quiet(10s);
    cpu = cpu_seconds();
    best32 = std::min(best32, read_all_checked(client, files, 32));
    r.cpu32 += cpu_seconds() - cpu;
  }
  r.ips1 = static_cast<double>(files.size()) / best1;
  r.ips32 = static_cast<double>(files.size()) / best32;
  const double per_file = 1e6 / (rounds * static_cast<double>(files.size()));
  for (cpu_times* c : {&r.cpu1, &r.cpu32}) {
    c->client *= per_file;
    c->server *= per_file;
  }
  return r;
}

void print_depths(const char* what, const depth_result& r, std::size_t files, std::size_t max_in_flight,
                  int rounds) {
  std::printf("nfs depth, %s: %zu files (20-200 KiB), depth 1: %.0f files/s, depth 32: %.0f files/s, ratio %.2f; "
              "most in flight %zu; CPU per file (client and any relay + server): depth 1 %.0f + %.0f us, "
              "depth 32 %.0f + %.0f us, on %u cores; machine quiet before %d of %d runs\n",
              what, files, r.ips1, r.ips32, r.ratio(), max_in_flight, r.cpu1.client, r.cpu1.server, r.cpu32.client,
              r.cpu32.server, std::thread::hardware_concurrency(), r.quiet, 2 * rounds);
  std::fflush(stdout);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

static ringfeed::test::skip_if_unavailable skip_without_server{[] { return server().start(); }};

// --- cases ---------------------------------------------------------------------------------------

TEST_CASE("nfs_url splits server, port, export and path", "[nfs][url]") {
  const nfs_url a = nfs_url::parse("nfs://fileserver/data/train/n01/x.jpg");
  CHECK(a.server == "fileserver");
  CHECK(a.port == 0);
  CHECK(a.export_path == "/data");
  CHECK(a.path == "/train/n01/x.jpg");
  CHECK(a.str() == "nfs://fileserver/data/train/n01/x.jpg");

  const nfs_url b = nfs_url::parse("nfs://10.0.0.5:2049/srv/exports//train/a.jpg");
  CHECK(b.server == "10.0.0.5");
  CHECK(b.port == 2049);
  CHECK(b.export_path == "/srv/exports");
  CHECK(b.path == "/train/a.jpg");
  CHECK(b.str() == "nfs://10.0.0.5:2049/srv/exports//train/a.jpg");

  const nfs_url c = nfs_url::parse("NFS://[fd00::1]:111/export");
  CHECK(c.server == "fd00::1");
  CHECK(c.port == 111);
  CHECK(c.export_path == "/export");
  CHECK(c.path.empty());
  CHECK(nfs_url::parse("nfs://s/a/b//").export_path == "/a/b");
  CHECK(nfs_url::parse(nfs_url::parse("nfs://s/a/b//").str()).export_path == "/a/b");

  for (const char* bad : {"http://s/e/f", "nfs://", "nfs:///export/f", "nfs://s", "nfs://s/", "nfs://s//f",
                          "nfs://s:0/e", "nfs://s:70000/e", "nfs://s:x/e", "nfs://s/e?uid=0", "nfs://[::1/e"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(nfs_url::parse(bad), std::invalid_argument);
    CHECK_THROWS_WITH(nfs_url::parse(bad), Catch::Contains(bad));
  }
  CHECK_THROWS_WITH(nfs_url::parse("nfs://s:70000/e"), Catch::Contains("port"));
}

TEST_CASE("every file arrives byte for byte; ranges; listings", "[nfs]") {
  ringfeed::test::watchdog dog("nfs byte for byte", 120s);
  require_server();
  thread_pool pool(4);
  nfs_client client(host, export_name, pool);
  CHECK(client.url() == std::string("nfs://") + host + export_name);
  CHECK(client.url_of("sub/a.bin") == url_of("sub/a.bin"));
  CHECK(client.url_of("/sub/a.bin") == url_of("sub/a.bin"));

  // Every file (200 of 20-200 KiB, an empty one, one over the 1 MiB READ
  // size, some in subdirectories), 16 in flight.
  const auto& files = server().files();
  read_all_checked(client, files, 16);
  // Leading '/' or not: the same file.
  {
    read_buffer buffer;
    const test_file& c = files.back();
    REQUIRE(c.name == "sub/deeper/c.bin");
    CHECK(sync_wait(client.read_file("/" + c.name, buffer)) == c.bytes.size());
    CHECK(std::memcmp(buffer.data(), c.bytes.data(), c.bytes.size()) == 0);
  }

  SECTION("read_range at an offset, across and at the end of the file") {
    read_buffer buffer;
    for (std::size_t i = 0; i < server().top_files().size(); i += 10) {
      const test_file& f = server().top_files()[i];
      const std::size_t offset = f.bytes.size() / 3 + i, size = 5000 + i * 7;
      CAPTURE(f.name, offset, size);
      REQUIRE(sync_wait(client.read_range(f.name, offset, size, buffer)) == size);
      REQUIRE(buffer.size() == size);
      CHECK(std::memcmp(buffer.data(), f.bytes.data() + offset, size) == 0);
    }
    const test_file& f = server().top_files().front();
    CHECK(sync_wait(client.read_range(f.name, f.bytes.size() - 100, 1000, buffer)) == 100);
    CHECK(std::memcmp(buffer.data(), f.bytes.data() + f.bytes.size() - 100, 100) == 0);
    CHECK(sync_wait(client.read_range(f.name, f.bytes.size(), 10, buffer)) == 0);
    CHECK(buffer.size() == 0);
    const test_file& big = files[files.size() - 2];
    REQUIRE(big.name == "sub/b.bin");
    CHECK(sync_wait(client.read_range(big.name, 1'000'000, 400'000, buffer)) == 400'000);
    CHECK(std::memcmp(buffer.data(), big.bytes.data() + 1'000'000, 400'000) == 0);
  }

  SECTION("list() gives names, kinds and sizes, sorted") {
    std::vector<std::string> names;
    for (const auto& f : server().top_files()) names.push_back(f.name);
    names.push_back("empty.bin");
    names.push_back("gone");
    names.push_back("imgs");
    names.push_back("sub");
    std::sort(names.begin(), names.end());
    for (const std::string root : {"", "/"}) {
      const auto entries = client.list(root);
      REQUIRE(entries.size() == names.size());
      for (std::size_t i = 0; i < entries.size(); ++i) {
        CAPTURE(entries[i].name);
        REQUIRE(entries[i].name == names[i]);
        CHECK(entries[i].is_directory == (names[i] == "sub" || names[i] == "imgs" || names[i] == "gone"));
        if (!entries[i].is_directory) {
          const auto it = std::find_if(files.begin(), files.end(), [&](const test_file& f) { return f.name == names[i]; });
          REQUIRE(it != files.end());
          CHECK(entries[i].size == it->bytes.size());
        }
      }
    }
    const auto sub = client.list("sub");
    REQUIRE(sub.size() == 3);
    CHECK(sub[0].name == "a.bin");
    CHECK(sub[0].size == 4096);
    CHECK_FALSE(sub[0].is_directory);
    CHECK(sub[1].name == "b.bin");
    CHECK(sub[1].size == 1'500'000);
    CHECK(sub[2].name == "deeper");
    CHECK(sub[2].is_directory);
    const auto deeper = client.list("/sub/deeper/");
    REQUIRE(deeper.size() == 1);
    CHECK(deeper[0].name == "c.bin");
    CHECK(deeper[0].size == 777);
  }

  SECTION("fixed ports instead of the portmapper") {
    nfs_options fixed;
    fixed.nfs_port = nfs_port;
    fixed.mount_port = mount_port;
    nfs_client direct(host, export_name, pool, fixed);
    CHECK(direct.url() == std::string("nfs://") + host + ":2049" + export_name);
    read_buffer buffer;
    const test_file& f = server().top_files()[7];
    REQUIRE(sync_wait(direct.read_file(f.name, buffer)) == f.bytes.size());
    CHECK(std::memcmp(buffer.data(), f.bytes.data(), f.bytes.size()) == 0);
  }

  const auto st = client.stats();
  CHECK(st.requests >= 3 * files.size());
  CHECK(st.timeouts == 0);
  CHECK(st.retries == 0);
  CHECK(st.max_in_flight >= 2);
}

TEST_CASE("a missing file or export is an error naming its nfs:// URL", "[nfs]") {
  ringfeed::test::watchdog dog("nfs missing file", 60s);
  require_server();
  thread_pool pool(2);
  nfs_client client(host, export_name, pool);
  read_buffer buffer;

  for (const std::string name : {"no/such.bin", "img_999.bin"}) {
    CAPTURE(name);
    try {
      (void)sync_wait(client.read_file(name, buffer));
      FAIL("read_file of a missing file succeeded");
    } catch (const std::system_error& e) {
      CHECK(e.code() == std::errc::no_such_file_or_directory);
      CHECK_THAT(e.what(), Catch::Contains(url_of(name)) && Catch::Contains("No such file"));
    }
  }
  CHECK_THROWS_WITH(sync_wait(client.read_range("gone.tar", 512, 100, buffer)),
                    Catch::Contains(url_of("gone.tar")) && Catch::Contains("No such file"));
  CHECK_THROWS_WITH(client.list("no-such-dir"),
                    Catch::Contains(url_of("no-such-dir")) && Catch::Contains("No such file"));
  // A file where a directory is expected.
  CHECK_THROWS_WITH(client.list("img_000.bin"), Catch::Contains(url_of("img_000.bin")));
  // The client is fine afterwards.
  const test_file& f = server().top_files()[3];
  CHECK(sync_wait(client.read_file(f.name, buffer)) == f.bytes.size());

  // Mounting what is not exported, or where nothing listens: bounded, named.
  nfs_options quick;
  quick.retry.deadline = 2000ms;
  const auto t0 = steady::now();
  CHECK_THAT(error_of([&] { nfs_client bad(host, "/not-exported", pool, quick); }),
             Catch::Contains("nfs://127.0.0.1/not-exported") && Catch::Contains("mount"));
  quick.nfs_port = 9;  // discard: nothing listens
  quick.mount_port = 9;
  CHECK_THAT(error_of([&] { nfs_client bad(host, export_name, pool, quick); }),
             Catch::Contains("nfs://127.0.0.1:9/ringfeed") && Catch::Contains("mount"));
  CHECK(seconds_since(t0) < 2 * 2.0 + 1.0);
}

// --- the loader on nfs:// ------------------------------------------------------------------------

namespace {

ringfeed::loader_options loader_options_for(const std::string& source) {
  ringfeed::loader_options o;
  o.source = source;
  o.dataset.use_cache = false;
  o.pipeline = ringfeed::image::pipeline::train(32, ringfeed::image::pipeline_mode::fast);
  o.output = ringfeed::output_spec::uint8_nhwc();
  o.batch_size = 5;
  o.threads = 2;
  o.io_depth = 8;
  o.device = -1;
  o.sampler.seed = 11;
  o.on_error = ringfeed::error_policy::fail;
  o.log = [](std::string_view) {};
  return o;
}

struct epoch_bytes {
  std::vector<std::size_t> indices;
  std::vector<std::int64_t> labels;
  std::vector<std::uint8_t> pixels;
  friend bool operator==(const epoch_bytes&, const epoch_bytes&) = default;
};

epoch_bytes drain(ringfeed::loader& l, std::uint64_t epoch) {
  epoch_bytes out;
  for (ringfeed::batch& b : l.epoch(epoch)) {
    out.indices.insert(out.indices.end(), b.indices().begin(), b.indices().end());
    out.labels.insert(out.labels.end(), b.labels().begin(), b.labels().end());
    const auto* p = static_cast<const std::uint8_t*>(b.images().data);
    out.pixels.insert(out.pixels.end(), p, p + b.images().bytes());
  }
  return out;
}

ringfeed::io::cache_options cache_at(const fs::path& dir) {
  ringfeed::io::cache_options co;
  co.dir = dir;
  return co;
}

const std::string imgs_url = std::string("nfs://") + host + export_name + "/imgs";

}  // namespace

TEST_CASE("a loader reads an ImageFolder from nfs:// exactly as from the directory itself", "[nfs][loader]") {
  ringfeed::test::watchdog dog("nfs loader", 120s);
  require_server();
  ringfeed::loader local(loader_options_for((server().export_dir() / "imgs").string()));
  ringfeed::loader remote(loader_options_for(imgs_url));

  // The same index: classes, order (os.walk's: "a-b" before "a/x"), labels; sizes from the listing.
  const auto& lds = local.dataset();
  const auto& rds = remote.dataset();
  REQUIRE(rds.size() == 14);
  REQUIRE(rds.size() == lds.size());
  CHECK(rds.classes() == lds.classes());
  CHECK(rds.root() == imgs_url);
  for (std::size_t i = 0; i < rds.size(); ++i) {
    CAPTURE(i, lds.name(i));
    CHECK(rds.name(i) == lds.name(i));
    CHECK(rds.label(i) == lds.label(i));
    CHECK(rds.path(i) == imgs_url + "/" + std::string(lds.name(i)));
    CHECK(rds.location(i).size == fs::file_size(server().export_dir() / "imgs" / std::string(lds.name(i))));
  }
  CHECK(rds.name(5) == "class0/a-b/grace_hopper.jpg");
  CHECK(rds.name(6) == "class0/a/x/brick_gray.jpg");

  // Two epochs of random crops and flips: the same pixels byte for byte.
  for (std::uint64_t e = 0; e < 2; ++e) {
    CAPTURE(e);
    const epoch_bytes a = drain(local, e);
    const epoch_bytes b = drain(remote, e);
    CHECK(a.indices.size() == 14);
    CHECK(a == b);
  }
  const auto st = remote.stats();
  CHECK(st.backend == "libnfs");
  CHECK(st.read.items >= 28);
  CHECK_FALSE(st.cache);
}

TEST_CASE("ringfeed pack nfs://…: the shards hold the export's files byte for byte, with their labels",
          "[nfs][pack]") {
  ringfeed::test::watchdog dog("nfs pack", 120s);
  require_server();
  const char* cli = std::getenv("RINGFEED_CLI");
  if (cli == nullptr) {
    WARN("RINGFEED_CLI is not set (the CLI is not built in this configuration): pack nfs:// not run");
    return;
  }
  ringfeed::test::temp_dir out;
  const std::string command =
      std::string(cli) + " pack '" + imgs_url + "' '" + (out.path() / "shards").string() + "' --no-shuffle --io pread 2>&1";
  std::string printed;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[512];
  while (std::fgets(line, sizeof line, p) != nullptr) printed += line;
  const int status = ::pclose(p);
  INFO(printed);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // --no-shuffle: sample k of the shards is sample k of the ImageFolder.
  const auto folder = ringfeed::data::open_dataset((server().export_dir() / "imgs").string());
  thread_pool pool(2);
  const auto packed_source = ringfeed::io::source::open((out.path() / "shards").string(), pool);
  const auto packed = ringfeed::data::open_dataset(*packed_source);
  REQUIRE(packed.size() == folder.size());
  REQUIRE(packed.size() == 14);
  read_buffer buffer;
  std::string path;
  for (std::size_t k = 0; k < packed.size(); ++k) {
    CAPTURE(k, folder.name(k));
    CHECK(packed.label(k) == folder.label(k));
    const auto got = sync_wait(packed_source->read(packed.ref(k, path), buffer));
    std::ifstream f(server().export_dir() / "imgs" / std::string(folder.name(k)), std::ios::binary);
    const std::vector<char> want{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), want.size()) == 0);
  }
}

TEST_CASE("nfs:// sources: what cannot be read is an error naming its URL", "[nfs][loader]") {
  ringfeed::test::watchdog dog("nfs loader errors", 120s);
  require_server();
  const std::string missing = std::string("nfs://") + host + export_name + "/no-such-dir";
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for(missing)); }), Catch::Contains(missing));
  const std::string no_classes = std::string("nfs://") + host + export_name + "/sub/deeper";
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for(no_classes)); }),
             Catch::Contains(no_classes) && Catch::Contains("class folder"));
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for("nfs://" + std::string(host))); }),
             Catch::Contains("nfs://127.0.0.1"));
  auto o = loader_options_for(imgs_url);
  o.stream_shards = true;
  CHECK_THAT(error_of([&] { ringfeed::loader l(o); }), Catch::Contains("stream_shards"));

  // A file that goes away after listing: the read error names it; with
  // on_error = skip the sample is left out and the rest arrive.
  const std::string gone_url = std::string("nfs://") + host + export_name + "/gone";
  const fs::path doomed = server().export_dir() / "gone" / "class0" / "doomed.jpg";
  REQUIRE(fs::exists(doomed));
  o = loader_options_for(gone_url);
  o.on_error = ringfeed::error_policy::skip;
  o.batch_size = 1;
  o.prefetch_batches = 1;
  o.memory_budget = std::size_t{1} << 20;
  ringfeed::loader l(o);
  REQUIRE(l.dataset().size() == 3);
  fs::remove(doomed);
  std::size_t delivered = 0;
  for (ringfeed::batch& b : l.epoch(1)) delivered += b.size();
  CHECK(delivered == 2);
  const auto st = l.stats();
  REQUIRE(st.skipped.size() == 1);
  CHECK(st.skipped[0].path == gone_url + "/class0/doomed.jpg");
  CHECK_THAT(st.skipped[0].reason, Catch::Contains(gone_url + "/class0/doomed.jpg"));
}

TEST_CASE("--cache-dir: the first epoch fills the cache, later epochs and loaders read it without the server",
          "[nfs][loader][cache]") {
  ringfeed::test::watchdog dog("nfs cache", 180s);
  require_server();
  ringfeed::test::temp_dir tmp;
  const fs::path dir = tmp.path() / "cache";
  auto o = loader_options_for(imgs_url);
  o.cache_dir = dir.string();
  // A loader prefetches past the end of an epoch, so counters are checked
  // per loader (a new one per epoch), with bounds where prefetch can add.
  const auto at_epoch = [&](std::uint64_t e) {
    auto r = o;
    r.resume = ringfeed::loader_state{o.sampler.seed, e, 0, 0, 1};
    return r;
  };

  epoch_bytes uncached0, uncached1;
  {
    ringfeed::loader plain(loader_options_for(imgs_url));
    uncached0 = drain(plain, 0);
    uncached1 = drain(plain, 1);
  }
  {
    ringfeed::loader l(o);
    CHECK(drain(l, 0) == uncached0);
    const auto st = l.stats();
    REQUIRE(st.cache);
    CHECK(st.cache_misses >= 14);  // every sample of epoch 0, plus any of epoch 1 read before it was stored
    CHECK(st.cache_dropped == 0);
  }  // the destructor writes what is still queued
  {
    ringfeed::io::cache c(cache_at(dir));
    CHECK(c.stats().entries == 14);
    CHECK(c.stats().bytes > 14 * 10'000);
  }
  // The server stops answering (SIGSTOP) once the tree is listed: the next
  // epoch must come from local disk alone.
  {
    ringfeed::loader l(at_epoch(1));
    REQUIRE(server().freeze());
    struct thaw_at_exit {
      ~thaw_at_exit() { server().thaw(); }
    } thaw;
    CHECK(drain(l, 1) == uncached1);
    const auto st = l.stats();
    CHECK(st.cache_misses == 0);
    CHECK(st.cache_hits >= 14);
    CHECK(st.cache_hit_rate() == 1.0);
    CHECK(st.read.items >= 14);  // cache hits count as reads
  }
  // An entry of the wrong size (the file changed on the server, or a torn
  // write) is not served: that sample is read from the server again.
  {
    ringfeed::io::cache c(cache_at(dir));
    const fs::path entry = c.file_of(imgs_url + "/class0/astronaut.jpg");
    REQUIRE(fs::exists(entry));
    fs::resize_file(entry, fs::file_size(entry) - 100);
  }
  {
    ringfeed::loader l(at_epoch(0));
    CHECK(drain(l, 0) == uncached0);
    CHECK(l.stats().cache_misses >= 1);  // more where prefetched epochs ask before it is stored again
    CHECK(l.stats().cache_hits >= 13);
  }
  {
    ringfeed::io::cache c(cache_at(dir));
    ringfeed::io::read_buffer b;
    const std::string key = imgs_url + "/class0/astronaut.jpg";
    CHECK(c.get(key, fs::file_size(server().export_dir() / "imgs" / "class0" / "astronaut.jpg"), b));
  }
  // Local storage: the option is ignored, with one line saying so.
  {
    auto local = loader_options_for((server().export_dir() / "imgs").string());
    local.cache_dir = (tmp.path() / "unused").string();
    std::vector<std::string> lines;
    std::mutex m;
    local.log = [&](std::string_view line) {
      std::lock_guard lock(m);
      lines.emplace_back(line);
    };
    ringfeed::loader l(local);
    CHECK_FALSE(l.stats().cache);
    std::lock_guard lock(m);
    CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& x) {
            return x.find("cache_dir") != std::string::npos && x.find("local storage") != std::string::npos;
          }) == 1);
  }
}

TEST_CASE("a server killed mid-epoch: the loader fails naming an nfs:// file within the deadline, no hang",
          "[nfs][loader][kill]") {
  ringfeed::test::watchdog dog("nfs loader kill", 120s);
  require_server();
  auto o = loader_options_for(imgs_url);
  o.io_deadline = 3000ms;
  o.io_retries = 1;
  o.batch_size = 2;
  o.prefetch_batches = 1;  // the consumer's batch + one being filled: most reads happen after the kill
  auto l = std::make_unique<ringfeed::loader>(o);
  {
    auto first = sync_wait(l->next());
    REQUIRE(first);
    server().kill();
  }
  const auto t0 = steady::now();
  std::string error;
  std::size_t batches = 0;
  try {
    while (sync_wait(l->next())) ++batches;
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double waited = seconds_since(t0);
  CAPTURE(batches, waited);
  CHECK_THAT(error, Catch::Contains(imgs_url + "/class"));
  CHECK(batches < 6);  // the epoch has 7; at most the one prefetched arrives
  CHECK(waited < 3.0 * 2 + 2.0);  // the deadline bounds each attempt
  const auto t1 = steady::now();
  l.reset();  // the destructor does not wait for the dead server
  CHECK(seconds_since(t1) < 3.0);
  REQUIRE(server().restart().empty());
}

TEST_CASE("over a network's round trip, 32 reads in flight on the one connection beat 1 by 3x or more",
          "[nfs][depth]") {
  ringfeed::test::watchdog dog("nfs depth over a link", 240s);
  if (const std::string why = server().relaunch(); !why.empty()) FAIL("cannot restart the NFS server: " << why);
  // NFS traffic goes through a relay that delays it 0.25 ms each way (a
  // LAN's round trip plus a little); MOUNT goes straight to the server.
  // Depth 1 then waits a round trip per RPC, as it does against a real
  // filer, and depth 32 hides those waits.
  delay_link link(nfs_port, 250us);
  thread_pool pool(1);
  nfs_options o;
  o.nfs_port = link.port();
  o.mount_port = mount_port;
  nfs_client client(host, export_name, pool, o);
  const auto& files = server().top_files();
  constexpr int rounds = 3;
  const depth_result r = measure_depths(client, files, rounds);
  print_depths("0.5 ms round trip", r, files.size(), client.stats().max_in_flight, rounds);
  CHECK(client.stats().max_in_flight >= 16);  // they really were in flight together
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under a sanitizer the client (and the relay, in this process) costs
  // ~6 ms of CPU per file, so both depths are bound by CPU, not by the
  // link: the ratio would measure the sanitizer.
  WARN("sanitizer build: depth 32 / depth 1 = " << r.ratio() << " over the link (asserted >= 3 in plain builds)");
#else
  CHECK(r.ratio() >= 3.0);
#endif
}

TEST_CASE("on loopback, 32 reads in flight on the one connection beat 1 by 3x or more from 4 cores up",
          "[nfs][depth]") {
  ringfeed::test::watchdog dog("nfs depth", 240s);
  if (const std::string why = server().relaunch(); !why.empty()) FAIL("cannot restart the NFS server: " << why);
  // One worker: the continuations are light, and on a small machine a
  // second (spinning) worker only takes CPU from the server and the I/O
  // thread that the deep run needs.
  thread_pool pool(1);
  nfs_client client(host, export_name, pool);
  const auto& files = server().top_files();
  constexpr int rounds = 5;
  const depth_result r = measure_depths(client, files, rounds);
  print_depths("loopback", r, files.size(), client.stats().max_in_flight, rounds);
  CHECK(client.stats().max_in_flight >= 16);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Sanitizers multiply the client's CPU cost per request (shadow memory,
  // fake stacks), and depth 32 is bound by CPU on loopback while depth 1 is
  // bound by latency: the ratio would measure the sanitizer.
  WARN("sanitizer build: depth 32 / depth 1 = " << r.ratio() << " on loopback (asserted >= 3 in plain builds "
                                                   "with 4 or more cores)");
#else
  // Loopback has no round trip to hide: depth 1 waits only for the two
  // processes' CPU, and depth 32 is bound by the cores (~370 us of client
  // plus server CPU per file). With 2 cores shared by both the ratio is
  // 2-3 and any other load moves it, so there it is reported; the case
  // above asserts the pipelining over a link, on any machine.
  if (std::thread::hardware_concurrency() >= 4)
    CHECK(r.ratio() >= 3.0);
  else
    WARN("depth 32 / depth 1 = " << r.ratio() << " on loopback with " << std::thread::hardware_concurrency()
                                 << " cores (asserted >= 3 from 4 cores up)");
#endif
}

TEST_CASE("a frozen server: reads time out at the deadline; the destructor cancels the rest", "[nfs][deadline]") {
  ringfeed::test::watchdog dog("nfs frozen server", 120s);
  require_server();
  thread_pool pool(2);
  const auto& files = server().top_files();
  nfs_options short_deadline;
  short_deadline.retry.deadline = 1000ms;
  nfs_client client(host, export_name, pool, short_deadline);
  nfs_options long_deadline;
  long_deadline.retry.deadline = 60s;
  std::optional<nfs_client> patient(std::in_place, host, export_name, pool, long_deadline);

  REQUIRE(server().freeze());
  struct thaw_at_exit {
    ~thaw_at_exit() { server().thaw(); }
  } thaw;

  // 40 reads on the frozen server: each fails with ETIMEDOUT near its deadline.
  {
    std::vector<outcome> outcomes(40);
    std::atomic<std::size_t> finished{0};
    const auto t0 = steady::now();
    sync_wait(read_many(client, files, outcomes.size(), outcomes.size(), outcomes, finished));
    const double took = seconds_since(t0);
    CHECK(took >= 0.9);
    CHECK(took < 1.0 + 1.5);
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      CAPTURE(i, outcomes[i].what);
      CHECK_FALSE(outcomes[i].ok);
      CHECK(outcomes[i].error == ETIMEDOUT);
      CHECK_THAT(outcomes[i].what, Catch::Contains(url_of(files[i].name)) && Catch::Contains("deadline"));
    }
    CHECK(client.stats().timeouts >= outcomes.size());
  }

  // 20 reads with a 60 s deadline, then the client goes away: they finish at
  // once with ECANCELED, and the destructor does not wait for the server.
  {
    std::vector<outcome> outcomes(20);
    std::atomic<std::size_t> finished{0};
    nfs_client& doomed = *patient;
    std::thread waiter([&] { sync_wait(read_many(doomed, files, outcomes.size(), outcomes.size(), outcomes, finished)); });
    // Wait until the mount and all 20 opens have reached the I/O thread.
    while (patient->stats().requests < 1 + outcomes.size()) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(100ms);
    CHECK(finished.load() == 0);
    const auto t0 = steady::now();
    patient.reset();
    const double destroy = seconds_since(t0);
    waiter.join();
    CHECK(destroy < 1.0);
    CHECK(seconds_since(t0) < 1.5);
    for (const auto& o : outcomes) {
      CAPTURE(o.what);
      CHECK(o.error == ECANCELED);
      CHECK_THAT(o.what, Catch::Contains("nfs://127.0.0.1/ringfeed/img_"));
    }
  }

  // Thawed, the server answers the replies nobody waits for any more; the
  // client drops them and reads correctly again.
  server().thaw();
  std::this_thread::sleep_for(300ms);
  read_all_checked(client, std::vector<test_file>(files.begin(), files.begin() + 50), 8);
}

TEST_CASE("a killed server fails every outstanding and later read, naming the file, within the deadline",
          "[nfs][deadline]") {
  ringfeed::test::watchdog dog("nfs killed server", 120s);
  require_server();
  thread_pool pool(2);
  const auto& files = server().top_files();
  nfs_options options;
  options.retry.deadline = 2000ms;
  constexpr double margin = 1.0;
  const double deadline_s = 2.0;
  std::optional<nfs_client> client(std::in_place, host, export_name, pool, options);

  // 1000 reads, 32 in flight; the server dies after the first 100.
  std::vector<outcome> outcomes(1000);
  std::atomic<std::size_t> finished{0};
  steady::time_point killed_at;
  {
    auto work = read_many(*client, files, outcomes.size(), 32, outcomes, finished);
    std::thread killer([&] {
      while (finished.load(std::memory_order_acquire) < 100) std::this_thread::sleep_for(1ms);
      server().kill();  // SIGKILL and reap: dead from here on
      killed_at = steady::now();
    });
    sync_wait(std::move(work));
    killer.join();
  }
  // Each read, outstanding at the kill or started after it, ends within the
  // deadline (and a margin) of the later of the two.
  std::size_t ok = 0, failed = 0, started_after = 0;
  double slowest = 0, drained = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const outcome& o = outcomes[i];
    CAPTURE(i, o.what);
    const double took = std::chrono::duration<double>(o.end - std::max(o.start, killed_at)).count();
    slowest = std::max(slowest, took);
    drained = std::max(drained, std::chrono::duration<double>(o.end - killed_at).count());
    CHECK(took < deadline_s + margin);
    if (o.start > killed_at) {
      ++started_after;
      CHECK_FALSE(o.ok);  // nothing can succeed once the server is gone
    }
    if (o.ok) {
      ++ok;
      continue;
    }
    ++failed;
    CHECK(o.error > 0);  // a std::system_error with an errno
    CHECK_THAT(o.what, Catch::Contains(url_of(files[i % files.size()].name)));
  }
  std::printf("nfs killed server: %zu reads succeeded, %zu failed (%zu started after the kill); slowest read "
              "ended %.3f s after the kill or its start, all done %.2f s after the kill; retries %llu, timeouts %llu\n",
              ok, failed, started_after, slowest, drained, static_cast<unsigned long long>(client->stats().retries),
              static_cast<unsigned long long>(client->stats().timeouts));
  std::fflush(stdout);
  CHECK(ok >= 100);
  CHECK(failed > 0);
  CHECK(started_after > 0);

  // Later reads and listings fail too, as fast.
  read_buffer buffer;
  auto t0 = steady::now();
  CHECK_THROWS_WITH(sync_wait(client->read_file(files[5].name, buffer)), Catch::Contains(url_of(files[5].name)));
  CHECK(seconds_since(t0) < deadline_s + margin);
  t0 = steady::now();
  CHECK_THROWS_WITH(client->list("sub"), Catch::Contains(url_of("sub")));
  CHECK(seconds_since(t0) < deadline_s + margin);

  t0 = steady::now();
  client.reset();
  CHECK(seconds_since(t0) < 1.0);
}
