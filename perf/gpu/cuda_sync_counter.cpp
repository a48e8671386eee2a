// perf/gpu/cuda_sync_counter.cpp — see cuda_sync_counter.hpp.
#include "cuda_sync_counter.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>  // and the runtime API parameter structs (generated_cuda_runtime_api_meta.h)

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

namespace ringfeed::perf {
namespace {

bool starts_with(std::string_view s, std::string_view p) noexcept { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) noexcept { return s.find(p) != std::string_view::npos; }

void check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  throw std::runtime_error(std::string("CUPTI ") + call + ": " + (msg ? msg : "unknown error") + " (CUPTI error " +
                           std::to_string(static_cast<int>(r)) + ")");
}

// Runtime API calls in progress on this thread: driver calls under them are
// the runtime's own implementation.
thread_local int t_runtime_depth = 0;

}  // namespace

struct cuda_sync_counter::state {
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> on{false};
  std::mutex mutex;
  result counts;                          // guarded by mutex
  std::vector<const void*> async_hosts;   // guarded by mutex: host side of each cudaMemcpyAsync

  void count(std::string_view name, bool runtime) {
    const std::string_view base = base_name(name);
    const std::string_view kind = classify(base);
    std::lock_guard lock(mutex);
    if (runtime)
      ++counts.runtime_calls;
    else
      ++counts.driver_calls_direct;
    if (kind == "sync") {
      ++counts.sync_calls[std::string(base)];
      ++counts.syncs;
    } else if (kind == "poll") {
      ++counts.polls[std::string(base)];
    } else if (starts_with(base, "cudaMemcpy") || starts_with(base, "cuMemcpy")) {
      if (contains(base, "Async")) ++counts.async_copies;
    }
  }

  void note_async_copy(const void* params) {
    const auto* p = static_cast<const cudaMemcpyAsync_v3020_params*>(params);
    std::lock_guard lock(mutex);
    switch (p->kind) {
      case cudaMemcpyHostToDevice: async_hosts.push_back(p->src); break;
      case cudaMemcpyDeviceToHost: async_hosts.push_back(p->dst); break;
      case cudaMemcpyDefault:
        async_hosts.push_back(p->src);
        async_hosts.push_back(p->dst);
        break;
      default: break;
    }
  }

  static void CUPTIAPI callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId /*cbid*/,
                                const void* data) {
    auto& self = *static_cast<state*>(user);
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      if (cb->callbackSite == CUPTI_API_EXIT) {
        if (t_runtime_depth > 0) --t_runtime_depth;  // (a call entered before subscribing)
        return;
      }
      ++t_runtime_depth;
      if (!self.on.load(std::memory_order_relaxed)) return;
      const std::string_view name = cb->functionName ? cb->functionName : "";
      self.count(name, true);
      if (base_name(name) == "cudaMemcpyAsync" && cb->functionParams != nullptr) self.note_async_copy(cb->functionParams);
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (cb->callbackSite != CUPTI_API_ENTER || t_runtime_depth > 0) return;
      if (!self.on.load(std::memory_order_relaxed)) return;
      self.count(cb->functionName ? cb->functionName : "", false);
    }
  }
};

std::string_view cuda_sync_counter::base_name(std::string_view n) noexcept {
  for (;;) {
    const std::size_t us = n.rfind('_');
    if (us == std::string_view::npos || us == 0) return n;
    const std::string_view tail = n.substr(us + 1);
    bool version = tail.size() >= 2 && tail[0] == 'v';
    for (std::size_t i = 1; version && i < tail.size(); ++i) version = tail[i] >= '0' && tail[i] <= '9';
    if (!version && tail != "ptsz" && tail != "ptds") return n;
    n = n.substr(0, us);
  }
}

std::string_view cuda_sync_counter::classify(std::string_view n) noexcept {
  static const std::set<std::string_view> explicit_sync = {
      "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
      "cudaHostAlloc",         "cudaMallocHost",        "cudaFreeHost",          "cudaHostRegister",
      "cudaHostUnregister",    "cudaDeviceReset",       "cuCtxSynchronize",      "cuStreamSynchronize",
      "cuEventSynchronize",    "cuMemHostAlloc",        "cuMemAllocHost",        "cuMemFreeHost",
      "cuMemHostRegister",     "cuMemHostUnregister",
  };
  static const std::set<std::string_view> polls = {"cudaStreamQuery", "cudaEventQuery", "cuStreamQuery",
                                                   "cuEventQuery"};
  if (explicit_sync.contains(n)) return "sync";
  if (polls.contains(n)) return "poll";
  // Stream-ordered variants (cudaMemcpyAsync, cudaMallocAsync, cuMemFreeAsync ...) do not block the host.
  if (contains(n, "Async")) return "";
  for (const std::string_view family : {"cudaMemcpy", "cudaMemset", "cudaMalloc", "cudaFree", "cuMemcpy",
                                        "cuMemsetD", "cuMemAlloc", "cuMemFree"})
    if (starts_with(n, family)) return "sync";
  return "";
}

cuda_sync_counter::cuda_sync_counter() : m_state(std::make_unique<state>()) {
  check(cuptiSubscribe(&m_state->subscriber, &state::callback, m_state.get()), "cuptiSubscribe");
  try {
    check(cuptiEnableDomain(1, m_state->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(runtime)");
    check(cuptiEnableDomain(1, m_state->subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(driver)");
  } catch (...) {
    cuptiUnsubscribe(m_state->subscriber);
    throw;
  }
}

cuda_sync_counter::~cuda_sync_counter() { cuptiUnsubscribe(m_state->subscriber); }

void cuda_sync_counter::start() {
  {
    std::lock_guard lock(m_state->mutex);
    m_state->counts = {};
    m_state->async_hosts.clear();
  }
  m_state->on.store(true, std::memory_order_relaxed);
}

cuda_sync_counter::result cuda_sync_counter::stop() {
  m_state->on.store(false, std::memory_order_relaxed);
  result r;
  std::vector<const void*> hosts;
  {
    std::lock_guard lock(m_state->mutex);
    r = m_state->counts;
    hosts.swap(m_state->async_hosts);
  }
  // Outside the window: an async copy from pageable memory is a synchronous one.
  const std::set<const void*> unique(hosts.begin(), hosts.end());
  std::set<const void*> pageable;
  for (const void* p : unique) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeUnregistered) pageable.insert(p);
    (void)cudaGetLastError();
  }
  for (const void* p : hosts)
    if (pageable.contains(p)) ++r.pageable_async_copies;
  if (r.pageable_async_copies > 0) {
    r.sync_calls["cudaMemcpyAsync (pageable host memory)"] = r.pageable_async_copies;
    r.syncs += r.pageable_async_copies;
  }
  return r;
}

}  // namespace ringfeed::perf
