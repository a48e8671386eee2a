// The read-through cache in front of a source (source_options::cache_dir,
// lib/io/cache/cached_source.cpp): entries are keyed by the file's version,
// so a file replaced by another of the same name and size is read anew in
// a later run, never served stale from the cache.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstddef>
#include <ctime>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <ringfeed/io/cache.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "files.hpp"
#include "io/sources.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace io = ringfeed::io;

namespace {

using ringfeed::test::random_bytes;
using ringfeed::test::same;

// Sets `file`'s mtime `seconds` from now: a replacement a stat tells apart
// even on a file system of coarse timestamps.
void set_mtime(const fs::path& file, std::time_t seconds) {
  timespec times[2] = {{0, UTIME_OMIT}, {std::time(nullptr) + seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("read-through cache: a local file replaced by one of the same size is read anew", "[io][cache]") {
  ringfeed::test::temp_dir tmp;
  const fs::path data = tmp.path() / "data";
  fs::create_directories(data);
  const fs::path file = data / "a.bin";
  const std::vector<std::byte> first = random_bytes(10'000, 1);
  const std::vector<std::byte> second = random_bytes(10'000, 2);
  ringfeed::test::write_file(file, first);
  set_mtime(file, -100);

  ringfeed::thread_pool pool(2);
  io::source_options o;
  o.cache_dir = tmp.path() / "cache";
  io::source_stats st;
  // One run: a source with its cache, one read; its destructor writes what
  // its writer thread still holds, so the next run finds the entry.
  const auto run = [&] {
    auto s = io::detail::with_cache(io::detail::open_local_source(data.string(), pool, o, io::probe_source(data)), o);
    io::read_buffer b;
    const std::span<const std::byte> bytes = ringfeed::sync_wait(s->read(io::sample_ref{file.string()}, b));
    std::vector<std::byte> out(bytes.begin(), bytes.end());
    st = s->stats();
    return out;
  };
  CHECK(same(run(), first));
  CHECK(st.cache_misses == 1);
  CHECK(same(run(), first));
  CHECK(st.cache_hits == 1);

  ringfeed::test::write_file(file, second);  // same name, same size, other bytes, a new mtime
  set_mtime(file, 100);
  CHECK(same(run(), second));
  CHECK(st.cache_misses == 1);
  CHECK(same(run(), second));  // and the new version is cached in turn
  CHECK(st.cache_hits == 1);
}

TEST_CASE("sample_cache_key: the file, a range's offset and the version", "[io][cache]") {
  CHECK(io::sample_cache_key("nfs://h/e/a.jpg", false, 0, "") == "nfs://h/e/a.jpg");
  CHECK(io::sample_cache_key("s3://b/x.tar", true, 512, "etag \"ab\"") == "s3://b/x.tar:512|etag \"ab\"");
  CHECK(io::sample_cache_key("a.jpg", false, 0, "v1") != io::sample_cache_key("a.jpg", false, 0, "v2"));
}
