// ringfeed::image colour and pixel ops — torchvision 0.14's functional layer
// on PIL images (Debian 12's Pillow 9.4), bit for bit.
//
// Each op is `op(src, <resolved parameters>, dst)`: parameters are already
// drawn (no randomness here), `dst` is reset to the output size (same size,
// same channels unless the op says otherwise), `src` and `dst` never alias.
// Images are 8-bit, 1 channel (PIL mode "L") or 3 (mode "RGB"); every op takes
// both and does what torchvision does with that mode. Nothing allocates
// beyond `dst`'s growth, except gaussian_blur (a documented per-thread
// scratch). Bad parameters throw std::invalid_argument. Thread-safe: no
// shared state.
//
// The arithmetic is Pillow's (ImageEnhance, ImageOps, Image.blend →
// libImaging/Blend.c, convert → Convert.c, filter → Filter.c), or, for
// gaussian_blur, torch's float32 kernel and depthwise convolution (what
// torchvision runs on PIL images); see each function and lib/image/color*.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image {

/// Pillow's `Image.blend(a, b, alpha)` = a + alpha × (b − a), with alpha
/// rounded to a C float, computed in float and truncated, clipped to 0..255
/// when alpha lies outside [0, 1]. `a` and `b` have the same size and
/// channels (else std::invalid_argument).
void blend(image_view a, image_view b, double alpha, image_buffer& dst);

/// F.adjust_brightness: ImageEnhance.Brightness, blend(black, src, factor).
/// Any finite factor (torchvision does not check PIL input; < 0 clips to 0).
void adjust_brightness(image_view src, double factor, image_buffer& dst);

/// F.adjust_contrast: ImageEnhance.Contrast, blend(gray, src, factor), where
/// gray is int(mean + 0.5) of src converted to L (ImageStat's mean).
void adjust_contrast(image_view src, double factor, image_buffer& dst);

/// F.adjust_saturation: ImageEnhance.Color, blend(src → L → src's mode,
/// src, factor). On L images the result equals src.
void adjust_saturation(image_view src, double factor, image_buffer& dst);

/// F.adjust_hue: RGB → HSV (Pillow's Convert.c, float/double as there), H +=
/// np.uint8(hue_factor × 255) with uint8 wrap-around, HSV → RGB. NumPy casts a
/// negative float to uint8 through a C integer conversion on x86-64: it
/// truncates toward zero and wraps (np.uint8(-0.1 × 255) = 231,
/// np.uint8(-0.5 × 255) = 129); so do we. L images come back unchanged.
/// hue_factor outside [-0.5, 0.5] (or NaN) → std::invalid_argument.
void adjust_hue(image_view src, double hue_factor, image_buffer& dst);

/// F.to_grayscale / Grayscale: Pillow's convert("L") (ITU-R 601-2,
/// (19595 R + 38470 G + 7471 B + 0x8000) >> 16); num_output_channels 3
/// repeats L in three channels. Only 1 or 3 (else std::invalid_argument).
/// dst gets num_output_channels channels.
void to_grayscale(image_view src, int num_output_channels, image_buffer& dst);

/// F.adjust_sharpness: ImageEnhance.Sharpness, blend(src.filter(SMOOTH), src,
/// factor). SMOOTH is the 3×3 kernel (1 1 1 / 1 5 1 / 1 1 1) / 13 in C
/// floats; the border rows and columns are copied unfiltered, and an image
/// narrower or shorter than 3 is not filtered at all (Filter.c).
void adjust_sharpness(image_view src, double factor, image_buffer& dst);

/// F.posterize: ImageOps.posterize, keeps the top `bits` bits (0..8, else
/// std::invalid_argument as torchvision raises ValueError).
void posterize(image_view src, int bits, image_buffer& dst);

/// F.solarize: ImageOps.solarize, v < threshold ? v : 255 − v.
void solarize(image_view src, double threshold, image_buffer& dst);

/// F.autocontrast: ImageOps.autocontrast(cutoff=0) per channel: maps the
/// lowest..highest used value to 0..255 with int(v × scale + offset) in
/// double; a channel with one value is unchanged.
void autocontrast(image_view src, image_buffer& dst);

/// F.equalize: ImageOps.equalize per channel (its integer histogram LUT).
void equalize(image_view src, image_buffer& dst);

/// F.invert: 255 − v.
void invert(image_view src, image_buffer& dst);

/// torchvision's default sigma for a kernel size (GaussianBlur takes
/// sigma explicitly; F.gaussian_blur with sigma=None uses this):
/// 0.15 × ksize + 0.35.
[[nodiscard]] double gaussian_default_sigma(int kernel_size) noexcept;

/// torchvision's `_get_gaussian_kernel1d(size, sigma)` as torch 1.13 computes
/// it on an x86-64 CPU with AVX2 dispatch, bit for bit: float32 linspace,
/// x / sigma, squared, × −0.5, Sleef's expf (u10, FMA), torch's cascade sum
/// with 8-lane vectors, then pdf / sum. size: odd and ≥ 1; sigma > 0.
[[nodiscard]] std::vector<float> gaussian_kernel1d(int size, double sigma);

/// F.gaussian_blur(img, kernel_size = (kx, ky), sigma = (sx, sy)) on a PIL
/// image: torchvision runs its tensor kernel: the float32 2-D kernel
/// (outer product of the 1-D kernels), reflect padding by (kx/2, ky/2),
/// a per-channel convolution, round half to even, uint8. The convolution's
/// float sums follow the path torch 1.13 takes on one thread: oneDNN (fused
/// multiply-adds in row-major tap order) for RGB, and for L when both kernel
/// sides exceed 3 or the padded image holds more than 20480 pixels; else
/// im2col + reference BLAS sgemm (rounded products, same order).
/// kx, ky odd and ≥ 1; sx, sy > 0; kx/2 < width and ky/2 < height (torch's
/// reflect padding refuses more) — else std::invalid_argument. Scratch:
/// thread_local buffers, grown to the padded image (kept between calls,
/// freed at thread exit).
void gaussian_blur(image_view src, std::array<int, 2> kernel_size, std::array<double, 2> sigma,
                   image_buffer& dst);

/// Test hook: false makes gaussian_blur() take its portable path (every tap,
/// in order) even where the CPU has AVX2 and FMA (process-wide; both paths
/// compute the same bytes).
void set_blur_simd(bool enabled) noexcept;
/// Test hook: while `sums` is set, this thread's gaussian_blur() calls
/// also store their float32 sums (row-major, width · channels per row)
/// there, before torch.round; nullptr stops it.
void set_blur_sums(std::vector<float>* sums) noexcept;

}  // namespace ringfeed::image
