// ringfeed::place_near_gpu (issue 39): where batch slabs and decode threads
// go for a loader that feeds a GPU, over fake sysfs trees (this machine has
// one NUMA node and no GPU: the placement is checked, not measured), and
// the scopes that apply it to a thread.
#include <catch2/catch.hpp>

#include <sched.h>

#include <filesystem>
#include <string>
#include <vector>

#include <ringfeed/loader/numa.hpp>
#include <ringfeed/loader/resolve.hpp>

#include "files.hpp"
#include "loader/numa_scope.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::node_sources;
using ringfeed::numa_placement;
using ringfeed::parse_cpu_list;
using ringfeed::place_near_gpu;
using ringfeed::test::temp_dir;
using ringfeed::test::write_file;
using Catch::Matchers::Contains;

namespace {

const char* const gpu = "0000:3B:00.0";  // as cudaDeviceGetPCIBusId writes it; sysfs has it in lower case

// A machine whose NUMA nodes have `node_cpus` (node0, node1, …), this
// process's mask `allowed`, and the GPU's numa_node file saying `gpu_node`
// (not written when empty).
struct fake_sysfs {
  temp_dir dir;
  node_sources sources;

  fake_sysfs(const std::vector<std::string>& node_cpus, const std::string& allowed, const std::string& gpu_node) {
    sources.proc = (dir.path() / "proc").string();
    sources.sys = (dir.path() / "sys").string();
    fs::create_directories(dir.path() / "proc" / "self");
    write_file(dir.path() / "proc" / "self" / "status", "Name:\tpython\nCpus_allowed_list:\t" + allowed + "\n");
    for (std::size_t n = 0; n < node_cpus.size(); ++n) {
      const fs::path d = dir.path() / "sys" / "devices" / "system" / "node" / ("node" + std::to_string(n));
      fs::create_directories(d);
      write_file(d / "cpulist", node_cpus[n] + "\n");
    }
    write_file(dir.path() / "sys" / "devices" / "system" / "node" / "online", "0-" + std::to_string(node_cpus.size() - 1));
    const fs::path dev = dir.path() / "sys" / "bus" / "pci" / "devices" / "0000:3b:00.0";
    fs::create_directories(dev);
    if (!gpu_node.empty()) write_file(dev / "numa_node", gpu_node + "\n");
  }
};

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int c = lo; c <= hi; ++c) v.push_back(c);
  return v;
}

}  // namespace

TEST_CASE("numa: cpu lists as sysfs and /proc write them", "[numa]") {
  CHECK(parse_cpu_list("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("").empty());  // a memory-only node
  CHECK(parse_cpu_list("3-1").empty());
  CHECK(parse_cpu_list("a-b").empty());
}

TEST_CASE("numa: a GPU on node 1 of two: slabs there, threads on node 1's CPUs of the mask", "[numa]") {
  fake_sysfs m({"0-7,16-23", "8-15,24-31"}, "0-31", "1");
  const numa_placement p = place_near_gpu(m.sources, gpu, 8);
  CHECK(p.node == 1);
  std::vector<int> want = range(8, 15);
  for (int c : range(24, 31)) want.push_back(c);
  CHECK(p.cpus == want);
  CHECK_THAT(p.reason, Contains("GPU 0000:3b:00.0 is on NUMA node 1") && Contains("2 nodes") &&
                           Contains("batch slabs allocated there") && Contains("CPUs 8-15,24-31"));

  SECTION("the bus id as nvidia-smi writes it") {
    CHECK(place_near_gpu(m.sources, "00000000:3B:00.0", 8).node == 1);
  }
  SECTION("only the node's CPUs that are in this rank's mask") {
    fake_sysfs half({"0-7", "8-15"}, "4-11", "1");
    const numa_placement q = place_near_gpu(half.sources, gpu, 2);
    CHECK(q.node == 1);
    CHECK(q.cpus == range(8, 11));
  }
  SECTION("fewer of them than decode threads: slabs move, threads keep the whole mask") {
    fake_sysfs half({"0-7", "8-15"}, "4-11", "1");
    const numa_placement q = place_near_gpu(half.sources, gpu, 6);
    CHECK(q.node == 1);
    CHECK(q.cpus.empty());
    CHECK_THAT(q.reason, Contains("4 of this rank's CPUs are on it, fewer than its 6 decode threads"));
  }
  SECTION("none of them in the mask") {
    fake_sysfs other({"0-7", "8-15"}, "0-3,4", "1");
    const numa_placement q = place_near_gpu(other.sources, gpu, 2);
    CHECK(q.node == -1);  // the mask is within node 0: one node, nothing changes
    CHECK(q.cpus.empty());
    CHECK_THAT(q.reason, Contains("on one node: nothing to change"));
  }
}

TEST_CASE("numa: one node, or a mask within one: nothing changes", "[numa]") {
  fake_sysfs one({"0-31"}, "0-31", "0");
  const numa_placement p = place_near_gpu(one.sources, gpu, 8);
  CHECK(p.node == -1);
  CHECK(p.cpus.empty());
  CHECK_THAT(p.reason, Contains("GPU 0000:3b:00.0 is on NUMA node 0") && Contains("nothing to change"));

  fake_sysfs pinned({"0-7", "8-15"}, "8-15", "1");  // taskset already put this rank on the GPU's node
  const numa_placement q = place_near_gpu(pinned.sources, gpu, 8);
  CHECK(q.node == -1);
  CHECK(q.cpus.empty());
}

TEST_CASE("numa: a GPU whose node is unknown leaves placement to the OS, saying why", "[numa]") {
  SECTION("numa_node -1: the firmware does not say") {
    fake_sysfs m({"0-7", "8-15"}, "0-15", "-1");
    const numa_placement p = place_near_gpu(m.sources, gpu, 8);
    CHECK((p.node == -1 && p.cpus.empty()));
    CHECK_THAT(p.reason, Contains("reports no NUMA node (-1") && Contains("left where the OS puts them"));
  }
  SECTION("no numa_node file") {
    fake_sysfs m({"0-7", "8-15"}, "0-15", "");
    const numa_placement p = place_near_gpu(m.sources, gpu, 8);
    CHECK((p.node == -1 && p.cpus.empty()));
    CHECK_THAT(p.reason, Contains("cannot read the GPU's NUMA node from") && Contains("numa_node"));
  }
  SECTION("no PCI address from the driver") {
    fake_sysfs m({"0-7", "8-15"}, "0-15", "1");
    const numa_placement p = place_near_gpu(m.sources, "", 8);
    CHECK((p.node == -1 && p.cpus.empty()));
    CHECK_THAT(p.reason, Contains("PCI address is unknown"));
  }
}

TEST_CASE("numa: the scopes put the thread on the CPUs and give its mask back", "[numa]") {
  cpu_set_t before;
  REQUIRE(sched_getaffinity(0, sizeof before, &before) == 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &before)) first = c;
  REQUIRE(first >= 0);
  {
    ringfeed::detail::run_on_cpus on({first});
    cpu_set_t now;
    REQUIRE(sched_getaffinity(0, sizeof now, &now) == 0);
    CHECK(CPU_COUNT(&now) == 1);
    CHECK(CPU_ISSET(first, &now));
    // Node 0 exists on every Linux machine; a kernel or filter that
    // refuses the policy leaves it alone, which is what -1 does too.
    ringfeed::detail::prefer_node near(0);
    ringfeed::detail::prefer_node nothing(-1);
  }
  cpu_set_t after;
  REQUIRE(sched_getaffinity(0, sizeof after, &after) == 0);
  CHECK(CPU_EQUAL(&before, &after));
}

TEST_CASE("numa: resolve places a loader that feeds a GPU and says why in the reasons", "[numa][resolve]") {
  ringfeed::loader_request r;
  r.base.source = "/data/train";
  r.base.batch_size = 4;
  r.node = ringfeed::node_view{};
  const auto reason_of = [](const ringfeed::resolved& s) {
    for (const auto& x : s.reasons)
      if (x.option == "numa") return x.reason;
    return std::string();
  };
  SECTION("a placement given (as place_near_gpu finds it) goes to the options, with its reason") {
    r.base.device = 0;
    numa_placement p;
    p.node = 1;
    p.cpus = {8, 9};
    p.reason = "GPU on node 1";
    r.numa = p;
    const auto s = resolve(r);
    CHECK(s.options.numa.node == 1);
    CHECK(s.options.numa.cpus == std::vector<int>{8, 9});
    CHECK(reason_of(s) == "GPU on node 1");
    CHECK(s.options.reasons.size() == s.reasons.size());  // what stats() reports as numa_reason
  }
  SECTION("host batches: nothing to place, nothing said") {
    r.base.device = -1;
    const auto s = resolve(r);
    CHECK(s.options.numa.node == -1);
    CHECK(reason_of(s).empty());
  }
  SECTION("this machine: a device asked for, placed if CUDA has it, else why not") {
    r.base.device = 0;
    const auto s = resolve(r);
    CHECK_FALSE(reason_of(s).empty());
    if (s.options.numa.node < 0) CHECK(s.options.numa.cpus.empty());
  }
}
