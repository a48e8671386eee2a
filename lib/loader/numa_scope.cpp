#include "numa_scope.hpp"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ringfeed::detail {
namespace {

constexpr int max_nodes = 1024;
constexpr int bits_per_word = static_cast<int>(8 * sizeof(unsigned long));

}  // namespace

prefer_node::prefer_node(int node) noexcept {
  if (node < 0 || node >= max_nodes) return;
  int mode = -1;
  // A policy set from outside (numactl) is the user's placement: kept.
  if (syscall(SYS_get_mempolicy, &mode, nullptr, 0UL, nullptr, 0UL) != 0 || mode != MPOL_DEFAULT) return;
  unsigned long mask[max_nodes / bits_per_word] = {};
  mask[node / bits_per_word] |= 1UL << (node % bits_per_word);
  // maxnode counts one past the bits the kernel reads (it decrements it first).
  m_set = syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask, static_cast<unsigned long>(max_nodes + 1)) == 0;
}

prefer_node::~prefer_node() {
  if (m_set) (void)syscall(SYS_set_mempolicy, MPOL_DEFAULT, nullptr, 0UL);
}

run_on_cpus::run_on_cpus(const std::vector<int>& cpus) noexcept {
  if (cpus.empty() || sched_getaffinity(0, sizeof m_before, &m_before) != 0) return;
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &want);
  if (CPU_COUNT(&want) == 0) return;
  m_set = sched_setaffinity(0, sizeof want, &want) == 0;
}

run_on_cpus::~run_on_cpus() {
  if (m_set) (void)sched_setaffinity(0, sizeof m_before, &m_before);
}

}  // namespace ringfeed::detail
