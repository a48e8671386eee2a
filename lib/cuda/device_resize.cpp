// Placeholder until the device resize lands (issue 43): every call says so.
#include <stdexcept>

#include "device_resize.hpp"

namespace ringfeed::cuda {

resize_sizes measure_resize(std::span<const resize_image>) {
  throw std::logic_error("cuda::measure_resize: not implemented yet");
}
void pack_resize_table(std::span<const resize_image>, std::span<std::byte>) {
  throw std::logic_error("cuda::pack_resize_table: not implemented yet");
}
void resize_with_table(const resize_launch&) { throw std::logic_error("cuda::resize_with_table: not implemented yet"); }

}  // namespace ringfeed::cuda
