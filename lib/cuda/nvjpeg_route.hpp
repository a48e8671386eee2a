// Private: where nvJPEG's decoder (nvjpeg_decoder.cpp) sends an image,
// decided from its parsed header alone. Pure and independent of nvjpeg.h,
// so it is tested in every build (nvjpeg_route_tests.cpp).
//
// The rules, from the nvJPEG documentation of CUDA 13.0 (docs.nvidia.com/
// cuda/nvjpeg, "nvJPEG Backend" and "Hardware Acceleration", and the
// comments of nvjpeg.h 13.0.4):
//   - NVJPEG_BACKEND_HARDWARE "supports baseline JPEG bitstream with single
//     scan. 410 and 411 sub-samplings are not supported": baseline (and
//     extended sequential) Huffman, 1 or 3 components, 4:4:4, 4:2:2, 4:2:0,
//     4:4:0 or grayscale. What the header alone cannot tell (sizes beyond
//     the engines' limits, an unusual scan structure) nvjpeg_decoder asks
//     nvjpegDecodeBatchedSupportedEx per image and decodes on the hybrid
//     backend instead.
//   - NVJPEG_BACKEND_HYBRID (Huffman on the CPU, the rest on the GPU) takes
//     the other Huffman JPEGs with 1 or 3 components: progressive, 4:1:1,
//     and everything when the device has no hardware engine.
//   - The CPU (libjpeg-turbo) keeps the rest: arithmetic coding (nvJPEG
//     decodes Huffman only), 4 components (nvJPEG's CMYK conversion is a
//     plain subtraction, Pillow's is not), subsamplings nvJPEG has no name
//     for, 3-component JPEGs that are not YCbCr, other formats, and EXIF orientations other than 1: the CPU path
//     applies the orientation where the loader asks for it, and a region is
//     drawn in the upright image.
#pragma once

#include <ringfeed/image/decode.hpp>

#include "jpeg_decoder.hpp"

namespace ringfeed::cuda {

/// The route of an image with header `info` when the device has hardware
/// JPEG engines (`hardware`) or not.
[[nodiscard]] jpeg_route nvjpeg_route(const image::image_info& info, bool hardware) noexcept;

}  // namespace ringfeed::cuda
