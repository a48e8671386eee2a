// The storage probe on what this machine has: a tmpfs, the disk under the
// build tree, and a missing path.
#include <catch2/catch.hpp>

#include <sys/statfs.h>

#include <filesystem>
#include <system_error>

#include <ringfeed/io/storage.hpp>

#include "test_support.hpp"

using ringfeed::io::device_class;
using ringfeed::io::filesystem_kind;

TEST_CASE("tmpfs is memory: buffered, shallow queue, small files fine", "[storage]") {
  struct statfs sf {};
  if (::statfs("/dev/shm", &sf) != 0 || sf.f_type != 0x01021994) {
    SUCCEED("no tmpfs at /dev/shm on this machine");
    return;
  }
  const auto s = ringfeed::io::probe_storage("/dev/shm");
  REQUIRE(s.filesystem == filesystem_kind::tmpfs);
  REQUIRE(s.filesystem_name == "tmpfs");
  REQUIRE(s.device == device_class::memory);
  REQUIRE_FALSE(s.direct_io);
  REQUIRE(s.small_files_ok);
}

TEST_CASE("a directory on a block device names its whole disk and block size", "[storage]") {
  ringfeed::test::temp_dir dir;
  const auto s = ringfeed::io::probe_storage(dir.path().string());
  if (s.filesystem == filesystem_kind::tmpfs || s.filesystem == filesystem_kind::overlay) {
    SUCCEED("$TMPDIR is not on a block device here");
    return;
  }
  REQUIRE_FALSE(s.device_name.empty());
  REQUIRE(std::filesystem::exists("/sys/block/" + s.device_name));  // a whole disk, not a partition
  REQUIRE(s.logical_block_size >= 512);
  REQUIRE(s.device != device_class::unknown);
  REQUIRE_FALSE(s.advice.empty());
  if (s.device == device_class::hdd) REQUIRE_FALSE(s.small_files_ok);
}

TEST_CASE("a missing path is an error naming it", "[storage]") {
  REQUIRE_THROWS_WITH(ringfeed::io::probe_storage("/nonexistent/ringfeed-probe"),
                      Catch::Contains("/nonexistent/ringfeed-probe"));
}

TEST_CASE("probe_source: nfs:// is a network file system; a path it cannot stat gets the unknown defaults",
          "[storage]") {
  const auto nfs = ringfeed::io::probe_source("NFS://filer/export/train");
  REQUIRE(nfs.device == ringfeed::io::device_class::network);
  REQUIRE(nfs.io_depth == 64);
  REQUIRE_FALSE(nfs.direct_io);
  const std::string missing = "/no/such/dataset/anywhere";
  const auto unknown = ringfeed::io::probe_source(missing);  // no throw: the loader names the file later
  REQUIRE(unknown.path == missing);
  REQUIRE(unknown.device == ringfeed::io::device_class::unknown);
  REQUIRE(unknown.io_depth == 32);
  REQUIRE_FALSE(unknown.direct_io);
  // A real path: what probe_storage says.
  const auto here = ringfeed::io::probe_source("/tmp");
  REQUIRE(here.io_depth == ringfeed::io::probe_storage("/tmp").io_depth);
}
