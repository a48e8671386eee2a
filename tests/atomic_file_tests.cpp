// detail::atomic_file, the one temporary-and-rename writer (index files,
// CLI outputs, pack's shards and class list, the cache's entries): the
// final name holds the old bytes or the new ones, never a part; nothing is
// left behind by a write that is not committed; a failed rename can be
// retried once its cause is fixed (the cache's missing fan-out directory).
#include <catch2/catch.hpp>

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <ringfeed/detail/atomic_file.hpp>
#include <ringfeed/detail/unique_fd.hpp>

#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::detail::atomic_file;
using ringfeed::test::temp_dir;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("the final name shows the old bytes until commit, then the new ones", "[atomic_file]") {
  temp_dir dir;
  const fs::path final = dir.path() / "index.bin";
  std::ofstream(final) << "old";
  atomic_file f(final);
  f.write(std::string_view("new bytes"));
  CHECK(slurp(final) == "old");
  CHECK(entries(dir.path()) == 2);  // the final file and one hidden temporary
  f.commit();
  CHECK(slurp(final) == "new bytes");
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("a write that is never committed leaves nothing behind", "[atomic_file]") {
  temp_dir dir;
  {
    atomic_file f(dir.path() / "out.tar", {.sync = true, .temp_name = "out.tar.tmp"});
    f.write(std::string_view("partial"));
    CHECK(fs::exists(dir.path() / "out.tar.tmp"));
  }
  CHECK(entries(dir.path()) == 0);
}

TEST_CASE("synced commit with a fixed temporary name", "[atomic_file]") {
  temp_dir dir;
  std::ofstream(dir.path() / "classes.txt.tmp") << "stale leftover of a killed run";
  ringfeed::detail::write_file_atomically(dir.path() / "classes.txt",
                                          {std::as_bytes(std::span(std::string_view("a\nb\n")))},
                                          {.sync = true, .temp_name = "classes.txt.tmp"});
  CHECK(slurp(dir.path() / "classes.txt") == "a\nb\n");
  CHECK(!fs::exists(dir.path() / "classes.txt.tmp"));
}

TEST_CASE("relative to a directory fd: a failed rename is retried after its cause is fixed", "[atomic_file]") {
  temp_dir dir;
  fs::create_directory(dir.path() / "tmp");
  ringfeed::detail::unique_fd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  atomic_file f(root.get(), "tmp/e.1", "ab/e", {});
  f.write(std::string_view("entry"));
  CHECK(f.try_commit() == ENOENT);  // ab/ does not exist yet
  CHECK(fs::exists(dir.path() / "tmp" / "e.1"));
  fs::create_directory(dir.path() / "ab");
  CHECK(f.try_commit() == 0);
  CHECK(slurp(dir.path() / "ab" / "e") == "entry");
  CHECK(entries(dir.path() / "tmp") == 0);
}

TEST_CASE("errors name the file", "[atomic_file]") {
  temp_dir dir;
  try {
    atomic_file f(dir.path() / "missing-dir" / "x");
    FAIL("no error");
  } catch (const std::system_error& e) {
    CHECK(e.code().value() == ENOENT);
    CHECK(std::string(e.what()).find((dir.path() / "missing-dir").string()) != std::string::npos);
  }
}
