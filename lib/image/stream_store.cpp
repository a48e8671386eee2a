// Non-temporal stores for batch output.
//
// A float32 batch slot (224² × 3 × 4 = 602 KB per sample) is written once
// by a worker and read later by the consumer or the upload. Plain stores
// first read every destination line into the cache (read-for-ownership)
// and then evict the worker's hot decode buffers with data it never reads
// again; streaming stores write around the cache.
#include "image/stream_store.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "image/resample_detail.hpp"

namespace ringfeed::image::detail {

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void copy_avx2(float* dst, const float* src, std::size_t n) noexcept {
  std::size_t i = 0;
  while (i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 31u) != 0) {
    dst[i] = src[i];
    ++i;
  }
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}
#endif

}  // namespace

void copy_floats_streaming(float* dst, const float* src, std::size_t n) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    copy_avx2(dst, src, n);
    return;
  }
#endif
  std::memcpy(dst, src, n * sizeof(float));
}

void stream_fence() noexcept {
#if defined(__x86_64__)
  _mm_sfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace ringfeed::image::detail
