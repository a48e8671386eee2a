// Finding and loading nvJPEG at run time (nvjpeg_library.hpp).
#include "nvjpeg_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

namespace ringfeed::cuda {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string dl_error(std::string_view fallback) {
  const char* e = ::dlerror();
  return e != nullptr ? std::string(e) : std::string(fallback);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);  // a symlink to a file counts (the toolkit's libnvjpeg.so)
}

void add_unique(std::vector<fs::path>& to, fs::path p) {
  if (p.empty()) return;
  p = p.lexically_normal();
  if (std::find(to.begin(), to.end(), p) == to.end()) to.push_back(std::move(p));
}

// The sorted entries of `dir` whose names pass `keep` (nothing when it
// cannot be read): the order of a search must not depend on readdir's.
template <class Keep>
std::vector<fs::path> entries(const fs::path& dir, Keep keep) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (keep(it->path().filename().string())) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The CUDA toolkit's library folders under one root.
void add_toolkit_root(std::vector<fs::path>& to, const fs::path& root) {
  if (root.empty()) return;
  add_unique(to, root / "lib64");
  for (const fs::path& t : entries(root / "targets", [](const std::string&) { return true; })) {
    add_unique(to, t / "lib");
  }
}

// nvjpegGetProperty(libraryPropertyType, int*): libraryPropertyType is the
// CUDA toolkit's enum (library_types.h: MAJOR_VERSION 0, MINOR_VERSION 1,
// PATCH_LEVEL 2), nvjpegStatus_t an enum whose success is 0 (nvjpeg.h); both
// are passed and returned as int in the C calling convention.
using get_property_fn = int (*)(int, int*);

}  // namespace

nvjpeg_library::nvjpeg_library(void* handle, std::string path, std::array<void*, nvjpeg_symbol_names.size()> fns,
                               int major, int minor, int patch) noexcept
    : m_handle(handle), m_path(std::move(path)), m_fns(fns), m_major(major), m_minor(minor), m_patch(patch) {}

nvjpeg_library::~nvjpeg_library() {
  if (m_handle != nullptr) ::dlclose(m_handle);
}

std::string nvjpeg_library::describe() const {
  return "nvJPEG " + std::to_string(m_major) + "." + std::to_string(m_minor) + "." + std::to_string(m_patch) + " (" +
         m_path + ")";
}

fs::path site_packages_of(const fs::path& p) {
  fs::path prefix;
  fs::path found;
  for (const fs::path& part : p) {
    prefix /= part;
    if (part == "site-packages" || part == "dist-packages") found = prefix;
  }
  return found;
}

nvjpeg_search default_nvjpeg_search(int major) {
  nvjpeg_search s;
  s.major = major;
  s.explicit_path = env("RINGFEED_NVJPEG");
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) add_toolkit_root(s.toolkit_folders, env(var));
  add_toolkit_root(s.toolkit_folders, "/usr/local/cuda");

  // Every loaded object's site-packages: the ringfeed module itself, torch,
  // a venv's packages... without asking Python.
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          add_unique(*static_cast<std::vector<fs::path>*>(out), site_packages_of(info->dlpi_name));
        }
        return 0;
      },
      &s.python_folders);
  if (const std::string venv = env("VIRTUAL_ENV"); !venv.empty()) {
    for (const fs::path& lib : entries(fs::path(venv) / "lib", [](const std::string& n) { return n.starts_with("python3"); })) {
      add_unique(s.python_folders, lib / "site-packages");
    }
  }
  const std::string pythonpath = env("PYTHONPATH");
  for (std::size_t at = 0; at <= pythonpath.size();) {
    const std::size_t colon = std::min(pythonpath.find(':', at), pythonpath.size());
    add_unique(s.python_folders, pythonpath.substr(at, colon - at));
    at = colon + 1;
  }
  return s;
}

std::vector<fs::path> nvjpeg_candidates(const nvjpeg_search& where) {
  std::vector<fs::path> out;
  const std::string soname = "libnvjpeg.so." + std::to_string(where.major);
  auto add_if_file = [&](const fs::path& p) {
    if (is_file(p)) add_unique(out, p);
  };
  for (const fs::path& dir : where.toolkit_folders) {
    add_if_file(dir / soname);
    add_if_file(dir / "libnvjpeg.so");
  }
  const std::string hashed_suffix = ".so." + std::to_string(where.major);
  for (const fs::path& site : where.python_folders) {
    add_if_file(site / ("nvidia/cu" + std::to_string(where.major)) / "lib" / soname);
    add_if_file(site / "nvidia/nvjpeg/lib" / soname);
    for (const fs::path& p : entries(site / "torchvision.libs", [&](const std::string& n) {
           return n.starts_with("libnvjpeg") && n.ends_with(hashed_suffix);
         })) {
      add_unique(out, p);
    }
  }
  return out;
}

nvjpeg_load_result load_nvjpeg_file(const std::string& path, int major) {
  ::dlerror();  // clear a stale message
  // RTLD_NODELETE: dlclose leaves it mapped. nvJPEG (like the CUDA
  // libraries) allocates process-lifetime state when loaded, which unloading
  // would orphan (LeakSanitizer reports its 72 KiB exception pool), and
  // reloading it later must find the same library.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h == nullptr) return {nullptr, path + ": cannot be loaded: " + dl_error("dlopen failed")};
  auto refuse = [&](std::string why) {
    ::dlclose(h);
    return nvjpeg_load_result{nullptr, path + ": " + std::move(why)};
  };

  std::array<void*, nvjpeg_symbol_names.size()> fns{};
  std::vector<std::string_view> missing;
  for (std::size_t i = 0; i < fns.size(); ++i) {
    fns[i] = ::dlsym(h, nvjpeg_symbol_names[i]);
    if (fns[i] == nullptr) missing.push_back(nvjpeg_symbol_names[i]);
  }
  if (!missing.empty()) {
    std::string list;
    for (std::string_view m : missing) list += (list.empty() ? "" : ", ") + std::string(m);
    return refuse("is not an nvJPEG this build can use: " + std::to_string(missing.size()) + " of its functions are missing (" +
                  list + ")");
  }

  const auto get_property = reinterpret_cast<get_property_fn>(fns[static_cast<std::size_t>(nvjpeg_fn::get_property)]);
  int version[3] = {-1, -1, -1};
  for (int k = 0; k < 3; ++k) {
    if (const int status = get_property(k, &version[k]); status != 0) {
      return refuse("nvjpegGetProperty failed (status " + std::to_string(status) + ")");
    }
  }
  if (version[0] != major) {
    return refuse("is nvJPEG " + std::to_string(version[0]) + "." + std::to_string(version[1]) + "; this build needs nvJPEG " +
                  std::to_string(major) + ".x");
  }

  // The name the library was found under (dlopen by soname searches).
  std::string loaded = path;
  link_map* map = nullptr;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    loaded = map->l_name;
  }
  return {std::make_shared<const nvjpeg_library>(h, std::move(loaded), fns, version[0], version[1], version[2]), {}};
}

nvjpeg_load_result load_nvjpeg(const nvjpeg_search& where) {
  if (!where.explicit_path.empty()) {
    nvjpeg_load_result r = load_nvjpeg_file(where.explicit_path, where.major);
    if (!r.library) r.why_not = "RINGFEED_NVJPEG=" + r.why_not;
    return r;
  }
  std::vector<std::string> tried;  // what each candidate said
  for (const fs::path& p : nvjpeg_candidates(where)) {
    nvjpeg_load_result r = load_nvjpeg_file(p.string(), where.major);
    if (r.library) return r;
    tried.push_back(std::move(r.why_not));
  }
  const std::string soname = "libnvjpeg.so." + std::to_string(where.major);
  if (where.system_search) {
    nvjpeg_load_result r = load_nvjpeg_file(soname, where.major);
    if (r.library) return r;
    tried.push_back(std::move(r.why_not));
  }

  std::string why = "nvJPEG " + std::to_string(where.major) + " not found (looked in";
  auto place = [&why, first = true](const std::string& p) mutable {
    why += (first ? " " : ", ") + p;
    first = false;
  };
  for (const fs::path& d : where.toolkit_folders) place(d.string());
  for (const fs::path& d : where.python_folders) {
    place((d / ("nvidia/cu" + std::to_string(where.major)) / "lib").string());
    place((d / "nvidia/nvjpeg/lib").string());
    place((d / "torchvision.libs").string());
  }
  if (where.system_search) place("the dynamic linker's path for " + soname);
  why += where.toolkit_folders.empty() && where.python_folders.empty() && !where.system_search ? " nowhere)" : ")";
  for (const std::string& t : tried) why += "; " + t;
  why += "; set RINGFEED_NVJPEG=/path/to/" + soname + " or install the nvidia-nvjpeg wheel";
  return {nullptr, std::move(why)};
}

}  // namespace ringfeed::cuda
