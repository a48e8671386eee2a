// Which cuda::device_api is current, the device guard, and the public
// functions (device.hpp, uploader.hpp) that go to the built-in one.
#include "device_api.hpp"

#include <dlfcn.h>

#include <mutex>
#include <utility>

#include <ringfeed/cuda/uploader.hpp>

namespace ringfeed::cuda {
namespace {

std::mutex g_mutex;
std::shared_ptr<device_api> g_installed;  // guarded by g_mutex

}  // namespace

std::shared_ptr<device_api> current_device_api() {
  {
    std::lock_guard lock(g_mutex);
    if (g_installed) return g_installed;
  }
  return builtin_device_api();
}

void install_device_api(std::shared_ptr<device_api> api) {
  std::lock_guard lock(g_mutex);
  g_installed = std::move(api);
}

device_guard::device_guard(device_api& api, int device) : m_api(api) {
  const int current = api.current_device();
  if (current == device) return;  // nothing to restore
  api.set_device(device);
  m_previous = current;
}

device_guard::~device_guard() {
  try {
    if (m_previous >= 0) m_api.set_device(m_previous);
  } catch (...) {
    // Restoring failed: the context is gone; the next call reports it.
  }
}

std::string no_device_reason(int error, std::string_view name, std::string_view text, std::string_view driver_error) {
  if (!driver_error.empty())
    return "no NVIDIA driver found: libcuda.so.1 cannot be loaded (" + std::string(driver_error) +
           "); install the NVIDIA driver to use a GPU";
  if (error == 0) return "no CUDA device found: the NVIDIA driver reports 0 devices";
  std::string cuda = std::string(name) + ": " + std::string(text) + " (CUDA error " + std::to_string(error) + ")";
  if (name == "cudaErrorNoDevice") return "no CUDA device found (" + cuda + ")";
  return cuda;
}

std::string driver_load_error() {
  // RTLD_LAZY: only whether it loads; the CUDA runtime opens it itself.
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = ::dlerror();
    return why != nullptr ? why : "dlopen failed";
  }
  ::dlclose(driver);
  return {};
}

device_probe probe_devices() noexcept { return builtin_device_api()->probe(); }

void* host_alloc_pinned(std::size_t bytes) { return builtin_device_api()->allocate_pinned(bytes); }

void host_free_pinned(void* p) noexcept {
  if (p != nullptr) builtin_device_api()->deallocate_pinned(p);
}

}  // namespace ringfeed::cuda
