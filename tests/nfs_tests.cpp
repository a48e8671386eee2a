// nfs_client against a real NFS server: nfs-ganesha (VFS FSAL) on 127.0.0.1
// (tests/support/nfs_server.hpp), started here as a child process exporting
// a fresh directory of random files, and stopped at exit. Where it cannot run
// (not root, no ganesha or rpcbind, NFS ports taken, the server fails to come
// up) the whole executable is skipped with the reason and ganesha's log tail.
// (The loader, `ringfeed pack` and the cache over nfs://: nfs_loader_tests.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <ringfeed/io/nfs.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "delay_link.hpp"
#include "nfs_loader.hpp"
#include "nfs_server.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using ringfeed::sync_wait;
using ringfeed::thread_pool;
using ringfeed::io::nfs_client;
using ringfeed::io::nfs_options;
using ringfeed::io::nfs_url;
using ringfeed::io::read_buffer;
using steady = std::chrono::steady_clock;

namespace {

using namespace ringfeed::test::nfs;

/// Reads every file once with `depth` in flight; fails the test on any
/// error or wrong byte; returns the seconds it took.
double read_all_checked(nfs_client& client, const std::vector<test_file>& files, std::size_t depth) {
  const std::size_t count = files.size();
  std::vector<outcome> outcomes(count);
  std::atomic<std::size_t> finished{0};
  const auto t0 = steady::now();
  sync_wait(read_many(client, files, count, depth, outcomes, finished));
  const double s = seconds_since(t0);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (outcomes[i].ok) continue;
    if (++bad <= 5) UNSCOPED_INFO(files[i % files.size()].name << ": " << outcomes[i].what);
  }
  REQUIRE(bad == 0);
  return s;
}

}  // namespace

static ringfeed::test::skip_if_unavailable skip_without_server{[] { return server().start(); }};

// --- cases ---------------------------------------------------------------------------------------

TEST_CASE("nfs_url splits server, port, export and path", "[nfs][url]") {
  const nfs_url a = nfs_url::parse("nfs://fileserver/data/train/n01/x.jpg");
  CHECK(a.server == "fileserver");
  CHECK(a.port == 0);
  CHECK(a.export_path == "/data");
  CHECK(a.path == "/train/n01/x.jpg");
  CHECK(a.str() == "nfs://fileserver/data/train/n01/x.jpg");

  const nfs_url b = nfs_url::parse("nfs://10.0.0.5:2049/srv/exports//train/a.jpg");
  CHECK(b.server == "10.0.0.5");
  CHECK(b.port == 2049);
  CHECK(b.export_path == "/srv/exports");
  CHECK(b.path == "/train/a.jpg");
  CHECK(b.str() == "nfs://10.0.0.5:2049/srv/exports//train/a.jpg");

  const nfs_url c = nfs_url::parse("NFS://[fd00::1]:111/export");
  CHECK(c.server == "fd00::1");
  CHECK(c.port == 111);
  CHECK(c.export_path == "/export");
  CHECK(c.path.empty());
  CHECK(nfs_url::parse("nfs://s/a/b//").export_path == "/a/b");
  CHECK(nfs_url::parse(nfs_url::parse("nfs://s/a/b//").str()).export_path == "/a/b");
  // A path holding `//` keeps the export's boundary when printed (found by fuzz_nfs_url).
  const nfs_url d = nfs_url::parse("nfs://s/e//a//b.jpg");
  CHECK(d.export_path == "/e");
  CHECK(d.path == "/a//b.jpg");
  CHECK(d.str() == "nfs://s/e//a//b.jpg");
  CHECK(nfs_url::parse(d.str()).export_path == "/e");

  for (const char* bad : {"http://s/e/f", "nfs://", "nfs:///export/f", "nfs://s", "nfs://s/", "nfs://s//f",
                          "nfs://s:0/e", "nfs://s:70000/e", "nfs://s:x/e", "nfs://s/e?uid=0", "nfs://[::1/e",
                          "nfs://[[f1]:9/x", "nfs://a]b/e"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(nfs_url::parse(bad), std::invalid_argument);
    CHECK_THROWS_WITH(nfs_url::parse(bad), Catch::Contains(bad));
  }
  CHECK_THROWS_WITH(nfs_url::parse("nfs://s:70000/e"), Catch::Contains("port"));
}

TEST_CASE("every file arrives byte for byte; ranges; listings", "[nfs]") {
  ringfeed::test::watchdog dog("nfs byte for byte", 120s);
  require_server();
  thread_pool pool(4);
  nfs_client client(host, export_name, pool);
  CHECK(client.url() == std::string("nfs://") + host + export_name);
  CHECK(client.url_of("sub/a.bin") == url_of("sub/a.bin"));
  CHECK(client.url_of("/sub/a.bin") == url_of("sub/a.bin"));

  // Every file (200 of 20-200 KiB, an empty one, one over the 1 MiB READ
  // size, some in subdirectories), 16 in flight.
  const auto& files = server().files();
  read_all_checked(client, files, 16);
  // Leading '/' or not: the same file.
  {
    read_buffer buffer;
    const test_file& c = files.back();
    REQUIRE(c.name == "sub/deeper/c.bin");
    CHECK(sync_wait(client.read_file("/" + c.name, buffer)) == c.bytes.size());
    CHECK(std::memcmp(buffer.data(), c.bytes.data(), c.bytes.size()) == 0);
  }

  SECTION("read_range at an offset, across and at the end of the file") {
    read_buffer buffer;
    for (std::size_t i = 0; i < server().top_files().size(); i += 10) {
      const test_file& f = server().top_files()[i];
      const std::size_t offset = f.bytes.size() / 3 + i, size = 5000 + i * 7;
      CAPTURE(f.name, offset, size);
      REQUIRE(sync_wait(client.read_range(f.name, offset, size, buffer)) == size);
      REQUIRE(buffer.size() == size);
      CHECK(std::memcmp(buffer.data(), f.bytes.data() + offset, size) == 0);
    }
    const test_file& f = server().top_files().front();
    CHECK(sync_wait(client.read_range(f.name, f.bytes.size() - 100, 1000, buffer)) == 100);
    CHECK(std::memcmp(buffer.data(), f.bytes.data() + f.bytes.size() - 100, 100) == 0);
    CHECK(sync_wait(client.read_range(f.name, f.bytes.size(), 10, buffer)) == 0);
    CHECK(buffer.size() == 0);
    const test_file& big = files[files.size() - 2];
    REQUIRE(big.name == "sub/b.bin");
    CHECK(sync_wait(client.read_range(big.name, 1'000'000, 400'000, buffer)) == 400'000);
    CHECK(std::memcmp(buffer.data(), big.bytes.data() + 1'000'000, 400'000) == 0);
  }

  SECTION("list() gives names, kinds and sizes, sorted") {
    std::vector<std::string> names;
    for (const auto& f : server().top_files()) names.push_back(f.name);
    names.push_back("empty.bin");
    names.push_back("gone");
    names.push_back("imgs");
    names.push_back("sub");
    std::sort(names.begin(), names.end());
    for (const std::string root : {"", "/"}) {
      const auto entries = client.list(root);
      REQUIRE(entries.size() == names.size());
      for (std::size_t i = 0; i < entries.size(); ++i) {
        CAPTURE(entries[i].name);
        REQUIRE(entries[i].name == names[i]);
        CHECK(entries[i].is_directory == (names[i] == "sub" || names[i] == "imgs" || names[i] == "gone"));
        if (!entries[i].is_directory) {
          const auto it = std::find_if(files.begin(), files.end(), [&](const test_file& f) { return f.name == names[i]; });
          REQUIRE(it != files.end());
          CHECK(entries[i].size == it->bytes.size());
        }
      }
    }
    const auto sub = client.list("sub");
    REQUIRE(sub.size() == 3);
    CHECK(sub[0].name == "a.bin");
    CHECK(sub[0].size == 4096);
    CHECK_FALSE(sub[0].is_directory);
    CHECK(sub[1].name == "b.bin");
    CHECK(sub[1].size == 1'500'000);
    CHECK(sub[2].name == "deeper");
    CHECK(sub[2].is_directory);
    const auto deeper = client.list("/sub/deeper/");
    REQUIRE(deeper.size() == 1);
    CHECK(deeper[0].name == "c.bin");
    CHECK(deeper[0].size == 777);
  }

  SECTION("fixed ports instead of the portmapper") {
    nfs_options fixed;
    fixed.nfs_port = nfs_port;
    fixed.mount_port = mount_port;
    nfs_client direct(host, export_name, pool, fixed);
    CHECK(direct.url() == std::string("nfs://") + host + ":2049" + export_name);
    read_buffer buffer;
    const test_file& f = server().top_files()[7];
    REQUIRE(sync_wait(direct.read_file(f.name, buffer)) == f.bytes.size());
    CHECK(std::memcmp(buffer.data(), f.bytes.data(), f.bytes.size()) == 0);
  }

  const auto st = client.stats();
  CHECK(st.requests >= 3 * files.size());
  CHECK(st.timeouts == 0);
  CHECK(st.retries == 0);
  CHECK(st.max_in_flight >= 2);
}

TEST_CASE("a missing file or export is an error naming its nfs:// URL", "[nfs]") {
  ringfeed::test::watchdog dog("nfs missing file", 60s);
  require_server();
  thread_pool pool(2);
  nfs_client client(host, export_name, pool);
  read_buffer buffer;

  for (const std::string name : {"no/such.bin", "img_999.bin"}) {
    CAPTURE(name);
    try {
      (void)sync_wait(client.read_file(name, buffer));
      FAIL("read_file of a missing file succeeded");
    } catch (const std::system_error& e) {
      CHECK(e.code() == std::errc::no_such_file_or_directory);
      CHECK_THAT(e.what(), Catch::Contains(url_of(name)) && Catch::Contains("No such file"));
    }
  }
  CHECK_THROWS_WITH(sync_wait(client.read_range("gone.tar", 512, 100, buffer)),
                    Catch::Contains(url_of("gone.tar")) && Catch::Contains("No such file"));
  CHECK_THROWS_WITH(client.list("no-such-dir"),
                    Catch::Contains(url_of("no-such-dir")) && Catch::Contains("No such file"));
  // A file where a directory is expected.
  CHECK_THROWS_WITH(client.list("img_000.bin"), Catch::Contains(url_of("img_000.bin")));
  // The client is fine afterwards.
  const test_file& f = server().top_files()[3];
  CHECK(sync_wait(client.read_file(f.name, buffer)) == f.bytes.size());

  // Mounting what is not exported, or where nothing listens: bounded, named.
  nfs_options quick;
  quick.retry.deadline = 2000ms;
  const auto t0 = steady::now();
  CHECK_THAT(error_of([&] { nfs_client bad(host, "/not-exported", pool, quick); }),
             Catch::Contains("nfs://127.0.0.1/not-exported") && Catch::Contains("mount"));
  quick.nfs_port = 9;  // discard: nothing listens
  quick.mount_port = 9;
  CHECK_THAT(error_of([&] { nfs_client bad(host, export_name, pool, quick); }),
             Catch::Contains("nfs://127.0.0.1:9/ringfeed") && Catch::Contains("mount"));
  CHECK(seconds_since(t0) < 2 * 2.0 + 1.0);
}
TEST_CASE("over a network's round trip, 32 reads share the one connection at once; 1 reads one at a time",
          "[nfs][depth]") {
  ringfeed::test::watchdog dog("nfs depth over a link", 120s);
  require_server();
  // NFS traffic goes through a relay that delays it 0.25 ms each way (a
  // LAN's round trip plus a little); MOUNT goes straight to the server. A
  // call then stays outstanding long enough for the next ones to join it
  // whatever else the machine is doing, so how many are in flight together
  // depends on the depth alone. How much faster depth 32 reads than depth 1
  // is a measurement, not a behaviour: perf/nfs_depth_bench reports it.
  ringfeed::test::delay_link link(nfs_port, 250us);
  thread_pool pool(1);
  nfs_options o;
  o.nfs_port = link.port();
  o.mount_port = mount_port;
  const auto& files = server().top_files();
  std::size_t deep = 0, shallow = 0;
  {
    nfs_client client(host, export_name, pool, o);
    read_all_checked(client, files, 32);
    deep = client.stats().max_in_flight;
  }
  {
    nfs_client client(host, export_name, pool, o);
    read_all_checked(client, files, 1);
    shallow = client.stats().max_in_flight;
  }
  INFO("most calls in flight: depth 32 " << deep << ", depth 1 " << shallow);
  CHECK(deep >= 16);  // they really were in flight together
  CHECK(shallow < 16);
}

TEST_CASE("a frozen server: reads time out at the deadline; the destructor cancels the rest", "[nfs][deadline]") {
  ringfeed::test::watchdog dog("nfs frozen server", 120s);
  require_server();
  thread_pool pool(2);
  const auto& files = server().top_files();
  nfs_options short_deadline;
  short_deadline.retry.deadline = 1000ms;
  nfs_client client(host, export_name, pool, short_deadline);
  nfs_options long_deadline;
  long_deadline.retry.deadline = 60s;
  std::optional<nfs_client> patient(std::in_place, host, export_name, pool, long_deadline);

  REQUIRE(server().freeze());
  struct thaw_at_exit {
    ~thaw_at_exit() { server().thaw(); }
  } thaw;

  // 40 reads on the frozen server: each fails with ETIMEDOUT near its deadline.
  {
    std::vector<outcome> outcomes(40);
    std::atomic<std::size_t> finished{0};
    const auto t0 = steady::now();
    sync_wait(read_many(client, files, outcomes.size(), outcomes.size(), outcomes, finished));
    const double took = seconds_since(t0);
    CHECK(took >= 0.9);
    CHECK(took < 1.0 + 1.5);
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      CAPTURE(i, outcomes[i].what);
      CHECK_FALSE(outcomes[i].ok);
      CHECK(outcomes[i].error == ETIMEDOUT);
      CHECK_THAT(outcomes[i].what, Catch::Contains(url_of(files[i].name)) && Catch::Contains("deadline"));
    }
    CHECK(client.stats().timeouts >= outcomes.size());
  }

  // 20 reads with a 60 s deadline, then the client goes away: they finish at
  // once with ECANCELED, and the destructor does not wait for the server.
  {
    std::vector<outcome> outcomes(20);
    std::atomic<std::size_t> finished{0};
    nfs_client& doomed = *patient;
    std::thread waiter([&] { sync_wait(read_many(doomed, files, outcomes.size(), outcomes.size(), outcomes, finished)); });
    // Wait until the mount and all 20 opens have reached the I/O thread.
    while (patient->stats().requests < 1 + outcomes.size()) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(100ms);
    CHECK(finished.load() == 0);
    const auto t0 = steady::now();
    patient.reset();
    const double destroy = seconds_since(t0);
    waiter.join();
    CHECK(destroy < 1.0);
    CHECK(seconds_since(t0) < 1.5);
    for (const auto& o : outcomes) {
      CAPTURE(o.what);
      CHECK(o.error == ECANCELED);
      CHECK_THAT(o.what, Catch::Contains("nfs://127.0.0.1/ringfeed/img_"));
    }
  }

  // Thawed, the server answers the replies nobody waits for any more; the
  // client drops them and reads correctly again.
  server().thaw();
  std::this_thread::sleep_for(300ms);
  read_all_checked(client, std::vector<test_file>(files.begin(), files.begin() + 50), 8);
}

TEST_CASE("a killed server fails every outstanding and later read, naming the file, within the deadline",
          "[nfs][deadline]") {
  ringfeed::test::watchdog dog("nfs killed server", 120s);
  require_server();
  thread_pool pool(2);
  const auto& files = server().top_files();
  nfs_options options;
  options.retry.deadline = 2000ms;
  constexpr double margin = 1.0;
  const double deadline_s = 2.0;
  std::optional<nfs_client> client(std::in_place, host, export_name, pool, options);

  // 1000 reads, 32 in flight; the server dies after the first 100.
  std::vector<outcome> outcomes(1000);
  std::atomic<std::size_t> finished{0};
  steady::time_point killed_at;
  {
    auto work = read_many(*client, files, outcomes.size(), 32, outcomes, finished);
    std::thread killer([&] {
      while (finished.load(std::memory_order_acquire) < 100) std::this_thread::sleep_for(1ms);
      server().kill();  // SIGKILL and reap: dead from here on
      killed_at = steady::now();
    });
    sync_wait(std::move(work));
    killer.join();
  }
  // Each read, outstanding at the kill or started after it, ends within the
  // deadline (and a margin) of the later of the two.
  std::size_t ok = 0, failed = 0, started_after = 0;
  double slowest = 0, drained = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const outcome& o = outcomes[i];
    CAPTURE(i, o.what);
    const double took = std::chrono::duration<double>(o.end - std::max(o.start, killed_at)).count();
    slowest = std::max(slowest, took);
    drained = std::max(drained, std::chrono::duration<double>(o.end - killed_at).count());
    CHECK(took < deadline_s + margin);
    if (o.start > killed_at) {
      ++started_after;
      CHECK_FALSE(o.ok);  // nothing can succeed once the server is gone
    }
    if (o.ok) {
      ++ok;
      continue;
    }
    ++failed;
    CHECK(o.error > 0);  // a std::system_error with an errno
    CHECK_THAT(o.what, Catch::Contains(url_of(files[i % files.size()].name)));
  }
  std::printf("nfs killed server: %zu reads succeeded, %zu failed (%zu started after the kill); slowest read "
              "ended %.3f s after the kill or its start, all done %.2f s after the kill; retries %llu, timeouts %llu\n",
              ok, failed, started_after, slowest, drained, static_cast<unsigned long long>(client->stats().retries),
              static_cast<unsigned long long>(client->stats().timeouts));
  std::fflush(stdout);
  CHECK(ok >= 100);
  CHECK(failed > 0);
  CHECK(started_after > 0);

  // Later reads and listings fail too, as fast.
  read_buffer buffer;
  auto t0 = steady::now();
  CHECK_THROWS_WITH(sync_wait(client->read_file(files[5].name, buffer)), Catch::Contains(url_of(files[5].name)));
  CHECK(seconds_since(t0) < deadline_s + margin);
  t0 = steady::now();
  CHECK_THROWS_WITH(client->list("sub"), Catch::Contains(url_of("sub")));
  CHECK(seconds_since(t0) < deadline_s + margin);

  t0 = steady::now();
  client.reset();
  CHECK(seconds_since(t0) < 1.0);
}
