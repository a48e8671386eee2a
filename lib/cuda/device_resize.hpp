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
#include <vector>

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

/// One image's share of a launch table, planned apart from the launch (by
/// a decode thread, so the upload thread only copies): its entry and
/// coefficient blocks, every offset relative (to the decoded region, the
/// slot, the piece's own start), and the scratch it needs.
struct resize_piece {
  std::vector<std::byte> bytes;  // the entry, then its blocks
  std::size_t scratch_bytes = 0;
};

/// Plans `im` into `piece` (its memory reused); im.dst_offset is not read
/// (join_resize_table sets the target) and join adds its source offset to
/// im.src_offset (then relative, to the decoded region's start, say). Throws
/// std::invalid_argument naming what is wrong with the image (as
/// resampler::resize would). Host; any thread.
void plan_resize_piece(const resize_image& im, resize_piece& piece);

/// A planned piece and where its image lies: bytes into the launch's
/// source (added to the piece's own src_offset: the decoded region's
/// start, say) and target (the slot).
struct placed_piece {
  const resize_piece* piece = nullptr;
  std::size_t src_offset = 0;
  std::size_t dst_offset = 0;
};

/// Sizes of the table and scratch for `pieces`.
[[nodiscard]] resize_sizes measure_pieces(std::span<const placed_piece> pieces) noexcept;

/// Writes the launch table of `pieces` into `table` (measure_pieces'
/// table_bytes, 16-byte aligned): copies and offsets only, the bytes
/// pack_resize_table writes for the same images. Throws
/// std::invalid_argument for a table too small or misaligned.
void join_resize_table(std::span<const placed_piece> pieces, std::span<std::byte> table);

/// Sizes for `images` (plan_resize_piece each, measure_pieces). Throws
/// std::invalid_argument naming the image and what is wrong with it.
[[nodiscard]] resize_sizes measure_resize(std::span<const resize_image> images);

/// Writes the table for `images` into `table` (measure_resize's
/// table_bytes, 16-byte aligned): plan_resize_piece each, then
/// join_resize_table. Host; any thread.
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
