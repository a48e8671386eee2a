// The loader over nfs:// against the test NFS server (nfs-ganesha on
// 127.0.0.1, tests/support/nfs_server.hpp): an ImageFolder read as from the
// directory itself, `ringfeed pack nfs://…`, errors naming the URL,
// --cache-dir, and a server killed mid-epoch. Skipped as a whole, with the
// reason, where the server cannot run. (The client itself: nfs_tests.)
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/io/cache.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "nfs_loader.hpp"
#include "files.hpp"
#include "nfs_server.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace ringfeed::test::nfs;
using ringfeed::sync_wait;
using ringfeed::thread_pool;
using ringfeed::io::read_buffer;
using steady = std::chrono::steady_clock;

static ringfeed::test::skip_if_unavailable skip_without_server{[] { return server().start(); }};

TEST_CASE("a loader reads an ImageFolder from nfs:// exactly as from the directory itself", "[nfs][loader]") {
  ringfeed::test::watchdog dog("nfs loader", 120s);
  require_server();
  ringfeed::loader local(loader_options_for((server().export_dir() / "imgs").string()));
  ringfeed::loader remote(loader_options_for(imgs_url));

  // The same index: classes, order (os.walk's: "a-b" before "a/x"), labels; sizes from the listing.
  const auto& lds = local.dataset();
  const auto& rds = remote.dataset();
  REQUIRE(rds.size() == 14);
  REQUIRE(rds.size() == lds.size());
  CHECK(rds.classes() == lds.classes());
  CHECK(rds.root() == imgs_url);
  for (std::size_t i = 0; i < rds.size(); ++i) {
    CAPTURE(i, lds.name(i));
    CHECK(rds.name(i) == lds.name(i));
    CHECK(rds.label(i) == lds.label(i));
    CHECK(rds.path(i) == imgs_url + "/" + std::string(lds.name(i)));
    CHECK(rds.location(i).size == fs::file_size(server().export_dir() / "imgs" / std::string(lds.name(i))));
  }
  CHECK(rds.name(5) == "class0/a-b/grace_hopper.jpg");
  CHECK(rds.name(6) == "class0/a/x/brick_gray.jpg");

  // Two epochs of random crops and flips: the same pixels byte for byte.
  for (std::uint64_t e = 0; e < 2; ++e) {
    CAPTURE(e);
    const epoch_bytes a = drain(local, e);
    const epoch_bytes b = drain(remote, e);
    CHECK(a.indices.size() == 14);
    CHECK(a == b);
  }
  const auto st = remote.stats();
  CHECK(st.backend == "libnfs");
  CHECK(st.read.items >= 28);
  CHECK_FALSE(st.cache);
}

TEST_CASE("ringfeed pack nfs://…: the shards hold the export's files byte for byte, with their labels",
          "[nfs][pack]") {
  ringfeed::test::watchdog dog("nfs pack", 120s);
  require_server();
  const char* cli = std::getenv("RINGFEED_CLI");
  if (cli == nullptr) {
    WARN("RINGFEED_CLI is not set (the CLI is not built in this configuration): pack nfs:// not run");
    return;
  }
  ringfeed::test::temp_dir out;
  const std::string command =
      std::string(cli) + " pack '" + imgs_url + "' '" + (out.path() / "shards").string() + "' --no-shuffle --io pread 2>&1";
  std::string printed;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[512];
  while (std::fgets(line, sizeof line, p) != nullptr) printed += line;
  const int status = ::pclose(p);
  INFO(printed);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // --no-shuffle: sample k of the shards is sample k of the ImageFolder.
  const auto folder = ringfeed::data::open_dataset((server().export_dir() / "imgs").string());
  thread_pool pool(2);
  const auto packed_source = ringfeed::io::source::open((out.path() / "shards").string(), pool);
  const auto packed = ringfeed::data::open_dataset(*packed_source);
  REQUIRE(packed.size() == folder.size());
  REQUIRE(packed.size() == 14);
  read_buffer buffer;
  std::string path;
  for (std::size_t k = 0; k < packed.size(); ++k) {
    CAPTURE(k, folder.name(k));
    CHECK(packed.label(k) == folder.label(k));
    const auto got = sync_wait(packed_source->read(packed.ref(k, path), buffer));
    std::ifstream f(server().export_dir() / "imgs" / std::string(folder.name(k)), std::ios::binary);
    const std::vector<char> want{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), want.size()) == 0);
  }
}

TEST_CASE("nfs:// sources: what cannot be read is an error naming its URL", "[nfs][loader]") {
  ringfeed::test::watchdog dog("nfs loader errors", 120s);
  require_server();
  const std::string missing = std::string("nfs://") + host + export_name + "/no-such-dir";
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for(missing)); }), Catch::Contains(missing));
  const std::string no_classes = std::string("nfs://") + host + export_name + "/sub/deeper";
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for(no_classes)); }),
             Catch::Contains(no_classes) && Catch::Contains("class folder"));
  CHECK_THAT(error_of([&] { ringfeed::loader l(loader_options_for("nfs://" + std::string(host))); }),
             Catch::Contains("nfs://127.0.0.1"));
  auto o = loader_options_for(imgs_url);
  o.stream_shards = true;
  CHECK_THAT(error_of([&] { ringfeed::loader l(o); }), Catch::Contains("stream_shards"));

  // A file that goes away after listing: the read error names it; with
  // on_error = skip the sample is left out and the rest arrive.
  const std::string gone_url = std::string("nfs://") + host + export_name + "/gone";
  const fs::path doomed = server().export_dir() / "gone" / "class0" / "doomed.jpg";
  REQUIRE(fs::exists(doomed));
  o = loader_options_for(gone_url);
  o.on_error = ringfeed::error_policy::skip;
  o.batch_size = 1;
  o.prefetch_batches = 1;
  o.memory_budget = std::size_t{1} << 20;
  ringfeed::loader l(o);
  REQUIRE(l.dataset().size() == 3);
  fs::remove(doomed);
  std::size_t delivered = 0;
  for (ringfeed::batch& b : l.epoch(1)) delivered += b.size();
  CHECK(delivered == 2);
  const auto st = l.stats();
  REQUIRE(st.skipped.size() == 1);
  CHECK(st.skipped[0].path == gone_url + "/class0/doomed.jpg");
  CHECK_THAT(st.skipped[0].reason, Catch::Contains(gone_url + "/class0/doomed.jpg"));
}

TEST_CASE("--cache-dir: the first epoch fills the cache, later epochs and loaders read it without the server",
          "[nfs][loader][cache]") {
  ringfeed::test::watchdog dog("nfs cache", 180s);
  require_server();
  ringfeed::test::temp_dir tmp;
  const fs::path dir = tmp.path() / "cache";
  auto o = loader_options_for(imgs_url);
  o.cache_dir = dir.string();
  // A loader prefetches past the end of an epoch, so counters are checked
  // per loader (a new one per epoch), with bounds where prefetch can add.
  const auto at_epoch = [&](std::uint64_t e) {
    auto r = o;
    r.resume = ringfeed::loader_state{o.sampler.seed, e, 0, 0, 1};
    return r;
  };

  epoch_bytes uncached0, uncached1;
  {
    ringfeed::loader plain(loader_options_for(imgs_url));
    uncached0 = drain(plain, 0);
    uncached1 = drain(plain, 1);
  }
  {
    ringfeed::loader l(o);
    CHECK(drain(l, 0) == uncached0);
    const auto st = l.stats();
    REQUIRE(st.cache);
    CHECK(st.cache_misses >= 14);  // every sample of epoch 0, plus any of epoch 1 read before it was stored
    CHECK(st.cache_dropped == 0);
  }  // the destructor writes what is still queued
  {
    ringfeed::io::cache c(cache_at(dir));
    CHECK(c.stats().entries == 14);
    CHECK(c.stats().bytes > 14 * 10'000);
  }
  // The server stops answering (SIGSTOP) once the tree is listed: the next
  // epoch must come from local disk alone.
  {
    ringfeed::loader l(at_epoch(1));
    REQUIRE(server().freeze());
    struct thaw_at_exit {
      ~thaw_at_exit() { server().thaw(); }
    } thaw;
    CHECK(drain(l, 1) == uncached1);
    const auto st = l.stats();
    CHECK(st.cache_misses == 0);
    CHECK(st.cache_hits >= 14);
    CHECK(st.cache_hit_rate() == 1.0);
    CHECK(st.read.items >= 14);  // cache hits count as reads
  }
  // An entry of the wrong size (the file changed on the server, or a torn
  // write) is not served: that sample is read from the server again.
  // Entries are keyed by the file's version: the size and mtime its listing gave.
  const std::string astronaut = imgs_url + "/class0/astronaut.jpg";
  const std::string key = [&] {
    thread_pool pool(1);
    const auto src = ringfeed::io::source::open(imgs_url, pool);
    (void)src->list("class0");
    src->seal_versions();
    const std::string version = src->version(astronaut);
    CHECK_THAT(version, Catch::Contains("mtime"));
    return ringfeed::io::sample_cache_key(astronaut, false, 0, version);
  }();
  {
    ringfeed::io::cache c(cache_at(dir));
    const fs::path entry = c.file_of(key);
    REQUIRE(fs::exists(entry));
    fs::resize_file(entry, fs::file_size(entry) - 100);
  }
  {
    ringfeed::loader l(at_epoch(0));
    CHECK(drain(l, 0) == uncached0);
    CHECK(l.stats().cache_misses >= 1);  // more where prefetched epochs ask before it is stored again
    CHECK(l.stats().cache_hits >= 13);
  }
  {
    ringfeed::io::cache c(cache_at(dir));
    ringfeed::io::read_buffer b;
    CHECK(c.get(key, fs::file_size(server().export_dir() / "imgs" / "class0" / "astronaut.jpg"), b));
  }
  // Local storage: the option is ignored, with one line saying so.
  {
    auto local = loader_options_for((server().export_dir() / "imgs").string());
    local.cache_dir = (tmp.path() / "unused").string();
    std::vector<std::string> lines;
    std::mutex m;
    local.log = [&](std::string_view line) {
      std::lock_guard lock(m);
      lines.emplace_back(line);
    };
    ringfeed::loader l(local);
    CHECK_FALSE(l.stats().cache);
    std::lock_guard lock(m);
    CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& x) {
            return x.find("cache_dir") != std::string::npos && x.find("local storage") != std::string::npos;
          }) == 1);
  }
}

namespace {

// `jpeg` with its first quantization table's first value changed: the same
// number of bytes, a valid file, other pixels.
std::vector<std::byte> same_size_other_pixels(std::vector<std::byte> jpeg) {
  for (std::size_t i = 0; i + 5 < jpeg.size(); ++i)
    if (jpeg[i] == std::byte{0xFF} && jpeg[i + 1] == std::byte{0xDB}) {  // DQT: length (2), precision and id (1)
      const int v = std::to_integer<int>(jpeg[i + 5]);
      jpeg[i + 5] = std::byte(static_cast<unsigned char>(v < 255 ? v + 1 : v - 1));
      return jpeg;
    }
  throw std::runtime_error("no quantization table in the JPEG");
}

}  // namespace

TEST_CASE("nfs:// files replaced in place (same size, new mtime) are read anew, never served from a cache",
          "[nfs][loader][cache]") {
  ringfeed::test::watchdog dog("nfs cache versions", 240s);
  require_server();
  ringfeed::test::temp_dir tmp;
  const fs::path victim = server().export_dir() / "imgs" / "class0" / "astronaut.jpg";
  const std::vector<std::byte> original = ringfeed::test::read_file(victim);
  const fs::file_time_type original_mtime = fs::last_write_time(victim);
  struct restore_at_exit {
    const fs::path& victim;
    const std::vector<std::byte>& original;
    fs::file_time_type mtime;
    ~restore_at_exit() {
      ringfeed::test::write_file(victim, original);
      fs::last_write_time(victim, mtime);
      (void)server().relaunch();  // attributes ganesha holds of the replacement
    }
  } restore{victim, original, original_mtime};

  // Exact mode: what the pixel cache equals (it keeps the full decode).
  const auto exact = [] {
    auto o = loader_options_for(imgs_url);
    o.pipeline = ringfeed::image::pipeline::train(32, ringfeed::image::pipeline_mode::exact);
    return o;
  };
  const auto cached = [&](ringfeed::cache_kind kind, const char* name) {
    auto o = exact();
    o.cache = kind;
    o.cache_dir = (tmp.path() / name).string();
    o.end = ringfeed::loader_end{0};  // nothing of epoch 1 read ahead: exact counts
    return o;
  };
  const auto pixels = cached(ringfeed::cache_kind::pixels, "pixels");
  const auto bytes = cached(ringfeed::cache_kind::bytes, "bytes");
  const auto epoch0 = [](const ringfeed::loader_options& o) {
    ringfeed::loader l(o);
    return drain(l, 0);
  };
  const epoch_bytes before = epoch0(exact());
  CHECK(epoch0(pixels) == before);  // fill both caches
  CHECK(epoch0(bytes) == before);
  {
    // The listing told every file's version: no line saying entries are
    // keyed by name and size.
    auto logged = pixels;
    std::vector<std::string> lines;
    std::mutex m;
    logged.log = [&](std::string_view line) {
      std::lock_guard lock(m);
      lines.emplace_back(line);
    };
    ringfeed::loader l(logged);
    CHECK(drain(l, 0) == before);
    CHECK(l.stats().pixels.hits == 14);
    std::lock_guard lock(m);
    for (const std::string& line : lines) CHECK_THAT(line, !Catch::Contains("no version"));
  }

  // Another JPEG of the same size under the same name, with a new mtime; a
  // fresh server process, as ganesha keeps attributes for a while.
  ringfeed::test::write_file(victim, same_size_other_pixels(original));
  fs::last_write_time(victim, original_mtime + std::chrono::seconds(100));
  REQUIRE(server().relaunch().empty());
  const epoch_bytes want = epoch0(exact());
  REQUIRE(want != before);
  {
    ringfeed::loader l(pixels);
    CHECK(drain(l, 0) == want);
    CHECK(l.stats().pixels.hits == 13);
    CHECK(l.stats().pixels.misses == 1);
  }
  {
    ringfeed::loader l(bytes);
    CHECK(drain(l, 0) == want);
    CHECK(l.stats().cache_hits == 13);
    CHECK(l.stats().cache_misses == 1);
  }
}

TEST_CASE("a server killed mid-epoch: the loader fails naming an nfs:// file within the deadline, no hang",
          "[nfs][loader][kill]") {
  ringfeed::test::watchdog dog("nfs loader kill", 120s);
  require_server();
  auto o = loader_options_for(imgs_url);
  o.io_deadline = 3000ms;
  o.io_retries = 1;
  o.batch_size = 2;
  o.prefetch_batches = 1;  // the consumer's batch + one being filled: most reads happen after the kill
  auto l = std::make_unique<ringfeed::loader>(o);
  {
    auto first = sync_wait(l->next());
    REQUIRE(first);
    server().kill();
  }
  const auto t0 = steady::now();
  std::string error;
  std::size_t batches = 0;
  try {
    while (sync_wait(l->next())) ++batches;
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double waited = seconds_since(t0);
  CAPTURE(batches, waited);
  CHECK_THAT(error, Catch::Contains(imgs_url + "/class"));
  CHECK(batches < 6);  // the epoch has 7; at most the one prefetched arrives
  CHECK(waited < 3.0 * 2 + 2.0);  // the deadline bounds each attempt
  const auto t1 = steady::now();
  l.reset();  // the destructor does not wait for the dead server
  CHECK(seconds_since(t1) < 3.0);
  REQUIRE(server().restart().empty());
}
