// ringfeed::cuda::uploader — see uploader.hpp for the contract. It speaks
// to the device only through cuda::device_api (device_api.hpp): CUDA's in a
// CUDA build, a simulated device in the device_sim tests.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

#include "device_api.hpp"

namespace ringfeed::cuda {

struct uploader::impl {
  explicit impl(const options& o) : opt(o), api(current_device_api()) {}
  ~impl() {
    std::optional<device_guard> on;  // frees on the uploader's device, then back
    try {
      on.emplace(*api, opt.device);
    } catch (...) {
      // A lost context: the calls below fail quietly and free what they can.
    }
    for (event_t e : released) api->destroy_event(e);
    for (event_t e : ready) api->destroy_event(e);
    for (event_t e : converted)
      if (e != nullptr) api->destroy_event(e);
    if (copied != nullptr) api->destroy_event(copied);
    for (void* p : outputs) api->deallocate(p);
    for (void* p : staging) api->deallocate(p);
    api->deallocate(table);
    if (callbacks != nullptr) api->destroy_stream(callbacks);
    if (kernels != nullptr) api->destroy_stream(kernels);
    if (stream != nullptr) api->destroy_stream(stream);
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  options opt;
  std::shared_ptr<device_api> api;
  std::size_t pixels = 0;       // per image
  std::size_t image_bytes = 0;  // per host image: pixels × 3, or opt.sample_bytes
  std::size_t in_bytes = 0;     // max_images × image_bytes
  std::size_t out_bytes = 0;    // in_bytes × element size (× 1 when copied as is)

  // The kernel converts uint8 NHWC into a float output; a uint8 output,
  // or host slabs that already hold the output, are copied as they are.
  bool converts() const noexcept { return opt.sample_bytes == 0 && opt.output.normalized(); }
  stream_t stream = nullptr;     // copies (and ready events of uint8 output)
  stream_t kernels = nullptr;    // conversion kernels and their ready events (float outputs only)
  stream_t callbacks = nullptr;  // host-free callbacks, each after its copy
  event_t copied = nullptr;      // the latest copy is done (callbacks and kernels wait for it)
  void* table = nullptr;
  // Float outputs: two uint8 staging buffers in turn, so batch k+1's copy
  // runs while batch k's kernel reads the other one. converted[j]: the
  // last kernel that read staging[j] is done (the next copy into it waits;
  // before its first record, device_api::wait on it is a no-op).
  std::array<void*, 2> staging{};
  std::array<event_t, 2> converted{};
  std::size_t next_staging = 0;
  std::vector<void*> outputs;
  std::vector<event_t> ready;
  std::vector<event_t> released;
  // Whether buffer i's `released` event was recorded since its last upload.
  // Written by release() (consumer thread), read by enqueue() and the
  // destructor: the loader hands buffer i to enqueue only after release()
  // returned (through a channel), which orders the two; atomics keep it
  // race-free regardless.
  std::unique_ptr<std::atomic<bool>[]> release_pending;

  // The first sticky error of any call: the device is lost for good.
  mutable std::mutex lost_mutex;
  std::exception_ptr lost;  // guarded by lost_mutex

  // Runs f, noting a sticky cuda_error before it propagates.
  template <class F>
  decltype(auto) noting_loss(F&& f) {
    try {
      return f();
    } catch (const cuda_error& e) {
      if (e.sticky()) {
        std::lock_guard lock(lost_mutex);
        if (!lost) lost = std::current_exception();
      }
      throw;
    }
  }
};

uploader::uploader(const options& o) : m_impl(std::make_unique<impl>(o)) {
  impl& m = *m_impl;
  if (o.buffers == 0 || o.max_images == 0 || o.height <= 0 || o.width <= 0)
    throw std::invalid_argument("cuda::uploader: buffers, max_images, height and width must be positive");
  o.output.check();
  device_api& api = *m.api;
  const device_guard on(api, o.device);
  m.pixels = static_cast<std::size_t>(o.height) * static_cast<std::size_t>(o.width);
  m.image_bytes = o.sample_bytes != 0 ? o.sample_bytes : m.pixels * 3;
  m.in_bytes = o.max_images * m.image_bytes;
  m.out_bytes = o.sample_bytes != 0 ? m.in_bytes : m.in_bytes * o.output.element_size();

  m.stream = api.create_stream();
  m.callbacks = api.create_stream();
  m.copied = api.create_event();
  if (m.converts()) {
    m.kernels = api.create_stream();
    for (std::size_t j = 0; j < m.staging.size(); ++j) {
      m.staging[j] = api.allocate(m.in_bytes);
      m.converted[j] = api.create_event();
    }
  }
  const image::normalize_table_t host_table =
      image::normalize_table(o.output.dtype, o.normalize ? &*o.normalize : nullptr);
  m.table = api.allocate(sizeof host_table);
  // A one-time synchronous copy: host_table is on this stack frame.
  api.copy_to_device(m.table, host_table.data(), sizeof host_table);
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
  if (!m_impl || m_impl->release_pending == nullptr) return;  // the constructor failed: nothing was queued
  impl& m = *m_impl;
  // Before the buffers go: the consumers' work on them (their release
  // events), then every queued copy, kernel and host-free callback. Each
  // wait on its own: one failing (a lost context) does not skip the rest.
  const auto attempt = [](auto&& wait) {
    try {
      wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringfeed: cuda::uploader: %s\n", e.what());
    }
  };
  std::optional<device_guard> on;
  attempt([&] { on.emplace(*m.api, m.opt.device); });
  for (std::size_t i = 0; i < m.outputs.size(); ++i)
    if (m.release_pending[i].load(std::memory_order_acquire)) attempt([&] { m.api->synchronize(m.released[i]); });
  attempt([&] { m.api->synchronize(m.stream); });
  if (m.kernels != nullptr) attempt([&] { m.api->synchronize(m.kernels); });
  attempt([&] { m.api->synchronize(m.callbacks); });
}

void uploader::synchronize() const {
  impl& m = *m_impl;
  m.noting_loss([&] {
    const device_guard on(*m.api, m.opt.device);
    m.api->synchronize(m.stream);
    if (m.kernels != nullptr) m.api->synchronize(m.kernels);
  });
}

std::size_t uploader::buffers() const noexcept { return m_impl->outputs.size(); }
std::size_t uploader::output_bytes() const noexcept { return m_impl->out_bytes; }
void* uploader::output(std::size_t i) const noexcept { return m_impl->outputs[i]; }
event_t uploader::ready_event(std::size_t i) const noexcept { return m_impl->ready[i]; }

stream_t uploader::copy_stream() const noexcept { return m_impl->stream; }

void uploader::enqueue(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n, void (*on_host_free)(void*),
                       void* ctx, device_fill* fill) {
  impl& m = *m_impl;
  if (i >= m.outputs.size()) throw std::out_of_range("cuda::uploader::enqueue: no buffer " + std::to_string(i));
  if (n > m.opt.max_images)
    throw std::invalid_argument("cuda::uploader::enqueue: " + std::to_string(n) + " images, buffers hold " +
                                std::to_string(m.opt.max_images));
  m.noting_loss([&] { enqueue_on_device(i, host_nhwc, n, on_host_free, ctx, fill); });
}

void uploader::enqueue_on_device(std::size_t i, const std::uint8_t* host_nhwc, std::size_t n,
                                 void (*on_host_free)(void*), void* ctx, device_fill* fill) {
  impl& m = *m_impl;
  device_api& api = *m.api;
  const device_guard on(api, m.opt.device);
  const stream_t s = m.stream;
  const bool convert = m.converts();
  const bool consumer_first = m.release_pending[i].load(std::memory_order_acquire);
  const std::size_t j = m.next_staging;  // float outputs: the staging buffer of this batch
  bool queued = false;  // work that reads host_nhwc is on the stream
  try {
    // The consumer's work on buffer i's previous contents comes before
    // whatever writes buffer i: the copy itself for uint8 output, else
    // only the kernel (the copy goes to staging, so the host slab comes
    // back while the consumer still reads).
    if (consumer_first && !convert) api.wait(s, m.released[i]);
    if (convert) api.wait(s, m.converted[j]);  // its last reader is done
    const auto target = static_cast<std::uint8_t*>(convert ? m.staging[j] : m.outputs[i]);
    api.copy_to_device_async(target, host_nhwc, n * m.image_bytes, s);
    queued = true;
    if (fill != nullptr && n > 0) fill->fill(target, s);
    api.record(m.copied, s);
    stream_t done_on = s;  // where buffer i's last write is queued
    if (convert) {
      // On a stream of its own, so the next batch's copy overlaps this
      // kernel: per batch the stage costs the longer of the two, not both.
      done_on = m.kernels;
      api.wait(m.kernels, m.copied);
      if (consumer_first) api.wait(m.kernels, m.released[i]);
      if (n > 0) {
        convert_launch k;
        k.in = static_cast<const std::uint8_t*>(m.staging[j]);
        k.out = m.outputs[i];
        k.table = static_cast<const std::uint32_t*>(m.table);
        k.pixels = m.pixels;
        k.images = n;
        k.dtype = m.opt.output.dtype;
        k.layout = m.opt.output.layout;
        api.launch_convert(k, m.kernels);
      }
      api.record(m.converted[j], m.kernels);
      m.next_staging = (j + 1) % m.staging.size();
    }
    api.record(m.ready[i], done_on);
    // The host-free callback on its own stream, after the copy only: the
    // kernel and the ready event never wait for a round trip through a
    // CPU thread. Queued last: once it is, it runs exactly once.
    api.wait(m.callbacks, m.copied);
    api.launch_host_func(m.callbacks, on_host_free, ctx);
  } catch (...) {
    // The callback will not run: the caller takes the host memory back,
    // so no queued copy may still read it.
    if (queued) {
      // Each wait on its own: one failing (a lost context) skips no other.
      try {
        api.synchronize(s);
      } catch (...) {
        // A lost context runs nothing more: the copy is not reading either.
      }
      // A kernel this call queued may not have recorded converted[j]:
      // none may still read staging[j] when the next copy fills it.
      try {
        if (convert) api.synchronize(m.kernels);
      } catch (...) {
      }
    }
    throw;
  }
  m.release_pending[i].store(false, std::memory_order_relaxed);  // waited for above
}

void uploader::wait(std::size_t i, stream_t consumer) const {
  impl& m = *m_impl;
  m.noting_loss([&] {
    const device_guard on(*m.api, m.opt.device);  // null: this device's default stream
    m.api->wait(consumer, m.ready[i]);
  });
}

void uploader::release(std::size_t i, stream_t consumer_stream) {
  impl& m = *m_impl;
  m.noting_loss([&] {
    const device_guard on(*m.api, m.opt.device);  // null: this device's default stream
    m.api->record(m.released[i], consumer_stream);
  });
  m.release_pending[i].store(true, std::memory_order_release);
}

std::exception_ptr uploader::lost() const {
  std::lock_guard lock(m_impl->lost_mutex);
  return m_impl->lost;
}

void uploader::release_synchronized(std::size_t i) noexcept {
  m_impl->release_pending[i].store(false, std::memory_order_release);
}

}  // namespace ringfeed::cuda
