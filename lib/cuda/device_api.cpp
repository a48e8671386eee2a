// Which cuda::device_api is current, the device guard, and the public
// functions (device.hpp, uploader.hpp) that go to the built-in one.
#include "device_api.hpp"

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

device_probe probe_devices() noexcept { return builtin_device_api()->probe(); }

void* host_alloc_pinned(std::size_t bytes) { return builtin_device_api()->allocate_pinned(bytes); }

void host_free_pinned(void* p) noexcept {
  if (p != nullptr) builtin_device_api()->deallocate_pinned(p);
}

}  // namespace ringfeed::cuda
