// perf/bench/nfs_depth_bench.cpp — how much reads in flight buy on one NFS
// connection: nfs_client reading the 200 files (20-200 KiB) of the test
// harness's ganesha export (tests/support/nfs_server.hpp) with 1 and with 32
// reads in flight, in two settings:
//   link      NFS traffic through a relay that delays it 0.25 ms each way
//             (tests/support/delay_link.hpp): depth 1 waits a round trip per
//             RPC, as against a real filer, and depth 32 hides those waits;
//   loopback  no round trip to hide: depth 1 waits only for the two
//             processes' CPU, and depth 32 is bound by the cores (~370 us of
//             client plus server CPU per file), so on 2 cores the ratio is
//             2-3 and any other load moves it.
// Each depth is the best of ROUNDS runs, interleaved, after waiting up to 10 s
// for a quiet machine; CPU per file is counted for this process (client and
// relay) and the server. A plain program, not a Google Benchmark one: it needs
// root, ganesha.nfsd and rpcbind, and exits 77 saying why where it cannot run.
//
//   nfs_depth_bench [--rounds N] [--only link|loopback]
//
// Prints one line per setting, then one JSON object:
//   {"link": {"depth1_files_per_s": …, "depth32_files_per_s": …, "ratio": …,
//    "max_in_flight": …, "cpu_us_per_file": {…}, "quiet_runs": …}, "loopback": {…}, "cores": N}
// (nfs_tests asserts only that depth 32 has many calls in flight.)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <ringfeed/io/nfs.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "delay_link.hpp"
#include "nfs_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace ringfeed::test::nfs;
using ringfeed::thread_pool;
using ringfeed::io::nfs_client;
using ringfeed::io::nfs_options;
using steady = std::chrono::steady_clock;

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

/// CPU seconds all processes have used so far (busy time in /proc/stat).
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return static_cast<double>(user + nice + system + irq + softirq) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// Waits up to `limit` for a quarter of a second in which the machine's CPUs
/// together are less than 10% busy, as perf/suite/suite_measure.py does before it
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

/// Reads every file once with `depth` in flight; throws on any error or
/// wrong byte; returns the seconds it took.
double read_all(nfs_client& client, const std::vector<test_file>& files, std::size_t depth) {
  std::vector<outcome> outcomes(files.size());
  std::atomic<std::size_t> finished{0};
  const auto t0 = steady::now();
  ringfeed::sync_wait(read_many(client, files, files.size(), depth, outcomes, finished));
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    if (!outcomes[i].ok) throw std::runtime_error(files[i].name + ": " + outcomes[i].what);
  return s;
}

/// Files/s at depth 1 and at depth 32, best of `rounds` interleaved runs
/// each, with the CPU both sides used.
struct depth_result {
  double ips1 = 0, ips32 = 0;
  cpu_times cpu1, cpu32;  // microseconds per file
  int quiet = 0;
  std::size_t max_in_flight = 0;
  [[nodiscard]] double ratio() const { return ips32 / ips1; }
};

depth_result measure_depths(nfs_client& client, const std::vector<test_file>& files, int rounds) {
  read_all(client, files, 32);  // warm the server's caches
  // Best of `rounds` for each depth, interleaved: the machine is shared, and
  // one hiccup should not decide the ratio. CPU time is counted too (this
  // process and the server), which shows whether a depth is bound by
  // latency or by the machine's cores.
  double best1 = 1e9, best32 = 1e9;
  depth_result r;
  for (int round = 0; round < rounds; ++round) {
    r.quiet += wait_for_quiet(10s);
    cpu_times cpu = cpu_seconds();
    best1 = std::min(best1, read_all(client, files, 1));
    r.cpu1 += cpu_seconds() - cpu;
    r.quiet += wait_for_quiet(10s);
    cpu = cpu_seconds();
    best32 = std::min(best32, read_all(client, files, 32));
    r.cpu32 += cpu_seconds() - cpu;
  }
  r.ips1 = static_cast<double>(files.size()) / best1;
  r.ips32 = static_cast<double>(files.size()) / best32;
  const double per_file = 1e6 / (rounds * static_cast<double>(files.size()));
  for (cpu_times* c : {&r.cpu1, &r.cpu32}) {
    c->client *= per_file;
    c->server *= per_file;
  }
  r.max_in_flight = client.stats().max_in_flight;
  return r;
}

std::string report(const char* what, const depth_result& r, std::size_t files, int rounds) {
  std::printf("nfs depth, %s: %zu files (20-200 KiB), depth 1: %.0f files/s, depth 32: %.0f files/s, ratio %.2f; "
              "most in flight %zu; CPU per file (client and any relay + server): depth 1 %.0f + %.0f us, "
              "depth 32 %.0f + %.0f us, on %u cores; machine quiet before %d of %d runs\n",
              what, files, r.ips1, r.ips32, r.ratio(), r.max_in_flight, r.cpu1.client, r.cpu1.server,
              r.cpu32.client, r.cpu32.server, std::thread::hardware_concurrency(), r.quiet, 2 * rounds);
  std::fflush(stdout);
  char json[512];
  std::snprintf(json, sizeof json,
                "\"%s\": {\"depth1_files_per_s\": %.1f, \"depth32_files_per_s\": %.1f, \"ratio\": %.3f, "
                "\"max_in_flight\": %zu, \"cpu_us_per_file\": {\"depth1_client\": %.1f, \"depth1_server\": %.1f, "
                "\"depth32_client\": %.1f, \"depth32_server\": %.1f}, \"quiet_runs\": %d, \"runs\": %d}",
                what, r.ips1, r.ips32, r.ratio(), r.max_in_flight, r.cpu1.client, r.cpu1.server, r.cpu32.client,
                r.cpu32.server, r.quiet, 2 * rounds);
  return json;
}

int usage() {
  std::fprintf(stderr, "usage: nfs_depth_bench [--rounds N] [--only link|loopback]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<int> rounds;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (*rounds < 1) return usage();
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
      if (only != "link" && only != "loopback") return usage();
    } else {
      return usage();
    }
  }
  if (const std::string why = server().start(); !why.empty()) {
    std::fprintf(stderr, "nfs_depth_bench: skipped: %s\n", why.c_str());
    return 77;
  }
  try {
    const auto& files = server().top_files();
    std::vector<std::string> json;
    if (only.empty() || only == "link") {
      if (const std::string why = server().relaunch(); !why.empty()) throw std::runtime_error(why);
      ringfeed::test::delay_link link(nfs_port, 250us);
      thread_pool pool(1);
      nfs_options o;
      o.nfs_port = link.port();
      o.mount_port = mount_port;  // MOUNT goes straight to the server
      nfs_client client(host, export_name, pool, o);
      const int n = rounds.value_or(3);
      json.push_back(report("link", measure_depths(client, files, n), files.size(), n));
    }
    if (only.empty() || only == "loopback") {
      if (const std::string why = server().relaunch(); !why.empty()) throw std::runtime_error(why);
      // One worker: the continuations are light, and on a small machine a
      // second (spinning) worker only takes CPU from the server and the I/O
      // thread that the deep run needs.
      thread_pool pool(1);
      nfs_client client(host, export_name, pool);
      const int n = rounds.value_or(5);
      json.push_back(report("loopback", measure_depths(client, files, n), files.size(), n));
    }
    std::string line = "{";
    for (const auto& j : json) line += j + ", ";
    line += "\"cores\": " + std::to_string(std::thread::hardware_concurrency()) + "}";
    std::printf("%s\n", line.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nfs_depth_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
