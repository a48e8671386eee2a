// ringfeed::cuda — what the CUDA runtime can offer this process.
#pragma once

#include <string>

namespace ringfeed::cuda {

/// Result of asking the CUDA runtime for devices.
struct device_probe {
  int device_count = 0;
  /// Empty when device_count > 0; otherwise why there is no device: the CUDA
  /// error name and string (for example "cudaErrorNoDevice: no CUDA-capable
  /// device is detected"), or that ringfeed was built without CUDA.
  std::string reason;

  [[nodiscard]] bool available() const noexcept { return device_count > 0; }
};

/// Asks the CUDA runtime how many devices this process can use. Never throws;
/// any thread. Without the CUDA component it reports that instead.
[[nodiscard]] device_probe probe_devices() noexcept;

}  // namespace ringfeed::cuda
