// Private: which CUDA runtime errors leave the context unusable, for every
// file that calls the runtime itself (cuda_device.cu, nvjpeg_decoder.cpp):
// those become cuda_error with sticky() set. Includes cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>

namespace ringfeed::cuda {

// The errors after which the CUDA context is corrupt (CUDA's documentation
// of cudaError: "the process must be terminated and relaunched").
inline bool is_sticky(cudaError_t e) noexcept {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

}  // namespace ringfeed::cuda
