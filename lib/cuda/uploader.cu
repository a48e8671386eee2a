// ringfeed::cuda::uploader — see uploader.hpp for the contract.
//
// Every CUDA call is checked; a failure throws cuda_error naming the call
// and CUDA's error name and string. Handles are owned by small move-only
// wrappers, released in reverse order of creation.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

namespace ringfeed::cuda {
namespace {

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw cuda_error(static_cast<int>(e),
                     std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// --- RAII handles ---------------------------------------------------------------

struct stream_handle {
  cudaStream_t s = nullptr;
  stream_handle() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~stream_handle() {
    if (s != nullptr) (void)cudaStreamDestroy(s);
  }
  stream_handle(const stream_handle&) = delete;
  stream_handle& operator=(const stream_handle&) = delete;
};

struct event_handle {
  cudaEvent_t e = nullptr;
  event_handle() { check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
  event_handle(event_handle&& o) noexcept : e(std::exchange(o.e, nullptr)) {}
  event_handle& operator=(event_handle&&) = delete;
  event_handle(const event_handle&) = delete;
  event_handle& operator=(const event_handle&) = delete;
  ~event_handle() {
    if (e != nullptr) (void)cudaEventDestroy(e);
  }
};

struct device_memory {
  void* p = nullptr;
  explicit device_memory(std::size_t bytes) {
    check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  device_memory(device_memory&& o) noexcept : p(std::exchange(o.p, nullptr)) {}
  device_memory& operator=(device_memory&&) = delete;
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  ~device_memory() {
    if (p != nullptr) (void)cudaFree(p);
  }
};

// --- the conversion kernel ----------------------------------------------------
//
// One thread per pixel (grid-stride): reads its 3 bytes of NHWC input and
// writes one element to each of the image's 3 planes, so consecutive
// threads write consecutive addresses of each plane (coalesced). The values
// are table lookups: table[c * 256 + v] holds the output element's bits, as
// computed on the host by image::normalize_table, the same function the CPU
// path uses, so both give identical bits with no floating-point arithmetic
// on the device.
template <class T>
__global__ void nhwc_to_nchw(const std::uint8_t* __restrict__ in, T* __restrict__ out,
                             const std::uint32_t* __restrict__ table, std::size_t pixels_per_image,
                             std::size_t total_pixels) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total_pixels;
       p += stride) {
    const std::size_t image = p / pixels_per_image;
    const std::size_t offset = p - image * pixels_per_image;
    const std::uint8_t* px = in + 3 * p;
    T* plane0 = out + 3 * image * pixels_per_image + offset;
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const std::uint32_t bits = __ldg(&table[c * 256 + px[c]]);
      if constexpr (sizeof(T) == 4) {
        plane0[static_cast<std::size_t>(c) * pixels_per_image] = __uint_as_float(bits);
      } else {
        plane0[static_cast<std::size_t>(c) * pixels_per_image] = static_cast<T>(bits);
      }
    }
  }
}

}  // namespace

// --- pinned host memory -------------------------------------------------------------

void* host_alloc_pinned(std::size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable), "cudaHostAlloc");
  return p;
}

void host_free_pinned(void* p) noexcept {
  if (p != nullptr) (void)cudaFreeHost(p);
}

// --- uploader -------------------------------------------------------------------------

struct uploader::impl {
  explicit impl(const options& o) : opt(o) {}

  options opt;
  std::size_t pixels = 0;     // per image
  std::size_t in_bytes = 0;   // max_images × pixels × 3
  std::size_t out_bytes = 0;  // max_images × pixels × 3 × element size
  // Members below are created in this order and destroyed in reverse.
  std::unique_ptr<stream_handle> stream;
  std::unique_ptr<device_memory> table;
  std::unique_ptr<device_memory> staging;  // uint8 input of the kernel (float outputs only)
  std::vector<device_memory> outputs;
  std::vector<event_handle> ready;
  std::vector<event_handle> released;
  // Whether buffer i's `released` event was recorded since its last upload.
  // Written by release() (consumer thread), read by enqueue(): the loader
  // hands buffer i to enqueue only after release() returned (through a
  // channel), which orders the two; atomics keep it race-free regardless.
  std::unique_ptr<std::atomic<bool>[]> release_pending;
};

uploader::uploader(const options& o) : m_impl(std::make_unique<impl>(o)) {
  impl& m = *m_impl;
  if (o.buffers == 0 || o.max_images == 0 || o.height <= 0 || o.width <= 0)
    throw std::invalid_argument("cuda::uploader: buffers, max_images, height and width must be positive");
  o.output.check();
  check(cudaSetDevice(o.device), "cudaSetDevice");
  m.pixels = static_cast<std::size_t>(o.height) * static_cast<std::size_t>(o.width);
  m.in_bytes = o.max_images * m.pixels * 3;
  m.out_bytes = m.in_bytes * o.output.element_size();

  m.stream = std::make_unique<stream_handle>();
  const image::normalize_table_t host_table =
      image::normalize_table(o.output.dtype, o.normalize ? &*o.normalize : nullptr);
  m.table = std::make_unique<device_memory>(sizeof host_table);
  // A one-time synchronous copy: host_table is on this stack frame.
  check(cudaMemcpy(m.table->p, host_table.data(), sizeof host_table, cudaMemcpyHostToDevice), "cudaMemcpy (table)");
  if (o.output.normalized()) m.staging = std::make_unique<device_memory>(m.in_bytes);
  m.outputs.reserve(o.buffers);
  m.ready.reserve(o.buffers);
  m.released.reserve(o.buffers);
  for (std::size_t i = 0; i < o.buffers; ++i) {
    m.outputs.emplace_back(m.out_bytes);
    m.ready.emplace_back();
    m.released.emplace_back();
  }
  m.release_pending = std::make_unique<std::atomic<bool>[]>(o.buffers);
  for (std::size_t i = 0; i < o.buffers; ++i) m.release_pending[i].store(false, std::memory_order_relaxed);
}

uploader::~uploader() {
  if (!m_impl || !m_impl->stream) return;
  (void)cudaSetDevice(m_impl->opt.device);
  // Every queued copy, kernel and host-free callback finishes before the
  // memory they use goes away.
  const cudaError_t e = cudaStreamSynchronize(m_impl->stream->s);
  if (e != cudaSuccess)
    std::fprintf(stderr, "ringfeed: cuda::uploader: cudaStreamSynchronize: %s: %s\n", cudaGetErrorName(e),
                 cudaGetErrorString(e));
}

std::size_t uploader::buffers() const noexcept { return m_impl->outputs.size(); }
stream_t uploader::stream() const noexcept { return m_impl->stream->s; }
std::size_t uploader::output_bytes() const noexcept { return m_impl->out_bytes; }
void* uploader::output(std::size_t i) const noexcept { return m_impl->outputs[i].p; }
event_t uploader::ready_event(std::size_t i) const noexcept { return m_impl->ready[i].e; }

void uploader::enqueue(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*),
                       void* ctx) {
  impl& m = *m_impl;
  if (i >= m.outputs.size()) throw std::out_of_range("cuda::uploader::enqueue: no buffer " + std::to_string(i));
  if (n > m.opt.max_images)
    throw std::invalid_argument("cuda::uploader::enqueue: " + std::to_string(n) + " images, buffers hold " +
                                std::to_string(m.opt.max_images));
  check(cudaSetDevice(m.opt.device), "cudaSetDevice");
  cudaStream_t s = m.stream->s;
  // The consumer's work on the previous contents of buffer i comes first.
  if (m.release_pending[i].exchange(false, std::memory_order_acquire))
    check(cudaStreamWaitEvent(s, m.released[i].e, 0), "cudaStreamWaitEvent (release)");
  const std::size_t bytes = n * m.pixels * 3;
  const bool convert = m.opt.output.normalized();
  void* copy_to = convert ? m.staging->p : m.outputs[i].p;
  check(cudaMemcpyAsync(copy_to, host_nhwc, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check(cudaLaunchHostFunc(s, on_host_free, ctx), "cudaLaunchHostFunc");
  if (convert && n > 0) {
    const std::size_t total = n * m.pixels;
    const int threads = 256;
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>((total + threads - 1) / threads, 65535));
    const auto* table = static_cast<const std::uint32_t*>(m.table->p);
    const auto* in = static_cast<const std::uint8_t*>(m.staging->p);
    if (m.opt.output.dtype == dtype::float32)
      nhwc_to_nchw<float><<<blocks, threads, 0, s>>>(in, static_cast<float*>(m.outputs[i].p), table, m.pixels, total);
    else
      nhwc_to_nchw<std::uint16_t>
          <<<blocks, threads, 0, s>>>(in, static_cast<std::uint16_t*>(m.outputs[i].p), table, m.pixels, total);
    check(cudaGetLastError(), "nhwc_to_nchw launch");
  }
  check(cudaEventRecord(m.ready[i].e, s), "cudaEventRecord (ready)");
}

void uploader::wait(std::size_t i, stream_t consumer) const {
  check(cudaStreamWaitEvent(consumer, m_impl->ready[i].e, 0), "cudaStreamWaitEvent (ready)");
}

void uploader::release(std::size_t i, stream_t consumer_stream) {
  impl& m = *m_impl;
  if (consumer_stream == nullptr) {
    m.release_pending[i].store(false, std::memory_order_release);
    return;
  }
  check(cudaSetDevice(m.opt.device), "cudaSetDevice");
  check(cudaEventRecord(m.released[i].e, consumer_stream), "cudaEventRecord (release)");
  m.release_pending[i].store(true, std::memory_order_release);
}

}  // namespace ringfeed::cuda
