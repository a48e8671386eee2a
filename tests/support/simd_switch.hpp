// For tests of the image layer's SIMD paths: whether this CPU has what they
// need, and a process-wide switch (set_blur_simd, set_affine_simd, ...)
// turned off for one scope, so that the portable path runs.
#pragma once

namespace ringfeed::test {

inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

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
