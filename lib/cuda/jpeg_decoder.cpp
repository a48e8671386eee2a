// The choice of GPU JPEG decoder (jpeg_decoder.hpp): a test's factory, else
// nvJPEG's (nvjpeg_decoder.hpp), built where CMake found nvjpeg.h
// (RINGFEED_HAS_NVJPEG) and loaded where the library is found.
#include <mutex>
#include <string>
#include <utility>

#include <ringfeed/config.hpp>

#include "device_api.hpp"
#include "jpeg_decoder.hpp"
#if RINGFEED_HAS_NVJPEG
#include "nvjpeg_decoder.hpp"
#include "nvjpeg_library.hpp"
#endif

namespace ringfeed::cuda {
namespace {

std::mutex factory_mutex;
jpeg_decoder_factory& installed() {
  static jpeg_decoder_factory f;  // guarded by factory_mutex
  return f;
}

}  // namespace

std::string_view backend_name(jpeg_backend b) noexcept {
  switch (b) {
    case jpeg_backend::hardware:
      return "hardware";
    case jpeg_backend::hybrid:
      return "hybrid";
    case jpeg_backend::cpu:
      break;
  }
  return "cpu";
}

void install_jpeg_decoder_factory(jpeg_decoder_factory factory) {
  std::lock_guard lock(factory_mutex);
  installed() = std::move(factory);
}

jpeg_decoder_choice open_jpeg_decoder(device_api& api, int device, std::size_t memory_budget) {
  jpeg_decoder_factory f;
  {
    std::lock_guard lock(factory_mutex);
    f = installed();
  }
  if (f) {
    try {
      return f(api, device, memory_budget);
    } catch (const std::exception& e) {
      return {nullptr, e.what()};
    }
  }
#if RINGFEED_HAS_NVJPEG
  const nvjpeg_load_result found = load_nvjpeg(default_nvjpeg_search(nvjpeg_header_major));
  if (!found.library) return {nullptr, found.why_not};
  try {
    const device_guard on(api, device);
    return {make_nvjpeg_decoder(found.library, api, device, memory_budget), {}};
  } catch (const std::exception& e) {
    // No device at all: the probe's words (they name a missing driver
    // where CUDA would say "insufficient driver").
    const device_probe probe = api.probe();
    return {nullptr, found.library->describe() + " cannot decode on device " + std::to_string(device) + ": " +
                         (probe.device_count == 0 ? probe.reason : std::string(e.what()))};
  }
#else
  (void)api;
  (void)device;
  (void)memory_budget;
  return {nullptr, built_with_cuda ? "ringfeed was built without nvJPEG's header (nvjpeg.h; ./bootstrap.sh deps fetches it)"
                                   : "ringfeed was built without CUDA"};
#endif
}

}  // namespace ringfeed::cuda
