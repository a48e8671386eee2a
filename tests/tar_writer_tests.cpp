// tar_shard_writer: shards written sample by sample read back through
// tar_reader, the shard index and Python's tarfile; the size limit that
// closes a shard (GNU tar's ustar bytes); bad members refused, partial
// shards cleaned up. (Reading shards: tar_tests.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/tar.hpp>

#include "data_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed::data;
using namespace ringfeed::test::data_support;
using ringfeed::test::temp_dir;

namespace {

struct written_sample {
  std::string image_name;  // `<key>.<ext>`
  std::string bytes;
  std::int64_t label;
};

void add_sample(tar_shard_writer& w, const written_sample& s) {
  const std::string cls_name = s.image_name.substr(0, s.image_name.rfind('.')) + ".cls";
  const std::string label = std::to_string(s.label);
  w.add({{s.image_name, s.bytes}, {cls_name, label}});
}

// The members of `shard` as tar_reader sees them: name → bytes, in order.
std::vector<std::pair<std::string, std::string>> read_members(const fs::path& shard) {
  tar_reader reader(shard);
  std::vector<std::pair<std::string, std::string>> out;
  while (auto m = reader.next()) {
    INFO(shard.string() << ": " << m->name);
    CHECK(m->type == '0');
    CHECK(m->data_offset == m->header_offset + 512);
    std::string bytes(static_cast<std::size_t>(m->size), '\0');
    reader.read_at(m->data_offset, bytes);
    out.emplace_back(m->name, std::move(bytes));
  }
  return out;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("tar: tar_shard_writer round-trips through tar_reader, the shard index and Python's tarfile",
          "[tar][writer]") {
  temp_dir tmp;
  const fs::path dir = tmp.path() / "out";
  fs::create_directories(dir);
  const std::uint64_t limit = 64 << 10;
  // Empty, around a block, over 8 KiB, over the shard limit, and over the
  // writer's 8 MiB write chunk; a 100-byte name (ustar's most).
  const std::vector<std::size_t> sizes{0, 1, 511, 512, 513, 8193, 20000, 70000, (9u << 20) + 100, 3000, 40000, 7};
  std::vector<written_sample> samples;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    char key[32];
    std::snprintf(key, sizeof key, "k%04zu", k);
    const std::string dirname = k == 5 ? std::string(89, 'd') + "/" : k == 9 ? "sub/dir/" : "";
    samples.push_back({dirname + key + (k % 3 == 0 ? ".jpg" : k % 3 == 1 ? ".png" : ".webp"),
                       random_string(sizes[k], static_cast<unsigned>(100 + k)), static_cast<std::int64_t>(7 * k + 1)});
  }
  REQUIRE(samples[5].image_name.size() == 100);

  std::uint64_t reported = 0;
  std::vector<fs::path> shards;
  {
    tar_shard_writer w(dir, limit);
    for (const auto& s : samples) add_sample(w, s);
    w.finish();
    shards = w.paths();
    reported = w.bytes();
    CHECK(w.shards() == shards.size());
  }
  REQUIRE(shards.size() >= 4);
  std::vector<std::string> names;
  std::uint64_t on_disk = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    CHECK(shards[s] == dir / ("shard-" + std::string(6 - std::to_string(s).size(), '0') + std::to_string(s) + ".tar"));
    names.push_back(shards[s].filename().string());
    on_disk += fs::file_size(shards[s]);
    CHECK(fs::file_size(shards[s]) % 512 == 0);
  }
  CHECK(files_in(dir) == names);  // no .tmp left, nothing else
  CHECK(reported == on_disk);

  // tar_reader: every member, in order, with its bytes; samples never
  // straddle shards, and a shard passes the limit only holding one sample.
  std::size_t next = 0;
  for (const auto& shard : shards) {
    const auto members = read_members(shard);
    REQUIRE(members.size() % 2 == 0);
    if (members.size() > 2) CHECK(fs::file_size(shard) <= limit);
    for (std::size_t m = 0; m < members.size(); m += 2, ++next) {
      REQUIRE(next < samples.size());
      const auto& s = samples[next];
      CHECK(members[m].first == s.image_name);
      CHECK(members[m].second == s.bytes);
      CHECK(members[m + 1].first == s.image_name.substr(0, s.image_name.rfind('.')) + ".cls");
      CHECK(members[m + 1].second == std::to_string(s.label));
    }
  }
  CHECK(next == samples.size());

  // The shard index, given the shards or finding them in the directory.
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";
  for (const dataset& ds : {index_tar_shards(shards, opt), open_dataset(dir.string(), opt)}) {
    REQUIRE(ds.size() == samples.size());
    REQUIRE(ds.shards().size() == shards.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      INFO("sample " << i);
      CHECK(ds.name(i) == samples[i].image_name);
      CHECK(ds.label(i) == samples[i].label);
      const sample_location loc = ds.location(i);
      REQUIRE(loc.size == samples[i].bytes.size());
      CHECK(pread_exact(std::string(loc.path), loc.offset, loc.size) == samples[i].bytes);
    }
  }

  // Python's tarfile lists and extracts them as regular 0644 files of
  // uid/gid 0 and mtime 0.
  const fs::path script = tmp.path() / "list.py";
  const fs::path listing = tmp.path() / "listing";
  const fs::path extracted = tmp.path() / "extracted";
  write_file(script,
             "import sys, tarfile\n"
             "listing, dest = sys.argv[1:3]\n"
             "kw = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}\n"
             "with open(listing, 'w') as out:\n"
             "    for path in sys.argv[3:]:\n"
             "        with tarfile.open(path, 'r:') as t:\n"
             "            for m in t.getmembers():\n"
             "                assert m.isreg() and m.mode == 0o644 and m.uid == 0 and m.gid == 0 and m.mtime == 0, m\n"
             "                assert m.uname == '' and m.gname == '', m\n"
             "                out.write(f'{m.name}\\t{m.size}\\n')\n"
             "            t.extractall(dest, **kw)\n");
  std::string cmd = std::string(python) + " " + quoted(script) + " " + quoted(listing) + " " + quoted(extracted);
  for (const auto& shard : shards) cmd += " " + quoted(shard);
  INFO(cmd);
  REQUIRE(run(cmd) == 0);
  std::string want;
  for (const auto& s : samples) {
    want += s.image_name + "\t" + std::to_string(s.bytes.size()) + "\n";
    want += s.image_name.substr(0, s.image_name.rfind('.')) + ".cls\t" + std::to_string(std::to_string(s.label).size()) +
            "\n";
  }
  CHECK(ringfeed::test::read_text(listing) == want);
  for (const auto& s : samples) {
    INFO(s.image_name);
    CHECK(ringfeed::test::read_text(extracted / s.image_name) == s.bytes);
  }
}

TEST_CASE("tar: tar_shard_writer closes a shard before a sample would pass the limit; GNU tar's ustar bytes",
          "[tar][writer]") {
  temp_dir tmp;
  // A sample of 1000 bytes + its label takes 512 + 1024 + 512 + 512 = 2560
  // bytes, and a shard ends with 1024 zero bytes: two fit in 8 KiB (6144),
  // a third would not (8704). A 30000-byte sample gets a shard of its own.
  std::vector<written_sample> samples;
  for (std::size_t k = 0; k < 7; ++k) {
    samples.push_back({"g" + std::to_string(k) + ".jpg", random_string(k == 5 ? 30000 : 1000, static_cast<unsigned>(k)),
                       static_cast<std::int64_t>(k)});
  }
  auto write_all = [&](const fs::path& dir) {
    fs::create_directories(dir);
    tar_shard_writer w(dir, 8192);
    for (const auto& s : samples) add_sample(w, s);
    w.finish();
    return w.paths();
  };
  const auto shards = write_all(tmp.path() / "a");
  std::vector<std::uintmax_t> sizes;
  for (const auto& p : shards) sizes.push_back(fs::file_size(p));
  CHECK(sizes == std::vector<std::uintmax_t>{6144, 6144, 3584, 32768, 3584});
  std::vector<std::size_t> per_shard;
  for (const auto& p : shards) per_shard.push_back(read_members(p).size());
  CHECK(per_shard == std::vector<std::size_t>{4, 4, 2, 2, 2});

  // The same members give the same bytes.
  const auto again = write_all(tmp.path() / "b");
  REQUIRE(again.size() == shards.size());
  for (std::size_t s = 0; s < shards.size(); ++s) CHECK(ringfeed::test::read_text(again[s]) == ringfeed::test::read_text(shards[s]));

  // Byte for byte what GNU tar writes in ustar format for 0644 files of
  // uid/gid 0 and mtime 0 without owner names, up to the end-of-archive
  // blocks (tar pads the file to a 10 KiB record). (Python's tarfile differs
  // only in leaving devmajor/devminor empty.)
  const fs::path staging = tmp.path() / "staging";
  std::string cmd = "tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=0644 -cf " +
                    quoted(tmp.path() / "gnu.tar") + " -C " + quoted(staging);
  for (std::size_t k = 0; k < 2; ++k) {
    write_file(staging / samples[k].image_name, samples[k].bytes);
    write_file(staging / ("g" + std::to_string(k) + ".cls"), std::to_string(samples[k].label));
    cmd += " " + samples[k].image_name + " g" + std::to_string(k) + ".cls";
  }
  INFO(cmd);
  REQUIRE(run(cmd) == 0);
  const std::string ours = ringfeed::test::read_text(shards[0]);
  const std::string theirs = ringfeed::test::read_text(tmp.path() / "gnu.tar");
  REQUIRE(theirs.size() == 10240);
  CHECK(theirs.substr(0, ours.size()) == ours);
  CHECK(theirs.find_first_not_of('\0', ours.size()) == std::string::npos);
}

TEST_CASE("tar: tar_shard_writer refuses bad members, and cleans up after itself", "[tar][writer]") {
  temp_dir tmp;
  const fs::path dir = tmp.path() / "out";
  fs::create_directories(dir);
  const std::string bytes = random_string(1000, 1);

  SECTION("bad names are refused before anything is written") {
    tar_shard_writer w(dir, 1 << 20);
    CHECK_THROWS_AS(w.add({{"", bytes}}), std::invalid_argument);
    CHECK_THROWS_WITH(w.add({{std::string(101, 'n'), bytes}}), Catch::Contains("longer than ustar's 100 bytes"));
    CHECK_THROWS_AS(w.add({{std::string("a\0b.jpg", 7), bytes}}), std::invalid_argument);
    CHECK(files_in(dir).empty());
    w.add({{"a.jpg", bytes}, {"a.cls", "1"}});
    const std::uint64_t before = w.bytes();
    CHECK(before == 2560);
    CHECK_THROWS_AS(w.add({{"b.jpg", bytes}, {"", "2"}}), std::invalid_argument);  // the group is refused whole
    CHECK(w.bytes() == before);
    w.finish();
    CHECK(files_in(dir) == std::vector<std::string>{"shard-000000.tar"});
    const auto members = read_members(dir / "shard-000000.tar");
    REQUIRE(members.size() == 2);
    CHECK(members[0].second == bytes);
  }
  SECTION("a missing directory is an error naming the file") {
    tar_shard_writer w(tmp.path() / "missing", 1 << 20);
    CHECK_THROWS_WITH(w.add({{"a.jpg", bytes}}), Catch::Contains((tmp.path() / "missing/shard-000000.tar.tmp").string()));
  }
  SECTION("the destructor removes the open shard's tmp file, not finished shards") {
    {
      tar_shard_writer w(dir, 4096, "train-");
      CHECK(w.shard_name(12) == "train-000012.tar");
      w.add({{"a.jpg", bytes}});
      w.add({{"b.jpg", bytes}, {"b.cls", "2"}});  // 1536 + 2048 + 1024 > 4096: a second shard
      CHECK(w.shards() == 1);
      CHECK(files_in(dir) == std::vector<std::string>{"train-000000.tar", "train-000001.tar.tmp"});
    }
    CHECK(files_in(dir) == std::vector<std::string>{"train-000000.tar"});
    CHECK(read_members(dir / "train-000000.tar").size() == 1);
  }
  SECTION("abandon() removes every shard it wrote") {
    tar_shard_writer w(dir, 4096);
    w.add({{"a.jpg", bytes}});
    w.add({{"b.jpg", bytes}});
    w.add({{"c.jpg", bytes}});
    CHECK(w.shards() == 1);
    CHECK(files_in(dir).size() == 2);
    w.abandon();
    CHECK(files_in(dir).empty());
  }
  SECTION("finish() without members writes nothing; add() after finish() starts the next shard") {
    tar_shard_writer w(dir, 1 << 20);
    w.finish();
    CHECK(files_in(dir).empty());
    w.add({{"a.jpg", bytes}});
    w.finish();
    w.add({{"b.jpg", bytes}});
    w.finish();
    CHECK(files_in(dir) == std::vector<std::string>{"shard-000000.tar", "shard-000001.tar"});
    CHECK(read_members(dir / "shard-000001.tar") == std::vector<std::pair<std::string, std::string>>{{"b.jpg", bytes}});
  }
}
