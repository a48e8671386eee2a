// DLPack capsules and fork generations for the Python binding (tensor.hpp).
#include "tensor.hpp"

#include <atomic>
#include <mutex>

#include <pthread.h>

namespace ringfeed::python {
namespace {

// Relaxed: the child handler runs in the child's only thread before any
// other code of the child; readers in the parent never see it change.
std::atomic<std::uint64_t> g_generation{0};

void on_fork_child() noexcept { g_generation.fetch_add(1, std::memory_order_relaxed); }

void delete_owner(DLManagedTensor* t) noexcept {
  auto* owner = static_cast<tensor_owner*>(t->manager_ctx);
  if (owner->generation != fork_generation()) return;  // a parent's memory in a child: leaked on purpose
  delete owner;
}

// Runs when the capsule dies. A consumer that took the tensor over renamed
// the capsule, and then owns the deleter call; otherwise nobody took it.
void destroy_capsule(PyObject* capsule) noexcept {
  if (PyCapsule_IsValid(capsule, "dltensor") == 0) return;
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}

DLDataType dl(std::uint8_t code, std::uint8_t bits) noexcept { return DLDataType{code, bits, 1}; }

}  // namespace

std::uint64_t fork_generation() noexcept { return g_generation.load(std::memory_order_relaxed); }

void install_fork_handler() {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(nullptr, nullptr, [] { on_fork_child(); }); });
}

tensor_owner::tensor_owner() : generation(fork_generation()) {}

pybind11::capsule to_capsule(std::unique_ptr<tensor_owner> owner) {
  DLTensor& t = owner->managed.dl_tensor;
  t.ndim = static_cast<std::int32_t>(owner->shape.size());
  t.shape = owner->shape.data();
  t.strides = owner->strides.empty() ? nullptr : owner->strides.data();  // null: compact, row-major
  t.byte_offset = 0;
  owner->managed.manager_ctx = owner.get();
  owner->managed.deleter = delete_owner;
  DLManagedTensor* managed = &owner->managed;
  PyObject* cap = PyCapsule_New(managed, "dltensor", destroy_capsule);
  if (cap == nullptr) throw pybind11::error_already_set();
  owner.release();  // the capsule (then its consumer) owns it now
  return pybind11::reinterpret_steal<pybind11::capsule>(cap);
}

DLDataType dl_uint8() noexcept { return dl(kDLUInt, 8); }
DLDataType dl_int64() noexcept { return dl(kDLInt, 64); }
DLDataType dl_float32() noexcept { return dl(kDLFloat, 32); }
DLDataType dl_float16() noexcept { return dl(kDLFloat, 16); }
DLDataType dl_bfloat16() noexcept { return dl(kDLBfloat, 16); }

}  // namespace ringfeed::python
