// Files and directories the process may not read (chmod 000) in an
// ImageFolder: the scan and the loader name each one with the reason, then
// leave it out (on_error skip, dataset_options::skip_unreadable) or stop
// (fail).
//
// Root reads a chmod 000 file anyway (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH),
// and these tests often run as root in containers. So before Catch2 starts,
// while the process has one thread, the skip check drops those two
// capabilities from it: every thread started later (the loader's, io_uring's
// workers) inherits the reduced set, and the permission bits apply, as they
// do for an ordinary user. It then proves that a chmod 000 file cannot be
// opened; where it still can (a file system ignoring the mode bits, a
// capability that cannot be dropped), the executable reports a skip with
// the reason (exit 77) instead of passing without testing anything.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::loader;
using ringfeed::loader_options;
using ringfeed::data::dataset_options;
using ringfeed::data::scan_image_folder;
using ringfeed::test::temp_dir;

namespace {

// Threads in this process, from /proc/self/status.
int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// Drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this (only) thread's
// effective and permitted sets. "" on success, else why not.
std::string drop_dac_capabilities() {
  // Capabilities belong to threads: with one thread, all later ones inherit.
  if (const int n = thread_count(); n != 1)
    return "cannot drop CAP_DAC_OVERRIDE process-wide: " + std::to_string(n) + " threads already run";
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return std::string("capget: ") + std::strerror(errno);
  for (const unsigned cap : {unsigned{CAP_DAC_OVERRIDE}, unsigned{CAP_DAC_READ_SEARCH}}) {
    data[cap / 32].effective &= ~(1u << (cap % 32));
    data[cap / 32].permitted &= ~(1u << (cap % 32));
  }
  if (::syscall(SYS_capset, &header, data) != 0) return std::string("capset: ") + std::strerror(errno);
  return {};
}

// The skip check: "" when chmod 000 denies this process access.
std::string chmod_denies_access() {
  if (std::string why = drop_dac_capabilities(); !why.empty()) return why;
  temp_dir tmp;
  const fs::path probe = tmp.path() / "probe";
  std::ofstream(probe) << "x";
  ::chmod(probe.c_str(), 0);
  const int fd = ::open(probe.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ::close(fd);
  return "a chmod 000 file can still be opened here (uid " + std::to_string(::getuid()) +
         ", file system in " + tmp.path().string() + " ignores permissions?): nothing to test";
}

ringfeed::test::skip_if_unavailable skip{chmod_denies_access};

// chmod 000 for the scope: restores 0755 (directories) or 0644 (files)
// before the temp_dir holding it is removed.
class no_access {
 public:
  explicit no_access(fs::path path) : m_path(std::move(path)), m_dir(fs::is_directory(m_path)) {
    REQUIRE(::chmod(m_path.c_str(), 0) == 0);
  }
  no_access(const no_access&) = delete;
  no_access& operator=(const no_access&) = delete;
  ~no_access() { ::chmod(m_path.c_str(), m_dir ? 0755 : 0644); }

 private:
  fs::path m_path;
  bool m_dir;
};

const char* const photo_names[] = {"astronaut.jpg", "brick_gray.jpg", "chelsea.jpg", "coffee.jpg"};

// root/{a,b,c}/ with 4 photos each, and a/sub/ with 4 more: 16 samples.
void make_tree(const fs::path& root) {
  const fs::path src = ringfeed::test::image_data::dir() / "photos";
  for (const char* dir : {"a", "a/sub", "b", "c"}) {
    fs::create_directories(root / dir);
    for (const char* name : photo_names) fs::copy_file(src / name, root / dir / name);
  }
}

std::string what_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no exception";
}

loader_options options_for(const fs::path& root) {
  loader_options o;
  o.source = root.string();
  o.dataset.use_cache = false;
  o.pipeline = ringfeed::image::pipeline::val(36, 32, ringfeed::image::pipeline_mode::fast);
  o.output = ringfeed::output_spec::uint8_nhwc();
  o.sampler.shuffle = false;
  o.batch_size = 5;
  o.threads = 2;
  o.io_depth = 4;
  o.device = -1;
  o.log = [](std::string_view) {};
  return o;
}

// Every label delivered in one epoch, in order.
std::vector<std::int64_t> labels_of_epoch(loader& l, std::uint64_t e) {
  std::vector<std::int64_t> labels;
  for (ringfeed::batch& b : l.epoch(e))
    for (std::size_t k = 0; k < b.size(); ++k) labels.push_back(b.labels()[k]);
  return labels;
}

}  // namespace

TEST_CASE("ImageFolder scan: an unreadable directory fails naming it, or is left out once", "[image_folder]") {
  temp_dir tmp;
  const fs::path root = tmp.path() / "ds";
  make_tree(root);
  dataset_options opt;
  opt.cache_dir = tmp.path() / "cache";
  no_access sub(root / "a" / "sub");
  no_access class_b(root / "b");

  SECTION("by default the scan stops with std::system_error naming the directory and the reason") {
    REQUIRE_THROWS_AS(scan_image_folder(root, opt), std::system_error);
    const std::string what = what_of([&] { (void)scan_image_folder(root, opt); });
    // Classes are scanned concurrently: either directory may be met first.
    const bool names_one = what.find((root / "a" / "sub").string()) != std::string::npos ||
                           what.find((root / "b").string()) != std::string::npos;
    CHECK(names_one);
    CHECK_THAT(what, Catch::Contains("Permission denied"));
  }

  SECTION("skip_unreadable: left out, named with the reason, labels kept, nothing cached") {
    opt.skip_unreadable = true;
    const auto ds = scan_image_folder(root, opt);
    REQUIRE(ds.classes() == std::vector<std::string>{"a", "b", "c"});  // b keeps label 1
    REQUIRE(ds.size() == 8);                                            // a's 4 and c's 4
    for (std::size_t i = 0; i < 4; ++i) CHECK(ds.label(i) == 0);
    for (std::size_t i = 4; i < 8; ++i) CHECK(ds.label(i) == 2);
    for (std::size_t i = 0; i < ds.size(); ++i) CHECK(ds.name(i).find("sub/") == std::string_view::npos);
    const auto& skipped = ds.report().skipped;
    REQUIRE(skipped.size() == 2);
    CHECK(skipped[0].path == (root / "a" / "sub").string());
    CHECK_THAT(skipped[0].reason, Catch::Contains("cannot open directory") && Catch::Contains("Permission denied"));
    CHECK(skipped[1].path == (root / "b").string());
    CHECK_THAT(skipped[1].reason, Catch::Contains("Permission denied"));
    CHECK_THAT(ds.report().cache_note, Catch::Contains("not cached") && Catch::Contains("2 unreadable"));

    // Readable again: the next scan finds every sample (no stale cached index).
    ::chmod((root / "a" / "sub").c_str(), 0755);
    ::chmod((root / "b").c_str(), 0755);
    const auto again = scan_image_folder(root, opt);
    CHECK(again.size() == 16);
    CHECK(again.report().skipped.empty());
    CHECK_FALSE(again.report().from_cache);
  }
}

TEST_CASE("loader on_error skip: unreadable files and directories are named, the epochs go on", "[loader]") {
  ringfeed::test::watchdog dog("loader over unreadable files", std::chrono::seconds(120));
  temp_dir tmp;
  const fs::path root = tmp.path() / "ds";
  make_tree(root);
  no_access file(root / "c" / "chelsea.jpg");
  no_access sub(root / "a" / "sub");
  auto o = options_for(root);
  o.on_error = ringfeed::error_policy::skip;
  std::vector<std::string> logged;
  std::mutex log_mutex;
  o.log = [&](std::string_view line) {
    std::lock_guard lock(log_mutex);
    logged.emplace_back(line);
  };
  const auto backend = GENERATE(ringfeed::io_backend::automatic, ringfeed::io_backend::pread);
  CAPTURE(static_cast<int>(backend));
  o.io = backend;

  loader l(o);
  REQUIRE(l.dataset().size() == 12);  // a/sub left out at the scan
  for (std::uint64_t e = 0; e < 2; ++e) {
    const auto labels = labels_of_epoch(l, e);
    REQUIRE(labels == std::vector<std::int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2});  // c/chelsea.jpg left out
  }
  const auto st = l.stats();
  std::map<std::string, std::string> reasons;
  for (const auto& k : st.skipped) reasons[k.path] = k.reason;
  REQUIRE(st.skipped.size() == 2);  // each once, over two epochs
  CHECK_THAT(reasons[(root / "a" / "sub").string()], Catch::Contains("Permission denied"));
  CHECK_THAT(reasons[(root / "c" / "chelsea.jpg").string()], Catch::Contains("Permission denied"));
  std::lock_guard lock(log_mutex);
  std::size_t about_sub = 0;
  for (const auto& line : logged)
    if (line.find((root / "a" / "sub").string()) != std::string::npos) ++about_sub;
  CHECK(about_sub == 1);  // said once
}

TEST_CASE("loader on_error fail: an unreadable file or directory stops it, named", "[loader]") {
  ringfeed::test::watchdog dog("loader fail on unreadable files", std::chrono::seconds(120));
  temp_dir tmp;
  const fs::path root = tmp.path() / "ds";
  make_tree(root);
  auto o = options_for(root);
  o.on_error = ringfeed::error_policy::fail;

  SECTION("a file: next() throws naming it, after the batches before it") {
    no_access file(root / "c" / "chelsea.jpg");  // sample 14 of 16, in batch 2
    loader l(o);
    for (int k = 0; k < 2; ++k) REQUIRE(ringfeed::sync_wait(l.next()));
    const std::string what = what_of([&] { (void)ringfeed::sync_wait(l.next()); });
    CHECK_THAT(what, Catch::Contains((root / "c" / "chelsea.jpg").string()) && Catch::Contains("Permission denied"));
  }
  SECTION("a directory: the constructor throws naming it") {
    no_access sub(root / "a" / "sub");
    const std::string what = what_of([&] { loader l(o); });
    CHECK_THAT(what, Catch::Contains((root / "a" / "sub").string()) && Catch::Contains("Permission denied"));
  }
}
