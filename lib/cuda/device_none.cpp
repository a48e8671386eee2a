// cuda::device_api when ringfeed is built without CUDA: no device, and
// every call says so. The loader never uploads then (its probe already
// says "built without CUDA"); direct users of the uploader get a clear error.
#include <string>

#include <ringfeed/cuda/uploader.hpp>

#include "device_api.hpp"

namespace ringfeed::cuda {
namespace {

constexpr const char* why = "ringfeed was built without CUDA (RINGFEED_CUDA=OFF or nvcc not found)";

[[noreturn]] void no_cuda(const char* what) { throw cuda_error(0, std::string(what) + ": " + why); }

class no_device final : public device_api {
 public:
  device_probe probe() noexcept override {
    device_probe p;
    p.reason = why;
    return p;
  }
  int current_device() override { no_cuda("cudaGetDevice"); }
  void set_device(int) override { no_cuda("cudaSetDevice"); }
  stream_t create_stream() override { no_cuda("cudaStreamCreateWithFlags"); }
  void destroy_stream(stream_t) noexcept override {}
  event_t create_event() override { no_cuda("cudaEventCreateWithFlags"); }
  void destroy_event(event_t) noexcept override {}
  void* allocate(std::size_t) override { no_cuda("cudaMalloc"); }
  void deallocate(void*) noexcept override {}
  void* allocate_async(std::size_t, stream_t) override { no_cuda("cudaMallocAsync"); }
  void deallocate_async(void*, stream_t) noexcept override {}
  void* allocate_pinned(std::size_t) override { no_cuda("cudaHostAlloc"); }
  void deallocate_pinned(void*) noexcept override {}
  void copy_to_device(void*, const void*, std::size_t) override { no_cuda("cudaMemcpy"); }
  void copy_to_device_async(void*, const void*, std::size_t, stream_t) override { no_cuda("cudaMemcpyAsync"); }
  void launch_host_func(stream_t, void (*)(void*), void*) override { no_cuda("cudaLaunchHostFunc"); }
  void launch_convert(const convert_launch&, stream_t) override { no_cuda("convert_pixels launch"); }
  void launch_resize(const resize_launch&, stream_t) override { no_cuda("resize launch"); }
  void record(event_t, stream_t) override { no_cuda("cudaEventRecord"); }
  void wait(stream_t, event_t) override { no_cuda("cudaStreamWaitEvent"); }
  void synchronize(stream_t) override { no_cuda("cudaStreamSynchronize"); }
  void synchronize(event_t) override { no_cuda("cudaEventSynchronize"); }
};

}  // namespace

std::shared_ptr<device_api> builtin_device_api() {
  static const std::shared_ptr<device_api> api = std::make_shared<no_device>();
  return api;
}

}  // namespace ringfeed::cuda
