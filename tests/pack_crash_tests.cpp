// Crash consistency of `ringfeed pack`: killed (SIGKILL) at 60 random points
// while it writes shards, its output directory never holds a shard that looks
// complete but is not: every `shard-*.tar` present is byte-identical to the
// one an uninterrupted run writes (pack's output is a pure function of the
// source, the seed and the shard size). Running pack again finishes the job.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "files.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::test::child_process;
using ringfeed::test::ringfeed_cli;

namespace {

// Every file of `dir` and its bytes.
std::map<std::string, std::vector<std::byte>> contents(const fs::path& dir) {
  std::map<std::string, std::vector<std::byte>> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename().string()] = ringfeed::test::read_file(e.path());
  return out;
}

bool is_shard(const std::string& name) {
  return name.rfind("shard-", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".tar") == 0;
}

int run_to_end(const std::vector<std::string>& argv) {
  child_process c(argv);
  const int status = c.wait();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

static ringfeed::test::skip_if_unavailable skip{[]() -> std::string {
  return ringfeed_cli().empty() ? "RINGFEED_CLI is not set: the ringfeed CLI was not built" : "";
}};

TEST_CASE("pack killed at random points leaves only complete shards; a re-run finishes", "[crash][pack]") {
  ringfeed::test::watchdog dog("pack crash consistency", std::chrono::seconds(500));
  ringfeed::test::temp_dir tmp;
  const fs::path data = tmp.path() / "data", ref = tmp.path() / "ref", out = tmp.path() / "out";
  REQUIRE(run_to_end({ringfeed_cli(), "gen", data.string(), "--images", "300", "--classes", "3", "--seed", "3"}) == 0);
  const std::vector<std::string> pack = {ringfeed_cli(), "pack", (data / "train").string(), out.string(),
                                         "--shard-mb", "1", "--seed", "9"};
  std::vector<std::string> pack_ref = pack;
  pack_ref[3] = ref.string();
  // The run's duration sets where the kills fall: the shortest of three
  // uninterrupted runs (the first also makes the reference), so that a
  // moment of load elsewhere (ctest -j) does not push every kill point past
  // the end of the runs that follow.
  auto full = std::chrono::steady_clock::duration::max();
  for (int i = 0; i < 3; ++i) {
    if (i > 0) fs::remove_all(ref);
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(run_to_end(pack_ref) == 0);
    full = std::min(full, std::chrono::steady_clock::now() - t0);
  }
  const auto reference = contents(ref);
  std::size_t ref_shards = 0;
  for (const auto& [name, bytes] : reference) ref_shards += is_shard(name) ? 1 : 0;
  REQUIRE(ref_shards >= 4);

  std::mt19937_64 rng(20261124);  // fixed: the same kill points every run
  // Within the first 60% of the reference run's time: later runs find the
  // source in the page cache and finish sooner.
  std::uniform_int_distribution<long long> delay_us(
      0, std::chrono::duration_cast<std::chrono::microseconds>(full).count() * 6 / 10);
  const int rounds = 60;
  int killed = 0, with_shards = 0, without_shards = 0;
  for (int round = 0; round < rounds; ++round) {
    child_process c(pack);
    // The kill point, not a synchronization: anywhere in a full run's time.
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    c.signal(SIGKILL);
    const int status = c.wait();
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
    if (!fs::exists(out)) {
      ++without_shards;
      continue;
    }
    std::size_t shards = 0;
    for (const auto& [name, bytes] : contents(out)) {
      CAPTURE(round, name);
      if (is_shard(name) || name == "classes.txt") {
        REQUIRE(reference.count(name) == 1);
        REQUIRE(bytes == reference.at(name));  // complete: what the uninterrupted run wrote
        shards += is_shard(name) ? 1 : 0;
      } else {
        CHECK(name.size() > 4);
        CHECK(name.compare(name.size() - 4, 4, ".tmp") == 0);  // only a temporary is unfinished
      }
    }
    ++(shards > 0 ? with_shards : without_shards);
  }
  WARN("killed mid-run " << killed << " of " << rounds << "; " << with_shards << " left complete shards, "
                         << without_shards << " none");
  CHECK(killed >= rounds * 3 / 4);  // the kill points fell inside the run
  CHECK(with_shards > 0);
  CHECK(without_shards > 0);

  REQUIRE(run_to_end(pack) == 0);
  CHECK(contents(out) == reference);  // finished: every shard, nothing left over
}
