// Private, CUDA builds only (.cu files): a CUDA runtime call's error as
// cuda_error, naming the call, with CUDA's error name and string, after
// clearing the runtime's per-thread "last error" so that a later, unrelated
// launch does not report it again; errors that leave the context unusable
// are marked sticky.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include <ringfeed/cuda/uploader.hpp>

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

inline void check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // a non-sticky error must not resurface at the next launch
  throw cuda_error(static_cast<int>(e), std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e),
                   is_sticky(e));
}

}  // namespace ringfeed::cuda
