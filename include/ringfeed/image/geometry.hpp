// ringfeed::image geometry ops — torchvision 0.14's functional layer on PIL
// images (transforms/functional.py + functional_pil.py) with Pillow 9.4's
// arithmetic: resize, crop, flips, pad, affine and rotate.
//
// Every op takes its parameters already resolved (no randomness: the
// transform list draws them) and writes a new image into `dst`
// (dst.reset() to the output size; src and dst never alias). Images are
// 8-bit, 1 channel (PIL mode "L") or 3 (mode "RGB"); outputs equal
// torchvision's on `Image.open(f).convert("RGB" | "L")` bit for bit.
//
// Fill colours (`fill_color`): torchvision's `_parse_fill` turns the
// Python `fill` (None → 0; a number → that number for every band; a
// sequence of one value per band) into ints, and Pillow clips each to
// 0..255 (CLIP8) when it paints the colour. Pass those clipped values:
// {r, g, b} for RGB, {v, ·, ·} (element 0) for L.
//
// Bad parameters throw std::invalid_argument naming the op and the reason.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image {

/// torchvision's InterpolationMode names (mapped to Pillow's filters).
enum class interpolation : std::uint8_t { nearest, bilinear, bicubic, box, hamming, lanczos };

/// A fill colour after _parse_fill and CLIP8 (see the file comment).
using fill_color = std::array<std::uint8_t, 3>;

/// np.pad's modes as torchvision's F.pad names them.
enum class padding_mode : std::uint8_t { constant, edge, reflect, symmetric };

// ---------------------------------------------------------------------------
// Resize

/// torchvision 0.14's `_compute_resized_output_size` for an input of
/// `in` and F.resize's `size` ({s}: the shorter edge becomes s, the longer
/// int(s * long / short), at most `max_size`; {h, w}: exactly that) with
/// F.resize's argument checks. Returns (width, height). Throws
/// std::invalid_argument when `size` has not 1 or 2 elements, when
/// max_size is given with 2 elements, or when max_size <= s. Pure.
[[nodiscard]] size2 resized_output_size(size2 in, const std::vector<int>& size,
                                        std::optional<int> max_size = std::nullopt);

/// F.resize on a PIL image = `Image.resize((out.width, out.height), filter)`:
/// box, bilinear, hamming, bicubic and lanczos through the Pillow-exact
/// resampler (resample.hpp); nearest through Pillow's nearest path (an
/// affine scale with the centre of each output pixel mapped back, 0.5
/// pixel offset, steps accumulated in doubles as ImagingScaleAffine does).
/// An output the size of the input is a copy (Pillow returns a copy).
/// Throws std::invalid_argument when a side of `out` is < 1. Uses a
/// thread_local resampler: no allocation per call after warm-up beyond dst.
void resize(image_view src, size2 out, interpolation interp, image_buffer& dst);

// ---------------------------------------------------------------------------
// Crop, flips, pad

/// F.crop = `img.crop((left, top, left + width, top + height))`: the box
/// may reach outside the image; those pixels are 0. Throws
/// std::invalid_argument for a negative width or height (Pillow's "right
/// is less than left"); a zero side gives an empty image.
void crop(image_view src, crop_box box, image_buffer& dst);

/// F.hflip (FLIP_LEFT_RIGHT): column x becomes column width-1-x.
void hflip(image_view src, image_buffer& dst);

/// F.vflip (FLIP_TOP_BOTTOM): row y becomes row height-1-y.
void vflip(image_view src, image_buffer& dst);

/// F.pad on a PIL image (functional_pil.pad) with padding already as
/// (left, top, right, bottom) (torchvision's int → all four, (a, b) →
/// (a, b, a, b)). constant: ImageOps.expand (`fill`; a negative padding
/// crops, an output side < 0 throws). edge/reflect/symmetric: negative
/// paddings crop first, then numpy's np.pad on the array, reflect and
/// symmetric repeating as np.pad does when the padding exceeds the image
/// (reflect of a 1-pixel side repeats that pixel). Throws
/// std::invalid_argument where torchvision raises: the crop leaves a
/// negative size, or a non-constant mode pads an empty side.
void pad(image_view src, int left, int top, int right, int bottom, padding_mode mode, fill_color fill,
         image_buffer& dst);

// ---------------------------------------------------------------------------
// Affine and rotate

/// torchvision's `_get_inverse_affine_matrix(center, angle, translate,
/// scale, shear)` (inverted=True): the output→input matrix Pillow's AFFINE
/// transform wants. Angles in degrees, clockwise as F.affine takes them.
/// F.affine on a PIL image passes center = {width * 0.5, height * 0.5}
/// unless given. Throws std::invalid_argument when scale <= 0 (F.affine's
/// check). Pure; same double arithmetic in the same order as Python.
[[nodiscard]] std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle,
                                                          std::array<double, 2> translate, double scale,
                                                          std::array<double, 2> shear);

/// torchvision.transforms.v2's `_get_inverse_affine_matrix` (0.16 and
/// later; inverted=True): the same matrix as inverse_affine_matrix() with
/// v2's rewritten double arithmetic (shared cos(sy) and tan(sx) terms, the
/// centre and translation folded as cx - m0·(cx + tx) - m1·(cy + ty)). The
/// two differ in the last bits, enough to move a pixel of an odd-sized
/// image by one. Same arguments and checks as inverse_affine_matrix().
[[nodiscard]] std::array<double, 6> inverse_affine_matrix_v2(std::array<double, 2> center, double angle,
                                                             std::array<double, 2> translate, double scale,
                                                             std::array<double, 2> shear);

/// `Image.transform(out, Image.AFFINE, inverse_matrix, filter,
/// fillcolor=fill)` as F.affine calls it (F.affine passes out = the input's
/// size): output pixel (x, y) samples the input at
/// inverse_matrix · (x + 0.5, y + 0.5). nearest: Pillow's scale path (no
/// rotation terms), 16.16 fixed point (ImagingTransformAffine's
/// affine_fixed) or its double fallback; bilinear/bicubic: Pillow's filters
/// (edge rows/columns clamped, bicubic clipped). Output pixels whose source
/// lies outside the input keep `fill`. Throws std::invalid_argument for
/// box/hamming/lanczos (Pillow refuses them) or a negative out size.
void affine(image_view src, const std::array<double, 6>& inverse_matrix, size2 out, interpolation interp,
            fill_color fill, image_buffer& dst);

/// F.rotate on a PIL image = `Image.rotate(angle, filter, expand, center,
/// fillcolor=fill)`: angle in degrees counter-clockwise, taken mod 360;
/// without a center, 0 is a copy, 180 a pixel transpose, and 90/270 a
/// transpose when `expand` or the image is square (Pillow's fast paths,
/// which ignore filter and fill). Otherwise Pillow's own matrix (cos/sin
/// rounded to 15 decimals), around (w / 2, h / 2) or `center`, and with
/// `expand` the output size ceil(max) - floor(min) of the rotated corners
/// and the matching shift. Throws std::invalid_argument as affine() does.
void rotate(image_view src, double angle, interpolation interp, bool expand,
            std::optional<std::array<double, 2>> center, fill_color fill, image_buffer& dst);

}  // namespace ringfeed::image
