#include "nfs_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/thread_pool.hpp>

#include "files.hpp"
#include "image_test_data.hpp"
#include "loopback.hpp"

namespace ringfeed::test::nfs {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

bool port_open(std::uint16_t port) {
  const detail::unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  const sockaddr_in a = loopback(port);
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
}

// Why `port` on 127.0.0.1 cannot be bound, or "".
std::string port_busy(std::uint16_t port) {
  const detail::unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::string("socket: ") + std::strerror(errno);
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in a = loopback(port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return "port " + std::to_string(port) + " on 127.0.0.1 is not free (" + std::strerror(errno) +
           "): another NFS server is running?";
  return {};
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

/// Reads files[next++ % files.size()] until `count` reads were started:
/// compares each with the local bytes, records everything, never throws.
task<> reader(io::nfs_client& client, const std::vector<test_file>& files, std::size_t count,
              std::atomic<std::size_t>& next, std::vector<outcome>& outcomes, std::atomic<std::size_t>& finished) {
  ringfeed::io::read_buffer buffer;
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

}  // namespace

std::string ganesha_server::start() {
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

void ganesha_server::kill() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  reap();
}

bool ganesha_server::freeze() {
  if (m_pid <= 0) return false;
  ::kill(m_pid, SIGSTOP);
  const auto until = steady::now() + 5s;
  while (steady::now() < until) {
    if (all_threads_stopped()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

void ganesha_server::thaw() {
  if (m_pid > 0) ::kill(m_pid, SIGCONT);
}

void ganesha_server::stop() {
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

std::string ganesha_server::log_tail(std::size_t lines) const {
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

void ganesha_server::make_export() {
  m_dir.emplace();
  m_export = m_dir->path() / "export";
  fs::create_directories(m_export / "sub" / "deeper");
  std::mt19937 rng(2024);
  auto add = [&](const std::string& name, std::size_t size, bool top) {
    test_file f{name, random_bytes(size, rng())};
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

std::string ganesha_server::launch() {
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
  io::nfs_options quick;
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
      io::nfs_client probe(host, export_name, pool, quick);
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

bool ganesha_server::all_threads_stopped() const {
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

void ganesha_server::reap() {
  while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m_pid = -1;
}

ganesha_server& server() {
  static ganesha_server s;
  return s;
}

std::string url_of(const std::string& name) { return std::string("nfs://") + host + export_name + "/" + name; }

task<> read_many(io::nfs_client& client, const std::vector<test_file>& files, std::size_t count, std::size_t depth,
                 std::vector<outcome>& outcomes, std::atomic<std::size_t>& finished) {
  std::atomic<std::size_t> next{0};
  ringfeed::async_scope scope;
  for (std::size_t d = 0; d < depth; ++d) scope.spawn(reader(client, files, count, next, outcomes, finished));
  co_await scope.join();
}

}  // namespace ringfeed::test::nfs
