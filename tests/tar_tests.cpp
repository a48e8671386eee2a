// Tar shard tests: member parsing (ustar, GNU long names, pax), the
// WebDataset grouping, the shard index (offsets read back byte for byte,
// saved beside the shard or in the cache dir, invalidated), many shards.
// Archives are made at run time by GNU tar and Python's tarfile. (Writing
// shards: tar_writer_tests.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
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

struct member {
  std::string name;
  std::string content;
};

const std::string long_dir = std::string(60, 'd') + "/" + std::string(60, 'e');
const std::string long_key = std::string(150, 'k');

// The members of the test shard, in archive order. Non-sample members (a
// directory, a symlink, a hard link, metadata, a name without a dot) sit
// between and inside samples.
std::vector<member> shard_members(bool with_long_basename) {
  std::vector<member> m{
      {"s000.jpg", "A"},
      {"s000.cls", "0"},
      {"adir", ""},  // a directory (created as one)
      {"s001.JPEG", random_string(511, 1)},
      {"README", "no dot: not part of any sample"},
      {"s001.cls", " 7\n"},
      {"s001.json", "{}"},
      {long_dir + "/s002.png", random_string(512, 2)},
      {long_dir + "/s002.cls", "3"},
      {"s003.jpg", random_string(513, 3)},
      {"s003.seg.png", random_string(100, 4)},
      {"s003.cls", "12"},
      {"__meta__/info.jpg", "metadata: skipped"},
      {"ünï/s004.jpg", random_string(70000, 5)},
      {"ünï/s004.cls", "4"},
      {"link.jpg", ""},  // a symlink to s000.jpg
      {"s005.webp", random_string(4103, 6)},
      {"s005.cls", "5"},
      {"hard.jpg", ""},  // a hard link to s000.jpg (the second name of the inode)
  };
  if (with_long_basename) {
    m.push_back({long_key + ".jpg", random_string(1000, 7)});
    m.push_back({long_key + ".cls", "6"});
  }
  return m;
}

// Writes the members into `staging` and their names, NUL-separated, to
// `list`; returns the expected samples (image member name → content, label).
struct expected_sample {
  std::string name;
  std::string content;
  std::int64_t label;
};

std::vector<expected_sample> stage(const fs::path& staging, const fs::path& list, const std::vector<member>& members) {
  std::string names;
  for (const auto& m : members) {
    const fs::path p = staging / m.name;
    fs::create_directories(p.parent_path());
    if (m.name == "adir") {
      fs::create_directories(p);
    } else if (m.name == "link.jpg") {
      fs::create_symlink("s000.jpg", p);
    } else if (m.name == "hard.jpg") {
      fs::create_hard_link(staging / "s000.jpg", p);
    } else {
      write_file(p, m.content);
    }
    names += m.name;
    names.push_back('\0');
  }
  write_file(list, names);
  std::vector<expected_sample> out;
  auto content_of = [&](const std::string& name) {
    for (const auto& m : members) {
      if (m.name == name) return m.content;
    }
    FAIL("no member " << name);
    return std::string();
  };
  out.push_back({"s000.jpg", content_of("s000.jpg"), 0});
  out.push_back({"s001.JPEG", content_of("s001.JPEG"), 7});
  out.push_back({long_dir + "/s002.png", content_of(long_dir + "/s002.png"), 3});
  out.push_back({"s003.jpg", content_of("s003.jpg"), 12});
  out.push_back({"ünï/s004.jpg", content_of("ünï/s004.jpg"), 4});
  out.push_back({"s005.webp", content_of("s005.webp"), 5});
  if (members.back().name == long_key + ".cls") out.push_back({long_key + ".jpg", content_of(long_key + ".jpg"), 6});
  return out;
}

// `tool` is "gnutar" or "python"; format gnu, pax or ustar.
void make_tar(const std::string& tool, const std::string& format, const fs::path& out, const fs::path& staging,
              const fs::path& list) {
  std::string cmd;
  if (tool == "gnutar") {
    cmd = "tar --format=" + format + " --no-recursion --null -cf " + quoted(out) + " -C " + quoted(staging) + " -T " +
          quoted(list);
  } else {
    const fs::path script = list.parent_path() / "mktar.py";
    write_file(script,
               "import os, sys, tarfile\n"
               "out, fmt, staging, listfile = sys.argv[1:5]\n"
               "formats = {'gnu': tarfile.GNU_FORMAT, 'pax': tarfile.PAX_FORMAT, 'ustar': tarfile.USTAR_FORMAT}\n"
               "kw = {'pax_headers': {'comment': 'a global header'}} if fmt == 'pax' else {}\n"
               "names = open(listfile, 'rb').read().split(b'\\0')[:-1]\n"
               "with tarfile.open(out, 'w', format=formats[fmt], **kw) as t:\n"
               "    for n in names:\n"
               "        t.add(os.path.join(staging, os.fsdecode(n)), arcname=os.fsdecode(n), recursive=False)\n");
    cmd = std::string(python) + " " + quoted(script) + " " + quoted(out) + " " + format + " " + quoted(staging) + " " +
          quoted(list);
  }
  INFO(cmd);
  REQUIRE(run(cmd) == 0);
}

// Checks that the index points at exactly the bytes of each sample.
void check_index(const dataset& ds, const std::vector<expected_sample>& expected, std::uint32_t shard = 0,
                 std::size_t first = 0) {
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const std::size_t i = first + k;
    INFO("sample " << i << " expected " << expected[k].name);
    REQUIRE(i < ds.size());
    CHECK(ds.name(i) == expected[k].name);
    CHECK(ds.label(i) == expected[k].label);
    const sample_location loc = ds.location(i);
    CHECK(loc.shard == shard);
    CHECK(loc.base.empty());
    CHECK(loc.path == ds.shards()[shard].path);
    REQUIRE(loc.size == expected[k].content.size());
    CHECK(pread_exact(std::string(loc.path), loc.offset, loc.size) == expected[k].content);
  }
}

}  // namespace

TEST_CASE("tar: split_webdataset_name matches webdataset's base_plus_ext regex", "[tar]") {
  // Expected values from Python: re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", name).
  auto split = [](std::string_view n) -> std::optional<std::pair<std::string, std::string>> {
    const auto r = split_webdataset_name(n);
    if (!r) return std::nullopt;
    return std::pair<std::string, std::string>(r->key, r->suffix);
  };
  using p = std::pair<std::string, std::string>;
  CHECK(split("a/b.c.jpg") == p{"a/b", "c.jpg"});
  CHECK(split("x/y/.z.jpg") == p{"x/y/", "z.jpg"});
  CHECK(split("dir.v2/key.jpg") == p{"dir.v2/key", "jpg"});
  CHECK(split("a/.hidden.jpg") == p{"a/", "hidden.jpg"});
  CHECK(split("k.JPG") == p{"k", "JPG"});
  CHECK(split("./key.jpg") == p{"./key", "jpg"});
  CHECK(split("x/y/z.tar.gz") == p{"x/y/z", "tar.gz"});
  CHECK(split("__meta__/x.jpg") == p{"__meta__/x", "jpg"});
  CHECK(split("a..b") == p{"a", ".b"});
  CHECK_FALSE(split("noext"));
  CHECK_FALSE(split("a.b/c"));
  CHECK_FALSE(split(".hidden"));
  CHECK_FALSE(split("a/b/c"));
  CHECK_FALSE(split("x/y.z/w"));
  CHECK_FALSE(split("__key__"));
  CHECK(is_webdataset_meta("__key__"));
  CHECK(is_webdataset_meta("__meta__/x.jpg"));
  CHECK(is_webdataset_meta("____"));
  CHECK_FALSE(is_webdataset_meta("__index__.json"));
  CHECK_FALSE(is_webdataset_meta("a/__b__"));
  CHECK_FALSE(is_webdataset_meta("s000.jpg"));
}

TEST_CASE("tar: GNU tar and Python tarfile archives (gnu, pax, ustar) index to the exact bytes", "[tar]") {
  struct variant {
    std::string tool, format;
    bool long_basename;
  };
  const std::vector<variant> variants{{"gnutar", "gnu", true},  {"gnutar", "pax", true}, {"python", "gnu", true},
                                      {"python", "pax", true},  {"python", "ustar", false}};
  for (const auto& v : variants) {
    DYNAMIC_SECTION(v.tool << " --format=" << v.format) {
      temp_dir tmp;
      const auto expected = stage(tmp.path() / "staging", tmp.path() / "list", shard_members(v.long_basename));
      const fs::path shard = tmp.path() / "shard.tar";
      make_tar(v.tool, v.format, shard, tmp.path() / "staging", tmp.path() / "list");

      // The raw member list: long names, non-regular types.
      tar_reader reader(shard);
      std::vector<tar_member> members;
      while (auto m = reader.next()) members.push_back(std::move(*m));
      const auto find = [&](const std::string& name) {
        return std::find_if(members.begin(), members.end(), [&](const tar_member& m) { return m.name == name; });
      };
      REQUIRE(find("adir") != members.end());
      CHECK(find("adir")->type == '5');
      REQUIRE(find("link.jpg") != members.end());
      CHECK(find("link.jpg")->type == '2');
      REQUIRE(find("hard.jpg") != members.end());
      CHECK(find("hard.jpg")->type == '1');
      CHECK(find(long_dir + "/s002.png") != members.end());
      if (v.long_basename) CHECK(find(long_key + ".jpg") != members.end());

      dataset_options opt;
      opt.cache_dir = tmp.path() / "cache";
      const dataset ds = index_tar_shards({shard}, opt);
      CHECK(ds.kind() == dataset_kind::tar_shards);
      REQUIRE(ds.size() == expected.size());
      REQUIRE(ds.shards().size() == 1);
      CHECK(ds.shards()[0].path == shard.string());
      CHECK(ds.shards()[0].size == fs::file_size(shard));
      check_index(ds, expected);
      CHECK(ds.describe(1) == shard.string() + ":s001.JPEG");
      CHECK(ds.classes().empty());
      CHECK(ds.num_classes() == 13);
    }
  }
}

TEST_CASE("tar: malformed shards and samples are errors naming the shard", "[tar]") {
  temp_dir tmp;
  const fs::path staging = tmp.path() / "staging";
  const fs::path list = tmp.path() / "list";
  const fs::path shard = tmp.path() / "bad.tar";
  dataset_options opt;
  opt.use_cache = false;
  auto build = [&](const std::vector<member>& members) {
    fs::remove_all(staging);
    std::string names;
    for (const auto& m : members) {
      write_file(staging / m.name, m.content);
      names += m.name + '\0';
    }
    write_file(list, names);
    fs::remove(shard);
    make_tar("python", "gnu", shard, staging, list);
  };
  auto error_of = [&]() -> std::string {
    try {
      (void)index_tar_shards({shard}, opt);
    } catch (const dataset_error& e) {
      CHECK(e.path() == shard.string());
      return e.what();
    }
    return "no error";
  };

  build({{"d1.jpg", "a"}, {"d1.JPG", "b"}, {"d1.cls", "1"}});
  CHECK_THAT(error_of(), Catch::Contains("duplicate file name in tar file: 'd1.JPG' repeats suffix 'jpg'"));
  build({{"m1.jpg", "a"}, {"m2.jpg", "b"}, {"m2.cls", "2"}});
  CHECK_THAT(error_of(), Catch::Contains("sample 'm1' has no .cls label member"));
  opt.require_labels = false;
  {
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(samples_of(ds) == sample_list{{"m1.jpg", -1}, {"m2.jpg", 2}});
  }
  opt.require_labels = true;
  build({{"c1.jpg", "a"}, {"c1.cls", "seven"}});
  CHECK_THAT(error_of(), Catch::Contains("label member 'c1.cls' holds 'seven', not an integer"));
  build({{"x1.json", "{}"}, {"x1.cls", "1"}});
  CHECK_THAT(error_of(), Catch::Contains("sample 'x1' has no image member"));

  // Damaged archives.
  build({{"a.jpg", random_string(3000, 9)}, {"a.cls", "1"}, {"b.jpg", "b"}, {"b.cls", "2"}});
  const std::string good = read_text(shard);
  std::string bad = good;
  bad[512 + 3072 + 10] ^= 0x20;  // inside the second header's name field
  write_file(shard, bad);
  CHECK_THAT(error_of(), Catch::Contains("bad header checksum (header at offset 3584)"));
  write_file(shard, good.substr(0, 2000));
  CHECK_THAT(error_of(), Catch::Contains("member 'a.jpg' (header at offset 0) claims 3000 bytes but the file ends at 2000"));
  write_file(shard, good.substr(0, 512 + 3072 + 100));
  CHECK_THAT(error_of(), Catch::Contains("truncated header at offset 3584"));
  write_file(shard, "");  // was read as a shard of no sample, silently
  CHECK_THAT(error_of(), Catch::Contains("empty file, not a tar archive"));
  REQUIRE_THROWS_AS(index_tar_shards({tmp.path() / "missing.tar"}, opt), std::system_error);
}

TEST_CASE("tar: the shard index is saved beside the shard, reused, and invalidated", "[tar][cache]") {
  temp_dir tmp;
  const auto expected = stage(tmp.path() / "staging", tmp.path() / "list", shard_members(true));
  const fs::path dir = tmp.path() / "shards";
  fs::create_directories(dir);
  const fs::path shard = dir / "train-000000.tar";
  make_tar("gnutar", "gnu", shard, tmp.path() / "staging", tmp.path() / "list");
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";
  const fs::path beside = shard.string() + ".ringfeed.idx";

  SECTION("a shard modified just now is indexed but not saved (its mtime may still change)") {
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(ds.report().shards_indexed == 1);
    CHECK_THAT(ds.report().cache_note, Catch::Contains("modified less than 2 s ago"));
    CHECK_FALSE(fs::exists(beside));
    CHECK(ds.shards()[0].index_path.empty());
  }

  backdate(dir);
  const dataset first = index_tar_shards({shard}, opt);
  CHECK(first.report().shards_indexed == 1);
  CHECK(first.report().shards_from_cache == 0);
  CHECK(first.report().cache_note.empty());
  CHECK(first.shards()[0].index_path == beside.string());
  REQUIRE(fs::exists(beside));
  check_index(first, expected);

  const dataset again = index_tar_shards({shard}, opt);
  CHECK(again.report().shards_from_cache == 1);
  CHECK(again.report().shards_indexed == 0);
  check_index(again, expected);

  SECTION("a new mtime invalidates") {
    fs::last_write_time(shard, fs::last_write_time(shard) + std::chrono::seconds(5));
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(ds.report().shards_indexed == 1);
    check_index(ds, expected);
  }
  SECTION("new contents invalidate (and the new offsets are right)") {
    const auto fewer = stage(tmp.path() / "staging2", tmp.path() / "list2", shard_members(false));
    fs::remove(shard);
    make_tar("python", "pax", shard, tmp.path() / "staging2", tmp.path() / "list2");
    fs::last_write_time(shard, fs::file_time_type::clock::now() - std::chrono::hours(2));
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(ds.report().shards_indexed == 1);
    REQUIRE(ds.size() == fewer.size());
    check_index(ds, fewer);
    CHECK(index_tar_shards({shard}, opt).report().shards_from_cache == 1);
  }
  SECTION("a corrupt index is rebuilt") {
    write_file(beside, "not an index");
    fs::last_write_time(beside, fs::last_write_time(shard));
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(ds.report().shards_indexed == 1);
    check_index(ds, expected);
  }
  SECTION("when the index cannot be written beside the shard it goes to the cache dir") {
    fs::remove(beside);
    fs::create_directories(beside);  // blocks the rename, even for root
    const dataset ds = index_tar_shards({shard}, opt);
    CHECK(ds.report().shards_indexed == 1);
    const std::string cached = ds.shards()[0].index_path;
    CHECK_THAT(cached, Catch::StartsWith(opt.cache_dir.string()));
    const dataset reused = index_tar_shards({shard}, opt);
    CHECK(reused.report().shards_from_cache == 1);
    CHECK(reused.shards()[0].index_path == cached);
    check_index(reused, expected);
  }
  SECTION("index_beside_shards = false uses only the cache dir") {
    dataset_options no_beside = opt;
    no_beside.index_beside_shards = false;
    const fs::path stale = opt.cache_dir / "tar-00000000000000a1.idx";  // a shard indexed long ago
    write_file(stale, "x");
    fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(24 * 40));
    const dataset ds = index_tar_shards({shard}, no_beside);
    CHECK(ds.report().shards_indexed == 1);
    const fs::path cached = ds.shards()[0].index_path;
    CHECK_THAT(cached.string(), Catch::StartsWith(opt.cache_dir.string()));
    CHECK_FALSE(fs::exists(stale));  // the sweep after the write (index_cache.hpp)
    fs::last_write_time(cached, fs::file_time_type::clock::now() - std::chrono::hours(24 * 40));
    CHECK(index_tar_shards({shard}, no_beside).report().shards_from_cache == 1);
    CHECK(fs::file_time_type::clock::now() - fs::last_write_time(cached) < std::chrono::hours(1));  // read: in use
  }
  SECTION("a read-only shard directory falls back to the cache dir") {
    if (::geteuid() == 0) {
      std::printf("tar cache: running as root, so a mode-0555 directory stays writable; the fallback is covered "
                  "by the blocked-rename section instead\n");
    } else {
      fs::remove(beside);
      fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
      const dataset ds = index_tar_shards({shard}, opt);
      fs::permissions(dir, fs::perms::owner_all);
      CHECK_THAT(ds.shards()[0].index_path, Catch::StartsWith(opt.cache_dir.string()));
    }
  }
}

TEST_CASE("tar: many shards by brace range, glob or directory", "[tar]") {
  temp_dir tmp;
  const fs::path dir = tmp.path() / "shards";
  fs::create_directories(dir);
  std::vector<std::vector<expected_sample>> per_shard;
  for (int s = 0; s < 3; ++s) {
    const fs::path staging = tmp.path() / ("staging" + std::to_string(s));
    std::vector<member> members;
    std::vector<expected_sample> expected;
    for (int k = 0; k < 2; ++k) {
      const std::string key = "s" + std::to_string(s) + "_" + std::to_string(k);
      const std::string content = random_string(100 + static_cast<std::size_t>(k) * 700, static_cast<unsigned>(s * 10 + k));
      members.push_back({key + ".jpg", content});
      members.push_back({key + ".cls", std::to_string(s * 2 + k)});
      expected.push_back({key + ".jpg", content, s * 2 + k});
    }
    std::string names;
    for (const auto& m : members) {
      write_file(staging / m.name, m.content);
      names += m.name + '\0';
    }
    write_file(tmp.path() / "list", names);
    char name[32];
    std::snprintf(name, sizeof name, "train-%06d.tar", s);
    make_tar("gnutar", "gnu", dir / name, staging, tmp.path() / "list");
    per_shard.push_back(expected);
  }
  backdate(dir);
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";

  CHECK(expand_braces("a{000..002}b") == std::vector<std::string>{"a000b", "a001b", "a002b"});
  CHECK(expand_braces("{a,b}{1..2}") == std::vector<std::string>{"a1", "a2", "b1", "b2"});
  CHECK(expand_braces("x{3..1}") == std::vector<std::string>{"x3", "x2", "x1"});
  CHECK(expand_braces("x{08..10}") == std::vector<std::string>{"x08", "x09", "x10"});
  CHECK(expand_braces("{a,{b,c}d}") == std::vector<std::string>{"a", "bd", "cd"});
  CHECK(expand_braces("plain") == std::vector<std::string>{"plain"});
  CHECK(expand_braces("{word}") == std::vector<std::string>{"{word}"});
  CHECK_THROWS_AS(expand_braces("a{1..2"), std::invalid_argument);
  CHECK_THROWS_AS(expand_braces("a}"), std::invalid_argument);

  const std::string brace = (dir / "train-{000000..000002}.tar").string();
  const std::string glob = (dir / "*.tar").string();
  const dataset by_brace = open_dataset(brace, opt);  // indexes the 3 shards, in parallel
  CHECK(by_brace.report().shards_indexed == 3);
  CHECK(by_brace.source() == brace);
  const dataset by_glob = open_dataset(glob, opt);
  const dataset by_dir = open_dataset(dir.string(), opt);
  CHECK(by_glob.report().shards_from_cache == 3);
  CHECK(by_dir.report().shards_from_cache == 3);  // the .ringfeed.idx files beside are not shards
  for (const dataset* ds : {&by_brace, &by_glob, &by_dir}) {
    REQUIRE(ds->size() == 6);
    REQUIRE(ds->shards().size() == 3);
    for (std::uint32_t s = 0; s < 3; ++s) {
      char name[32];
      std::snprintf(name, sizeof name, "train-%06d.tar", s);
      CHECK(ds->shards()[s].path == (dir / name).string());
      check_index(*ds, per_shard[s], s, s * 2);
    }
  }
  CHECK(expand_shard_pattern((dir / "train-00000[02].tar").string()).size() == 2);
  CHECK_THROWS_WITH(open_dataset((dir / "nothing-*.tar").string(), opt), Catch::Contains("no shard matches"));
  CHECK_THROWS_AS(open_dataset((dir / "train-{000000..000005}.tar").string(), opt), std::system_error);
}
