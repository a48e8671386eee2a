// The choice of GPU JPEG decoder (jpeg_decoder.hpp): a test's factory, else
// nvJPEG's (nvjpeg_decoder.hpp).
#include <mutex>
#include <utility>

#include "jpeg_decoder.hpp"

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
  return {nullptr, "nvJPEG support is not built yet"};
}

}  // namespace ringfeed::cuda
