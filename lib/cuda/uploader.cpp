// ringfeed::cuda::uploader — see uploader.hpp for the contract. It speaks
// to the device only through cuda::device_api (device_api.hpp): CUDA's in a
// CUDA build, a simulated device in the device_sim tests.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

#include "device_api.hpp"

namespace ringfeed::cuda {

struct uploader::impl {
  explicit impl(const options& o) : opt(o), api(current_device_api()) {}
  ~impl() {
    for (event_t e : released) api->destroy_event(e);
    for (event_t e : ready) api->destroy_event(e);
    for (void* p : outputs) api->deallocate(p);
    api->deallocate(staging);
    api->deallocate(table);
    if (stream != nullptr) api->destroy_stream(stream);
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  options opt;
  std::shared_ptr<device_api> api;
  std::size_t pixels = 0;     // per image
  std::size_t in_bytes = 0;   // max_images × pixels × 3
  std::size_t out_bytes = 0;  // max_images × pixels × 3 × element size
  stream_t stream = nullptr;
  void* table = nullptr;
  void* staging = nullptr;  // uint8 input of the kernel (float outputs only)
  std::vector<void*> outputs;
  std::vector<event_t> ready;
  std::vector<event_t> released;
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
  device_api& api = *m.api;
  api.set_device(o.device);
  m.pixels = static_cast<std::size_t>(o.height) * static_cast<std::size_t>(o.width);
  m.in_bytes = o.max_images * m.pixels * 3;
  m.out_bytes = m.in_bytes * o.output.element_size();

  m.stream = api.create_stream();
  const image::normalize_table_t host_table =
      image::normalize_table(o.output.dtype, o.normalize ? &*o.normalize : nullptr);
  m.table = api.allocate(sizeof host_table);
  // A one-time synchronous copy: host_table is on this stack frame.
  api.copy_to_device(m.table, host_table.data(), sizeof host_table);
  if (o.output.normalized()) m.staging = api.allocate(m.in_bytes);
  m.outputs.reserve(o.buffers);
  m.ready.reserve(o.buffers);
  m.released.reserve(o.buffers);
  for (std::size_t i = 0; i < o.buffers; ++i) {
    m.outputs.push_back(api.allocate(m.out_bytes));
    m.ready.push_back(api.create_event());
    m.released.push_back(api.create_event());
  }
  m.release_pending = std::make_unique<std::atomic<bool>[]>(o.buffers);
  for (std::size_t i = 0; i < o.buffers; ++i) m.release_pending[i].store(false, std::memory_order_relaxed);
}

uploader::~uploader() {
  if (!m_impl || m_impl->stream == nullptr) return;
  // Every queued copy, kernel and host-free callback finishes before the
  // memory they use goes away.
  try {
    m_impl->api->set_device(m_impl->opt.device);
    m_impl->api->synchronize(m_impl->stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringfeed: cuda::uploader: %s\n", e.what());
  }
}

std::size_t uploader::buffers() const noexcept { return m_impl->outputs.size(); }
stream_t uploader::stream() const noexcept { return m_impl->stream; }
std::size_t uploader::output_bytes() const noexcept { return m_impl->out_bytes; }
void* uploader::output(std::size_t i) const noexcept { return m_impl->outputs[i]; }
event_t uploader::ready_event(std::size_t i) const noexcept { return m_impl->ready[i]; }

void uploader::enqueue(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*),
                       void* ctx) {
  impl& m = *m_impl;
  if (i >= m.outputs.size()) throw std::out_of_range("cuda::uploader::enqueue: no buffer " + std::to_string(i));
  if (n > m.opt.max_images)
    throw std::invalid_argument("cuda::uploader::enqueue: " + std::to_string(n) + " images, buffers hold " +
                                std::to_string(m.opt.max_images));
  device_api& api = *m.api;
  api.set_device(m.opt.device);
  const stream_t s = m.stream;
  // The consumer's work on the previous contents of buffer i comes first.
  if (m.release_pending[i].exchange(false, std::memory_order_acquire)) api.wait(s, m.released[i]);
  const std::size_t bytes = n * m.pixels * 3;
  const bool convert = m.opt.output.normalized();
  void* copy_to = convert ? m.staging : m.outputs[i];
  api.copy_to_device_async(copy_to, host_nhwc, bytes, s);
  api.launch_host_func(s, on_host_free, ctx);
  if (convert && n > 0) {
    convert_launch k;
    k.in = static_cast<const std::uint8_t*>(m.staging);
    k.out = m.outputs[i];
    k.table = static_cast<const std::uint32_t*>(m.table);
    k.pixels = m.pixels;
    k.images = n;
    k.dtype = m.opt.output.dtype;
    api.launch_convert(k, s);
  }
  api.record(m.ready[i], s);
}

void uploader::wait(std::size_t i, stream_t consumer) const { m_impl->api->wait(consumer, m_impl->ready[i]); }

void uploader::release(std::size_t i, stream_t consumer_stream) {
  impl& m = *m_impl;
  if (consumer_stream == nullptr) {
    m.release_pending[i].store(false, std::memory_order_release);
    return;
  }
  m.api->set_device(m.opt.device);
  m.api->record(m.released[i], consumer_stream);
  m.release_pending[i].store(true, std::memory_order_release);
}

}  // namespace ringfeed::cuda
