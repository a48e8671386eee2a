// Private: applying a numa_placement (loader/numa.hpp) to the calling
// thread for a while: the memory policy around the allocation of batch
// slabs, the affinity around the start of the decode threads (threads
// inherit their creator's mask). Both give back what the thread had, and
// both do nothing where the kernel refuses (a seccomp filter, no NUMA).
#pragma once

#include <sched.h>

#include <vector>

namespace ringfeed::detail {

/// While it lives, pages the calling thread faults in come from `node`
/// first (set_mempolicy MPOL_PREFERRED: another node when it is full), then
/// the thread's default policy again. -1, or a policy the process already
/// has (numactl --membind, --preferred): nothing changes.
class prefer_node {
 public:
  explicit prefer_node(int node) noexcept;
  ~prefer_node();
  prefer_node(const prefer_node&) = delete;
  prefer_node& operator=(const prefer_node&) = delete;

 private:
  bool m_set = false;
};

/// While it lives, the calling thread runs on `cpus` only (and the threads
/// it starts inherit them), then on its mask of before. Empty: nothing changes.
class run_on_cpus {
 public:
  explicit run_on_cpus(const std::vector<int>& cpus) noexcept;
  ~run_on_cpus();
  run_on_cpus(const run_on_cpus&) = delete;
  run_on_cpus& operator=(const run_on_cpus&) = delete;

 private:
  cpu_set_t m_before{};
  bool m_set = false;
};

}  // namespace ringfeed::detail
