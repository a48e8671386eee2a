// Placeholder until the device resize kernels land (issue 43).
#include <stdexcept>

#include "device_resize.hpp"

namespace ringfeed::cuda {

void launch_resize_kernels(const resize_launch&, stream_t) {
  throw std::logic_error("cuda::launch_resize_kernels: not implemented yet");
}

}  // namespace ringfeed::cuda
