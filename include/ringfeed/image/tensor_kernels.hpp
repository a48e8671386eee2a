// ringfeed::image::tensor — torchvision 0.14's tensor kernels
// (functional_tensor.py) on 8-bit images, as torch 1.13's CPU kernels
// compute them in float32, bit for bit.
//
// torchvision runs these, not Pillow, on a PIL image in one place of the
// classification recipes: AugMix converts its input to a uint8 tensor and
// runs its chains through F.affine / F.rotate (grid_sample), _blend and
// friends. The PIL-image versions of the same ops (color.hpp, geometry.hpp)
// give different pixels, so AugMix needs these.
//
// Same conventions as color.hpp: `src` and `dst` never alias, `dst` is reset
// to src's size and channels, 1 (L) or 3 (RGB) channels. Each float32 step
// is rounded where torch rounds it (one torch op each), and fused where
// torch 1.13's AVX2 kernels are compiled into fused multiply-adds (the
// grid_sample unnormalisation and bilinear sum; checked against torch in
// tests/python/test_augmix.py). Thread-safe: no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image::tensor {

/// F_t.affine / F_t.rotate (expand=False): _gen_affine_grid from the 2×3
/// `matrix` (_get_inverse_affine_matrix with torch's centred coordinates),
/// then grid_sample(mode, padding_mode="zeros", align_corners=False),
/// torch.round and uint8. `fill`: empty for None, else 1 or `channels`
/// values (the dummy-mask blend of _apply_grid_transform), each in 0..255
/// (else std::invalid_argument). `fused_grid`: the grid's bmm as torch 2.x
/// computes it on AVX2/AVX512 (x·a, then two fused multiply-adds); else
/// as torch 1.13's reference BLAS (each product and sum rounded).
/// `v2_blend`: bilinear with a fill blends as torchvision.transforms.v2's
/// _apply_grid_transform, ((img − fill) · mask) + fill, each step rounded
/// (nearest is a where in both).
void affine(image_view src, const std::array<double, 6>& matrix, bool bilinear, std::span<const double> fill,
            image_buffer& dst, bool fused_grid = false, bool v2_blend = false);

/// _blend(img, zeros, factor).
void adjust_brightness(image_view src, double factor, image_buffer& dst);

/// _blend(img, rgb_to_grayscale(img), factor); L images are returned as
/// they are (torchvision's "match PIL").
void adjust_saturation(image_view src, double factor, image_buffer& dst);

/// _blend(img, mean, factor), mean = torch.mean of rgb_to_grayscale(img)
/// (of img for L) in float32 (torch_sum's order).
void adjust_contrast(image_view src, double factor, image_buffer& dst);

/// _blend(img, degenerate, factor): degenerate is the 3×3 [1 1 1; 1 5 1;
/// 1 1 1] / 13 blur, rounded, inside a 1-pixel border of img. Images 2
/// pixels or less wide or high are returned as they are.
void adjust_sharpness(image_view src, double factor, image_buffer& dst);

/// F_t.autocontrast: per channel (x − min) · scale, clamped and truncated,
/// where scale = float32(1 / (max − min)) · 255 (torch's reversed division
/// is a reciprocal and a product); a flat channel is kept.
void autocontrast(image_view src, image_buffer& dst);

/// torchvision.transforms.v2's kernels on uint8 tensors where they differ
/// from v1's above (tensor_kernels_v2.cpp), as torch 2.x's vectorized CPU
/// kernels compute them: `add_(other, alpha=a)` is one fused multiply-add.
/// v2's other ops on uint8 tensors are v1's kernels: affine() (fed v2's
/// inverse matrix, and v2_blend for a bilinear fill), brightness,
/// posterize, solarize (at v2's float32 threshold) and equalize.

/// v2's adjust_saturation_image: gray = floor(0.2989·r ⊕ 0.587·g ⊕ 0.114·b)
/// (float, each ⊕ an fma), then v2's _blend: img·f ⊕ gray·(1 − f), clamped
/// and truncated. L images are returned as they are.
void adjust_saturation_v2(image_view src, double factor, image_buffer& dst);

/// v2's adjust_contrast_image: _blend(img, mean, f), the mean (torch_sum's)
/// of the floored float gray of adjust_saturation_v2 (of img for L).
void adjust_contrast_v2(image_view src, double factor, image_buffer& dst);

/// v2's adjust_sharpness_image: inside a 1-pixel border x ⊕ (blur − x)·(1 − f)
/// (blur: the rounded 3×3 [1 1 1; 1 5 1; 1 1 1] / 13 of adjust_sharpness),
/// clamped and truncated. Images 2 pixels or less wide or high as they are.
void adjust_sharpness_v2(image_view src, double factor, image_buffer& dst);

/// v2's autocontrast_image: per channel (x − min) / inv_scale, inv_scale =
/// float32(max − min) · float32(1 / 255) (a true division, not v1's
/// reciprocal), clamped and truncated; a flat channel is kept.
void autocontrast_v2(image_view src, image_buffer& dst);

/// torch.sum of `n` contiguous float32 values as torch 1.13 computes it on
/// one thread (SumKernel.cpp's cascade: 8-lane vectors, 4 rows of ILP,
/// 4 levels). With more threads torch splits inputs of 32768 elements or
/// more across them (its two-pass reduction), and its own result then
/// depends on its thread count; below that, and whenever every partial sum
/// is an integer under 2^24 (a mean of up to 65,793 8-bit pixels), the
/// order cannot matter.
[[nodiscard]] float torch_sum(const float* values, std::int64_t n);

/// Test hook: false makes affine() take its portable path even where the
/// CPU has AVX2 and FMA (process-wide; both paths compute the same bytes).
void set_affine_simd(bool enabled) noexcept;

}  // namespace ringfeed::image::tensor
