// ringfeed::image::resampler — Pillow-exact antialiased resampling.
//
// A port of Pillow 9.4's ImagingResample (libImaging/Resample.c), what
// torchvision's Resize does to PIL images: the filter's support is widened
// by the downscale factor, coefficients are precomputed per output pixel,
// normalized and turned into 22-bit fixed point (PRECISION_BITS), then a
// horizontal pass into an 8-bit intermediate and a vertical pass, each
// rounding and clipping as Pillow does. Output equals Pillow's
// `Image.resize(size, filter, box)` bit for bit.
//
// Beyond Pillow: an output `window` computes only part of the output (a
// center crop after a resize costs only the cropped pixels, and equals
// cropping Pillow's full output), and a source may hold only part of a larger
// logical image (what a region-of-interest decode produced).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image {

/// Pillow's resampling filters (Image.Resampling).
enum class resample_filter : std::uint8_t { box, bilinear, hamming, bicubic, lanczos };

/// Pillow's `box` argument: the source rectangle to scale, in (fractional)
/// pixels of the logical input. Pillow parses it as C floats; so do we.
struct resample_box {
  float x0 = 0;
  float y0 = 0;
  float x1 = 0;
  float y1 = 0;
};

/// One resize: where the pixels come from and which output pixels to make.
struct resample_request {
  /// Size of the logical input image (what Pillow would hold).
  size2 input;
  /// The logical input's pixels in `src` start at this (left, top): `src`
  /// may hold only the rows and columns the resize reads (see
  /// source_region()). Width and height of `src` bound what may be read.
  int src_left = 0;
  int src_top = 0;
  /// Source rectangle (Pillow's `box`); nullopt means the whole input.
  std::optional<resample_box> box;
  /// Output image size.
  size2 output;
  /// Part of the output to compute; empty = all of it. Must lie inside the
  /// output. dst receives window.width × window.height pixels.
  crop_box window{};
  resample_filter filter = resample_filter::bilinear;
};

/// Resizes with Pillow's arithmetic. Holds reusable scratch (coefficient
/// tables, the intermediate image, accumulators): after warm-up, resizing
/// allocates nothing. Move-only. Not thread-safe: one per worker thread.
class resampler {
 public:
  resampler();
  ~resampler();
  resampler(resampler&&) noexcept;
  resampler& operator=(resampler&&) noexcept;
  resampler(const resampler&) = delete;
  resampler& operator=(const resampler&) = delete;

  /// `Image.resize((dst.width, dst.height), filter)` of all of `src`.
  void resize(image_view src, mutable_image_view dst,
              resample_filter filter = resample_filter::bilinear);

  /// The general form (see resample_request). `src` and `dst` have the same
  /// channel count (1..4). Throws std::invalid_argument when the box lies
  /// outside the input, the window outside the output, `dst` is not the
  /// window's size, or `src` lacks pixels the resize reads.
  void resize(image_view src, const resample_request& request, mutable_image_view dst);

  /// The rectangle of the logical input that resize(request) reads: decode
  /// at least this much. Pure.
  [[nodiscard]] static crop_box source_region(const resample_request& request);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace ringfeed::image
