// gpu_consumer.hpp: a spinning kernel and a copy on the consumer's stream.
#include <cuda_runtime.h>

#include "gpu_consumer.hpp"

namespace ringfeed::test {
namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

int spin_then_copy(cuda::stream_t stream, const void* src, void* dst, std::size_t bytes, unsigned microseconds) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  int khz = 0;
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  spin<<<1, 1, 0, s>>>(static_cast<long long>(khz) * microseconds / 1000);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
  return static_cast<int>(e);
}

}  // namespace ringfeed::test
