// Dataset index tests: ImageFolder order against torchvision, the index
// cache, manifests and source strings. (Tar shards: tar_tests.cpp.)
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/url.hpp>

#include "data_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed::data;
using namespace ringfeed::test::data_support;
using ringfeed::test::temp_dir;

namespace {

// --- the tricky ImageFolder tree ------------------------------------------

// Builds <tmp>/root and <tmp>/outside (symlink targets).
fs::path make_tricky_tree(const fs::path& tmp) {
  const fs::path root = tmp / "root";
  const fs::path outside = tmp / "outside";
  for (const char* f : {"Zebra/b.JPEG", "Zebra/a.jpg", "Zebra/c.txt", "Zebra/d.Png", "Zebra/nested/x.jpeg",
                        "Zebra/nested/deeper/z.JPG", "Zebra/nested-b/y.jpg", "Zebra/dir.jpg/inner.png", "_under/u.jpg",
                        "apple/1.jpg", "apple/10.jpg", "apple/2.jpg", "apple/.hidden.jpg", "apple/.hiddendir/h.jpg",
                        "apple/img.webp", "apple/f.tif", "apple/g.tiff", "apple/h.bmp", "apple/i.pgm", "apple/j.ppm",
                        "apple/k.jpeg.bak", "apple/noext", "ünïcode/é.jpg", "ünïcode/e.jpg", "ünïcode/z.jpg",
                        "ünïcode/日本.png", "ünïcode/bad\xff.jpg", "ünïcode/bad😀.jpg", ".cache/x.jpg",
                        "file_at_root.jpg"}) {
    write_file(root / f, "x");
  }
  write_file(outside / "o.jpg", "o");
  write_file(outside / "dir/p.png", "p");
  write_file(outside / "dir/q.txt", "q");
  write_file(outside / "cls/m.jpg", "m");
  write_file(outside / "cls/n.JPG", "n");
  fs::create_symlink(tmp / "does-not-exist.jpg", root / "Zebra/broken.jpg");
  fs::create_symlink(outside / "o.jpg", root / "apple/link_to_file.jpg");
  fs::create_symlink(outside / "dir", root / "apple/linkdir");
  fs::create_symlink(outside / "cls", root / "banana_link");
  return root;
}

// torchvision 0.14's ImageFolder(root).samples on the tricky tree, relative
// to root (hidden entries included: torchvision keeps them).
const sample_list& torchvision_expected() {
  static const sample_list list{
      {".cache/x.jpg", 0},
      {"Zebra/a.jpg", 1},
      {"Zebra/b.JPEG", 1},
      {"Zebra/broken.jpg", 1},
      {"Zebra/d.Png", 1},
      {"Zebra/dir.jpg/inner.png", 1},
      {"Zebra/nested/x.jpeg", 1},
      {"Zebra/nested-b/y.jpg", 1},
      {"Zebra/nested/deeper/z.JPG", 1},
      {"_under/u.jpg", 2},
      {"apple/.hidden.jpg", 3},
      {"apple/1.jpg", 3},
      {"apple/10.jpg", 3},
      {"apple/2.jpg", 3},
      {"apple/f.tif", 3},
      {"apple/g.tiff", 3},
      {"apple/h.bmp", 3},
      {"apple/i.pgm", 3},
      {"apple/img.webp", 3},
      {"apple/j.ppm", 3},
      {"apple/link_to_file.jpg", 3},
      {"apple/.hiddendir/h.jpg", 3},
      {"apple/linkdir/p.png", 3},
      {"banana_link/m.jpg", 4},
      {"banana_link/n.JPG", 4},
      {"ünïcode/bad\xff.jpg", 5},
      {"ünïcode/bad😀.jpg", 5},
      {"ünïcode/e.jpg", 5},
      {"ünïcode/z.jpg", 5},
      {"ünïcode/é.jpg", 5},
      {"ünïcode/日本.png", 5},
  };
  return list;
}

const std::vector<std::string>& torchvision_classes() {
  static const std::vector<std::string> c{".cache", "Zebra", "_under", "apple", "banana_link", "ünïcode"};
  return c;
}

bool has_hidden_component(const std::string& rel) {
  std::size_t start = 0;
  while (start < rel.size()) {
    if (rel[start] == '.') return true;
    const std::size_t slash = rel.find('/', start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return false;
}

// torchvision's list without hidden entries, labels renumbered: what the
// default (include_hidden = false) must give.
sample_list without_hidden(const sample_list& list, const std::vector<std::string>& classes,
                           std::vector<std::string>& kept_classes) {
  std::map<std::int64_t, std::int64_t> relabel;
  kept_classes.clear();
  for (std::size_t c = 0; c < classes.size(); ++c) {
    if (classes[c].front() == '.') continue;
    relabel[static_cast<std::int64_t>(c)] = static_cast<std::int64_t>(kept_classes.size());
    kept_classes.push_back(classes[c]);
  }
  sample_list out;
  for (const auto& [path, label] : list) {
    if (!has_hidden_component(path)) out.emplace_back(path, relabel.at(label));
  }
  return out;
}

// Runs torchvision's ImageFolder on `root`; fills classes and samples
// (paths relative to root, bytes as on disk).
void run_torchvision(const fs::path& root, const fs::path& work, std::vector<std::string>& classes,
                     sample_list& samples) {
  const fs::path script = work / "tv.py";
  const fs::path out = work / "tv.out";
  write_file(script,
             "import os, sys\n"
             "from torchvision.datasets import ImageFolder\n"
             "root, out = sys.argv[1], sys.argv[2]\n"
             "ds = ImageFolder(root, loader=lambda p: p)\n"
             "with open(out, 'wb') as f:\n"
             "    for c in ds.classes: f.write(b'C' + os.fsencode(c) + b'\\0')\n"
             "    for p, l in ds.samples:\n"
             "        assert p.startswith(root + '/')\n"
             "        f.write(b'S' + os.fsencode(p[len(root) + 1:]) + b'\\0' + str(l).encode() + b'\\0')\n");
  REQUIRE(run(std::string(python) + " " + quoted(script) + " " + quoted(root) + " " + quoted(out)) == 0);
  const std::string bytes = read_text(out);
  std::size_t pos = 0;
  auto field = [&] {
    const std::size_t end = bytes.find('\0', pos);
    REQUIRE(end != std::string::npos);
    std::string s = bytes.substr(pos, end - pos);
    pos = end + 1;
    return s;
  };
  while (pos < bytes.size()) {
    const char tag = bytes[pos++];
    if (tag == 'C') {
      classes.push_back(field());
    } else {
      REQUIRE(tag == 'S');
      std::string path = field();
      samples.emplace_back(path, std::stoll(field()));
    }
  }
}

}  // namespace

TEST_CASE("ImageFolder: order and labels equal torchvision 0.14 on a tricky tree", "[image_folder]") {
  temp_dir tmp;
  const fs::path root = make_tricky_tree(tmp.path());
  dataset_options opt;
  opt.use_cache = false;

  SECTION("include_hidden = true is torchvision exactly") {
    opt.include_hidden = true;
    const dataset ds = scan_image_folder(root, opt);
    CHECK(ds.classes() == torchvision_classes());
    CHECK(samples_of(ds) == torchvision_expected());
    if (python_has("torchvision")) {
      std::vector<std::string> classes;
      sample_list samples;
      run_torchvision(root, tmp.path(), classes, samples);
      std::printf("ImageFolder parity: compared with torchvision's ImageFolder run now (%zu samples)\n",
                  samples.size());
      CHECK(classes == torchvision_classes());
      CHECK(samples == torchvision_expected());
      CHECK(samples_of(ds) == samples);
    } else {
      std::printf("ImageFolder parity: torchvision is not importable by %s; compared with the expected list "
                  "written in this test (recorded from torchvision 0.14.1)\n",
                  python);
    }
  }

  SECTION("default ignores hidden entries, otherwise torchvision's order") {
    std::vector<std::string> kept_classes;
    const sample_list expected = without_hidden(torchvision_expected(), torchvision_classes(), kept_classes);
    const dataset ds = scan_image_folder(root, opt);
    CHECK(ds.kind() == dataset_kind::image_folder);
    CHECK(ds.classes() == kept_classes);
    CHECK(ds.num_classes() == kept_classes.size());
    CHECK(samples_of(ds) == expected);
    // Where the bytes are: relative to the root given.
    const auto loc = ds.location(0);
    CHECK(loc.base == root.string());
    CHECK(loc.path == "Zebra/a.jpg");
    CHECK(loc.shard == no_shard);
    CHECK(loc.offset == 0);
    CHECK(loc.size == unknown_size);
    CHECK(ds.path(0) == (root / "Zebra/a.jpg").string());
    CHECK(ds.describe(0) == ds.path(0));
  }

  SECTION("a listed tree (an nfs:// export) gives the same index, with the listing's sizes") {
    // A lister over the local tree that reports what an NFS READDIRPLUS
    // does after the server resolved links: kinds and sizes of the targets
    // (a broken link is a file of unknown size).
    std::atomic<int> calls{0};
    const directory_lister list = [&](const std::string& rel) {
      ++calls;
      std::vector<listed_entry> out;
      for (const auto& e : fs::directory_iterator(rel.empty() ? root : root / rel)) {
        std::error_code ec;
        const bool dir = fs::is_directory(e.path(), ec);
        const auto size = dir ? unknown_size : fs::file_size(e.path(), ec);
        out.push_back({e.path().filename().string(), dir, ec ? unknown_size : size});
      }
      std::reverse(out.begin(), out.end());  // any order
      return out;
    };
    for (const bool hidden : {false, true}) {
      CAPTURE(hidden);
      opt.include_hidden = hidden;
      const dataset local = scan_image_folder(root, opt);
      const dataset listed = scan_listed_image_folder("nfs://srv/export/tree/", list, opt);
      CHECK(listed.classes() == local.classes());
      CHECK(samples_of(listed) == samples_of(local));
      CHECK(listed.root() == "nfs://srv/export/tree");
      CHECK(listed.path(0) == "nfs://srv/export/tree/" + std::string(local.name(0)));
      for (std::size_t i = 0; i < listed.size(); ++i) {
        std::error_code ec;
        const auto size = fs::file_size(root / std::string(local.name(i)), ec);
        CHECK(listed.location(i).size == (ec ? unknown_size : size));
      }
    }
    CHECK(calls > 5);
    // The root of a deeper export keeps its "//".
    CHECK(scan_listed_image_folder("nfs://srv/a/b//", list, opt).path(0).rfind("nfs://srv/a/b//", 0) == 0);
    // Errors: no class folder; a class without images; the lister's own.
    CHECK_THROWS_WITH(scan_listed_image_folder("nfs://s/e", [](const std::string&) { return std::vector<listed_entry>{}; }),
                      Catch::Contains("nfs://s/e") && Catch::Contains("class folder"));
    const directory_lister empty_class = [](const std::string& rel) {
      return rel.empty() ? std::vector<listed_entry>{{"cat", true, unknown_size}} : std::vector<listed_entry>{{"a.txt", false, 3}};
    };
    CHECK_THROWS_WITH(scan_listed_image_folder("nfs://s/e", empty_class), Catch::Contains("cat"));
    const directory_lister failing = [](const std::string&) -> std::vector<listed_entry> {
      throw std::runtime_error("nfs://s/e: server went away");
    };
    CHECK_THROWS_WITH(scan_listed_image_folder("nfs://s/e", failing), Catch::Contains("server went away"));
  }

  SECTION("more scan threads than classes, and one thread, give the same index") {
    opt.scan_threads = 1;
    const auto one = samples_of(scan_image_folder(root, opt));
    opt.scan_threads = 32;
    CHECK(samples_of(scan_image_folder(root, opt)) == one);
  }
}

TEST_CASE("ImageFolder: errors name the folder and the reason", "[image_folder]") {
  temp_dir tmp;
  dataset_options opt;
  opt.use_cache = false;
  const fs::path root = tmp.path() / "ds";

  SECTION("a class without images") {
    write_file(root / "good/a.jpg", "x");
    write_file(root / "empty/readme.txt", "x");
    fs::create_directories(root / "void");
    try {
      (void)scan_image_folder(root, opt);
      FAIL("no exception");
    } catch (const dataset_error& e) {
      const std::string what = e.what();
      CHECK(e.path() == root.string());
      CHECK_THAT(what, Catch::Contains("found no valid file for the classes empty, void"));
      CHECK_THAT(what, Catch::Contains((root / "empty").string()));
      CHECK_THAT(what, Catch::Contains("Supported extensions are: .jpg, .jpeg, .png"));
    }
  }
  SECTION("no class folder") {
    write_file(root / "a.jpg", "x");
    REQUIRE_THROWS_WITH(scan_image_folder(root, opt), Catch::Contains("couldn't find any class folder"));
  }
  SECTION("missing root") {
    REQUIRE_THROWS_AS(scan_image_folder(root, opt), std::system_error);
    REQUIRE_THROWS_WITH(scan_image_folder(root, opt), Catch::Contains(root.string()));
  }
}

TEST_CASE("ImageFolder: a symlink loop is walked once", "[image_folder]") {
  temp_dir tmp;
  const fs::path root = tmp.path() / "ds";
  write_file(root / "c/a.jpg", "x");
  write_file(root / "c/sub/b.jpg", "x");
  fs::create_symlink(root / "c", root / "c/sub/back");  // c/sub/back/sub/back/...
  fs::create_symlink(root, root / "c/up");               // up to the root: c is inside it again
  dataset_options opt;
  opt.use_cache = false;
  const dataset ds = scan_image_folder(root, opt);
  // "c/up" (the root) is walked once: its class folder c is the loop.
  CHECK(samples_of(ds) == sample_list{{"c/a.jpg", 0}, {"c/sub/b.jpg", 0}});
}

TEST_CASE("ImageFolder: a FIFO or a device named like an image is left out, or stops the scan", "[image_folder]") {
  // Its read blocked for ever (a FIFO: Ctrl-C too) or never ended (/dev/zero).
  temp_dir tmp;
  const fs::path root = tmp.path() / "ds";
  write_file(root / "c/a.jpg", "x");
  REQUIRE(::mkfifo((root / "c/pipe.jpg").c_str(), 0644) == 0);
  fs::create_symlink("/dev/zero", root / "c/zero.jpg");
  fs::create_symlink(root / "c/missing.jpg", root / "c/dangling.jpg");  // fails at its read, named
  dataset_options opt;
  opt.use_cache = false;
  CHECK_THROWS_WITH(scan_image_folder(root, opt),
                    Catch::Contains("pipe.jpg") && Catch::Contains("not a regular file but a FIFO"));
  opt.skip_unreadable = true;
  const dataset ds = scan_image_folder(root, opt);
  CHECK(samples_of(ds) == sample_list{{"c/a.jpg", 0}, {"c/dangling.jpg", 0}});
  REQUIRE(ds.report().skipped.size() == 2);
  CHECK_THAT(ds.report().skipped[0].path, Catch::EndsWith("c/pipe.jpg"));
  CHECK_THAT(ds.report().skipped[1].reason, Catch::Contains("a character device"));
}

TEST_CASE("ImageFolder: the cached index is reused and invalidated by directory changes", "[image_folder][cache]") {
  temp_dir tmp;
  const fs::path root = make_tricky_tree(tmp.path());
  backdate(tmp.path());
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";

  const dataset first = scan_image_folder(root, opt);
  INFO(first.report().cache_note);
  CHECK_FALSE(first.report().from_cache);
  CHECK(first.report().cache_note.empty());
  REQUIRE(fs::exists(first.report().cache_path));
  CHECK(first.report().directories >= 10);

  const dataset second = scan_image_folder(root, opt);
  CHECK(second.report().from_cache);
  CHECK(samples_of(second) == samples_of(first));
  CHECK(second.classes() == first.classes());

  SECTION("a file added to a nested directory") {
    write_file(root / "Zebra/nested/deeper/new.jpg", "x");
    const dataset third = scan_image_folder(root, opt);
    CHECK_FALSE(third.report().from_cache);
    CHECK_THAT(third.report().cache_note, Catch::Contains("not cached"));  // racy: just modified
    CHECK(third.size() == first.size() + 1);
    backdate(tmp.path());
    const dataset fourth = scan_image_folder(root, opt);
    CHECK_FALSE(fourth.report().from_cache);
    CHECK(fourth.report().cache_note.empty());
    CHECK(scan_image_folder(root, opt).report().from_cache);
    CHECK(samples_of(fourth) == samples_of(third));
  }
  SECTION("a file added behind a symlinked directory") {
    write_file(tmp.path() / "outside/dir/new.png", "x");
    const dataset third = scan_image_folder(root, opt);
    CHECK_FALSE(third.report().from_cache);
    CHECK(third.size() == first.size() + 1);
  }
  SECTION("a class renamed") {
    fs::rename(root / "_under", root / "under");
    const dataset third = scan_image_folder(root, opt);
    CHECK_FALSE(third.report().from_cache);
    CHECK(third.classes().back() == "ünïcode");
    CHECK(std::find(third.classes().begin(), third.classes().end(), "under") != third.classes().end());
  }
  SECTION("other options use another cache entry") {
    dataset_options hidden = opt;
    hidden.include_hidden = true;
    const dataset h = scan_image_folder(root, hidden);
    CHECK_FALSE(h.report().from_cache);
    CHECK(h.report().cache_path != first.report().cache_path);
    CHECK(samples_of(h) == torchvision_expected());
    CHECK(scan_image_folder(root, hidden).report().from_cache);
    CHECK(scan_image_folder(root, opt).report().from_cache);
  }
  SECTION("a corrupt cache file is rebuilt") {
    std::string bytes = read_text(first.report().cache_path);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x55);
    write_file(first.report().cache_path, bytes);
    const dataset third = scan_image_folder(root, opt);
    CHECK_FALSE(third.report().from_cache);
    CHECK(samples_of(third) == samples_of(first));
    write_file(first.report().cache_path, "short");
    CHECK_FALSE(scan_image_folder(root, opt).report().from_cache);
  }
  SECTION("use_cache = false neither reads nor writes") {
    dataset_options off = opt;
    off.use_cache = false;
    const dataset third = scan_image_folder(root, off);
    CHECK_FALSE(third.report().from_cache);
    CHECK(third.report().cache_path.empty());
  }
}

TEST_CASE("index cache: an index unused for 30 days is removed, one in use is kept", "[image_folder][cache]") {
  temp_dir tmp;
  const fs::path root = make_tricky_tree(tmp.path());
  backdate(tmp.path());
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";
  const fs::path cache = opt.cache_dir;
  const auto aged = [](const fs::path& p, int days) {
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(24 * days));
  };
  const auto days_old = [](const fs::path& p) {
    return std::chrono::duration_cast<std::chrono::hours>(fs::file_time_type::clock::now() - fs::last_write_time(p))
               .count() / 24;
  };
  for (const char* name : {"folder-00000000000000a1.idx", "tar-00000000000000a2.idx",
                           ".folder-00000000000000a3.idx.tmp-77", "folder-00000000000000b1.idx", "notes.idx",
                           "mine.txt"}) {
    write_file(cache / name, "x");
    aged(cache / name, std::string_view(name).find("b1") != std::string_view::npos ? 29 : 400);
  }
  const dataset first = scan_image_folder(root, opt);  // writes its index: the sweep runs
  REQUIRE(fs::exists(first.report().cache_path));
  CHECK_FALSE(fs::exists(cache / "folder-00000000000000a1.idx"));
  CHECK_FALSE(fs::exists(cache / "tar-00000000000000a2.idx"));
  CHECK_FALSE(fs::exists(cache / ".folder-00000000000000a3.idx.tmp-77"));  // a writer killed mid-write
  CHECK(fs::exists(cache / "folder-00000000000000b1.idx"));  // 29 days: still in use
  CHECK(fs::exists(cache / "notes.idx"));                    // not a name ringfeed writes
  CHECK(fs::exists(cache / "mine.txt"));

  SECTION("reading an index keeps it from the sweep") {
    aged(first.report().cache_path, 40);
    REQUIRE(scan_image_folder(root, opt).report().from_cache);
    CHECK(days_old(first.report().cache_path) == 0);
  }
  SECTION("the sweep runs at most once a day") {
    write_file(cache / "folder-00000000000000c1.idx", "x");
    aged(cache / "folder-00000000000000c1.idx", 400);
    fs::remove(first.report().cache_path);
    CHECK_FALSE(scan_image_folder(root, opt).report().from_cache);  // written again: no sweep today
    CHECK(fs::exists(cache / "folder-00000000000000c1.idx"));
    aged(cache / ".pruned", 2);
    fs::remove(first.report().cache_path);
    CHECK_FALSE(scan_image_folder(root, opt).report().from_cache);
    CHECK_FALSE(fs::exists(cache / "folder-00000000000000c1.idx"));
  }
}

// --- manifests ---------------------------------------------------------------

TEST_CASE("manifest: CSV with a header, quotes, CRLF and absolute paths", "[manifest]") {
  temp_dir tmp;
  const fs::path m = tmp.path() / "lists" / "train.csv";
  write_file(m,
             "\xEF\xBB\xBFpath,label\r\n"
             "a.jpg,0\r\n"
             "\"b,with,commas.jpg\",1\r\n"
             "\"quote\"\"d.jpg\",2,extra,columns\n"
             "\n"
             "/abs/c.jpg, 3 \n"
             "\"multi\nline.jpg\",4\n"
             "sub/dir/e.jpg,5");
  const dataset ds = read_manifest(m);
  CHECK(ds.kind() == dataset_kind::manifest);
  CHECK(samples_of(ds) == sample_list{{"a.jpg", 0},
                                      {"b,with,commas.jpg", 1},
                                      {"quote\"d.jpg", 2},
                                      {"/abs/c.jpg", 3},
                                      {"multi\nline.jpg", 4},
                                      {"sub/dir/e.jpg", 5}});
  CHECK(ds.path(0) == (tmp.path() / "lists" / "a.jpg").string());
  CHECK(ds.path(3) == "/abs/c.jpg");
  CHECK(ds.location(3).base.empty());
  CHECK(ds.location(5).base == (tmp.path() / "lists").string());
  CHECK(ds.classes().empty());
  CHECK(ds.num_classes() == 6);
}

TEST_CASE("manifest: TSV without a header", "[manifest]") {
  temp_dir tmp;
  const fs::path m = tmp.path() / "val.tsv";
  write_file(m, "x/a b.jpg\t10\nx/c,d.jpg\t2\n");
  const dataset ds = read_manifest(m);
  CHECK(samples_of(ds) == sample_list{{"x/a b.jpg", 10}, {"x/c,d.jpg", 2}});
  CHECK(ds.num_classes() == 11);
  // Another extension: the delimiter is found from the first line.
  const fs::path txt = tmp.path() / "val.list";
  write_file(txt, "file\tclass\nx.jpg\t1\n");
  CHECK(samples_of(read_manifest(txt)) == sample_list{{"x.jpg", 1}});
  // The largest label counts its classes without overflow (found by fuzz_manifest).
  const fs::path big = tmp.path() / "big.csv";
  write_file(big, "a.jpg,9223372036854775807\n");
  CHECK(read_manifest(big).num_classes() == std::size_t{9223372036854775807} + 1);
}

TEST_CASE("manifest: errors name the file and the line", "[manifest]") {
  temp_dir tmp;
  const fs::path m = tmp.path() / "bad.csv";
  auto error_of = [&](const std::string& text) -> std::string {
    write_file(m, text);
    try {
      (void)read_manifest(m);
    } catch (const dataset_error& e) {
      CHECK(e.path() == m.string());
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of("path,label\na.jpg,1\nb.jpg,two\n"),
             Catch::StartsWith(m.string() + ":3: label 'two' is not an integer"));
  CHECK_THAT(error_of("a.jpg,1\nb.jpg\n"), Catch::StartsWith(m.string() + ":2: expected path,label"));
  CHECK_THAT(error_of("a.jpg,1\n\"b.jpg,2\n"), Catch::StartsWith(m.string() + ":2: unterminated quoted field"));
  CHECK_THAT(error_of("a.jpg,1\n\"b\"x.jpg,2\n"), Catch::Contains(":2: unexpected character 'x' after a closing quote"));
  CHECK_THAT(error_of("a.jpg,1\n,2\n"), Catch::StartsWith(m.string() + ":2: empty path"));
  CHECK_THAT(error_of("path,label\n"), Catch::Contains("lists no sample"));
  // A typo in the first line's label was taken for a header: its sample gone.
  CHECK_THAT(error_of("a.jpg,1x\nb.jpg,0\n"), Catch::StartsWith(m.string() + ":1: label '1x' is not an integer"));
  CHECK_THAT(error_of("a.jpg,-\nb.jpg,0\n"), Catch::StartsWith(m.string() + ":1: label '-' is not an integer"));
  CHECK_THAT(error_of("a.jpg,99999999999999999999\n"), Catch::Contains("not an integer"));
  REQUIRE_THROWS_AS(read_manifest(tmp.path() / "missing.csv"), std::system_error);
  REQUIRE_THROWS_WITH(read_manifest(tmp.path() / "missing.csv"), Catch::Contains("missing.csv"));
}

// --- sources -----------------------------------------------------------------

TEST_CASE("sources: kinds, URLs and errors", "[source]") {
  temp_dir tmp;
  write_file(tmp.path() / "folder/cls/a.jpg", "x");
  write_file(tmp.path() / "list.csv", "folder/cls/a.jpg,0\n");
  write_file(tmp.path() / "other.bin", "x");
  CHECK(detect_source_kind((tmp.path() / "folder").string()) == source_kind::image_folder);
  CHECK(detect_source_kind((tmp.path() / "list.csv").string()) == source_kind::manifest);
  CHECK(detect_source_kind("/x/train.TSV") == source_kind::manifest);
  CHECK(detect_source_kind("/x/shard.tar") == source_kind::tar_shards);
  CHECK(detect_source_kind("/x/train-{0..9}.tar") == source_kind::tar_shards);
  CHECK(detect_source_kind("/x/*.tar") == source_kind::tar_shards);
  CHECK_THROWS_WITH(detect_source_kind("nfs://server/export/train"), Catch::Contains("opened by the loader"));
  CHECK_THROWS_AS(open_dataset("nfs://server/export/train"), dataset_error);
  CHECK_THROWS_WITH(detect_source_kind("s3://bucket/x"), Catch::Contains("unsupported URL scheme 's3://'"));
  CHECK_THROWS_AS(detect_source_kind((tmp.path() / "missing").string()), std::system_error);
  CHECK_THROWS_WITH(detect_source_kind((tmp.path() / "other.bin").string()), Catch::Contains("cannot tell"));

  dataset_options opt;
  opt.use_cache = false;
  const dataset folder = open_dataset((tmp.path() / "folder").string(), opt);
  CHECK(folder.kind() == dataset_kind::image_folder);
  CHECK(folder.size() == 1);
  const dataset manifest = open_dataset((tmp.path() / "list.csv").string(), opt);
  CHECK(manifest.kind() == dataset_kind::manifest);
  CHECK(manifest.path(0) == folder.path(0));
  // options.kind overrides detection.
  opt.kind = source_kind::manifest;
  write_file(tmp.path() / "list.txt", "folder/cls/a.jpg,0\n");
  CHECK(open_dataset((tmp.path() / "list.txt").string(), opt).size() == 1);
}

TEST_CASE("shard patterns: a local pattern expands as an s3:// one", "[source]") {
  temp_dir tmp;
  const fs::path dir = tmp.path() / "shards";
  for (const char* name : {"a.tar", "b.tar", "c.tar", "x{0..1}.tar"}) write_file(dir / name, "x");
  // `{a..c}` letter ranges and `\{` escapes, as io::expand_braces reads an
  // s3:// pattern.
  for (const std::string pattern : {"{a..c}.tar", R"(x\{0..1\}.tar)", "{c..a}.tar", "{a,b}{0..10..5}"}) {
    std::vector<std::string> local = expand_braces(pattern);
    for (auto& name : local) name.insert(0, "s3://b/");
    CHECK(local == ringfeed::io::expand_braces("s3://b/" + pattern));
  }
  CHECK(expand_shard_pattern((dir / "{a..c}.tar").string()) ==
        std::vector<fs::path>{dir / "a.tar", dir / "b.tar", dir / "c.tar"});
  CHECK(expand_shard_pattern((dir / R"(x\{0..1\}.tar)").string()) == std::vector<fs::path>{dir / "x{0..1}.tar"});
  CHECK_THROWS_WITH(expand_braces("{0..99999}{0..999}"), Catch::Contains("more than"));
}

TEST_CASE("sample_location::full_path joins base and path", "[source]") {
  std::string out = "reused";
  sample_location{"/data/train", "cls/a.jpg"}.full_path(out);
  CHECK(out == "/data/train/cls/a.jpg");
  sample_location{"/data/train/", "cls/a.jpg"}.full_path(out);
  CHECK(out == "/data/train/cls/a.jpg");
  sample_location{"/data/train", "/abs/a.jpg"}.full_path(out);
  CHECK(out == "/abs/a.jpg");
  sample_location{"", "rel/a.jpg"}.full_path(out);
  CHECK(out == "rel/a.jpg");
  CHECK(has_image_extension("x.JPEG"));
  CHECK(has_image_extension("x.WebP"));
  CHECK_FALSE(has_image_extension("x.jpeg.bak"));
  CHECK_FALSE(has_image_extension("jpg"));
}
