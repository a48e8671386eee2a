// Private: the device resize's table layout and per-pixel arithmetic,
// compiled both by nvcc for the kernels (resize_kernels.cu) and by the host
// compiler for their reference (resize_with_table, device_resize.cpp), so
// the two run the same code.
//
// The table (pack_resize_table writes it): `images` entries of
// resize_entry, then each image's coefficient blocks, every part 16-byte
// aligned. Everything is an offset: into the table (coefficients), into the
// launch's source, target and scratch (pixels), so the table is valid
// wherever it is copied.
//
// A block of one axis of `count` output pixels with `ksize` taps each:
// int32 k[count × ksize], then int32 lo[count], then int32 len[count]; lo is
// relative to the image's first read pixel (its `source` offset, or row 0
// of its scratch). An output value is image::resample_plan.hpp's
//   clip8((bias + Σ_t k[t] · in[lo + t]) >> precision_bits)
// over its 3 channels, with taps 3 bytes apart (horizontal) or a row apart
// (vertical).
#pragma once

#include <cstddef>
#include <cstdint>

#include <ringfeed/image/resample_plan.hpp>

#ifdef __CUDACC__
#define RINGFEED_RESIZE_FN __host__ __device__ __forceinline__
#else
#define RINGFEED_RESIZE_FN inline
#endif

namespace ringfeed::cuda::resize_detail {

/// resize_entry::flags.
enum : std::uint32_t {
  pass_horizontal = 1u,  // columns resampled: source → scratch (or → target when no vertical pass)
  pass_vertical = 2u,    // rows resampled: scratch (or source) → target
  mirror = 4u,           // the target's columns are written right to left
};

/// One image of a launch.
struct alignas(16) resize_entry {
  /// Launch's source + `source`: the image's first read pixel (the planned
  /// reads' top left), rows `source_pitch` bytes apart.
  std::uint64_t source;
  std::int64_t source_pitch;
  /// Launch's target + `target`: the output, width × height × 3, packed.
  std::uint64_t target;
  /// Launch's scratch + `scratch`: the horizontal pass's h_rows × width × 3
  /// (both passes only).
  std::uint64_t scratch;
  /// Table byte offsets of the horizontal (width outputs) and vertical
  /// (height outputs) blocks; 0 when that pass does not run.
  std::uint64_t h_block;
  std::uint64_t v_block;
  std::int32_t width;   // the output (window) size
  std::int32_t height;
  std::int32_t h_rows;  // rows the horizontal pass makes (the vertical pass's input rows)
  std::int32_t h_ksize;
  std::int32_t v_ksize;
  std::uint32_t flags;
};
// One layout for nvcc's device code and the host compiler's packing.
static_assert(sizeof(resize_entry) == 80 && alignof(resize_entry) == 16);

RINGFEED_RESIZE_FN const resize_entry& entry_at(const std::byte* table, std::size_t image) {
  return reinterpret_cast<const resize_entry*>(table)[image];
}

/// Whether the vertical kernel writes this image: it resamples rows, or, no
/// pass needed, copies its window. (A horizontal-only image is written by
/// the horizontal kernel.)
RINGFEED_RESIZE_FN bool vertical_writes(const resize_entry& e) {
  return (e.flags & pass_vertical) != 0 || (e.flags & pass_horizontal) == 0;
}

RINGFEED_RESIZE_FN std::uint8_t clip8(std::int32_t v) {
  v >>= image::resample_precision_bits;  // arithmetic shift, as Pillow's
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

/// One output pixel (3 channels) of a pass: `len` taps `step` bytes apart
/// from `in`, weights `k`.
RINGFEED_RESIZE_FN void resample_pixel(const std::uint8_t* in, std::ptrdiff_t step, const std::int32_t* k, int len,
                                       std::uint8_t* out) {
  std::int32_t a0 = image::resample_rounding_bias;
  std::int32_t a1 = a0;
  std::int32_t a2 = a0;
  for (int t = 0; t < len; ++t) {
    const std::uint8_t* p = in + t * step;
    const std::int32_t w = k[t];
    a0 += static_cast<std::int32_t>(p[0]) * w;
    a1 += static_cast<std::int32_t>(p[1]) * w;
    a2 += static_cast<std::int32_t>(p[2]) * w;
  }
  out[0] = clip8(a0);
  out[1] = clip8(a1);
  out[2] = clip8(a2);
}

/// The target's pixel (x, y) of image `e` (mirrored when asked).
RINGFEED_RESIZE_FN std::uint8_t* target_pixel(const resize_entry& e, std::uint8_t* target, int x, int y) {
  const int col = (e.flags & mirror) != 0 ? e.width - 1 - x : x;
  return target + e.target + (static_cast<std::ptrdiff_t>(y) * e.width + col) * 3;
}

/// Horizontal pass, output pixel x of row r (r < h_rows, x < width).
RINGFEED_RESIZE_FN void horizontal_pixel(const resize_entry& e, const std::byte* table, const std::uint8_t* source,
                                         std::uint8_t* target, std::uint8_t* scratch, int x, int r) {
  const auto* k = reinterpret_cast<const std::int32_t*>(table + e.h_block);
  const std::int32_t* lo = k + static_cast<std::ptrdiff_t>(e.width) * e.h_ksize;
  const std::int32_t* len = lo + e.width;
  const std::uint8_t* in = source + e.source + r * e.source_pitch + static_cast<std::ptrdiff_t>(lo[x]) * 3;
  std::uint8_t* out = (e.flags & pass_vertical) != 0
                          ? scratch + e.scratch + (static_cast<std::ptrdiff_t>(r) * e.width + x) * 3
                          : target_pixel(e, target, x, r);
  resample_pixel(in, 3, k + static_cast<std::ptrdiff_t>(x) * e.h_ksize, len[x], out);
}

/// Vertical pass (or the copy of an image no pass changes), output pixel
/// (x, y) (x < width, y < height). Only where vertical_writes(e).
RINGFEED_RESIZE_FN void vertical_pixel(const resize_entry& e, const std::byte* table, const std::uint8_t* source,
                                       std::uint8_t* target, const std::uint8_t* scratch, int x, int y) {
  const bool from_scratch = (e.flags & pass_horizontal) != 0;
  const std::uint8_t* in = from_scratch ? scratch + e.scratch : source + e.source;
  const std::ptrdiff_t pitch = from_scratch ? static_cast<std::ptrdiff_t>(e.width) * 3 : e.source_pitch;
  in += static_cast<std::ptrdiff_t>(x) * 3;
  std::uint8_t* out = target_pixel(e, target, x, y);
  if ((e.flags & pass_vertical) == 0) {
    const std::uint8_t* p = in + y * pitch;
    out[0] = p[0];
    out[1] = p[1];
    out[2] = p[2];
    return;
  }
  const auto* k = reinterpret_cast<const std::int32_t*>(table + e.v_block);
  const std::int32_t* lo = k + static_cast<std::ptrdiff_t>(e.height) * e.v_ksize;
  const std::int32_t* len = lo + e.height;
  resample_pixel(in + lo[y] * pitch, pitch, k + static_cast<std::ptrdiff_t>(y) * e.v_ksize, len[y], out);
}

}  // namespace ringfeed::cuda::resize_detail
