// ringfeed::image::resample_plan — what Pillow's resampling decides before
// it reads a pixel: which passes run, and per axis which input pixels each
// output pixel reads with which fixed-point weights.
//
// resampler::resize (resample.hpp) runs its passes from this plan, and so
// does the device resize (cuda/device_resize.hpp): both take the bounds and
// coefficients from plan_resample(), so their outputs cannot drift apart.
// Running a plan: each output value is
//   clip8((resample_rounding_bias + Σ_t k[t] · in[lo + t]) >> resample_precision_bits)
// over t < len, in int32 (the sum is exact, so its order is free), where
// clip8 clamps to 0..255; the horizontal pass writes such 8-bit values into
// an intermediate of vertical.read_lo..read_hi rows that the vertical pass
// reads. A pass that is not needed copies.
#pragma once

#include <cstdint>
#include <vector>

#include <ringfeed/image/resample.hpp>

namespace ringfeed::image {

/// Pillow's PRECISION_BITS: the coefficients' fixed point.
inline constexpr int resample_precision_bits = 32 - 8 - 2;
/// Added to every sum before the shift (round half up).
inline constexpr std::int32_t resample_rounding_bias = std::int32_t{1} << (resample_precision_bits - 1);

/// One axis of a resize: output pixels [first, first + count) of the full
/// output (the window's part), each reading len[i] input pixels from lo[i]
/// (logical input coordinates) with weights k[i × ksize ...], zero beyond
/// len[i]. The vectors may be longer than count (reused capacity).
struct resample_axis {
  int first = 0;
  int count = 0;
  int ksize = 0;
  /// The input pixels the axis's outputs read: [read_lo, read_hi).
  int read_lo = 0;
  int read_hi = 0;
  std::vector<std::int32_t> k;
  std::vector<int> lo;
  std::vector<int> len;
  /// Scratch of the computation (the ksize weights of one output pixel).
  std::vector<double> weights;
};

/// A request, checked and resolved: the box (the whole input when the
/// request has none), the window (the whole output when empty), the passes
/// Pillow runs (a pass whose size and box are the identity is skipped, as
/// ImagingResampleInner does), and the axes of those that run.
struct resample_plan {
  resample_box box;
  crop_box window;
  bool need_horizontal = false;
  bool need_vertical = false;
  /// Valid when need_horizontal: columns; input = the logical input's.
  resample_axis horizontal;
  /// Valid when need_vertical: rows.
  resample_axis vertical;
};

/// Plans `request` into `plan`, reusing its vectors' capacity. Throws
/// std::invalid_argument ("resample: ...") when the input or output is
/// empty, the box lies outside the input or is empty, or the window lies
/// outside the output. Pure; any thread.
void plan_resample(const resample_request& request, resample_plan& plan);

/// The rectangle of the logical input that a plan's passes read: columns
/// horizontal.read_lo..read_hi (the window's when no horizontal pass), rows
/// vertical.read_lo..read_hi (the window's when no vertical pass).
[[nodiscard]] crop_box planned_reads(const resample_plan& plan);

}  // namespace ringfeed::image
