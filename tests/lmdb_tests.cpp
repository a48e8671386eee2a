// LMDB datasets: io::detail::open_lmdb_source (read-only, memory-mapped,
// no lock file) and data::index_lmdb (msgpack [image, label] records).
// Databases are written by Debian's python3 with the lmdb and msgpack
// modules (tests/data/make_lmdb.py), whose record i follows from i alone.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "data_test_support.hpp"
#include "io/lmdb/lmdb_source.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed;
using ringfeed::test::temp_dir;
using ringfeed::test::data_support::python;
using ringfeed::test::data_support::quoted;
using ringfeed::test::data_support::run;

namespace {

ringfeed::test::skip_if_unavailable skip{[]() -> std::string {
  if (run(std::string(python) + " -c 'import lmdb, msgpack' >/dev/null 2>&1") == 0) return "";
  return std::string(python) +
         " cannot import lmdb and msgpack (apt-get install python3-lmdb python3-msgpack): the test databases "
         "are written with them";
}};

// What make_lmdb.py stores in record i.
std::size_t image_size(std::size_t i) {
  const std::size_t sizes[4] = {5 + i, 100 + 13 * i, 5000 + i, 70000 + 101 * i};
  return sizes[i % 4];
}
std::string image_bytes(std::size_t i) {
  std::string out(image_size(i), '\0');
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = static_cast<char>((i * 31 + j * 7 + (j >> 8)) & 0xff);
  return out;
}
std::int64_t label_of(std::size_t i) {
  if (i == 1) return -5;
  if (i == 2) return std::int64_t{1} << 40;
  return static_cast<std::int64_t>((i * 7) % 13);
}

// Writes a database with make_lmdb.py; `args` are its options after OUT.
fs::path make_db(const fs::path& out, const std::string& args) {
  const fs::path script = RINGFEED_TEST_MAKE_LMDB;
  REQUIRE(run(std::string(python) + " " + quoted(script) + " " + quoted(out) + " " + args) == 0);
  return out;
}

std::string as_string(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Every sample of `ds` read through `src`, in order.
std::vector<std::string> read_all(io::source& src, const data::dataset& ds) {
  std::vector<std::string> out;
  io::read_buffer buffer;
  std::string scratch;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    out.push_back(as_string(sync_wait(src.read(ds.ref(i, scratch), buffer))));
  }
  return out;
}

void check_dataset(io::source& src, std::size_t records) {
  const data::dataset ds = data::index_lmdb(src);
  REQUIRE(ds.kind() == data::dataset_kind::lmdb);
  REQUIRE(ds.size() == records);
  CHECK(ds.source() == src.location());
  CHECK(ds.root() == src.location());
  const std::vector<std::string> bytes = read_all(src, ds);
  for (std::size_t i = 0; i < records; ++i) {
    INFO("record " << i);
    CHECK(ds.name(i) == std::to_string(i));
    CHECK(ds.label(i) == label_of(i));
    CHECK(bytes[i] == image_bytes(i));
    CHECK(ds.describe(i) == src.location() + ":" + std::to_string(i));
  }
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

int errno_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::system_error& e) {
    return e.code().value();
  }
  return 0;
}

}  // namespace

TEST_CASE("lmdb: bytes and labels read back exactly through the source and the index") {
  temp_dir tmp;
  const fs::path db = make_db(tmp.path() / "db", "--records 24 --extra");
  thread_pool pool(2);
  const std::string location = "lmdb://" + db.string();
  REQUIRE(io::is_lmdb_location(location));
  const auto src = io::detail::open_lmdb_source(location, pool, {});
  CHECK(src->scheme() == "lmdb");
  CHECK(src->backend_name() == "lmdb");
  CHECK(src->location() == location);
  CHECK(src->depth() == src->storage().io_depth);
  check_dataset(*src, 24);

  const io::source_stats s = src->stats();
  CHECK(s.retries == 0);
  CHECK(s.timeouts == 0);
  CHECK(s.ranges >= 24);  // indexing's reads, then one per sample
  std::uint64_t image_total = 0;
  for (std::size_t i = 0; i < 24; ++i) image_total += image_size(i);
  CHECK(s.bytes > image_total);
}

TEST_CASE("lmdb: a directory holding data.mdb, a data.mdb path and a data file opened with lmdb://") {
  temp_dir tmp;
  const fs::path dir = make_db(tmp.path() / "dir", "--records 9");
  thread_pool pool(2);
  CHECK(io::is_lmdb_location(dir.string()));
  CHECK(io::is_lmdb_location((dir / "data.mdb").string()));
  CHECK_FALSE(io::is_lmdb_location(tmp.path().string()));
  CHECK_FALSE(io::is_lmdb_location((tmp.path() / "nothing").string()));
  CHECK(io::is_lmdb_location("lmdb://relative/db"));

  for (const std::string& location : {dir.string(), (dir / "data.mdb").string()}) {
    INFO(location);
    const auto src = io::detail::open_lmdb_source(location, pool, {});
    check_dataset(*src, 9);
  }

  // A single data file (subdir=False), named by lmdb:// + its path.
  const fs::path file = make_db(tmp.path() / "single.lmdb", "--records 7 --file");
  REQUIRE(fs::is_regular_file(file));
  const auto src = io::detail::open_lmdb_source("lmdb://" + file.string(), pool, {});
  check_dataset(*src, 7);

  // lmdb://relative: relative to the working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  std::unique_ptr<io::source> rel;
  const std::string error = error_of([&] { rel = io::detail::open_lmdb_source("lmdb://dir", pool, {}); });
  fs::current_path(cwd);
  REQUIRE(error == "no error");
  check_dataset(*rel, 9);

  CHECK_THROWS_AS(io::detail::open_lmdb_source(tmp.path().string(), pool, {}), std::invalid_argument);
  CHECK(errno_of([&] { (void)io::detail::open_lmdb_source("lmdb://" + (tmp.path() / "nothing").string(), pool, {}); }) ==
        ENOENT);
}

TEST_CASE("lmdb: __len__ as ASCII, as an ambiguous byte, or absent (numeric keys)") {
  temp_dir tmp;
  thread_pool pool(2);
  SECTION("ASCII decimal") {
    const auto src = io::detail::open_lmdb_source(make_db(tmp.path() / "a", "--records 12 --len ascii").string(), pool, {});
    check_dataset(*src, 12);
  }
  SECTION("msgpack 50 is the byte '2': the keys decide") {
    const auto src = io::detail::open_lmdb_source(make_db(tmp.path() / "b", "--records 50").string(), pool, {});
    check_dataset(*src, 50);
  }
  SECTION("no __len__: the numeric keys, other keys ignored") {
    const auto src =
        io::detail::open_lmdb_source(make_db(tmp.path() / "c", "--records 11 --len none --extra").string(), pool, {});
    check_dataset(*src, 11);
  }
  SECTION("no __len__ and a gap in the keys") {
    const auto src =
        io::detail::open_lmdb_source(make_db(tmp.path() / "d", "--records 11 --len none --drop 4").string(), pool, {});
    const std::string what = error_of([&] { (void)data::index_lmdb(*src); });
    CHECK_THAT(what, Catch::Contains("record '4' is missing"));
    CHECK_THROWS_AS(data::index_lmdb(*src), data::dataset_error);
  }
  SECTION("__len__ counts a record that is not there") {
    const auto src = io::detail::open_lmdb_source(make_db(tmp.path() / "e", "--records 11 --drop 6").string(), pool, {});
    const std::string what = error_of([&] { (void)data::index_lmdb(*src); });
    CHECK_THAT(what, Catch::Contains("record '6' is missing"));
  }
  SECTION("old msgpack: images as str") {
    const auto src =
        io::detail::open_lmdb_source(make_db(tmp.path() / "f", "--records 10 --old-msgpack").string(), pool, {});
    check_dataset(*src, 10);
  }
}

TEST_CASE("lmdb: a malformed record is a dataset_error naming the database and the key") {
  temp_dir tmp;
  thread_pool pool(2);
  const std::map<std::string, std::string> cases{
      {"notarray", "not a msgpack array"},
      {"three", "array of 3 elements"},
      {"labelstr", "the label is a msgpack str, not an integer"},
      {"truncated", "truncated"},
  };
  for (const auto& [kind, reason] : cases) {
    for (const int bad : {4, 7}) {  // a small record (read whole) and a large one (head and tail)
      INFO(kind << " in record " << bad);
      const fs::path db = make_db(tmp.path() / (kind + std::to_string(bad)),
                                  "--records 9 --bad " + std::to_string(bad) + ":" + kind);
      const auto src = io::detail::open_lmdb_source(db.string(), pool, {});
      try {
        (void)data::index_lmdb(*src);
        FAIL("indexed a database with a malformed record");
      } catch (const data::dataset_error& e) {
        CHECK(e.path() == db.string());
        CHECK_THAT(std::string(e.what()), Catch::Contains(db.string()));
        CHECK_THAT(std::string(e.what()), Catch::Contains("record '" + std::to_string(bad) + "'"));
        CHECK_THAT(std::string(e.what()), Catch::Contains(reason));
      }
    }
  }
}

TEST_CASE("lmdb: reads name the key: a missing one, a range past the value, a whole value of another size") {
  temp_dir tmp;
  const fs::path db = make_db(tmp.path() / "db", "--records 6");
  thread_pool pool(2);
  const std::string location = "lmdb://" + db.string();
  const auto src = io::detail::open_lmdb_source(location, pool, {});
  io::read_buffer buffer;
  auto read = [&](io::sample_ref r) { return as_string(sync_wait(src->read(r, buffer))); };

  try {
    (void)read({"999", false, 0, io::unknown_size});
    FAIL("read a key that does not exist");
  } catch (const std::system_error& e) {
    CHECK(e.code().value() == ENOENT);
    CHECK_THAT(std::string(e.what()), Catch::Contains(location));
    CHECK_THAT(std::string(e.what()), Catch::Contains("key '999'"));
  }

  const std::vector<io::source_entry> keys = src->list("");
  std::map<std::string, std::uint64_t> sizes;
  for (const auto& e : keys) sizes[e.name] = e.size;
  REQUIRE(sizes.size() == 7);  // 0..5 and __len__
  REQUIRE(sizes.count("__len__") == 1);
  const std::uint64_t size3 = sizes.at("3");
  CHECK(size3 > image_size(3));
  CHECK(read({"3", false, 0, io::unknown_size}).size() == size3);
  CHECK(read({"3", false, 0, size3}).size() == size3);
  CHECK(read({"3", true, size3 - 4, 4}).size() == 4);

  const std::string past = error_of([&] { (void)read({"3", true, size3 - 4, 10}); });
  CHECK_THAT(past, Catch::Contains("key '3'"));
  CHECK_THAT(past, Catch::Contains("ends at byte " + std::to_string(size3)));
  CHECK(errno_of([&] { (void)read({"3", true, size3 - 4, 10}); }) == EIO);
  CHECK(errno_of([&] { (void)read({"3", false, 0, size3 + 1}); }) == EIO);
  CHECK(errno_of([&] { (void)src->list("train"); }) == ENOTDIR);
}

TEST_CASE("lmdb: many concurrent reads from several coroutines resume on the caller's pool") {
  ringfeed::test::watchdog dog("lmdb concurrent reads", std::chrono::seconds(90));
  temp_dir tmp;
  constexpr std::size_t records = 40;
  const fs::path db = make_db(tmp.path() / "db", "--records 40");
  thread_pool pool(4);
  io::source_options options;
  options.depth = 8;
  const auto src = io::detail::open_lmdb_source(db.string(), pool, options);
  CHECK(src->depth() == 8);
  const data::dataset ds = data::index_lmdb(*src);
  REQUIRE(ds.size() == records);
  const io::source_stats before = src->stats();

  constexpr std::size_t readers = 16, rounds = 5;
  std::atomic<std::size_t> wrong{0}, off_pool{0};
  auto reader = [&](std::size_t r) -> task<void> {
    io::read_buffer buffer;
    std::string scratch;
    for (std::size_t k = 0; k < rounds * records; ++k) {
      const std::size_t i = (k * 7 + r * 13) % records;
      const std::string bytes = as_string(co_await src->read(ds.ref(i, scratch), buffer));
      if (!pool.on_worker_thread()) off_pool.fetch_add(1);
      if (bytes != image_bytes(i)) wrong.fetch_add(1);
    }
  };
  std::vector<task<void>> tasks;
  for (std::size_t r = 0; r < readers; ++r) tasks.push_back(reader(r));
  sync_wait(when_all(std::move(tasks)));
  CHECK(wrong.load() == 0);
  CHECK(off_pool.load() == 0);
  const io::source_stats after = src->stats();
  CHECK(after.ranges - before.ranges == readers * rounds * records);
}

TEST_CASE("lmdb: a read-only directory is read without creating a lock file") {
  temp_dir tmp;
  const fs::path dir = make_db(tmp.path() / "ro", "--records 8");
  const fs::path file = make_db(tmp.path() / "single.lmdb", "--records 8 --file");
  REQUIRE_FALSE(fs::exists(dir / "lock.mdb"));
  REQUIRE_FALSE(fs::exists(tmp.path() / "single.lmdb-lock"));
  fs::permissions(dir, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  fs::permissions(dir / "data.mdb", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  thread_pool pool(2);
  {
    const auto src = io::detail::open_lmdb_source("lmdb://" + dir.string(), pool, {});
    check_dataset(*src, 8);
    const auto single = io::detail::open_lmdb_source("lmdb://" + file.string(), pool, {});
    check_dataset(*single, 8);
    CHECK_FALSE(fs::exists(dir / "lock.mdb"));
    CHECK_FALSE(fs::exists(tmp.path() / "single.lmdb-lock"));
  }
  CHECK_FALSE(fs::exists(dir / "lock.mdb"));
  CHECK_FALSE(fs::exists(tmp.path() / "single.lmdb-lock"));
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);  // so temp_dir can remove it
}

TEST_CASE("lmdb: messages quote a Latin-1 database name and a hostile key escaped") {
  temp_dir tmp;
  thread_pool pool(2);
  const auto clean = [](const std::string& s) {
    for (const char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
  };
  // A malformed record in a database whose directory is named in Latin-1.
  const fs::path db = tmp.path() / "caf\xE9\x01";
  fs::rename(make_db(tmp.path() / "db", "--records 9 --bad 4:notarray"), db);  // python-lmdb wants UTF-8
  const auto src = io::detail::open_lmdb_source(db.string(), pool, {});
  const std::string bad = error_of([&] { (void)data::index_lmdb(*src); });
  CHECK(clean(bad));
  CHECK_THAT(bad, Catch::Contains("caf\\xe9\\x01") && Catch::Contains("record '4'"));

  // A key of bytes 0x80-0xFF and control characters that does not exist.
  std::string key;
  for (int b = 0x80; b <= 0xFF; ++b) key.push_back(static_cast<char>(b));
  for (int b = 0x01; b < 0x20; ++b) key.push_back(static_cast<char>(b));
  io::read_buffer buffer;
  const std::string missing = error_of([&] { (void)sync_wait(src->read({key, false, 0, io::unknown_size}, buffer)); });
  CHECK(clean(missing));
  CHECK_THAT(missing, Catch::Contains("key '\\x80\\x81") && Catch::Contains("\\x1f'"));
}
