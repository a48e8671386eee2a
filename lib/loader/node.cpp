// ringfeed::read_node and the sizes resolve() takes from it: see
// loader/node.hpp. Every read is best effort: a file that is missing or
// does not parse means "no limit from there", never an error.
#include <ringfeed/loader/node.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <ringfeed/loader/numa.hpp>  // parse_cpu_list
#include <ringfeed/text.hpp>

#include "proc_text.hpp"

extern char** environ;

namespace ringfeed {
namespace {

using detail::field;
using detail::read_text;

std::optional<std::uint64_t> to_u64(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (~std::uint64_t{0} - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// The leading integer of "4" or "2(x3)" (SLURM_NTASKS_PER_NODE).
std::optional<std::uint64_t> leading_u64(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  return to_u64(s.substr(0, n));
}

struct cgroup_line {
  std::string controllers;  // "" for v2
  std::string path;
};

std::vector<cgroup_line> cgroup_lines(const std::string& proc) {
  std::vector<cgroup_line> out;
  const auto text = read_text(proc + "/self/cgroup");
  if (!text) return out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

bool has_controller(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

// The directories from the process's cgroup up to the hierarchy's root,
// where `base` is the hierarchy's mount. A path that is not there (a
// container's own namespace shows "/") starts at the mount itself.
std::vector<std::string> walk_up(const std::string& base, const std::string& own) {
  std::vector<std::string> dirs;
  // (A copy, not `path = "/"`: GCC 12 at -O3 warns falsely (-Wrestrict) on
  // that assignment's inlined memcpy.)
  std::string path = read_text(base + own + "/cgroup.procs") ? own : std::string(1, '/');
  for (;;) {
    dirs.push_back(base + (path == "/" ? "" : path));
    if (path == "/" || path.empty()) break;
    const auto slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return dirs;
}

// The hierarchy of `controller`: (mount, the process's path in it).
std::vector<std::pair<std::string, std::string>> hierarchies(const node_sources& from, std::string_view controller) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& l : cgroup_lines(from.proc)) {
    if (l.controllers.empty()) {  // v2: unified at the root, or beside v1 under unified/
      out.emplace_back(from.cgroup_root, l.path);
      out.emplace_back(from.cgroup_root + "/unified", l.path);
    } else if (has_controller(l.controllers, controller)) {
      out.emplace_back(from.cgroup_root + "/" + l.controllers, l.path);
      if (l.controllers != controller) out.emplace_back(from.cgroup_root + "/" + std::string(controller), l.path);
    }
  }
  return out;
}

template <class T>
void keep_smaller(std::optional<T>& best, std::optional<T> v) {
  if (v && (!best || *v < *best)) best = v;
}

std::optional<double> cpu_quota(const node_sources& from) {
  std::optional<double> best;
  for (const auto& [base, path] : hierarchies(from, "cpu")) {
    for (const auto& dir : walk_up(base, path)) {
      if (const auto v2 = read_text(dir + "/cpu.max")) {  // "max 100000" or "quota period"
        std::istringstream in(*v2);
        std::string quota, period;
        in >> quota >> period;
        const auto q = to_u64(quota), p = to_u64(period);
        if (q && p && *p > 0) keep_smaller(best, std::optional<double>(static_cast<double>(*q) / static_cast<double>(*p)));
      }
      const auto q1 = read_text(dir + "/cpu.cfs_quota_us");  // -1: none
      const auto p1 = read_text(dir + "/cpu.cfs_period_us");
      if (q1 && p1) {
        const auto q = to_u64(*q1), p = to_u64(*p1);
        if (q && p && *p > 0) keep_smaller(best, std::optional<double>(static_cast<double>(*q) / static_cast<double>(*p)));
      }
    }
  }
  return best;
}

std::optional<std::uint64_t> memory_limit(const node_sources& from) {
  constexpr std::uint64_t unlimited = std::uint64_t{1} << 62;  // v1's "no limit" is a page-rounded 2^63
  std::optional<std::uint64_t> best;
  for (const auto& [base, path] : hierarchies(from, "memory")) {
    for (const auto& dir : walk_up(base, path)) {
      for (const char* file : {"/memory.max", "/memory.limit_in_bytes"}) {
        const auto text = read_text(dir + file);
        const auto v = text ? to_u64(*text) : std::nullopt;  // "max": none
        if (v && *v < unlimited) keep_smaller(best, v);
      }
    }
  }
  return best;
}

}  // namespace

node_sources node_sources::of_this_process() {
  node_sources s;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) s.env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return s;
}

node_view read_node(const node_sources& from) {
  node_view n;
  if (const auto online = read_text(from.sys_cpu + "/online"))
    n.online_cpus = std::max<std::size_t>(1, parse_cpu_list(*online).size());
  n.affinity_cpus = n.online_cpus;
  if (const auto status = read_text(from.proc + "/self/status"))
    if (const auto list = field(*status, "Cpus_allowed_list"))
      if (const std::size_t c = parse_cpu_list(*list).size(); c > 0) n.affinity_cpus = c;
  n.cpu_quota = cpu_quota(from);
  n.memory_limit = memory_limit(from);
  if (const auto meminfo = read_text(from.proc + "/meminfo"))
    if (const auto kb = field(*meminfo, "MemAvailable"))
      if (const auto v = leading_u64(*kb)) n.memory_available = *v * 1024;
  for (const char* var : {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const auto it = from.env.find(var);
    if (it == from.env.end()) continue;
    if (const auto v = leading_u64(it->second); v && *v > 0) {
      n.local_ranks = static_cast<std::size_t>(*v);
      n.local_ranks_from = var;
      break;
    }
  }
  if (const auto it = from.env.find("SLURM_CPUS_PER_TASK"); it != from.env.end())
    if (const auto v = to_u64(it->second); v && *v > 0) n.cpus_per_task = static_cast<std::size_t>(*v);
  return n;
}

sized decode_threads_for(const node_view& node) {
  sized out;
  std::size_t cpus = std::max<std::size_t>(1, node.affinity_cpus);
  out.reason = std::to_string(cpus) + " CPUs in the affinity mask";
  if (node.cpu_quota) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", cgroup quota %.1f CPUs", *node.cpu_quota);
    out.reason += buf;
    cpus = std::min(cpus, std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(*node.cpu_quota))));
  }
  const std::size_t ranks = std::max<std::size_t>(1, node.local_ranks);
  if (ranks == 1) {
    out.reason += ", 1 local rank";
  } else if (node.affinity_cpus * ranks <= node.online_cpus) {
    out.reason += ", " + std::to_string(ranks) + " local ranks (" + node.local_ranks_from +
                  ") with masks of their own";
  } else {
    out.reason += ", shared by " + std::to_string(ranks) + " local ranks (" + node.local_ranks_from + ")";
    cpus = std::max<std::size_t>(1, cpus / ranks);
  }
  if (node.cpus_per_task && *node.cpus_per_task < cpus) {
    out.reason += ", SLURM_CPUS_PER_TASK=" + std::to_string(*node.cpus_per_task);
    cpus = *node.cpus_per_task;
  }
  out.value = cpus;
  return out;
}

sized memory_budget_for(const node_view& node, std::size_t wanted, const std::string& wanted_reason,
                        std::size_t slab_bytes) {
  std::optional<std::uint64_t> memory;
  std::string from;
  if (node.memory_limit) {
    memory = node.memory_limit;
    from = "cgroup limit " + byte_size_text(*node.memory_limit, byte_unit::gib);
  }
  if (node.memory_available && (!memory || *node.memory_available < *memory)) {
    memory = node.memory_available;
    from = "MemAvailable " + byte_size_text(*node.memory_available, byte_unit::gib);
  }
  if (!memory) return {wanted, wanted_reason};
  const std::size_t ranks = std::max<std::size_t>(1, node.local_ranks);
  const std::uint64_t share = *memory / ranks;
  const std::string whose = "this rank's " + byte_size_text(share, byte_unit::mib) + " (" + from +
                            (ranks > 1 ? " over " + std::to_string(ranks) + " local ranks" : "") + ")";
  const std::uint64_t floor = 2 * std::uint64_t{slab_bytes};
  if (floor > share)
    throw std::invalid_argument("memory_budget: 2 batch slabs of " + byte_size_text(slab_bytes) +
                                " (the least a loader runs with) do not fit in " + whose +
                                "; lower batch_size or the output size");
  const std::uint64_t cap = share / 4;
  if (wanted <= cap) return {wanted, wanted_reason + ", within a quarter of " + whose};
  if (cap >= floor) return {static_cast<std::size_t>(cap), "a quarter of " + whose};
  return {static_cast<std::size_t>(floor), "2 batch slabs, the least a loader runs with: more than a quarter of " + whose};
}

}  // namespace ringfeed
