#include "slab_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "../cuda/device_api.hpp"

#include "loader_run.hpp"
#include "numa_scope.hpp"

namespace ringfeed::detail {

void slab_memory_deleter::operator()(std::byte* p) const noexcept {
  if (pinned_by != nullptr)
    pinned_by->deallocate_pinned(p);
  else
    std::free(p);
}

slab_pool::slab_pool(std::size_t slabs, std::size_t slab_bytes, std::size_t batch_size,
                     std::shared_ptr<cuda::device_api> pinned_by, std::size_t device_buffers,
                     prefetch_control::limits depth, int numa_node)
    : m_count(slabs),
      m_slab_bytes(slab_bytes),
      m_batch_size(batch_size),
      m_numa_node(numa_node),
      m_pinned_by(std::move(pinned_by)),
      m_control([&] {
        depth.cap = std::min(depth.cap, slabs - 1);
        return depth;
      }()) {
  m_buffer_lent.assign(device_buffers, 0);
  for (std::size_t i = 0; i < device_buffers; ++i) m_idle_buffers.push_back(static_cast<int>(i));
}

std::unique_ptr<std::byte, slab_memory_deleter> slab_pool::allocate_memory() const {
  // Pinned when they feed a device (DMA straight from them), else page-aligned;
  // on the GPU's NUMA node (cudaHostAlloc touches the pages here, under the policy).
  const prefer_node near(m_numa_node);
  void* mem = m_pinned_by ? m_pinned_by->allocate_pinned(m_slab_bytes) : std::aligned_alloc(4096, m_slab_bytes);
  if (mem == nullptr) throw std::bad_alloc();
  return std::unique_ptr<std::byte, slab_memory_deleter>(static_cast<std::byte*>(mem), {m_pinned_by.get()});
}

void slab_pool::allocate() {
  std::vector<std::unique_ptr<slab>> made;
  made.reserve(m_count);
  std::size_t live = 0;
  {
    std::lock_guard lock(m_mutex);
    live = std::min(m_control.depth() + 1, m_count);  // + the batch the consumer will hold
  }
  for (std::size_t i = 0; i < m_count; ++i) {
    auto s = std::make_unique<slab>();
    s->pool = this;
    if (i < live) {
      s->memory = allocate_memory();
      s->images = s->memory.get();
    } else {
      s->retired = true;
    }
    s->labels.reserve(m_batch_size);
    s->indices.reserve(m_batch_size);
    s->ok.reserve(m_batch_size);
    made.push_back(std::move(s));
  }
  std::lock_guard lock(m_mutex);
  m_slabs = std::move(made);
  m_idle_slabs.clear();
  m_retired.clear();
  for (auto& s : m_slabs) (s->retired ? m_retired : m_idle_slabs).push_back(s.get());
  m_live = live;
  m_lent = 0;
}

void slab_pool::free_memory() noexcept {
  std::lock_guard lock(m_mutex);
  m_idle_slabs.clear();
  m_retired.clear();
  m_live = 0;
  m_lent = 0;
  m_slabs.clear();
}

void slab_pool::attach(const std::shared_ptr<run>& r) {
  std::lock_guard lock(m_mutex);
  // The run's channels hold every slab and buffer: these sends never fail.
  for (slab* s : m_idle_slabs) (void)r->free.try_send(s);
  m_idle_slabs.clear();
  for (int b : m_idle_buffers) (void)r->device_free.try_send(b);
  m_idle_buffers.clear();
  m_current = r;
}

std::shared_ptr<run> slab_pool::detach() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_current, nullptr);
}

std::shared_ptr<run> slab_pool::current() const {
  std::lock_guard lock(m_mutex);
  return m_current;
}

void slab_pool::reclaim() {
  std::lock_guard lock(m_mutex);
  m_idle_slabs.clear();
  for (auto& s : m_slabs)
    if (!s->lent && !s->retired) m_idle_slabs.push_back(s.get());  // retired ones stay retired
  m_idle_buffers.clear();
  for (std::size_t i = 0; i < m_buffer_lent.size(); ++i)
    if (!m_buffer_lent[i]) m_idle_buffers.push_back(static_cast<int>(i));
}

void slab_pool::lend(slab& s) noexcept {
  std::lock_guard lock(m_mutex);
  if (!s.lent) ++m_lent;
  s.lent = true;
}

void slab_pool::lend_buffer(int i) noexcept {
  std::lock_guard lock(m_mutex);
  m_buffer_lent[static_cast<std::size_t>(i)] = 1;
}

// A send fails only when the run was stopped: then reclaim() (or the next
// attach()) finds the slab idle by its flag.
void slab_pool::give_back(slab* s) noexcept {
  std::lock_guard lock(m_mutex);
  if (s->lent) --m_lent;
  s->lent = false;
  if (!m_current)
    m_idle_slabs.push_back(s);
  else
    (void)m_current->free.try_send(s);
}

void slab_pool::give_back_buffer(int i) noexcept {
  std::lock_guard lock(m_mutex);
  m_buffer_lent[static_cast<std::size_t>(i)] = 0;
  if (!m_current)
    m_idle_buffers.push_back(i);
  else
    (void)m_current->device_free.try_send(i);
}

bool slab_pool::consumer_waited() {
  slab* grown = nullptr;
  {
    std::lock_guard lock(m_mutex);
    m_control.consumer_waited();
    if (m_live >= target() || m_retired.empty()) return true;
    grown = m_retired.back();
    m_retired.pop_back();
    ++m_live;  // this slab's, reserved while it is allocated
  }
  std::unique_ptr<std::byte, slab_memory_deleter> memory;
  if (!grown->memory) {  // pinned memory a retirement kept needs none
    try {
      memory = allocate_memory();
    } catch (...) {
      // Out of (pinned) memory: the depth stays what the slabs with memory give.
    }
  }
  std::lock_guard lock(m_mutex);
  if (!grown->memory && !memory) {
    m_retired.push_back(grown);
    --m_live;
    m_control.cap(m_live - 1);
    return false;
  }
  if (memory) grown->memory = std::move(memory);
  grown->images = grown->memory.get();
  grown->retired = false;
  grown->lent = false;
  if (!m_current)
    m_idle_slabs.push_back(grown);
  else
    (void)m_current->free.try_send(grown);  // fails only after stop(): reclaim() finds it idle
  return true;
}

void slab_pool::delivered(std::size_t ready_behind) {
  std::lock_guard lock(m_mutex);
  m_control.delivered(ready_behind);
}

// Host memory goes back to the system; pinned memory (a device path) is
// kept for the slab's return: cudaFreeHost waits for the whole device, a
// stall of the training it feeds, and pinning again costs as much. The
// budget already counted it.
bool slab_pool::retire_if_over(slab& s) noexcept {
  std::unique_ptr<std::byte, slab_memory_deleter> freed;  // freed after the lock
  {
    std::lock_guard lock(m_mutex);
    if (m_live <= target()) return false;
    if (!m_pinned_by) {
      freed = std::move(s.memory);
      s.images = nullptr;
    }
    s.retired = true;
    --m_live;
    m_retired.push_back(&s);
  }
  return true;
}

prefetch_stats slab_pool::prefetch() const {
  std::lock_guard lock(m_mutex);
  prefetch_stats s = m_control.stats();
  s.slabs = m_live;
  return s;
}

}  // namespace ringfeed::detail
