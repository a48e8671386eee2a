// ringfeed::place_near_gpu — where a loader that feeds a GPU puts its batch
// memory and decode threads on a machine of several NUMA nodes (issue 39):
// pinned slabs on the GPU's node, so its DMA reads local memory, and the
// decode threads on that node's CPUs of this rank's affinity mask, so they
// write local memory. On one node (or a mask within one) nothing changes.
//
// Read from <sys>/bus/pci/devices/<bus id>/numa_node (the GPU's node, -1
// when the firmware does not say), <sys>/devices/system/node/node<N>/cpulist
// and the affinity mask in <proc>/self/status (node_sources: a fake tree in
// tests). Every read is best effort: what cannot be read leaves placement
// to the OS, with the reason.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/loader/node.hpp>

namespace ringfeed {

struct numa_placement {
  /// The NUMA node batch slabs are allocated on (preferred, as
  /// set_mempolicy's MPOL_PREFERRED: another node when it is full); -1:
  /// wherever the OS puts them.
  int node = -1;
  /// The CPUs decode threads run on (the node's ∩ the affinity mask);
  /// empty: the whole mask, as before.
  std::vector<int> cpus;
  /// What was chosen and why ("numa_reason" in stats()).
  std::string reason;
};

/// The placement for a loader feeding the GPU at PCI address `pci_bus_id`
/// ("0000:3b:00.0", either case; "" when the driver could not say) with
/// `threads` decode threads. Threads move to the node's CPUs only when it
/// has at least `threads` of this rank's: never fewer CPUs than threads.
[[nodiscard]] numa_placement place_near_gpu(const node_sources& from, std::string_view pci_bus_id,
                                            std::size_t threads);

/// The CPUs of a list such as "0-3,8,10-11" (sysfs cpulist, Cpus_allowed_list),
/// in order; empty when it does not parse.
[[nodiscard]] std::vector<int> parse_cpu_list(std::string_view list);

}  // namespace ringfeed
