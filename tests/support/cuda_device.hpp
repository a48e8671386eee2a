// Whether the CUDA tests can run: they skip, with the CUDA runtime's own
// reason (e.g. cudaErrorNoDevice), where no device is usable.
#pragma once

#include <string>

#include <ringfeed/cuda/device.hpp>

namespace ringfeed::test {

/// "" when a CUDA device is usable, else why not. For skip_if_unavailable.
inline std::string why_no_cuda_device() {
  const auto p = ringfeed::cuda::probe_devices();
  return p.available() ? std::string() : "no usable CUDA device: " + p.reason;
}

}  // namespace ringfeed::test
