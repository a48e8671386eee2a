// The upload stage on a real device: uploads equal the CPU conversion bit
// for bit, buffers rotate, release() orders reuse after the consumer's
// work, errors carry CUDA's reason. Without a device the executable reports
// "skipped" with the CUDA runtime's reason.
#include <catch2/catch.hpp>

#include <ringfeed/cuda/device.hpp>

#include "cuda_device.hpp"
#include "gpu_consumer.hpp"
#include "test_support.hpp"

static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <memory>
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
      // The host-free callback runs on the uploader's second stream, after
      // the copy: the device-wide sync waits for it, the copy stream's not.
      CUDA_OK(cudaDeviceSynchronize());
      REQUIRE(freed.load() == 1);  // the host-free callback ran once
    }
  }
}

TEST_CASE("release orders reuse after the consumer's work, default and side streams", "[cuda][uploader]") {
  // One buffer: every upload rewrites what the consumer read last. The
  // consumer's kernel spins for 3 ms before it copies the buffer, and
  // nothing synchronizes the host until the end: without the release
  // event, the next upload overwrites the buffer under the spinning kernel.
  const int h = 64, w = 64;
  ringfeed::cuda::uploader::options o;
  o.buffers = 1;
  o.max_images = 4;
  o.height = h;
  o.width = w;
  for (auto format : {output_spec::float32_nchw(), output_spec::uint8_nhwc()}) {
    o.output = format;
    ringfeed::cuda::uploader up(o);
    cudaStream_t side = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    for (cudaStream_t consumer : {static_cast<cudaStream_t>(nullptr), side}) {
      const int rounds = 12;
      const std::size_t in_bytes = 4 * h * w * 3, out_bytes = in_bytes * format.element_size();
      std::vector<std::unique_ptr<pinned_batch>> hosts;
      for (int k = 0; k < rounds; ++k) {
        hosts.push_back(std::make_unique<pinned_batch>(in_bytes));
        hosts.back()->fill(static_cast<unsigned>(31 * k + 7));
      }
      std::byte* copies = nullptr;
      CUDA_OK(cudaMalloc(&copies, out_bytes * rounds));
      std::atomic<int> freed{0};
      const auto s = reinterpret_cast<ringfeed::cuda::stream_t>(consumer);
      for (int k = 0; k < rounds; ++k) {
        up.enqueue(0, hosts[k]->p, 4, [](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &freed);
        up.wait(0, s);
        REQUIRE(ringfeed::test::spin_then_copy(s, up.output(0), copies + k * out_bytes, out_bytes, 3000) == 0);
        up.release(0, s);
      }
      CUDA_OK(cudaDeviceSynchronize());
      REQUIRE(freed.load() == rounds);
      std::vector<std::byte> got(out_bytes), want(out_bytes);
      for (int k = 0; k < rounds; ++k) {
        INFO("round " << k << (consumer == nullptr ? " on the default stream" : " on a side stream"));
        CUDA_OK(cudaMemcpy(got.data(), copies + k * out_bytes, out_bytes, cudaMemcpyDeviceToHost));
        ringfeed::cuda::convert_batch_cpu(hosts[k]->p, 4, h, w, format, nullptr, want.data());
        REQUIRE(got == want);
      }
      CUDA_OK(cudaFree(copies));
    }
    CUDA_OK(cudaStreamDestroy(side));
  }
}

TEST_CASE("the conversion kernel covers batches past the grid's 16.7 M threads", "[cuda][uploader]") {
  // 65535 blocks × 256 threads = 16.78 M: more pixels than that take the
  // grid-stride loop's second round.
  ringfeed::cuda::uploader::options o;
  o.buffers = 1;
  o.max_images = 2;
  o.height = 2900;
  o.width = 2900;  // 2 × 8.41 M = 16.82 M pixels
  o.output = output_spec::float16_nchw();
  o.normalize = img::imagenet_normalize;
  ringfeed::cuda::uploader up(o);
  pinned_batch host(2 * 2900 * 2900 * 3);
  host.fill(99);
  std::atomic<int> freed{0};
  up.enqueue(0, host.p, 2, [](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &freed);
  std::vector<std::byte> got(2 * 2900 * 2900 * 3 * 2), want(got.size());
  CUDA_OK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(up.ready_event(0))));
  CUDA_OK(cudaMemcpy(got.data(), up.output(0), got.size(), cudaMemcpyDeviceToHost));
  ringfeed::cuda::convert_batch_cpu(host.p, 2, 2900, 2900, o.output, &img::imagenet_normalize, want.data());
  REQUIRE(got == want);
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
