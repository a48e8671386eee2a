// ringfeed::node_view — what this process may use of its machine, as the
// kernel will enforce it: the CPUs of its affinity mask, the cgroup's CPU
// quota and memory limit, the memory available, and how many ranks of the
// job share this node. resolve() sizes the decode threads and the memory
// budget from it (issue 39: nothing to tune on a whole node).
//
// Read from /proc/self/status (Cpus_allowed_list), /proc/self/cgroup and
// the cgroup trees under /sys/fs/cgroup (v2 cpu.max / memory.max, v1
// cpu.cfs_quota_us + cpu.cfs_period_us / memory.limit_in_bytes), each
// walked from the process's cgroup up to the root, the tightest limit
// winning as the kernel applies them; /proc/meminfo (MemAvailable);
// /sys/devices/system/cpu/online; and the launchers' variables
// (LOCAL_WORLD_SIZE from torchrun, SLURM_NTASKS_PER_NODE and
// SLURM_CPUS_PER_TASK, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS).
// Tests point it at a fake tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ringfeed {

struct node_view {
  std::size_t online_cpus = 1;    ///< CPUs the machine has online
  std::size_t affinity_cpus = 1;  ///< CPUs in this process's affinity mask
  /// The cgroup CPU quota in CPUs (quota / period), the smallest on the
  /// way to the root; unset: no quota.
  std::optional<double> cpu_quota;
  std::size_t local_ranks = 1;    ///< ranks of the job on this node
  std::string local_ranks_from;   ///< the variable that said so; "" when none
  /// SLURM_CPUS_PER_TASK: the CPUs the scheduler gave this rank.
  std::optional<std::size_t> cpus_per_task;
  /// The cgroup memory limit, the smallest on the way to the root; unset: none.
  std::optional<std::uint64_t> memory_limit;
  /// MemAvailable of /proc/meminfo; unset when it cannot be read.
  std::optional<std::uint64_t> memory_available;
};

/// Where read_node looks (a fake tree in tests) and the environment it reads.
struct node_sources {
  std::string proc = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string sys_cpu = "/sys/devices/system/cpu";
  /// sysfs, for NUMA: bus/pci/devices/<id>/numa_node, devices/system/node (loader/numa.hpp).
  std::string sys = "/sys";
  std::map<std::string, std::string, std::less<>> env;  ///< the launchers' variables
  /// The real machine and this process's environment.
  [[nodiscard]] static node_sources of_this_process();
};

/// Reads the view; what cannot be read is left at its default (no limit),
/// never an error.
[[nodiscard]] node_view read_node(const node_sources& from);

/// A default and why it has its value.
struct sized {
  std::size_t value = 0;
  std::string reason;
};

/// Decode threads for this rank: the affinity mask's CPUs, capped by the
/// quota (rounded down), divided among the local ranks when they share the
/// mask (a mask of at most online / ranks CPUs is taken as this rank's
/// own); SLURM_CPUS_PER_TASK caps it too. At least 1.
[[nodiscard]] sized decode_threads_for(const node_view& node);

/// The memory budget for batch slabs: `wanted` (max(1 GiB, 4 slabs), for
/// `wanted_reason`),
/// capped at a quarter of this rank's share of min(cgroup limit,
/// MemAvailable), and never below 2 slabs (what a loader needs to run).
/// Throws std::invalid_argument when 2 slabs do not fit this rank's share:
/// before anything is allocated, instead of the OOM killer mid-epoch.
[[nodiscard]] sized memory_budget_for(const node_view& node, std::size_t wanted, const std::string& wanted_reason,
                                      std::size_t slab_bytes);

}  // namespace ringfeed
