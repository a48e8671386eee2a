// io::cache on a real directory: exact round trips, size mismatches and
// damaged files as misses that drop the entry, LRU eviction under the byte
// limit, what a crash or a restart leaves behind, store failures that never
// throw, and threads putting and getting overlapping keys.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <ringfeed/io/cache.hpp>

#include "files.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::io::cache;
using ringfeed::io::cache_options;
using ringfeed::io::read_buffer;
using ringfeed::io::unknown_size;

namespace {

using ringfeed::test::random_bytes;
using ringfeed::test::same;

std::string key_of(int i) {
  return "nfs://server/export/train/class" + std::to_string(i % 7) + "/img" + std::to_string(i) + ".jpg";
}

/// Bytes an entry file takes: the payload plus magic, lengths and key.
std::uint64_t file_bytes(const std::string& key, std::size_t payload) { return 20 + key.size() + payload; }

cache_options options_for(const fs::path& dir, std::uint64_t max_bytes = 1ull << 30) {
  cache_options o;
  o.dir = dir;
  o.max_bytes = max_bytes;
  return o;
}

/// Entry files on disk (under the two-hex-digit fan-out directories): count and bytes.
struct on_disk {
  std::size_t files = 0;
  std::uint64_t bytes = 0;
};

on_disk scan_entries(const fs::path& dir) {
  on_disk d;
  for (const auto& fan : fs::directory_iterator(dir)) {
    if (!fan.is_directory() || fan.path().filename().string().size() != 2) continue;
    for (const auto& f : fs::directory_iterator(fan.path())) {
      ++d.files;
      d.bytes += f.file_size();
    }
  }
  return d;
}

std::size_t count_files(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

void set_mtime(const fs::path& p, std::time_t seconds_ago) {
  const timeval now{std::time(nullptr) - seconds_ago, 0};
  const timeval times[2] = {now, now};
  REQUIRE(::utimes(p.c_str(), times) == 0);
}

}  // namespace

TEST_CASE("many keys round-trip with exact bytes, sized or not", "[cache]") {
  ringfeed::test::temp_dir dir;
  cache c(options_for(dir.path() / "made/on/demand"));
  REQUIRE(fs::is_directory(dir.path() / "made/on/demand"));

  std::mt19937 rng(7);
  std::vector<std::vector<std::byte>> payloads;
  std::uint64_t expected_bytes = 0;
  for (int i = 0; i < 300; ++i) {
    const std::size_t n = i == 0 ? 0 : (i == 1 ? 4096 : rng() % 20000);  // empty, one aligned block, and any
    payloads.push_back(random_bytes(n, static_cast<std::uint64_t>(i)));
    c.put(key_of(i), payloads.back());
    expected_bytes += file_bytes(key_of(i), n);
  }
  read_buffer buffer;
  for (int i = 0; i < 300; ++i) {
    INFO("key " << key_of(i));
    REQUIRE(c.get(key_of(i), payloads[i].size(), buffer));
    REQUIRE(same(buffer.bytes(), payloads[i]));
    REQUIRE(reinterpret_cast<std::uintptr_t>(buffer.data()) % read_buffer::alignment == 0);
    REQUIRE(c.get(key_of(i), unknown_size, buffer));
    REQUIRE(same(buffer.bytes(), payloads[i]));
  }
  REQUIRE_FALSE(c.get("nfs://server/export/never-stored.jpg", unknown_size, buffer));
  REQUIRE(buffer.size() == 0);

  const auto s = c.stats();
  REQUIRE(s.stores == 300);
  REQUIRE(s.hits == 600);
  REQUIRE(s.misses == 1);
  REQUIRE(s.entries == 300);
  REQUIRE(s.bytes == expected_bytes);
  REQUIRE(s.evictions == 0);
  REQUIRE(c.hit_rate() == Approx(600.0 / 601.0));
  const on_disk d = scan_entries(c.dir());
  REQUIRE(d.files == 300);
  REQUIRE(d.bytes == expected_bytes);
  REQUIRE(count_files(c.dir() / "tmp") == 0);

  // A put replaces the entry, and the byte count follows.
  const auto replacement = random_bytes(123, 99);
  c.put(key_of(5), replacement);
  REQUIRE(c.get(key_of(5), unknown_size, buffer));
  REQUIRE(same(buffer.bytes(), replacement));
  REQUIRE(c.stats().bytes == expected_bytes - payloads[5].size() + replacement.size());
  REQUIRE(c.stats().entries == 300);
}

TEST_CASE("a size mismatch is a miss and removes the entry", "[cache]") {
  ringfeed::test::temp_dir dir;
  cache c(options_for(dir.path()));
  const std::string key = key_of(1);
  const auto payload = random_bytes(1000, 1);
  c.put(key, payload);
  REQUIRE(fs::exists(c.file_of(key)));

  read_buffer buffer;
  REQUIRE_FALSE(c.get(key, 999, buffer));
  REQUIRE(buffer.size() == 0);
  REQUIRE_FALSE(fs::exists(c.file_of(key)));
  REQUIRE_FALSE(c.get(key, 1000, buffer));  // gone, not just refused once
  const auto s = c.stats();
  REQUIRE(s.invalidated == 1);
  REQUIRE(s.misses == 2);
  REQUIRE(s.hits == 0);
  REQUIRE(s.entries == 0);
  REQUIRE(s.bytes == 0);

  c.put(key, payload);
  REQUIRE_FALSE(c.get(key, 1001, buffer));  // larger than stored, too
  REQUIRE_FALSE(fs::exists(c.file_of(key)));
}

TEST_CASE("eviction keeps the total under max_bytes, least recently used first", "[cache]") {
  ringfeed::test::temp_dir dir;
  const std::size_t payload = 10000;
  const std::uint64_t entry = file_bytes(key_of(0), payload);  // keys 0..9 have the same length
  const std::uint64_t max = 5 * entry + entry / 2;              // room for five
  cache c(options_for(dir.path(), max));
  for (int i = 0; i < 5; ++i) c.put(key_of(i), random_bytes(payload, i));
  REQUIRE(c.stats().evictions == 0);
  REQUIRE(c.stats().bytes == 5 * entry);

  read_buffer buffer;
  REQUIRE(c.get(key_of(0), payload, buffer));  // 0 becomes the most recently used; 1 the least
  c.put(key_of(5), random_bytes(payload, 5));
  REQUIRE(c.stats().evictions == 1);
  REQUIRE(fs::exists(c.file_of(key_of(0))));
  REQUIRE_FALSE(fs::exists(c.file_of(key_of(1))));
  REQUIRE_FALSE(c.get(key_of(1), payload, buffer));
  REQUIRE(c.get(key_of(0), payload, buffer));
  REQUIRE(same(buffer.bytes(), random_bytes(payload, 0)));

  c.put(key_of(6), random_bytes(payload, 6));  // 2 goes (0 was just used again)
  REQUIRE_FALSE(fs::exists(c.file_of(key_of(2))));
  REQUIRE(fs::exists(c.file_of(key_of(0))));

  // However entries come and go, neither the index nor the disk passes the limit.
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(rng() % 40);
    c.put(key, random_bytes(rng() % 30000, static_cast<std::uint64_t>(i)));
    const auto s = c.stats();
    REQUIRE(s.bytes <= max);
    REQUIRE(scan_entries(c.dir()).bytes == s.bytes);
    REQUIRE(scan_entries(c.dir()).files == s.entries);
  }
  REQUIRE(c.stats().evictions > 10);

  // Too large to ever fit: rejected, and nothing is evicted for it.
  const auto before = c.stats();
  c.put("huge", random_bytes(max, 1));
  REQUIRE(c.stats().rejected == 1);
  REQUIRE(c.stats().entries == before.entries);
  REQUIRE(c.stats().evictions == before.evictions);
  REQUIRE_FALSE(fs::exists(c.file_of("huge")));
}

TEST_CASE("a temporary left by a crash is removed at start-up and never served", "[cache]") {
  ringfeed::test::temp_dir dir;
  const fs::path a = dir.path() / "a";
  const fs::path b = dir.path() / "b";
  const auto payload = random_bytes(5000, 42);
  {
    cache c(options_for(a));
    c.put(key_of(1), payload);
  }
  {
    // As a crash before rename(2) leaves them: a complete entry file for
    // key 2 (made by a cache elsewhere) and a torn one, under tmp/.
    cache other(options_for(b));
    other.put(key_of(2), payload);
    fs::copy_file(other.file_of(key_of(2)), a / "tmp" / (other.file_of(key_of(2)).filename().string() + ".17"));
    std::ofstream(a / "tmp" / "torn.3") << "RFCACHE1 and then nothing";
  }
  REQUIRE(count_files(a / "tmp") == 2);
  cache c(options_for(a));
  REQUIRE(count_files(a / "tmp") == 0);
  read_buffer buffer;
  REQUIRE_FALSE(c.get(key_of(2), payload.size(), buffer));
  REQUIRE_FALSE(c.get(key_of(2), unknown_size, buffer));
  REQUIRE(c.get(key_of(1), payload.size(), buffer));
  REQUIRE(c.stats().entries == 1);
}

TEST_CASE("a truncated or damaged cache file is a miss, not a wrong result", "[cache]") {
  ringfeed::test::temp_dir dir;
  const auto payload = random_bytes(10000, 5);
  read_buffer buffer;
  {
    cache c(options_for(dir.path()));
    for (int i = 0; i < 4; ++i) c.put(key_of(i), payload);
    const std::uint64_t size = file_bytes(key_of(0), payload.size());
    fs::resize_file(c.file_of(key_of(0)), size - 1);  // torn in the payload
    fs::resize_file(c.file_of(key_of(1)), 10);        // torn in the header
    REQUIRE_FALSE(c.get(key_of(0), payload.size(), buffer));
    REQUIRE(buffer.size() == 0);
    REQUIRE_FALSE(c.get(key_of(1), unknown_size, buffer));
    REQUIRE_FALSE(fs::exists(c.file_of(key_of(0))));
    REQUIRE_FALSE(fs::exists(c.file_of(key_of(1))));
    REQUIRE(c.stats().invalidated == 2);
    REQUIRE(c.stats().bytes == 2 * size);

    // Found damaged after a restart, where the index takes sizes from disk.
    fs::resize_file(c.file_of(key_of(2)), size - 100);
    {  // same length, wrong magic
      std::fstream f(c.file_of(key_of(3)), std::ios::in | std::ios::out | std::ios::binary);
      f.write("XXXXXXXX", 8);
    }
  }
  cache c(options_for(dir.path()));
  REQUIRE(c.stats().entries == 2);
  REQUIRE_FALSE(c.get(key_of(2), unknown_size, buffer));  // header says 10000 bytes, file holds fewer
  REQUIRE_FALSE(c.get(key_of(3), payload.size(), buffer));
  REQUIRE(c.stats().invalidated == 2);
  REQUIRE(c.stats().entries == 0);
  REQUIRE(scan_entries(c.dir()).files == 0);
}

TEST_CASE("another key's file under a key's name (a hash collision) is a miss", "[cache]") {
  ringfeed::test::temp_dir dir;
  const auto payload = random_bytes(3000, 8);
  fs::path planted;
  {
    cache c(options_for(dir.path()));
    c.put(key_of(1), payload);
    planted = c.file_of(key_of(2));
    fs::create_directories(planted.parent_path());
    fs::copy_file(c.file_of(key_of(1)), planted);
  }
  cache c(options_for(dir.path()));
  read_buffer buffer;
  REQUIRE_FALSE(c.get(key_of(2), payload.size(), buffer));
  REQUIRE_FALSE(c.get(key_of(2), unknown_size, buffer));
  REQUIRE(buffer.size() == 0);
  REQUIRE(fs::exists(planted));  // the other key's entry stays
  REQUIRE(c.get(key_of(1), payload.size(), buffer));
}

TEST_CASE("a restart keeps the entries, and a second cache on the directory is refused", "[cache]") {
  ringfeed::test::temp_dir dir;
  std::vector<std::vector<std::byte>> payloads;
  std::uint64_t bytes = 0;
  {
    cache c(options_for(dir.path()));
    for (int i = 0; i < 50; ++i) {
      payloads.push_back(random_bytes(1000 + 37 * static_cast<std::size_t>(i), static_cast<std::uint64_t>(i)));
      c.put(key_of(i), payloads.back());
    }
    bytes = c.stats().bytes;
    try {
      cache second(options_for(dir.path()));
      FAIL("a second cache opened a directory in use");
    } catch (const std::system_error& e) {
      REQUIRE(e.code().value() == EBUSY);
      REQUIRE_THAT(e.what(), Catch::Contains(dir.path().string()));
    }
  }
  {
    cache c(options_for(dir.path()));
    REQUIRE(c.stats().entries == 50);
    REQUIRE(c.stats().bytes == bytes);
    read_buffer buffer;
    for (int i = 0; i < 50; ++i) {
      REQUIRE(c.get(key_of(i), payloads[i].size(), buffer));
      REQUIRE(same(buffer.bytes(), payloads[i]));
    }
    REQUIRE(c.stats().hits == 50);
  }
  // Entries from earlier runs count towards a smaller limit at once.
  const std::uint64_t max = bytes / 2;
  cache c(options_for(dir.path(), max));
  REQUIRE(c.stats().bytes <= max);
  REQUIRE(c.stats().evictions > 0);
  REQUIRE(scan_entries(c.dir()).bytes == c.stats().bytes);
}

TEST_CASE("after a restart the least recently used go first, by mtime", "[cache]") {
  ringfeed::test::temp_dir dir;
  const std::size_t payload = 2000;
  const std::uint64_t max = 3 * file_bytes(key_of(0), payload);  // keys 0..9: the same length
  const auto open = [&] { return std::make_unique<cache>(options_for(dir.path(), max)); };
  auto c = open();
  for (int i = 0; i < 3; ++i) c->put(key_of(i), random_bytes(payload, i));
  set_mtime(c->file_of(key_of(0)), 2000);
  set_mtime(c->file_of(key_of(1)), 3000);  // the oldest
  set_mtime(c->file_of(key_of(2)), 1000);
  c.reset();
  c = open();
  c->put(key_of(3), random_bytes(payload, 3));
  REQUIRE_FALSE(fs::exists(c->file_of(key_of(1))));
  REQUIRE(fs::exists(c->file_of(key_of(0))));
  REQUIRE(fs::exists(c->file_of(key_of(2))));

  // A hit refreshes an old mtime, so the order it makes survives a restart.
  set_mtime(c->file_of(key_of(0)), 3000);  // the oldest on disk...
  set_mtime(c->file_of(key_of(2)), 2000);
  set_mtime(c->file_of(key_of(3)), 1000);
  c.reset();
  c = open();
  read_buffer buffer;
  REQUIRE(c->get(key_of(0), payload, buffer));  // ...but used now
  c.reset();
  c = open();
  c->put(key_of(4), random_bytes(payload, 4));
  REQUIRE(fs::exists(c->file_of(key_of(0))));
  REQUIRE_FALSE(fs::exists(c->file_of(key_of(2))));
}

TEST_CASE("failed stores never throw, are counted and logged once", "[cache]") {
  ringfeed::test::temp_dir dir;
  std::vector<std::string> lines;
  cache_options o = options_for(dir.path());
  o.log = [&](std::string_view line) { lines.emplace_back(line); };
  cache c(std::move(o));
  // tmp/ replaced by a plain file: no temporary can be created (as root, too).
  fs::remove_all(dir.path() / "tmp");
  std::ofstream(dir.path() / "tmp") << "in the way";
  const auto payload = random_bytes(100, 1);
  REQUIRE_NOTHROW(c.put(key_of(1), payload));
  REQUIRE_NOTHROW(c.put(key_of(2), payload));
  REQUIRE_NOTHROW(c.put(key_of(3), payload));
  REQUIRE(c.stats().errors == 3);
  REQUIRE(c.stats().stores == 0);
  REQUIRE(lines.size() == 1);
  REQUIRE_THAT(lines[0], Catch::Contains(key_of(1)) && Catch::Contains(dir.path().string()));
  read_buffer buffer;
  REQUIRE_FALSE(c.get(key_of(1), unknown_size, buffer));

  // Once the way is clear, stores work again (tmp/ is made anew).
  fs::remove(dir.path() / "tmp");
  c.put(key_of(1), payload);
  REQUIRE(c.get(key_of(1), payload.size(), buffer));
  REQUIRE(same(buffer.bytes(), payload));
  REQUIRE(lines.size() == 1);
}

TEST_CASE("a directory that cannot be created is an error naming it", "[cache]") {
  ringfeed::test::temp_dir dir;
  std::ofstream(dir.path() / "file") << "x";
  REQUIRE_THROWS_AS(cache(options_for(dir.path() / "file" / "cache")), std::system_error);
  REQUIRE_THROWS_WITH(cache(options_for(dir.path() / "file" / "cache")),
                      Catch::Contains((dir.path() / "file" / "cache").string()));
}

// Threads put and get overlapping keys under a limit that keeps evicting.
// Each key has four versions of different sizes; every hit must be exactly
// one version of that key (and the requested one when a size is given).
TEST_CASE("concurrent puts and gets on overlapping keys return only stored bytes", "[cache][concurrency]") {
  ringfeed::test::watchdog dog("cache stress", std::chrono::seconds(120));
  ringfeed::test::temp_dir dir;
  constexpr int keys = 48;
  constexpr int versions = 4;
  const auto size_of = [](int k, int v) { return static_cast<std::size_t>(500 + 211 * k + 1700 * v); };
  std::vector<std::vector<std::byte>> content(keys * versions);
  std::uint64_t all_bytes = 0;
  for (int k = 0; k < keys; ++k)
    for (int v = 0; v < versions; ++v) {
      content[k * versions + v] = random_bytes(size_of(k, v), static_cast<std::uint64_t>(k * versions + v));
      all_bytes += size_of(k, v);
    }
  const std::uint64_t max = all_bytes / versions / 3;  // about a third of the keys fit
  cache c(options_for(dir.path(), max));

  const unsigned threads = ringfeed::test::stress_threads();
  constexpr int ops = 4000;
  std::atomic<int> wrong{0};
  std::atomic<int> over_limit{0};
  std::atomic<std::uint64_t> gets{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      read_buffer buffer;
      for (int i = 0; i < ops; ++i) {
        const int k = static_cast<int>(rng() % keys);
        const int v = static_cast<int>(rng() % versions);
        const std::string key = "nfs://s/e/" + std::to_string(k);
        switch (rng() % 3) {
          case 0:
            c.put(key, content[k * versions + v]);
            break;
          case 1:
            ++gets;
            if (c.get(key, size_of(k, v), buffer) && !same(buffer.bytes(), content[k * versions + v])) ++wrong;
            break;
          default:
            ++gets;
            if (c.get(key, unknown_size, buffer)) {
              int found = -1;
              for (int w = 0; w < versions; ++w)
                if (buffer.size() == size_of(k, w)) found = w;
              if (found < 0 || !same(buffer.bytes(), content[k * versions + found])) ++wrong;
            }
        }
        if (c.stats().bytes > max) ++over_limit;
      }
    });
  }
  for (auto& th : pool) th.join();

  const auto s = c.stats();
  CAPTURE(s.hits, s.misses, s.stores, s.evictions, s.invalidated, s.entries, s.bytes);
  REQUIRE(wrong == 0);
  REQUIRE(over_limit == 0);
  REQUIRE(s.hits > 100);
  REQUIRE(s.evictions > 100);
  REQUIRE(s.invalidated > 0);  // sized gets of another version
  REQUIRE(s.errors == 0);
  REQUIRE(s.hits + s.misses == gets);
  const on_disk d = scan_entries(c.dir());
  REQUIRE(d.files == s.entries);
  REQUIRE(d.bytes == s.bytes);
  REQUIRE(count_files(c.dir() / "tmp") == 0);
}
