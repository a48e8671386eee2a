#include <ringfeed/cuda/device.hpp>

#include <cuda_runtime.h>

#include <string>

namespace ringfeed::cuda {

device_probe probe_devices() noexcept {
  device_probe p;
  try {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      p.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err) +
                 " (CUDA error " + std::to_string(static_cast<int>(err)) + ")";
      (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
      return p;
    }
    p.device_count = count;
    if (count == 0) p.reason = "the CUDA runtime reports 0 devices";
  } catch (...) {
    p.device_count = 0;
    p.reason = "out of memory while probing CUDA devices";
  }
  return p;
}

}  // namespace ringfeed::cuda
