// ringfeed::read_node and the sizes resolve() takes from it (issue 39),
// over fake /proc, cgroup v1 and v2 trees and launcher environments.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <ringfeed/loader/node.hpp>
#include <ringfeed/loader/resolve.hpp>

#include "files.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::node_sources;
using ringfeed::node_view;
using ringfeed::read_node;
using ringfeed::test::temp_dir;
using ringfeed::test::write_file;
using Catch::Matchers::Contains;

namespace {

// A machine of `online` CPUs under `root`, the process in `cgroup_lines`.
struct fake_machine {
  temp_dir dir;
  node_sources sources;

  fake_machine(const std::string& online, const std::string& allowed, const std::string& cgroup_lines) {
    sources.proc = (dir.path() / "proc").string();
    sources.cgroup_root = (dir.path() / "cgroup").string();
    sources.sys_cpu = (dir.path() / "cpu").string();
    fs::create_directories(dir.path() / "proc" / "self");
    fs::create_directories(dir.path() / "cpu");
    write_file(dir.path() / "cpu" / "online", online + "\n");
    write_file(dir.path() / "proc" / "self" / "status", "Name:\tpython\nCpus_allowed_list:\t" + allowed + "\n");
    write_file(dir.path() / "proc" / "self" / "cgroup", cgroup_lines);
    write_file(dir.path() / "proc" / "meminfo", "MemTotal:  67108864 kB\nMemAvailable:   33554432 kB\n");
  }
  // Writes `file` with `text` in cgroup directory `group` (made, with cgroup.procs).
  void cgroup(const std::string& group, const std::string& file, const std::string& text) const {
    const fs::path d = fs::path(sources.cgroup_root) / group.substr(group.starts_with("/") ? 1 : 0);
    fs::create_directories(d);
    write_file(d / "cgroup.procs", "");
    write_file(d / file, text + "\n");
  }
};

}  // namespace

TEST_CASE("node: the affinity mask and a v2 cpu.max quota, the tightest on the way up", "[node]") {
  fake_machine m("0-31", "0-15", "0::/job/rank0\n");
  m.cgroup("", "cpu.max", "max 100000");
  m.cgroup("/job", "cpu.max", "1400000 100000");         // 14 CPUs for the job
  m.cgroup("/job/rank0", "cpu.max", "max 100000");
  const node_view n = read_node(m.sources);
  CHECK(n.online_cpus == 32);
  CHECK(n.affinity_cpus == 16);
  REQUIRE(n.cpu_quota);
  CHECK(*n.cpu_quota == Approx(14.0));
  CHECK(n.memory_available == std::uint64_t{32} << 30);
  const auto t = ringfeed::decode_threads_for(n);
  CHECK(t.value == 14);
  CHECK(t.reason == "16 CPUs in the affinity mask, cgroup quota 14.0 CPUs, 1 local rank");
}

TEST_CASE("node: cgroup v1 quota and memory limit; a fraction of a CPU rounds down to 1", "[node]") {
  fake_machine m("0-1", "0-1", "4:memory:/box\n2:cpu,cpuacct:/box\n0::/\n");
  m.cgroup("cpu,cpuacct/box", "cpu.cfs_quota_us", "50000");
  m.cgroup("cpu,cpuacct/box", "cpu.cfs_period_us", "100000");
  m.cgroup("cpu,cpuacct", "cpu.cfs_quota_us", "-1");
  m.cgroup("cpu,cpuacct", "cpu.cfs_period_us", "100000");
  m.cgroup("memory/box", "memory.limit_in_bytes", "536870912");  // 512 MiB
  m.cgroup("memory", "memory.limit_in_bytes", "9223372036854771712");  // v1's "no limit"
  const node_view n = read_node(m.sources);
  REQUIRE(n.cpu_quota);
  CHECK(*n.cpu_quota == Approx(0.5));
  CHECK(n.memory_limit == std::uint64_t{512} << 20);
  CHECK(ringfeed::decode_threads_for(n).value == 1);
}

TEST_CASE("node: a container's own cgroup namespace shows '/': the mount's files apply", "[node]") {
  fake_machine m("0-63", "0-63", "0::/\n");
  m.cgroup("", "cpu.max", "400000 100000");
  m.cgroup("", "memory.max", "8589934592");
  const node_view n = read_node(m.sources);
  CHECK(ringfeed::decode_threads_for(n).value == 4);
  CHECK(n.memory_limit == std::uint64_t{8} << 30);
}

TEST_CASE("node: local ranks share the mask (torchrun, Slurm, Open MPI), or keep their own", "[node]") {
  fake_machine m("0-127", "0-127", "0::/\n");
  m.sources.env = {{"LOCAL_WORLD_SIZE", "8"}};
  auto t = ringfeed::decode_threads_for(read_node(m.sources));
  CHECK(t.value == 16);
  CHECK(t.reason == "128 CPUs in the affinity mask, shared by 8 local ranks (LOCAL_WORLD_SIZE)");

  m.sources.env = {{"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_CPUS_PER_TASK", "12"}};
  t = ringfeed::decode_threads_for(read_node(m.sources));
  CHECK(t.value == 12);
  CHECK_THAT(t.reason, Contains("shared by 4 local ranks (SLURM_NTASKS_PER_NODE)") &&
                           Contains("SLURM_CPUS_PER_TASK=12"));

  m.sources.env = {{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  CHECK(ringfeed::decode_threads_for(read_node(m.sources)).value == 64);

  fake_machine pinned("0-127", "16-31", "0::/\n");  // the launcher gave each rank 16 CPUs of its own
  pinned.sources.env = {{"MPI_LOCALNRANKS", "8"}};
  t = ringfeed::decode_threads_for(read_node(pinned.sources));
  CHECK(t.value == 16);
  CHECK_THAT(t.reason, Contains("8 local ranks (MPI_LOCALNRANKS) with masks of their own"));
}

TEST_CASE("node: nothing readable means no limit, never an error", "[node]") {
  node_sources nowhere;
  nowhere.proc = nowhere.cgroup_root = nowhere.sys_cpu = "/nonexistent/ringfeed";
  const node_view n = read_node(nowhere);
  CHECK(n.affinity_cpus == 1);
  CHECK(!n.cpu_quota);
  CHECK(!n.memory_limit);
  CHECK(!n.memory_available);
}

TEST_CASE("node: the memory budget stays within a quarter of this rank's share", "[node]") {
  node_view n;
  n.memory_available = std::uint64_t{64} << 30;
  n.memory_limit = std::uint64_t{16} << 30;
  n.local_ranks = 2;
  n.local_ranks_from = "LOCAL_WORLD_SIZE";
  const std::size_t slab = std::size_t{600} << 20;
  auto b = ringfeed::memory_budget_for(n, 4 * slab, "4 slabs", slab);
  CHECK(b.value == std::size_t{2} << 30);  // 16 GiB / 2 ranks / 4
  CHECK(b.reason == "a quarter of this rank's 8192 MiB (cgroup limit 16.0 GiB over 2 local ranks)");
  b = ringfeed::memory_budget_for(n, std::size_t{1} << 30, "1 GiB", slab / 8);
  CHECK(b.value == std::size_t{1} << 30);
  CHECK_THAT(b.reason, Contains("1 GiB, within a quarter of this rank's 8192 MiB"));

  n.memory_limit = std::uint64_t{512} << 20;  // 256 MiB a rank: 2 slabs of 100 MiB fit, a quarter does not hold them
  b = ringfeed::memory_budget_for(n, std::size_t{1} << 30, "1 GiB", std::size_t{100} << 20);
  CHECK(b.value == std::size_t{200} << 20);
  CHECK_THROWS_WITH(ringfeed::memory_budget_for(n, std::size_t{1} << 30, "1 GiB", slab),
                    Contains("2 batch slabs of 600 MiB (the least a loader runs with) do not fit in this rank's "
                             "256 MiB"));
}

TEST_CASE("resolve: threads from the node, num_workers as a cap, reasons in the options", "[node][resolve]") {
  ringfeed::loader_request r;
  r.base.source = "/data";
  r.base.batch_size = 8;
  node_view n;
  n.online_cpus = n.affinity_cpus = 16;
  n.cpu_quota = 14.0;
  r.node = n;
  auto s = ringfeed::resolve(r);
  CHECK(s.options.threads == 14);
  r.workers = 8;
  s = ringfeed::resolve(r);
  CHECK(s.options.threads == 8);
  r.workers = 32;
  s = ringfeed::resolve(r);
  CHECK(s.options.threads == 14);
  bool found = false;
  for (const auto& reason : s.options.reasons)
    if (reason.option == "threads") {
      found = true;
      CHECK(reason.reason ==
            "num_workers=32 capped at this rank's share: 16 CPUs in the affinity mask, cgroup quota 14.0 CPUs, "
            "1 local rank");
    }
  CHECK(found);
  r.base.threads = 3;  // given: kept, no reason
  s = ringfeed::resolve(r);
  CHECK(s.options.threads == 3);
  for (const auto& reason : s.options.reasons) CHECK(reason.option != "threads");
}
