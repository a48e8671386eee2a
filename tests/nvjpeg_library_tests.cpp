// Finding and loading nvJPEG (lib/cuda/nvjpeg_library.hpp), without a GPU:
// what a user sees when RINGFEED_NVJPEG is wrong or nothing is found, and
// the order of the search, with a stand-in library (support/fake_nvjpeg.c)
// copied into toolkit- and wheel-shaped folders; and what open_jpeg_decoder
// says when it has no decoder. When the bootstrap's
// nvidia-nvjpeg wheel is unpacked (RINGFEED_NVJPEG_ROOT), the real library
// is loaded too: every function the decoder uses must be in it.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <ringfeed/config.hpp>
#include <ringfeed/cuda/device.hpp>

#include "cuda/device_api.hpp"
#include "cuda/jpeg_decoder.hpp"
#include "cuda/nvjpeg_library.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed::cuda;
using ringfeed::test::temp_dir;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// A copy of `from` at `to`, its folders created.
fs::path place(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  return to;
}

nvjpeg_search nowhere(int major = 13) {
  nvjpeg_search s;
  s.major = major;
  s.system_search = false;
  return s;
}

// The file the dynamic linker loads for `soname` (empty: none).
std::string loaded_path_of(const char* soname) {
  void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return {};
  link_map* map = nullptr;
  std::string path;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) path = map->l_name;
  ::dlclose(h);
  return path;
}

// Sets an environment variable for one scope.
class scoped_env {
 public:
  scoped_env(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~scoped_env() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

}  // namespace

TEST_CASE("RINGFEED_NVJPEG at a missing file: the reason names the path and why", "[cuda][nvjpeg]") {
  temp_dir dir;
  nvjpeg_search s = nowhere();
  s.explicit_path = (dir.path() / "nope" / "libnvjpeg.so.13").string();
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, "RINGFEED_NVJPEG=" + s.explicit_path + ": cannot be loaded"));
  REQUIRE(contains(r.why_not, "No such file or directory"));
}

TEST_CASE("RINGFEED_NVJPEG is the only place looked, even when the search would find one", "[cuda][nvjpeg]") {
  temp_dir dir;
  nvjpeg_search s = nowhere();
  s.toolkit_folders.push_back(place(FAKE_NVJPEG13, dir.path() / "cuda/lib64/libnvjpeg.so.13").parent_path());
  s.explicit_path = (dir.path() / "missing.so").string();
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, s.explicit_path));
}

TEST_CASE("RINGFEED_NVJPEG at a file that is not a library", "[cuda][nvjpeg]") {
  temp_dir dir;
  const fs::path text = dir.path() / "libnvjpeg.so.13";
  std::ofstream(text) << "not an ELF file\n";
  nvjpeg_search s = nowhere();
  s.explicit_path = text.string();
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, text.string() + ": cannot be loaded: "));
  // dlerror's own words follow: "invalid ELF header" or "file too short".
  REQUIRE((contains(r.why_not, "ELF") || contains(r.why_not, "too short")));
}

TEST_CASE("RINGFEED_NVJPEG at a library without nvJPEG's functions (libz)", "[cuda][nvjpeg]") {
  const std::string libz = loaded_path_of("libz.so.1");
  if (libz.empty()) {
    WARN("libz.so.1 cannot be loaded here: the case is not run");
    return;
  }
  nvjpeg_search s = nowhere();
  s.explicit_path = libz;
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, libz + ": is not an nvJPEG this build can use"));
  REQUIRE(contains(r.why_not, std::to_string(nvjpeg_symbol_names.size()) + " of its functions are missing"));
  REQUIRE(contains(r.why_not, "nvjpegCreateExV2"));
}

TEST_CASE("an nvJPEG without one function the decoder calls names it", "[cuda][nvjpeg]") {
  const nvjpeg_load_result r = load_nvjpeg_file(FAKE_NVJPEG13_PARTIAL, 13);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, std::string(FAKE_NVJPEG13_PARTIAL) + ": "));
  REQUIRE(contains(r.why_not, "1 of its functions are missing (nvjpegDecodeBatchedEx)"));
}

TEST_CASE("an nvJPEG of another major version is refused with both versions", "[cuda][nvjpeg]") {
  const nvjpeg_load_result r = load_nvjpeg_file(FAKE_NVJPEG12, 13);
  REQUIRE_FALSE(r.library);
  REQUIRE(contains(r.why_not, "is nvJPEG 12.1; this build needs nvJPEG 13.x"));
}

TEST_CASE("RINGFEED_NVJPEG at a usable library: its path, version and functions", "[cuda][nvjpeg]") {
  nvjpeg_search s = nowhere();
  s.explicit_path = FAKE_NVJPEG13;
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE(r.library);
  REQUIRE(r.why_not.empty());
  REQUIRE(r.library->major() == 13);
  REQUIRE(r.library->minor() == 1);
  REQUIRE(r.library->patch() == 2);
  REQUIRE(fs::equivalent(r.library->path(), FAKE_NVJPEG13));
  REQUIRE(r.library->describe() == "nvJPEG 13.1.2 (" + r.library->path() + ")");
  for (std::size_t i = 0; i < nvjpeg_symbol_names.size(); ++i) {
    REQUIRE(r.library->get(static_cast<nvjpeg_fn>(i)) != nullptr);
  }
}

TEST_CASE("nothing found: the reason lists every place looked and how to fix it", "[cuda][nvjpeg]") {
  temp_dir dir;
  nvjpeg_search s = nowhere();
  s.toolkit_folders = {dir.path() / "cuda/lib64", dir.path() / "cuda/targets/x86_64-linux/lib"};
  s.python_folders = {dir.path() / "venv/lib/python3.11/site-packages"};
  s.system_search = true;  // the test machine has no libnvjpeg.so.13 on the linker's path
  if (!loaded_path_of("libnvjpeg.so.13").empty()) {
    WARN("this machine's dynamic linker finds libnvjpeg.so.13: the case is not run");
    return;
  }
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE_FALSE(r.library);
  const std::string site = (dir.path() / "venv/lib/python3.11/site-packages").string();
  REQUIRE(contains(r.why_not, "nvJPEG 13 not found (looked in " + (dir.path() / "cuda/lib64").string() + ", " +
                                  (dir.path() / "cuda/targets/x86_64-linux/lib").string() + ", " + site +
                                  "/nvidia/cu13/lib, " + site + "/nvidia/nvjpeg/lib, " + site +
                                  "/torchvision.libs, the dynamic linker's path for libnvjpeg.so.13)"));
  REQUIRE(contains(r.why_not, "libnvjpeg.so.13: cannot be loaded"));  // what the linker said
  REQUIRE(contains(r.why_not, "set RINGFEED_NVJPEG="));
}

TEST_CASE("the search order: toolkit, then the wheels' folders, then torchvision.libs", "[cuda][nvjpeg]") {
  temp_dir dir;
  const fs::path toolkit = dir.path() / "cuda/lib64";
  const fs::path site = dir.path() / "venv/lib/python3.11/site-packages";
  nvjpeg_search s = nowhere();
  s.toolkit_folders = {toolkit};
  s.python_folders = {site};

  const fs::path tv = place(FAKE_NVJPEG13, site / "torchvision.libs/libnvjpeg-0123abcd.so.13");
  place(FAKE_NVJPEG12, site / "torchvision.libs/libnvjpeg-4567abcd.so.12");  // another major: not a candidate
  REQUIRE(nvjpeg_candidates(s) == std::vector<fs::path>{tv});
  const fs::path cu12 = place(FAKE_NVJPEG13, site / "nvidia/nvjpeg/lib/libnvjpeg.so.13");
  const fs::path cu13 = place(FAKE_NVJPEG13, site / "nvidia/cu13/lib/libnvjpeg.so.13");
  const fs::path tk = place(FAKE_NVJPEG13, toolkit / "libnvjpeg.so.13");
  REQUIRE(nvjpeg_candidates(s) == std::vector<fs::path>{tk, cu13, cu12, tv});

  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE(r.library);
  REQUIRE(fs::equivalent(r.library->path(), tk));
}

TEST_CASE("a candidate that fails is skipped, and the next one loads", "[cuda][nvjpeg]") {
  temp_dir dir;
  const fs::path toolkit = dir.path() / "cuda/lib64";
  const fs::path site = dir.path() / "site-packages";
  place(FAKE_NVJPEG12, toolkit / "libnvjpeg.so.13");  // mislabelled: nvJPEG 12 under 13's name
  const fs::path wheel = place(FAKE_NVJPEG13, site / "nvidia/cu13/lib/libnvjpeg.so.13");
  nvjpeg_search s = nowhere();
  s.toolkit_folders = {toolkit};
  s.python_folders = {site};
  const nvjpeg_load_result r = load_nvjpeg(s);
  REQUIRE(r.library);
  REQUIRE(fs::equivalent(r.library->path(), wheel));

  fs::remove(wheel);  // now nothing usable: the mislabelled one's reason is in the answer
  const nvjpeg_load_result none = load_nvjpeg(s);
  REQUIRE_FALSE(none.library);
  REQUIRE(contains(none.why_not, (toolkit / "libnvjpeg.so.13").string() + ": is nvJPEG 12.1"));
}

TEST_CASE("site_packages_of finds the innermost site-packages or dist-packages", "[cuda][nvjpeg]") {
  REQUIRE(site_packages_of("/v/lib/python3.11/site-packages/torch/lib/libtorch.so") ==
          fs::path("/v/lib/python3.11/site-packages"));
  REQUIRE(site_packages_of("/usr/local/lib/python3.11/dist-packages/ringfeed/_ringfeed.so") ==
          fs::path("/usr/local/lib/python3.11/dist-packages"));
  REQUIRE(site_packages_of("/usr/lib/x86_64-linux-gnu/libz.so.1").empty());
}

TEST_CASE("the default search reads RINGFEED_NVJPEG, CUDA_HOME, VIRTUAL_ENV and PYTHONPATH", "[cuda][nvjpeg]") {
  temp_dir dir;
  fs::create_directories(dir.path() / "venv/lib/python3.11/site-packages");
  fs::create_directories(dir.path() / "cuda/targets/sbsa-linux/lib");
  const scoped_env explicit_path("RINGFEED_NVJPEG", "/opt/x/libnvjpeg.so.13");
  const scoped_env cuda_home("CUDA_HOME", (dir.path() / "cuda").string());
  const scoped_env venv("VIRTUAL_ENV", (dir.path() / "venv").string());
  const scoped_env pythonpath("PYTHONPATH", "/p/one:/p/two");
  const nvjpeg_search s = default_nvjpeg_search(13);
  REQUIRE(s.major == 13);
  REQUIRE(s.explicit_path == "/opt/x/libnvjpeg.so.13");
  REQUIRE(s.toolkit_folders.size() >= 3);
  REQUIRE(s.toolkit_folders[0] == dir.path() / "cuda/lib64");
  REQUIRE(s.toolkit_folders[1] == dir.path() / "cuda/targets/sbsa-linux/lib");
  REQUIRE(std::find(s.toolkit_folders.begin(), s.toolkit_folders.end(), fs::path("/usr/local/cuda/lib64")) !=
          s.toolkit_folders.end());
  const auto has = [&](const fs::path& p) {
    return std::find(s.python_folders.begin(), s.python_folders.end(), p) != s.python_folders.end();
  };
  REQUIRE(has(dir.path() / "venv/lib/python3.11/site-packages"));
  REQUIRE(has("/p/one"));
  REQUIRE(has("/p/two"));
}

TEST_CASE("the nvidia-nvjpeg wheel's library has every function the decoder calls", "[cuda][nvjpeg]") {
  const fs::path lib = fs::path(RINGFEED_NVJPEG_ROOT) / "lib/libnvjpeg.so.13";
  if (std::string(RINGFEED_NVJPEG_ROOT).empty() || !fs::exists(lib)) {
    WARN("no nvidia-nvjpeg wheel unpacked (./bootstrap.sh fetches it): the real library is not checked");
    return;
  }
  const nvjpeg_load_result r = load_nvjpeg_file(lib.string(), 13);
  INFO(r.why_not);
  REQUIRE(r.library);
  REQUIRE(r.library->major() == 13);
}

// open_jpeg_decoder without a test's factory: nvJPEG's decoder, or why not.
TEST_CASE("open_jpeg_decoder says why there is no nvJPEG decoder", "[cuda][nvjpeg]") {
  const auto api = builtin_device_api();
  if (!ringfeed::built_with_cuda) {
    REQUIRE(open_jpeg_decoder(*api, 0, 0).why_not == "ringfeed was built without CUDA");
    return;
  }
  if (!RINGFEED_HAS_NVJPEG) {
    REQUIRE(contains(open_jpeg_decoder(*api, 0, 0).why_not, "built without nvJPEG's header (nvjpeg.h"));
    return;
  }
  {
    const scoped_env missing("RINGFEED_NVJPEG", "/nonexistent/libnvjpeg.so.13");
    const jpeg_decoder_choice c = open_jpeg_decoder(*api, 0, 0);
    REQUIRE_FALSE(c.decoder);
    REQUIRE(contains(c.why_not, "RINGFEED_NVJPEG=/nonexistent/libnvjpeg.so.13: cannot be loaded"));
  }
  if (ringfeed::cuda::probe_devices().device_count == 0) {
    // The library loads; the device it would decode on does not exist.
    const scoped_env fake("RINGFEED_NVJPEG", FAKE_NVJPEG13);
    const jpeg_decoder_choice c = open_jpeg_decoder(*api, 0, 0);
    REQUIRE_FALSE(c.decoder);
    REQUIRE(contains(c.why_not, "nvJPEG 13.1.2 ("));
    REQUIRE(contains(c.why_not, "cannot decode on device 0: "));
  }
}
