// The CUDA runtime behind cuda::device_api (device_api.hpp), and the
// conversion kernel. Every call is checked; a failure throws cuda_error
// naming the call and CUDA's error name and string, after clearing the
// runtime's per-thread "last error" so that a later, unrelated launch does
// not report it again. Errors that leave the context unusable (a kernel
// fault, a lost device) are marked sticky: they come back from every later
// call in this process.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda_check.hpp"
#include "device_api.hpp"
#include <ringfeed/cuda/uploader.hpp>

namespace ringfeed::cuda {
namespace {

// --- the conversion kernel ----------------------------------------------------
//
// One thread per pixel (grid-stride, so any batch size fits the grid): reads
// its 3 bytes of NHWC input and writes its 3 elements, to the image's 3
// planes (NCHW: consecutive threads write consecutive addresses of each
// plane, coalesced) or side by side (NHWC: a warp writes one contiguous
// run). The values are table lookups: table[c * 256 + v] holds the output
// element's bits (float32, or float16 / bfloat16 in the low half), as
// computed on the host by image::normalize_table, the same function the
// CPU path uses, so both give identical bits with no floating-point
// arithmetic on the device.
template <class T, bool Planes>
__global__ void convert_pixels(const std::uint8_t* __restrict__ in, T* __restrict__ out,
                               const std::uint32_t* __restrict__ table, std::size_t pixels_per_image,
                               std::size_t total_pixels) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total_pixels;
       p += stride) {
    const std::uint8_t* px = in + 3 * p;
    T* first = out + 3 * p;  // NHWC: element c at first[c]
    std::size_t step = 1;
    if constexpr (Planes) {
      const std::size_t image = p / pixels_per_image;
      first = out + 3 * image * pixels_per_image + (p - image * pixels_per_image);
      step = pixels_per_image;
    }
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const std::uint32_t bits = __ldg(&table[c * 256 + px[c]]);
      if constexpr (sizeof(T) == 4) {
        first[static_cast<std::size_t>(c) * step] = __uint_as_float(bits);
      } else {
        first[static_cast<std::size_t>(c) * step] = static_cast<T>(bits);
      }
    }
  }
}

template <class T>
void launch_convert_as(const convert_launch& k, T* out, unsigned blocks, int threads, cudaStream_t s) {
  if (k.layout == layout::nchw)
    convert_pixels<T, true><<<blocks, threads, 0, s>>>(k.in, out, k.table, k.pixels, k.images * k.pixels);
  else
    convert_pixels<T, false><<<blocks, threads, 0, s>>>(k.in, out, k.table, k.pixels, k.images * k.pixels);
}

cudaStream_t native(stream_t s) noexcept { return reinterpret_cast<cudaStream_t>(s); }
cudaEvent_t native(event_t e) noexcept { return reinterpret_cast<cudaEvent_t>(e); }

class cuda_device final : public device_api {
 public:
  device_probe probe() noexcept override {
    device_probe p;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      try {
        p.reason = err == cudaSuccess ? no_device_reason(0, {}, {}, driver_load_error())
                                      : no_device_reason(static_cast<int>(err), cudaGetErrorName(err),
                                                         cudaGetErrorString(err), driver_load_error());
      } catch (...) {  // out of memory for the text: the error's name alone
        p.reason.clear();
      }
      (void)cudaGetLastError();  // later calls start clean
      return p;
    }
    p.device_count = count;
    return p;
  }

  std::string pci_bus_id(int device) noexcept override {
    char id[64] = {};
    if (cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof id), device) != cudaSuccess) {
      (void)cudaGetLastError();  // later calls start clean
      return {};
    }
    try {
      return id;
    } catch (...) {  // out of memory for the text
      return {};
    }
  }

  int current_device() override {
    int d = 0;
    check(cudaGetDevice(&d), "cudaGetDevice");
    return d;
  }
  void set_device(int device) override { check(cudaSetDevice(device), "cudaSetDevice"); }

  stream_t create_stream() override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return reinterpret_cast<stream_t>(s);
  }
  void destroy_stream(stream_t s) noexcept override { (void)cudaStreamDestroy(native(s)); }

  event_t create_event() override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return reinterpret_cast<event_t>(e);
  }
  void destroy_event(event_t e) noexcept override { (void)cudaEventDestroy(native(e)); }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return p;
  }
  void deallocate(void* p) noexcept override {
    if (p != nullptr) (void)cudaFree(p);
  }
  void* allocate_async(std::size_t bytes, stream_t s) override {
    void* p = nullptr;
    check(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), native(s)), "cudaMallocAsync");
    return p;
  }
  void deallocate_async(void* p, stream_t s) noexcept override {
    if (p != nullptr) (void)cudaFreeAsync(p, native(s));
  }
  void* allocate_pinned(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable), "cudaHostAlloc");
    return p;
  }
  void deallocate_pinned(void* p) noexcept override {
    if (p != nullptr) (void)cudaFreeHost(p);
  }

  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void copy_to_device_async(void* dst, const void* src, std::size_t bytes, stream_t s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, native(s)), "cudaMemcpyAsync");
  }
  void launch_host_func(stream_t s, void (*fn)(void*), void* ctx) override {
    check(cudaLaunchHostFunc(native(s), fn, ctx), "cudaLaunchHostFunc");
  }
  void launch_convert(const convert_launch& k, stream_t s) override {
    const std::size_t total = k.images * k.pixels;
    if (total == 0) return;
    const int threads = 256;
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>((total + threads - 1) / threads, 65535));
    (void)cudaGetLastError();  // report this launch's error, not an earlier one
    if (k.dtype == dtype::float32)
      launch_convert_as(k, static_cast<float*>(k.out), blocks, threads, native(s));
    else
      launch_convert_as(k, static_cast<std::uint16_t*>(k.out), blocks, threads, native(s));
    check(cudaGetLastError(), "convert_pixels launch");
  }
  void launch_resize(const resize_launch& k, stream_t s) override { launch_resize_kernels(k, native(s)); }
  void record(event_t e, stream_t s) override { check(cudaEventRecord(native(e), native(s)), "cudaEventRecord"); }
  void wait(stream_t s, event_t e) override {
    check(cudaStreamWaitEvent(native(s), native(e), 0), "cudaStreamWaitEvent");
  }
  void synchronize(stream_t s) override { check(cudaStreamSynchronize(native(s)), "cudaStreamSynchronize"); }
  void synchronize(event_t e) override { check(cudaEventSynchronize(native(e)), "cudaEventSynchronize"); }
};

}  // namespace

std::shared_ptr<device_api> builtin_device_api() {
  static const std::shared_ptr<device_api> api = std::make_shared<cuda_device>();
  return api;
}

}  // namespace ringfeed::cuda
