// Fixtures for the tests that run on a real GPU (built only with CUDA):
// a non-blocking stream owned by the test, and a device buffer copied back
// to the host on a stream.
#pragma once

#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include <ringfeed/cuda/stream.hpp>

namespace ringfeed::test {

/// A cudaStreamNonBlocking stream, destroyed (checked) with the fixture.
class cuda_stream {
 public:
  cuda_stream() { REQUIRE(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking) == cudaSuccess); }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  ~cuda_stream() { CHECK(cudaStreamDestroy(m_stream) == cudaSuccess); }

  [[nodiscard]] cudaStream_t get() const noexcept { return m_stream; }
  /// The same stream as the loader's API takes it.
  [[nodiscard]] ringfeed::cuda::stream_t rf() const noexcept {
    return reinterpret_cast<ringfeed::cuda::stream_t>(m_stream);
  }

 private:
  cudaStream_t m_stream = nullptr;
};

/// `bytes` at device address `src`, copied to the host on `stream` (null:
/// the default stream), which is synchronized before this returns.
inline std::vector<std::byte> copy_to_host(const void* src, std::size_t bytes, cudaStream_t stream) {
  std::vector<std::byte> out(bytes);
  REQUIRE(cudaMemcpyAsync(out.data(), src, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  return out;
}

}  // namespace ringfeed::test
