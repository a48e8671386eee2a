// The upload stage on a real device: uploads equal the CPU conversion bit
// for bit, buffers rotate, release() orders reuse after the consumer's
// work, errors carry CUDA's reason. Without a device the executable reports
// "skipped" with the CUDA runtime's reason.
#include <catch2/catch.hpp>

#include <ringfeed/cuda/device.hpp>

#include "cuda_device.hpp"
#include "test_support.hpp"

static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <random>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

namespace {

namespace img = ringfeed::image;
using ringfeed::output_spec;
#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

struct pinned_batch {
  std::uint8_t* p;
  std::size_t bytes;
  explicit pinned_batch(std::size_t b) : p(static_cast<std::uint8_t*>(ringfeed::cuda::host_alloc_pinned(b))), bytes(b) {}
  ~pinned_batch() { ringfeed::cuda::host_free_pinned(p); }
  pinned_batch(const pinned_batch&) = delete;
  pinned_batch& operator=(const pinned_batch&) = delete;
  void fill(unsigned seed) {
    std::mt19937 rng(seed);
    for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(rng());
  }
};

}  // namespace

TEST_CASE("uploads equal the CPU conversion bit for bit, every format", "[cuda][uploader]") {
  const int h = 37, w = 53;
  const std::size_t max_images = 5;
  for (auto format : {output_spec::float32_nchw(), output_spec::float16_nchw(), output_spec::uint8_nhwc()}) {
    ringfeed::cuda::uploader::options o;
    o.buffers = 2;
    o.max_images = max_images;
    o.height = h;
    o.width = w;
    o.output = format;
    o.normalize = img::imagenet_normalize;
    ringfeed::cuda::uploader up(o);
    pinned_batch host(max_images * h * w * 3);
    for (std::size_t n : {std::size_t{5}, std::size_t{3}}) {  // full and short batches
      host.fill(static_cast<unsigned>(n));
      std::atomic<int> freed{0};
      up.enqueue(n % 2, host.p, n, [](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &freed);
      std::vector<std::byte> got(n * h * w * 3 * format.element_size()), want(got.size());
      CUDA_OK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(up.ready_event(n % 2))));
      CUDA_OK(cudaMemcpy(got.data(), up.output(n % 2), got.size(), cudaMemcpyDeviceToHost));
      ringfeed::cuda::convert_batch_cpu(host.p, n, h, w, format, &img::imagenet_normalize, want.data());
      REQUIRE(got == want);
      CUDA_OK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(up.stream())));
      REQUIRE(freed.load() == 1);  // the host-free callback ran once
    }
  }
}

TEST_CASE("buffers rotate over many batches; release orders reuse after the consumer's work", "[cuda][uploader]") {
  const int h = 64, w = 64;
  ringfeed::cuda::uploader::options o;
  o.buffers = 3;
  o.max_images = 4;
  o.height = h;
  o.width = w;
  o.output = output_spec::float32_nchw();
  ringfeed::cuda::uploader up(o);
  cudaStream_t consumer = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  const std::size_t in_bytes = 4 * h * w * 3, out_bytes = in_bytes * 4;
  std::vector<std::unique_ptr<pinned_batch>> hosts;
  for (int i = 0; i < 3; ++i) hosts.push_back(std::make_unique<pinned_batch>(in_bytes));
  float* copies = nullptr;
  CUDA_OK(cudaMalloc(&copies, out_bytes * 3));
  std::vector<std::byte> got(out_bytes), want(out_bytes);
  for (int k = 0; k < 200; ++k) {
    const std::size_t i = static_cast<std::size_t>(k) % 3;
    hosts[i]->fill(static_cast<unsigned>(k));
    std::atomic<int> freed{0};
    up.enqueue(i, hosts[i]->p, 4, [](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &freed);
    // The consumer reads the buffer on its own stream, device to device,
    // then releases it with that stream: the next upload into buffer i
    // (three batches later) must wait for this copy.
    up.wait(i, reinterpret_cast<ringfeed::cuda::stream_t>(consumer));
    CUDA_OK(cudaMemcpyAsync(reinterpret_cast<std::byte*>(copies) + i * out_bytes, up.output(i), out_bytes,
                            cudaMemcpyDeviceToDevice, consumer));
    up.release(i, reinterpret_cast<ringfeed::cuda::stream_t>(consumer));
    CUDA_OK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(up.stream())));  // host slab reusable
    REQUIRE(freed.load() == 1);
    if (k % 10 == 9) {
      CUDA_OK(cudaStreamSynchronize(consumer));
      CUDA_OK(cudaMemcpy(got.data(), reinterpret_cast<std::byte*>(copies) + i * out_bytes, out_bytes,
                         cudaMemcpyDeviceToHost));
      ringfeed::cuda::convert_batch_cpu(hosts[i]->p, 4, h, w, o.output, nullptr, want.data());
      REQUIRE(got == want);
    }
  }
  CUDA_OK(cudaFree(copies));
  CUDA_OK(cudaStreamDestroy(consumer));
}

TEST_CASE("a bad device index is a cuda_error naming CUDA's reason", "[cuda][uploader]") {
  ringfeed::cuda::uploader::options o;
  o.device = 1000;
  o.max_images = 1;
  o.height = 8;
  o.width = 8;
  REQUIRE_THROWS_AS(ringfeed::cuda::uploader(o), ringfeed::cuda::cuda_error);
  REQUIRE_THROWS_WITH(ringfeed::cuda::uploader(o), Catch::Contains("cudaSetDevice") && Catch::Contains("cudaError"));
}
