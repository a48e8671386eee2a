// ringfeed::image::torch_resize — torch.nn.functional.interpolate on the
// CPU, as torchvision's tensor resize calls it (size given, no scale
// factor, align_corners=False), in torch 2.x's arithmetic
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp, UpSample.h).
//
// Which kernel runs is torchvision's choice (the op decides, see
// ops_shape.cpp); this file only computes:
//  - resize_u8: torch's native uint8 kernels. bilinear / bicubic: the
//    separable pass (width first, then height; a side whose size does not
//    change is skipped) with int16 weights at `weights_precision` bits
//    (the generic `_separable_upsample_generic_Nd_kernel_impl_single_dim`;
//    the AVX2 `upsample_avx_bilinear_bicubic_uint8` computes the same
//    integers, being Pillow-SIMD's); antialias=False uses torch's index /
//    lambda rule with out-of-range taps folded onto the border and the
//    -0.75 cubic, antialias=True Pillow's support-scaled filters with the
//    -0.5 cubic. nearest: torch's index floor(i · float(in / out)).
//  - resize_f32: the float32 kernels on CHW planes: `_upsample_*2d_aa`
//    (the same separable pass in float), `upsample_bilinear2d` (four
//    products summed, the channels-last kernel torch picks for outputs of
//    h + w ≤ 128 and for 3 channels on one thread, as in a DataLoader
//    worker; else rows first), `upsample_bicubic2d` (rows of the source
//    blended first, then the four rows) and nearest. torch's float sums may
//    be contracted into fused multiply-adds by its compiler: results agree
//    to a float32 rounding or two (the issue's ≤ 1e-6), not bit for bit.
//  - resize_u8_via_float: torchvision's cast path for a uint8 tensor whose
//    kernel torch runs in float (v1's F_t.resize; v2 on a CPU without
//    AVX2): .float(), resize_f32, clamp to [0, 255] for bicubic, round
//    half to even, .to(uint8).
//
// Thread-safe: no shared state. `src` and `dst` never alias.
#pragma once

#include <cstdint>
#include <vector>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image::torch_resize {

enum class mode : std::uint8_t { nearest, bilinear, bicubic };

/// torch's uint8 interpolate of an interleaved image (1 to 4 channels;
/// channels are independent) to `out`. `antialias` is ignored for nearest.
void resize_u8(image_view src, size2 out, mode m, bool antialias, image_buffer& dst);

/// torch's float32 interpolate of `channels` planes of height × width
/// (CHW) to `out`; `dst` is resized to channels × out.height × out.width.
void resize_f32(const float* src, int channels, int height, int width, size2 out, mode m, bool antialias,
                std::vector<float>& dst);

/// The cast path: resize_f32 of the bytes as floats, then clamp (bicubic),
/// torch.round and .to(uint8), interleaved again.
void resize_u8_via_float(image_view src, size2 out, mode m, bool antialias, image_buffer& dst);

}  // namespace ringfeed::image::torch_resize
