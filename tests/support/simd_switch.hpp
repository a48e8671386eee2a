// For tests of the image layer's SIMD paths: whether this CPU has what they
// need (the library's own answer, lib/image/kernels/cpu_features.hpp: tests that
// include this add lib/ to their include path), and a process-wide switch
// (set_blur_simd, set_affine_simd, ...) turned off for one scope, so that
// the portable path runs.
#pragma once

#include "image/kernels/cpu_features.hpp"

namespace ringfeed::test {

inline bool cpu_has_avx2_fma() { return image::detail::cpu_has_avx2_fma(); }

// set(false) now, set(true) when the scope ends.
class simd_off {
 public:
  explicit simd_off(void (*set)(bool) noexcept) : m_set(set) { m_set(false); }
  ~simd_off() { m_set(true); }
  simd_off(const simd_off&) = delete;
  simd_off& operator=(const simd_off&) = delete;

 private:
  void (*m_set)(bool) noexcept;
};

}  // namespace ringfeed::test
