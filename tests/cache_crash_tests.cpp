// Crash consistency of the read-through cache (--cache-dir) of nfs://
// samples, against the test NFS server (nfs_server.hpp):
//  - `ringfeed bench` killed (SIGKILL) at 60 random points while it fills and
//    churns a small cache: every entry file on disk is complete and holds
//    its source file's bytes, the next open removes the temporaries, and a
//    loader over that cache delivers what an uncached one does;
//  - ENOSPC: a cache on a full file system (a 64 KiB tmpfs) never fails an
//    epoch; one log line says the cache is full.
// Skipped, with the reason, where the NFS server cannot run.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ringfeed/io/cache.hpp>
#include <ringfeed/loader/loader.hpp>

#include "child_process.hpp"
#include "files.hpp"
#include "nfs_loader.hpp"
#include "nfs_server.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed::test::nfs;
using ringfeed::test::child_process;
using ringfeed::test::ringfeed_cli;

namespace {

std::uint64_t load_le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<std::uint64_t>(p[i]);
  return v;
}

/// Checks every entry file in the cache directory against the export, as
/// written on disk (magic "RFCACHE1", key length u32, key, payload length
/// u64, payload): complete, and the bytes of the file its key names.
/// Returns the number of entries checked.
std::size_t check_entries(const fs::path& dir) {
  std::size_t checked = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& fan : fs::directory_iterator(dir)) {
    const std::string fan_name = fan.path().filename().string();
    if (!fan.is_directory() || fan_name == "tmp") continue;
    for (const auto& e : fs::directory_iterator(fan.path())) {
      CAPTURE(e.path().string());
      const std::vector<std::byte> f = ringfeed::test::read_file(e.path());
      REQUIRE(f.size() >= 20);
      REQUIRE(std::memcmp(f.data(), "RFCACHE1", 8) == 0);
      const std::uint64_t key_size = load_le(f.data() + 8, 4);
      REQUIRE(f.size() >= 20 + key_size);
      const std::string key(reinterpret_cast<const char*>(f.data() + 12), key_size);
      const std::uint64_t payload = load_le(f.data() + 12 + key_size, 8);
      REQUIRE(f.size() == 20 + key_size + payload);  // not torn
      // The key: the file's URL, then "|" and its version (nfs://: the
      // size and mtime of its listing).
      const std::size_t bar = key.find('|');
      REQUIRE(bar != std::string::npos);
      const std::string file = key.substr(0, bar);
      REQUIRE(file.rfind(imgs_url + "/", 0) == 0);
      const auto source = ringfeed::test::read_file(server().export_dir() / "imgs" / file.substr(imgs_url.size() + 1));
      REQUIRE(std::vector<std::byte>(f.begin() + static_cast<std::ptrdiff_t>(20 + key_size), f.end()) == source);
      ++checked;
    }
  }
  return checked;
}

std::size_t temporaries(const fs::path& dir) {
  if (!fs::exists(dir / "tmp")) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir / "tmp"), fs::directory_iterator()));
}

}  // namespace

static ringfeed::test::skip_if_unavailable skip{[]() -> std::string {
  if (ringfeed_cli().empty()) return "RINGFEED_CLI is not set: the ringfeed CLI was not built";
  return server().start();
}};

TEST_CASE("a cache killed mid-fill holds only complete entries; the next open removes temporaries",
          "[crash][cache][nfs]") {
  ringfeed::test::watchdog dog("cache crash consistency", std::chrono::seconds(540));
  REQUIRE(server().restart().empty());
  ringfeed::test::temp_dir tmp;
  const fs::path dir = tmp.path() / "cache";
  // A cache of 300 kB for 14 photos (about 700 kB): every epoch evicts and
  // stores again, so a kill lands in a write at any time, not only in the first epoch.
  const std::vector<std::string> bench = {ringfeed_cli(), "bench", imgs_url, "--pipeline", "val", "--size", "32",
                                          "--batch", "4", "--device", "-1", "--threads", "2",
                                          "--epochs", "30", "--cache-dir", dir.string(), "--cache-gb", "0.0003"};
  const auto t0 = std::chrono::steady_clock::now();
  {
    child_process full(bench);
    const int status = full.wait();
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  const auto full_run = std::chrono::steady_clock::now() - t0;
  REQUIRE(check_entries(dir) > 0);

  std::mt19937_64 rng(20261124);  // fixed: the same kill points every run
  // Within the first 60% of the first run's time: later runs list the
  // export from a warm server and finish sooner.
  std::uniform_int_distribution<long long> delay_us(
      0, std::chrono::duration_cast<std::chrono::microseconds>(full_run).count() * 6 / 10);
  const int rounds = 60;
  int killed = 0;
  std::size_t entries = 0, leftovers = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    {
      child_process c(bench);
      // The kill point, not a synchronization: anywhere in a full run's time.
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
      c.signal(SIGKILL);
      const int status = c.wait();
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
    }
    entries += check_entries(dir);
    leftovers += temporaries(dir);
    {
      const ringfeed::io::cache c(cache_at(dir));  // removes what the killed writer left in tmp/
      CHECK(temporaries(dir) == 0);
    }
  }
  WARN(killed << " of " << rounds << " runs killed mid-way; " << entries << " entries checked, " << leftovers
              << " temporaries left by killed runs");
  CHECK(killed >= rounds * 3 / 4);
  CHECK(entries > 0);

  // A later run reads only correct entries: the same epoch as without a cache.
  auto with_cache = loader_options_for(imgs_url);
  with_cache.cache_dir = dir.string();
  epoch_bytes plain_epoch, cached_epoch;
  {
    ringfeed::loader plain(loader_options_for(imgs_url));
    plain_epoch = drain(plain, 0);
  }
  {
    ringfeed::loader cached(with_cache);
    cached_epoch = drain(cached, 0);
    CHECK(cached.stats().cache_hits > 0);
  }
  CHECK(cached_epoch == plain_epoch);
}

TEST_CASE("a cache on a full file system never fails an epoch; one line says it is full", "[cache][nfs][enospc]") {
  ringfeed::test::watchdog dog("cache ENOSPC", std::chrono::seconds(120));
  REQUIRE(server().restart().empty());
  ringfeed::test::temp_dir tmp;
  const fs::path mnt = tmp.path() / "small";
  fs::create_directories(mnt);
  if (::mount("ringfeed-test", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    WARN("skipped: cannot mount a 64 KiB tmpfs at " << mnt << " (" << std::strerror(errno)
                                                      << "); the test needs root or CAP_SYS_ADMIN");
    return;
  }
  struct unmount_at_exit {
    fs::path at;
    ~unmount_at_exit() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};

  epoch_bytes plain0, plain1;
  {
    ringfeed::loader plain(loader_options_for(imgs_url));
    plain0 = drain(plain, 0);
    plain1 = drain(plain, 1);
  }
  auto o = loader_options_for(imgs_url);
  o.cache_dir = (mnt / "cache").string();
  std::mutex m;
  std::vector<std::string> lines;
  o.log = [&](std::string_view line) {
    std::lock_guard lock(m);
    lines.emplace_back(line);
  };
  {
    ringfeed::loader l(o);
    CHECK(drain(l, 0) == plain0);
    CHECK(drain(l, 1) == plain1);
    CHECK(l.stats().skipped.empty());
  }
  std::lock_guard lock(m);
  std::size_t full = 0;
  for (const std::string& line : lines) {
    INFO(line);
    if (line.find("cache") != std::string::npos && line.find("full") != std::string::npos) ++full;
  }
  CHECK(full == 1);
}
