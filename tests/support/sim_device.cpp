// The simulated device (sim_device.hpp).
#include "sim_device.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <thread>
#include <unordered_map>

#include <ringfeed/cuda/uploader.hpp>

namespace ringfeed::test {

// A record of an event: set once the stream reaches it.
struct sim_device::signal {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  void set() {
    {
      std::lock_guard lock(m);
      done = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [this] { return done; });
  }
};

struct sim_device::event {
  int device = 0;
  bool destroyed = false;
  std::shared_ptr<signal> latest;  // guarded by the simulator's mutex; null: never recorded
};

struct sim_device::stream {
  stream(int d, const std::atomic<bool>& lost) : device(d), dead(lost), worker([this] { loop(); }) {}
  ~stream() {
    {
      std::lock_guard lock(m);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
  // `work` is skipped once the context is lost (a dead CUDA context runs
  // nothing more); signals still fire, so nothing waits forever.
  void push(std::function<void()> fn, bool work = true) {
    {
      std::lock_guard lock(m);
      queue.push_back({std::move(fn), work});
      ++queued;
    }
    cv.notify_all();
  }
  // Everything queued so far has run.
  void synchronize() {
    std::unique_lock lock(m);
    const std::size_t target = queued;
    cv.wait(lock, [&] { return finished >= target; });
  }
  void loop() {
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [this] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stop, and drained
      auto [fn, work] = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      if (!work || !dead.load()) fn();
      lock.lock();
      ++finished;
      cv.notify_all();
    }
  }

  const int device;
  const std::atomic<bool>& dead;
  bool destroyed = false;  // guarded by the simulator's mutex
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<std::function<void()>, bool>> queue;
  std::size_t queued = 0, finished = 0;
  bool stop = false;
  std::thread worker;  // last: starts once the members above exist
};

namespace {

std::atomic<std::size_t> g_next_id{1};
// Each thread's current device, per simulator (CUDA: per thread, per process).
thread_local std::unordered_map<std::size_t, int> t_current;

constexpr int sim_invalid_device = 101;         // cudaErrorInvalidDevice
constexpr int sim_invalid_handle = 400;         // cudaErrorInvalidResourceHandle

// Copies and kernels write in this many steps over their time, so readers
// that are not ordered after them see partial data.
constexpr int chunks = 8;

void pause(std::chrono::microseconds total) {
  if (total.count() > 0) std::this_thread::sleep_for(total / chunks);
}

void chunked_copy(void* dst, const void* src, std::size_t bytes, std::chrono::microseconds t) {
  const std::size_t step = (bytes + chunks - 1) / chunks;
  for (std::size_t at = 0; at < bytes; at += step) {
    pause(t);
    std::memcpy(static_cast<std::byte*>(dst) + at, static_cast<const std::byte*>(src) + at, std::min(step, bytes - at));
  }
}

const char* name_of(sim_device::op o) {
  static constexpr const char* names[] = {"set_device", "create_stream", "create_event", "allocate",
                                          "allocate_pinned", "copy", "copy_async", "host_func", "convert", "resize",
                                          "record", "wait", "synchronize", "allocate_async", "deallocate",
                                          "deallocate_pinned", "deallocate_async"};
  static_assert(std::size(names) == static_cast<std::size_t>(sim_device::op::count_), "a name per op");
  return names[static_cast<int>(o)];
}

}  // namespace

sim_device::sim_device(int devices) : m_devices(devices), m_id(g_next_id.fetch_add(1)) {
  for (int d = 0; d < devices; ++d) m_streams.push_back(std::make_unique<stream>(d, m_lost));  // default streams
}

sim_device::~sim_device() {
  m_streams.clear();  // joins every stream after its queue ran
  for (auto& [p, b] : m_blocks) std::free(const_cast<std::byte*>(p));
}

void sim_device::set_timing(timing t) {
  m_copy_us.store(t.copy.count());
  m_kernel_us.store(t.kernel.count());
}

void sim_device::fail(op o, int code, bool sticky, int skip) {
  std::lock_guard lock(m_mutex);
  m_failures.push_back({o, code, sticky, skip});
}

void sim_device::enter(op o) {
  m_calls[static_cast<std::size_t>(o)].fetch_add(1);
  std::lock_guard lock(m_mutex);
  if (m_dead != 0) throw cuda::cuda_error(m_dead, std::string("sim: ") + name_of(o) + ": context lost (sticky)", true);
  for (auto it = m_failures.begin(); it != m_failures.end(); ++it) {
    if (it->what != o) continue;
    if (it->skip-- > 0) return;
    const failure f = *it;
    m_failures.erase(it);
    if (f.sticky) {
      m_dead = f.code;
      m_lost.store(true);
    }
    throw cuda::cuda_error(f.code, std::string("sim: ") + name_of(o) + ": injected error " + std::to_string(f.code),
                           f.sticky);
  }
}

std::size_t sim_device::calls(op o) const noexcept { return m_calls[static_cast<std::size_t>(o)].load(); }

std::size_t sim_device::synchronizing_calls() const noexcept {
  std::size_t n = 0;
  for (op o : {op::allocate, op::allocate_pinned, op::copy, op::synchronize, op::deallocate, op::deallocate_pinned})
    n += calls(o);
  return n;
}

void sim_device::check_device(int device, const char* call) const {
  if (device < 0 || device >= m_devices)
    throw cuda::cuda_error(sim_invalid_device, std::string("sim: ") + call + ": no device " + std::to_string(device));
}

sim_device::stream& sim_device::resolve(cuda::stream_t s) {
  if (s == nullptr) return *m_streams[static_cast<std::size_t>(current_device())];
  auto* p = reinterpret_cast<stream*>(s);
  std::lock_guard lock(m_mutex);
  if (p->destroyed) throw cuda::cuda_error(sim_invalid_handle, "sim: a destroyed stream was used");
  return *p;
}

sim_device::event& sim_device::resolve(cuda::event_t e) {
  auto* p = reinterpret_cast<event*>(e);
  if (p == nullptr) throw cuda::cuda_error(sim_invalid_handle, "sim: null event");
  std::lock_guard lock(m_mutex);
  if (p->destroyed) throw cuda::cuda_error(sim_invalid_handle, "sim: a destroyed event was used");
  return *p;
}

cuda::device_probe sim_device::probe() noexcept {
  cuda::device_probe p;
  p.device_count = m_devices;
  return p;
}

int sim_device::current_device() {
  const auto it = t_current.find(m_id);
  return it == t_current.end() ? 0 : it->second;
}

void sim_device::set_device(int device) {
  enter(op::set_device);
  check_device(device, "set_device");
  t_current[m_id] = device;
}

cuda::stream_t sim_device::create_stream() {
  enter(op::create_stream);
  auto s = std::make_unique<stream>(current_device(), m_lost);
  auto* raw = s.get();
  std::lock_guard lock(m_mutex);
  m_streams.push_back(std::move(s));
  return reinterpret_cast<cuda::stream_t>(raw);
}

void sim_device::destroy_stream(cuda::stream_t s) noexcept {
  auto* p = reinterpret_cast<stream*>(s);
  p->synchronize();  // CUDA lets queued work finish
  std::lock_guard lock(m_mutex);
  p->destroyed = true;  // kept (and its thread) until the simulator goes: cheap, and no handle reuse
}

cuda::event_t sim_device::create_event() {
  enter(op::create_event);
  auto e = std::make_unique<event>();
  e->device = current_device();
  auto* raw = e.get();
  std::lock_guard lock(m_mutex);
  m_events.push_back(std::move(e));
  return reinterpret_cast<cuda::event_t>(raw);
}

void sim_device::destroy_event(cuda::event_t e) noexcept {
  std::lock_guard lock(m_mutex);
  reinterpret_cast<event*>(e)->destroyed = true;
}

void* sim_device::allocate(std::size_t bytes) {
  enter(op::allocate);
  void* p = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  if (p == nullptr) throw cuda::cuda_error(2, "sim: allocate: out of memory");  // cudaErrorMemoryAllocation
  std::lock_guard lock(m_mutex);
  m_blocks[static_cast<std::byte*>(p)] = {bytes, current_device(), false, false};
  return p;
}

void sim_device::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  m_calls[static_cast<std::size_t>(op::deallocate)].fetch_add(1);
  free_block(p);
}

void sim_device::free_block(void* p) noexcept {
  std::lock_guard lock(m_mutex);
  auto it = m_blocks.find(static_cast<std::byte*>(p));
  if (it == m_blocks.end() || it->second.freed) std::abort();  // a double or foreign free: a bug in the caller
  std::memset(p, 0xDB, it->second.bytes);
  it->second.freed = true;
}

void* sim_device::allocate_pinned(std::size_t bytes) {
  enter(op::allocate_pinned);
  void* p = std::aligned_alloc(4096, (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096);
  if (p == nullptr) throw cuda::cuda_error(2, "sim: allocate_pinned: out of memory");
  std::lock_guard lock(m_mutex);
  m_blocks[static_cast<std::byte*>(p)] = {bytes, -1, true, false};
  return p;
}

void sim_device::deallocate_pinned(void* p) noexcept {
  if (p == nullptr) return;
  m_calls[static_cast<std::size_t>(op::deallocate_pinned)].fetch_add(1);
  free_block(p);
}

void* sim_device::allocate_async(std::size_t bytes, cuda::stream_t s) {
  enter(op::allocate_async);
  (void)resolve(s);  // a valid stream, as CUDA checks it
  void* p = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  if (p == nullptr) throw cuda::cuda_error(2, "sim: allocate_async: out of memory");
  std::lock_guard lock(m_mutex);
  m_blocks[static_cast<std::byte*>(p)] = {bytes, current_device(), false, false};
  return p;
}

void sim_device::deallocate_async(void* p, cuda::stream_t s) noexcept {
  if (p == nullptr) return;
  m_calls[static_cast<std::size_t>(op::deallocate_async)].fetch_add(1);
  try {
    resolve(s).push([this, p] { free_block(p); });  // poisoned once the stream gets there
  } catch (...) {
    free_block(p);  // a destroyed stream: nothing more runs on it
  }
}

bool sim_device::live(const void* p, std::size_t bytes) const {
  const auto* b = static_cast<const std::byte*>(p);
  std::lock_guard lock(m_mutex);
  auto it = m_blocks.upper_bound(b);
  if (it == m_blocks.begin()) return false;
  --it;
  return !it->second.freed && b + bytes <= it->first + it->second.bytes;
}

std::size_t sim_device::live_allocations() const {
  std::lock_guard lock(m_mutex);
  return static_cast<std::size_t>(
      std::count_if(m_blocks.begin(), m_blocks.end(), [](const auto& kv) { return !kv.second.freed && !kv.second.pinned; }));
}

std::vector<int> sim_device::allocation_devices() const {
  std::lock_guard lock(m_mutex);
  std::vector<int> out;
  for (const auto& [p, b] : m_blocks)
    if (!b.freed && !b.pinned) out.push_back(b.device);
  return out;
}

void sim_device::copy_to_device(void* dst, const void* src, std::size_t bytes) {
  enter(op::copy);
  std::memcpy(dst, src, bytes);
}

void sim_device::copy_to_device_async(void* dst, const void* src, std::size_t bytes, cuda::stream_t s) {
  enter(op::copy_async);
  const std::chrono::microseconds t(m_copy_us.load());
  stream& st = resolve(s);
  m_copies_in_flight.fetch_add(1);
  st.push([this, dst, src, bytes, t] {
    chunked_copy(dst, src, bytes, t);
    m_copies_in_flight.fetch_sub(1);
  });
}

void sim_device::launch_host_func(cuda::stream_t s, void (*fn)(void*), void* ctx) {
  enter(op::host_func);
  resolve(s).push([fn, ctx] { fn(ctx); });
}

void sim_device::gate_kernels(std::shared_future<void> open) {
  std::lock_guard lock(m_mutex);
  m_kernel_gate = std::move(open);
}

void sim_device::launch_resize(const cuda::resize_launch& k, cuda::stream_t s) {
  enter(op::resize);
  std::shared_future<void> gate;
  {
    std::lock_guard lock(m_mutex);
    gate = m_kernel_gate;
  }
  resolve(s).push([k, gate] {
    if (gate.valid()) gate.wait();
    cuda::resize_with_table(k);  // device memory is host memory here
  });
}

void sim_device::launch_convert(const cuda::convert_launch& k, cuda::stream_t s) {
  enter(op::convert);
  const std::chrono::microseconds t(m_kernel_us.load());
  std::shared_future<void> gate;
  {
    std::lock_guard lock(m_mutex);
    gate = m_kernel_gate;
  }
  resolve(s).push([k, t, gate] {
    if (gate.valid()) gate.wait();
    // The table is device memory, that is host memory here.
    image::normalize_table_t table;
    std::memcpy(table.data(), k.table, sizeof table);
    // An image at a time over the kernel's time, so early readers see part.
    const std::size_t in_image = k.pixels * 3;
    const std::size_t out_image = in_image * element_size(k.dtype);
    for (std::size_t i = 0; i < k.images; ++i) {
      if (i % std::max<std::size_t>(k.images / chunks, 1) == 0) pause(t);
      cuda::convert_launch one = k;
      one.in = k.in + i * in_image;
      one.out = static_cast<std::byte*>(k.out) + i * out_image;
      one.images = 1;
      cuda::convert_with_table(one, table);
    }
  });
}

void sim_device::record(cuda::event_t e, cuda::stream_t s) {
  enter(op::record);
  event& ev = resolve(e);
  stream& st = resolve(s);
  auto sig = std::make_shared<signal>();
  {
    std::lock_guard lock(m_mutex);
    if (ev.device != st.device)
      throw cuda::cuda_error(sim_invalid_handle, "sim: record: event of device " + std::to_string(ev.device) +
                                                     " on a stream of device " + std::to_string(st.device));
    ev.latest = sig;
  }
  st.push([sig] { sig->set(); }, false);
}

void sim_device::wait(cuda::stream_t s, cuda::event_t e) {
  enter(op::wait);
  event& ev = resolve(e);
  stream& st = resolve(s);
  std::shared_ptr<signal> sig;
  {
    std::lock_guard lock(m_mutex);
    sig = ev.latest;
  }
  if (sig) st.push([sig] { sig->wait(); }, false);
}

void sim_device::synchronize(cuda::stream_t s) {
  // Even on a lost context, wait for the op that may be running: then no
  // caller frees memory a simulated kernel still touches.
  if (m_lost.load()) resolve(s).synchronize();
  enter(op::synchronize);
  resolve(s).synchronize();
}

void sim_device::synchronize(cuda::event_t e) {
  enter(op::synchronize);
  event& ev = resolve(e);
  std::shared_ptr<signal> sig;
  {
    std::lock_guard lock(m_mutex);
    sig = ev.latest;
  }
  if (!sig) return;
  bool blocked = false;
  {
    std::lock_guard lock(sig->m);
    blocked = !sig->done;
  }
  if (blocked) m_blocked_event_waits.fetch_add(1);
  sig->wait();
  if (blocked) m_blocked_event_waits.fetch_sub(1);
}

void sim_device::enqueue(cuda::stream_t s, std::function<void()> fn) { resolve(s).push(std::move(fn)); }

void sim_device::drain() {
  std::vector<stream*> all;
  {
    std::lock_guard lock(m_mutex);
    for (auto& s : m_streams) all.push_back(s.get());
  }
  for (stream* s : all) s->synchronize();
}

}  // namespace ringfeed::test
