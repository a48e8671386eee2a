// The device resize's kernels (lib/cuda/resize_kernels.cu) on a GPU: for
// random batches, and batches large enough that blocks stride over several
// pixels each, the bytes equal their host reference (resize_with_table) and
// the CPU resampler's. Without a usable device the executable reports
// "skipped" with the CUDA runtime's reason.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <random>
#include <string>
#include <vector>

#include "cuda/device_api.hpp"
#include "cuda_device.hpp"
#include "resize_cases.hpp"
#include "test_support.hpp"

static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

namespace cu = ringfeed::cuda;
using ringfeed::test::aligned_bytes;
using ringfeed::test::resize_batch;

namespace {

void ok(cudaError_t e, const char* call) {
  if (e != cudaSuccess) FAIL(call << ": " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e));
}

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(std::size_t n) { ok(cudaMalloc(&p, n == 0 ? 1 : n), "cudaMalloc"); }
  ~device_buffer() { (void)cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// The batch through launch_resize_kernels on `s` (or through the built-in
// device API's launch_resize, the loader's way); returns the target.
std::vector<std::uint8_t> run_on_device(const resize_batch& b, cudaStream_t s, bool through_api = false) {
  const cu::resize_sizes sizes = cu::measure_resize(b.images);
  aligned_bytes table(sizes.table_bytes);
  cu::pack_resize_table(b.images, {table.data(), table.size()});
  device_buffer d_table(sizes.table_bytes), d_source(b.source.size()), d_target(b.target_bytes),
      d_scratch(sizes.scratch_bytes);
  ok(cudaMemcpy(d_table.p, table.data(), sizes.table_bytes, cudaMemcpyHostToDevice), "cudaMemcpy table");
  ok(cudaMemcpy(d_source.p, b.source.data(), b.source.size(), cudaMemcpyHostToDevice), "cudaMemcpy source");
  ok(cudaMemset(d_target.p, resize_batch::fill, b.target_bytes), "cudaMemset");
  const cu::resize_launch k{d_table.as<const std::byte>(), b.images.size(), d_source.as<const std::uint8_t>(),
                            d_target.as<std::uint8_t>(), d_scratch.as<std::uint8_t>()};
  if (through_api)
    cu::builtin_device_api()->launch_resize(k, reinterpret_cast<cu::stream_t>(s));
  else
    cu::launch_resize_kernels(k, reinterpret_cast<cu::stream_t>(s));
  std::vector<std::uint8_t> got(b.target_bytes);
  ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  ok(cudaMemcpy(got.data(), d_target.p, b.target_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy target");
  return got;
}

// The host reference on the same table.
std::vector<std::uint8_t> run_on_host(const resize_batch& b) {
  const cu::resize_sizes sizes = cu::measure_resize(b.images);
  aligned_bytes table(sizes.table_bytes);
  cu::pack_resize_table(b.images, {table.data(), table.size()});
  std::vector<std::uint8_t> scratch(sizes.scratch_bytes);
  std::vector<std::uint8_t> target(b.target_bytes, resize_batch::fill);
  cu::resize_with_table({table.data(), b.images.size(), b.source.data(), target.data(), scratch.data()});
  return target;
}

}  // namespace

TEST_CASE("the resize kernels equal their host reference and the CPU resampler", "[cuda][resize]") {
  cudaStream_t s = nullptr;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::mt19937 rng(20260429);
  for (int i = 0; i < 200; ++i) {
    const resize_batch b = ringfeed::test::random_batch(rng, i < 190 ? 5 : 400);  // the last: hundreds of images
    INFO("batch " << i << " of " << b.images.size() << ": " << b.description.substr(0, 2000));
    const std::vector<std::uint8_t> got = run_on_device(b, s, i % 2 == 1);
    CHECK(got == run_on_host(b));  // the same table on the host
    REQUIRE(ringfeed::test::first_difference(b, got) == "");
  }
  (void)cudaStreamDestroy(s);
}

TEST_CASE("a large image: every block strides over many pixels", "[cuda][resize]") {
  std::mt19937 rng(3);
  resize_batch b;
  cu::resize_image im;
  im.request.input = {2600, 1900};
  im.request.output = {1999, 1501};
  im.request.filter = ringfeed::image::resample_filter::lanczos;
  im.src_width = 2600;
  im.src_height = 1900;
  im.flip = true;
  b.source = ringfeed::test::resize_noise(2600u * 1900u * 3u, rng);
  b.images.push_back(im);
  b.target_bytes = 1999u * 1501u * 3u;
  const std::vector<std::uint8_t> got = run_on_device(b, nullptr);
  CHECK(got == run_on_host(b));
}
