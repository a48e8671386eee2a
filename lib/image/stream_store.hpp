// Private: stores that bypass the cache, for output written once and read
// by another thread (or the GPU's DMA) much later: a batch slot.
#pragma once

#include <cstddef>

namespace ringfeed::image::detail {

/// Copies n floats from src to dst, the 32-byte aligned part of dst with
/// non-temporal stores where the CPU has AVX2 (plain stores elsewhere).
/// Call stream_fence() before handing dst to another thread.
void copy_floats_streaming(float* dst, const float* src, std::size_t n) noexcept;

/// Orders earlier non-temporal stores before later stores (sfence).
void stream_fence() noexcept;

}  // namespace ringfeed::image::detail
