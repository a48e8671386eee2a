#include <ringfeed/cuda/device.hpp>

namespace ringfeed::cuda {

device_probe probe_devices() noexcept {
  device_probe p;
  p.reason = "ringfeed was built without CUDA (RINGFEED_CUDA=OFF or nvcc not found)";
  return p;
}

}  // namespace ringfeed::cuda
