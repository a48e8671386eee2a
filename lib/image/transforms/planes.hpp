// Private to lib/image: uint8 HWC pixels to 32-bit channel planes through
// one 256-entry table per channel, the last step of ToTensor [+ Normalize]
// (the tables hold the float32 bits torch computes for each byte value,
// normalize_table). The output is the tables' entries, so every path gives
// the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <ringfeed/image/pipeline.hpp>

namespace ringfeed::image::detail {

/// out[c][x] = table[c][in[sx * channels + c]] for x in [0, width), where
/// sx = width − 1 − x when `flip` (RandomHorizontalFlip), else x; channels
/// is 1, 2 or 3 (the entries past it unused). With AVX2,
/// eight pixels at a time (a shuffle splits the channels, a gather reads
/// the tables); the portable loop elsewhere.
void lookup_planes_row(const std::uint8_t* in, int width, int channels, bool flip,
                       const std::uint32_t* const table[3], std::uint32_t* const out[3]) noexcept;

/// lookup_planes_row for every row of `src` (1 to 3 channels): channel c
/// of pixel (y, x) goes to out[c · height · width + y · width + x], CHW.
void lookup_planes(image_view src, bool flip, const std::uint32_t* const table[3], std::uint32_t* out) noexcept;
/// The same into 16-bit planes: each entry's low half (the float16 bits
/// of a normalize_table(float16, ...)).
void lookup_planes(image_view src, bool flip, const std::uint32_t* const table[3], std::uint16_t* out) noexcept;

/// lookup_planes into float32 planes through normalize_table(float32,
/// norm) = `table`, with AVX2 computing the entries' formula (float(v) /
/// 255 or, with norm->reciprocal, float(v) · float32(1 / 255), then (x − mean) / std: the same float operations, so the same bits)
/// instead of gathering them; the table elsewhere and for row tails.
void compute_planes(image_view src, bool flip, const normalize_params* norm, const std::uint32_t* const table[3],
                    float* out) noexcept;

/// PILToTensor's CHW bytes: channel c of pixel i of `in` (`pixels`
/// interleaved pixels of 1 to 3 channels) to out[c · pixels + i]; with
/// AVX2, RGB eight pixels at a time.
void split_planes(const std::uint8_t* in, std::size_t pixels, int channels, std::uint8_t* out) noexcept;

/// out[(y · width + x) · channels + c] = table[c][pixel (y, sx) channel c]
/// (sx as in lookup_planes_row), each entry's low `element_bytes` (4 or
/// 2) bytes: the table's values interleaved, HWC (an NHWC output).
void lookup_interleaved(image_view src, bool flip, const std::uint32_t* const table[3], std::size_t element_bytes,
                        std::byte* out) noexcept;

/// ToTensor [+ Normalize] of `src` (1 to 3 channels) into `spec` (float32,
/// float16 or bfloat16; CHW planes or HWC) at `dst`: lookup_planes or
/// lookup_interleaved through normalize_table(spec.dtype, norm)
/// (pipeline.hpp), kept per thread for the next sample of the same recipe
/// (768 float divisions saved per sample). write_output and the transform
/// lists' output write both end here.
void write_normalized(image_view src, bool flip, output_spec spec, const normalize_params* norm, std::byte* dst);

/// Element `index` of a float16 or bfloat16 output `spec` set to `value`,
/// rounded to nearest even (store_output's 16-bit half).
void store_output_16(std::byte* dst, output_spec spec, std::size_t index, float value) noexcept;

/// Element (c, at) of a float output `spec` (`channels` × `plane`
/// elements, at = y · width + x) set to `value` as spec.dtype (float32,
/// float16 or bfloat16 bits, rounded to nearest even): what writes a float
/// tensor, or a RandomErasing box, into an output of either layout. Inline:
/// the erasing ops call it once per value, and float32 is one store.
inline void store_output(std::byte* dst, output_spec spec, int channels, std::size_t plane, int c, std::size_t at,
                         float value) noexcept {
  const auto ch = static_cast<std::size_t>(c);
  const std::size_t index =
      spec.layout == layout::nchw ? ch * plane + at : at * static_cast<std::size_t>(channels) + ch;
  if (spec.dtype == dtype::float32) {
    std::memcpy(dst + index * 4, &value, 4);
    return;
  }
  store_output_16(dst, spec, index, value);
}

/// For tests: false makes lookup_planes_row and split_planes use the
/// portable loop. Default true.
void set_lookup_planes_simd(bool enabled) noexcept;

/// True when compute_planes computes the values of `table` (made by
/// normalize_table(float32, norm)) with multiply-adds: AVX2 and FMA, and
/// checked to give the table's bits for every byte.
[[nodiscard]] bool compute_planes_multiply_adds(const normalize_params* norm, int channels,
                                                const std::uint32_t* const table[3]) noexcept;

/// For tests: false makes compute_planes divide (two divisions per value)
/// instead of its exact multiply-adds. Default true.
void set_compute_planes_fma(bool enabled) noexcept;

}  // namespace ringfeed::image::detail
