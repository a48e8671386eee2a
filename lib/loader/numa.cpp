// ringfeed::place_near_gpu: see loader/numa.hpp.
#include <ringfeed/loader/numa.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include <ringfeed/text.hpp>

#include "proc_text.hpp"

namespace ringfeed {
namespace {

using detail::field;
using detail::read_text;

std::optional<int> to_int(std::string_view s) {
  s = trim(s);
  bool negative = false;
  if (!s.empty() && s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

// This process's affinity mask (Cpus_allowed_list), empty when unreadable.
std::vector<int> affinity_mask(const node_sources& from) {
  const auto status = read_text(from.proc + "/self/status");
  const auto list = status ? field(*status, "Cpus_allowed_list") : std::nullopt;
  return list ? parse_cpu_list(*list) : std::vector<int>{};
}

// Every node<N> under <sys>/devices/system/node with its CPUs.
std::vector<std::pair<int, std::vector<int>>> numa_nodes(const node_sources& from) {
  std::vector<std::pair<int, std::vector<int>>> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(from.sys + "/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("node")) continue;
    const auto n = to_int(std::string_view(name).substr(4));
    if (!n || *n < 0) continue;
    const auto list = read_text(entry.path().string() + "/cpulist");
    nodes.emplace_back(*n, list ? parse_cpu_list(*list) : std::vector<int>{});
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// "8-15,24" for the reasons.
std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view list) {
  std::vector<int> cpus;
  list = trim(list);
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view part = list.substr(0, comma);
    const auto dash = part.find('-');
    const auto lo = to_int(part.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : to_int(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo > 65536) return {};
    for (int c = *lo; c <= *hi; ++c) cpus.push_back(c);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

numa_placement place_near_gpu(const node_sources& from, std::string_view pci_bus_id, std::size_t threads) {
  numa_placement p;
  const std::string left = ": memory and threads left where the OS puts them";
  if (pci_bus_id.empty()) {
    p.reason = "the GPU's PCI address is unknown" + left;
    return p;
  }
  std::string bus(trim(pci_bus_id));
  std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // sysfs names a 4-digit domain ("0000:3b:00.0"); nvidia-smi writes 8 ("00000000:3B:00.0").
  if (const auto colon = bus.find(':'); colon != std::string::npos && colon > 4) bus.erase(0, colon - 4);
  const std::string file = from.sys + "/bus/pci/devices/" + bus + "/numa_node";
  const auto text = read_text(file);
  const auto gpu_node = text ? to_int(*text) : std::nullopt;
  if (!gpu_node) {
    p.reason = "cannot read the GPU's NUMA node from " + file + left;
    return p;
  }
  if (*gpu_node < 0) {
    p.reason = "GPU " + bus + " reports no NUMA node (-1 in " + file + ")" + left;
    return p;
  }
  const std::vector<int> mask = affinity_mask(from);
  std::vector<int> node_cpus;
  std::size_t spanned = 0;  // nodes holding CPUs of the mask
  for (const auto& [n, cpus] : numa_nodes(from)) {
    const std::vector<int> mine = mask.empty() ? cpus : intersect(cpus, mask);
    if (!mine.empty()) ++spanned;
    if (n == *gpu_node) node_cpus = mine;
  }
  const std::string gpu = "GPU " + bus + " is on NUMA node " + std::to_string(*gpu_node);
  if (spanned <= 1) {
    p.reason = gpu + " and this rank's CPUs are on one node: nothing to change";
    return p;
  }
  p.node = *gpu_node;
  p.reason = gpu + " (this rank's CPUs span " + std::to_string(spanned) + " nodes): batch slabs allocated there";
  if (node_cpus.empty()) {
    p.reason += "; none of this rank's CPUs are on it, decode threads stay on the whole mask";
  } else if (node_cpus.size() < threads) {
    p.reason += "; decode threads stay on the whole mask: " + std::to_string(node_cpus.size()) +
                " of this rank's CPUs are on it, fewer than its " + std::to_string(threads) + " decode threads";
  } else {
    p.cpus = node_cpus;
    p.reason += ", decode threads on its CPUs " + cpu_list_text(node_cpus);
  }
  return p;
}

}  // namespace ringfeed
