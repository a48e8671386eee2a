// Private to the resampler: the horizontal pass's explicitly vectorized
// kernels, picked at run time by the CPU's features.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringfeed::image::detail {

/// One axis's taps, as the horizontal pass reads them: output pixel i reads
/// len[i] source pixels from lo[i] with weights k[i * ksize ...] (fixed
/// point at `precision` bits: Pillow's PRECISION_BITS, or torch's uint8
/// kernels' weights_precision); all of them lie in [read_lo, read_hi).
/// An output is clip8((2^(precision − 1) + Σ k · pixel) >> precision).
struct horizontal_taps {
  const std::int32_t* k;
  const int* lo;
  const int* len;
  int count;
  int ksize;
  int read_lo;
  int read_hi;
  int precision = 32 - 8 - 2;
};

/// One axis's taps as the vertical pass reads them: output row i is
/// clip8((2^(precision − 1) + Σ k[i · ksize + t] · row(lo[i] + t)) >>
/// precision) over t < len[i], byte by byte.
struct vertical_taps {
  const std::int32_t* k;
  const int* lo;
  const int* len;
  int count;
  int ksize;
  int precision = 32 - 8 - 2;
};

/// For tests: false makes every resampler use the portable passes, so both
/// implementations can be compared on one machine. Default true.
void set_resample_simd(bool enabled) noexcept;
[[nodiscard]] bool resample_simd() noexcept;

/// The horizontal pass for 3-channel rows with AVX2 (Pillow's, and torch's
/// uint8 interpolate: the same integer sums at another precision): `rows` rows of
/// `src` (first pixel = logical column src_left) into `dst` rows of
/// taps.count pixels, the same integers as the portable pass. `tile` and
/// `out_tile` are scratch, grown as needed. Call only where cpu_has_avx2().
void horizontal_rgb_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                         const horizontal_taps& taps, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                         std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile);

/// horizontal_rgb_avx2 on AVX-512 (F, BW, VL), 16 rows at a time: the
/// same bytes. Call only where cpu_has_avx512().
void horizontal_rgb_avx512(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                           const horizontal_taps& taps, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                           std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile);

/// The RGB horizontal pass this CPU runs best: AVX-512 where it has it
/// (and resample_avx512() allows), else AVX2. Call only where cpu_has_avx2().
void horizontal_rgb_simd(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_left, int rows,
                         const horizontal_taps& taps, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                         std::vector<std::uint8_t>& tile, std::vector<std::uint8_t>& out_tile);

/// For tests: false makes horizontal_rgb_simd take the AVX2 pass on a CPU
/// with AVX-512, so both can be compared with the portable one. Default true.
void set_resample_avx512(bool enabled) noexcept;

/// The vertical pass with AVX2, any number of channels: `bytes` bytes of
/// each output row from rows of `src` (row 0 = logical row src_top), the
/// same integers as the portable pass. Each weight is split into its top
/// bits and its low 11, so two rows' bytes and the halves of their
/// weights are 16-bit pairs for one multiply-add each (vpmaddwd), summed
/// exactly in 32 bits: (Σ x · hi) · 2^11 + Σ x · lo = Σ x · k. `pairs`
/// is scratch. Call only where cpu_has_avx2().
void vertical_avx2(const std::uint8_t* src, std::ptrdiff_t src_stride, int src_top, int bytes,
                   const vertical_taps& taps, std::uint8_t* dst, std::ptrdiff_t dst_stride,
                   std::vector<std::int32_t>& pairs);

}  // namespace ringfeed::image::detail
