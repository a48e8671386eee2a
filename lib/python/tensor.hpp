// Private to the Python binding: tensors handed to Python through DLPack
// capsules, and the process's fork generation.
//
// A capsule named "dltensor" holds a DLManagedTensor whose manager_ctx is a
// tensor_owner: the memory's owner (a loader batch, or bytes the binding
// made). torch.utils.dlpack.from_dlpack() takes the capsule over (renaming
// it "used_dltensor") and calls the deleter when the last tensor viewing the
// memory is freed, on whatever thread frees it, with or without the GIL.
//
// Fork: a child process holds copies of the parent's loaders and batches,
// but none of their threads, and their mutexes may have been held by a
// parent thread at the fork. Everything here records the fork generation it
// was made in; an owner freed in a later generation is leaked (its memory
// stays readable, nothing is locked), and a loader started in an earlier
// generation refuses to run.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

namespace ringfeed::python {

/// Incremented in every child right after fork(2). Any thread.
[[nodiscard]] std::uint64_t fork_generation() noexcept;
/// Registers the pthread_atfork handler that counts generations. Once.
void install_fork_handler();

/// The owner of a tensor's memory. Derived classes free it in their
/// destructor; the deleter runs that destructor only in the generation the
/// owner was made in.
struct tensor_owner {
  tensor_owner();
  virtual ~tensor_owner() = default;
  tensor_owner(const tensor_owner&) = delete;
  tensor_owner& operator=(const tensor_owner&) = delete;

  DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
  /// Elements between neighbours along each dimension; empty: compact,
  /// row-major.
  std::vector<std::int64_t> strides;
  std::uint64_t generation;
};

/// Wraps `owner` (which has set managed.dl_tensor's data, dtype and device;
/// shape and strides come from owner->shape and owner->strides) into a
/// "dltensor" capsule.
/// The capsule owns it until a consumer takes it over.
[[nodiscard]] pybind11::capsule to_capsule(std::unique_ptr<tensor_owner> owner);

/// A contiguous tensor of `shape` over bytes the owner keeps in a vector.
template <class T>
struct vector_owner final : tensor_owner {
  std::vector<T> values;
};

[[nodiscard]] DLDataType dl_uint8() noexcept;
[[nodiscard]] DLDataType dl_int64() noexcept;
[[nodiscard]] DLDataType dl_float32() noexcept;
[[nodiscard]] DLDataType dl_float16() noexcept;
[[nodiscard]] DLDataType dl_bfloat16() noexcept;

/// A host tensor over a copy of `values` (int64 labels, decoded pixels).
template <class T>
[[nodiscard]] pybind11::capsule host_capsule(std::vector<T> values, std::vector<std::int64_t> shape, DLDataType dtype) {
  auto o = std::make_unique<vector_owner<T>>();
  o->values = std::move(values);
  o->shape = std::move(shape);
  o->managed.dl_tensor.data = o->values.data();
  o->managed.dl_tensor.dtype = dtype;
  o->managed.dl_tensor.device = DLDevice{kDLCPU, 0};
  return to_capsule(std::move(o));
}

}  // namespace ringfeed::python
