// Private: the crop / resize / flip head of a transform list on the device,
// for images the GPU decoded (decode_stage.hpp).
//
// Pillow's resampling (image::resampler, resample.hpp) split in two: the
// host computes each image's bounds and fixed-point coefficients with the
// very code the CPU resampler uses, packs them with the image's description
// into one table per batch (pinned host memory, copied with the batch), and
// one batched launch runs the horizontal pass into scratch and the vertical
// pass into the output, rounding and clipping as Pillow does, flipping while
// it writes. Given the same decoded pixels, the output is byte for byte the
// CPU resampler's (then mirrored when `flip`).
//
// resize_with_table() is the same arithmetic on the host: the simulated
// device's kernel and the reference the device kernel is tested against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/image/resample.hpp>

namespace ringfeed::cuda {

/// One image of a batched device resize.
struct resize_image {
  /// What the CPU path would ask image::resampler for: the logical input's
  /// size, where the decoded region starts in it (src_left/src_top), the
  /// box, the output size, the output window and the filter.
  image::resample_request request;
  /// The decoded region's size: RGB interleaved, rows of `src_pitch` bytes
  /// (0: width × 3, packed), at `src_offset` bytes into the launch's
  /// `source`. It holds at least resampler::source_region(request).
  int src_width = 0;
  int src_height = 0;
  std::size_t src_offset = 0;
  std::size_t src_pitch = 0;
  /// The output (the window's width × height × 3, packed) at `dst_offset`
  /// bytes into the launch's `target`.
  std::size_t dst_offset = 0;
  /// Mirror the output left to right (RandomHorizontalFlip).
  bool flip = false;
};

/// What a batch of images needs: bytes of the packed table and of the
/// device scratch (the horizontal passes' intermediates).
struct resize_sizes {
  std::size_t table_bytes = 0;
  std::size_t scratch_bytes = 0;
};

/// Sizes for `images`. Throws std::invalid_argument naming what is wrong
/// with an image (as resampler::resize would).
[[nodiscard]] resize_sizes measure_resize(std::span<const resize_image> images);

/// Writes the table for `images` into `table` (measure_resize's
/// table_bytes, 16-byte aligned). Host; any thread.
void pack_resize_table(std::span<const resize_image> images, std::span<std::byte> table);

/// One batched launch: the table (device memory on a device, host memory
/// for resize_with_table), `images` entries of it, and the bases that
/// src_offset, dst_offset and the scratch are relative to.
struct resize_launch {
  const std::byte* table = nullptr;
  std::size_t images = 0;
  const std::uint8_t* source = nullptr;
  std::uint8_t* target = nullptr;
  std::uint8_t* scratch = nullptr;
};

/// The device kernels' arithmetic on the host (all pointers host memory).
void resize_with_table(const resize_launch& k);

/// The kernels, queued on `s` (resize_kernels.cu; CUDA builds only).
/// Throws cuda_error naming the launch.
void launch_resize_kernels(const resize_launch& k, stream_t s);

}  // namespace ringfeed::cuda
