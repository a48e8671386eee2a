// A consumer's kernel for the tests that need a real GPU: spins for a
// while (a long-running training step), then copies a buffer, all queued on
// one stream with no host synchronization. Built only with CUDA.
#pragma once

#include <cstddef>

#include <ringfeed/cuda/stream.hpp>

namespace ringfeed::test {

/// Queues on `stream` (null: the default stream): a kernel that spins for
/// about `microseconds`, then a device-to-device copy of `bytes` from `src`
/// to `dst`. Returns the CUDA error of the launches (0: success).
int spin_then_copy(cuda::stream_t stream, const void* src, void* dst, std::size_t bytes, unsigned microseconds);

}  // namespace ringfeed::test
