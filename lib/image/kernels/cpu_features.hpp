// Private to lib/image: what this CPU runs, asked once per process. The one
// place the explicitly vectorized kernels (resample_avx2.cpp, planes.cpp,
// affine_avx2.cpp, tensor_kernels.cpp, color_blur.cpp) learn whether their
// AVX2 code may run; each kernel's own switch for tests (set_*_simd) is
// checked beside it, not here.
#pragma once

namespace ringfeed::image::detail {

/// True when the CPU runs AVX2 code (checked once). Any thread.
[[nodiscard]] bool cpu_has_avx2() noexcept;

/// True when the CPU runs AVX-512 F, BW and VL code (checked once). Any thread.
[[nodiscard]] bool cpu_has_avx512() noexcept;

/// True when the CPU runs AVX2 and FMA code (checked once). Any thread.
[[nodiscard]] bool cpu_has_avx2_fma() noexcept;

}  // namespace ringfeed::image::detail
