// torchvision.transforms.v2's tensor kernels that differ from v1's (see
// tensor_kernels.hpp), as torch 2.x's vectorized CPU kernels compute them:
// each torch op one float32 rounding, `add_(other, alpha=a)` one fused
// multiply-add (std::fma; this file is compiled with -ffp-contract=off so
// no other expression is fused). Checked against torchvision 0.29 on torch
// 2.14 in tests/python/test_augment_v2.py.
#include <ringfeed/image/tensor_kernels.hpp>

#include "image/kernels/simd_clones.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringfeed::image::tensor {

namespace {

void require_channels(const char* op, image_view src) {
  if (src.channels != 1 && src.channels != 3)
    throw std::invalid_argument(std::string(op) + ": expected an L or RGB image, got " +
                                std::to_string(src.channels) + " channels");
}

// .clamp_(0, 255).to(torch.uint8): truncation (through int32, the same
// byte for [0, 255], so the loops vectorize).
inline std::uint8_t to_u8(float v) {
  return static_cast<std::uint8_t>(static_cast<std::int32_t>(std::clamp(v, 0.0f, 255.0f)));
}

// _rgb_to_grayscale_image(preserve_dtype=False) then floor_:
// r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).
inline float gray_v2(const std::uint8_t* px) {
  const float l0 = static_cast<float>(px[0]) * 0.2989f;
  const float l1 = std::fma(static_cast<float>(px[1]), 0.587f, l0);
  return std::floor(std::fma(static_cast<float>(px[2]), 0.114f, l1));
}

// The per-row loops, each element on its own (no reassociation), compiled
// for the baseline and for x86-64-v3: std::fma one instruction there.

// A row's grays, each repeated for its pixel's 3 channels.
RINGFEED_V3_CLONES
void gray_row3(const std::uint8_t* in, int width, float* gray) {
  for (int x = 0; x < width; ++x, in += 3, gray += 3) gray[0] = gray[1] = gray[2] = gray_v2(in);
}

// gray_v2 of each pixel (RGB), or the byte (L), into gray[0, width).
RINGFEED_V3_CLONES
void gray_row(const std::uint8_t* in, int width, int ch, float* gray) {
  if (ch == 3)
    for (int x = 0; x < width; ++x, in += 3) gray[x] = gray_v2(in);
  else
    for (int x = 0; x < width; ++x) gray[x] = static_cast<float>(in[x]);
}

// out = to_u8(fma(other, r2, in · r)): image.mul(ratio).add_(other, alpha=1 − ratio).
RINGFEED_V3_CLONES
void blend_row_v2(const std::uint8_t* in, const float* other, int n, float r, float r2, std::uint8_t* out) {
  for (int i = 0; i < n; ++i) out[i] = to_u8(std::fma(other[i], r2, static_cast<float>(in[i]) * r));
}

// The same with one constant `other` (contrast's mean).
RINGFEED_V3_CLONES
void blend_const_v2(const std::uint8_t* in, float other, int n, float r, float r2, std::uint8_t* out) {
  for (int i = 0; i < n; ++i) out[i] = to_u8(std::fma(other, r2, static_cast<float>(in[i]) * r));
}

// adjust_sharpness_v2's inner columns of one row.
RINGFEED_V3_CLONES
void sharpness_row_v2(const std::uint8_t* up, const std::uint8_t* mid, const std::uint8_t* down, int ch, int n,
                      float r2, std::uint8_t* out) {
  for (int i = ch; i < n - ch; ++i) {
    // conv2d with float32(1/13), float32(5/13), round_: as adjust_sharpness
    // (tensor_kernels.cpp), round(S / 13) in integers
    const int sum = up[i - ch] + up[i] + up[i + ch] + mid[i - ch] + 5 * mid[i] + mid[i + ch] + down[i - ch] +
                    down[i] + down[i + ch];
    const float blurred = static_cast<float>((2 * sum + 13) / 26);
    const float x = mid[i];
    out[i] = to_u8(std::fma(blurred - x, r2, x));  // view.add_(blurred.sub_(view), alpha=1 - f)
  }
}

// autocontrast_v2's diff.div_(inv_scale), lo and inv given per element.
RINGFEED_V3_CLONES
void autocontrast_row_v2(const std::uint8_t* in, const float* lo, const float* inv, int n, std::uint8_t* out) {
  for (int i = 0; i < n; ++i) out[i] = to_u8((static_cast<float>(in[i]) - lo[i]) / inv[i]);
}

// Each column's (byte) minimum and maximum over the rows.
RINGFEED_V3_CLONES
void column_min_max(const std::uint8_t* in, int n, std::uint8_t* mn, std::uint8_t* mx) {
  for (int i = 0; i < n; ++i) {
    mn[i] = std::min(mn[i], in[i]);
    mx[i] = std::max(mx[i], in[i]);
  }
}

}  // namespace

void adjust_saturation_v2(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_saturation", src);
  if (src.channels == 1) return dst.assign(src);
  dst.reset(src.width, src.height, 3);
  const float r = static_cast<float>(factor);        // image.mul(ratio)
  const float r2 = static_cast<float>(1.0 - factor);  // add_(gray, alpha=1 - ratio)
  const int n = src.width * 3;
  thread_local std::vector<float> gray;
  gray.resize(static_cast<std::size_t>(n));
  for (int y = 0; y < src.height; ++y) {
    gray_row3(src.row(y), src.width, gray.data());
    blend_row_v2(src.row(y), gray.data(), n, r, r2, dst.view().row(y));
  }
}

void adjust_contrast_v2(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_contrast", src);
  const int ch = src.channels;
  thread_local std::vector<float> gray;
  gray.resize(static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.height));
  for (int y = 0; y < src.height; ++y)
    gray_row(src.row(y), src.width, ch, gray.data() + static_cast<std::size_t>(y) * src.width);
  const auto n = static_cast<std::int64_t>(gray.size());
  const float mean = torch_sum(gray.data(), n) / static_cast<float>(n);  // torch.mean: integers, exact below 2^24
  const float r = static_cast<float>(factor);
  const float r2 = static_cast<float>(1.0 - factor);
  dst.reset(src.width, src.height, ch);
  for (int y = 0; y < src.height; ++y) blend_const_v2(src.row(y), mean, src.width * ch, r, r2, dst.view().row(y));
}

void adjust_sharpness_v2(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_sharpness", src);
  if (src.width <= 2 || src.height <= 2) return dst.assign(src);
  dst.assign(src);  // the border rows and columns stay
  const float r2 = static_cast<float>(1.0 - factor);
  const int ch = src.channels;
  const int n = src.width * ch;
  for (int y = 1; y < src.height - 1; ++y) {
    const std::uint8_t* mid = src.row(y);
    sharpness_row_v2(mid - src.stride, mid, mid + src.stride, ch, n, r2, dst.view().row(y));
  }
}

void autocontrast_v2(image_view src, image_buffer& dst) {
  require_channels("autocontrast", src);
  const int ch = src.channels;
  const int n = src.width * ch;
  thread_local std::vector<std::uint8_t> col_min, col_max;
  col_min.assign(static_cast<std::size_t>(n), 255);
  col_max.assign(static_cast<std::size_t>(n), 0);
  for (int y = 0; y < src.height; ++y) column_min_max(src.row(y), n, col_min.data(), col_max.data());
  std::array<float, 3> lo{}, inv{};
  for (int c = 0; c < ch; ++c) {
    int mn = 255, mx = 0;
    for (int i = c; i < n; i += ch) {
      mn = std::min<int>(mn, col_min[static_cast<std::size_t>(i)]);
      mx = std::max<int>(mx, col_max[static_cast<std::size_t>(i)]);
    }
    const auto cc = static_cast<std::size_t>(c);
    if (mx <= mn) {  // eq_idxs (or an empty image): minimum 0, inv_scale 1
      lo[cc] = 0.0f, inv[cc] = 1.0f;
    } else {  // maximum.sub_(minimum).mul_(1.0 / bound)
      lo[cc] = static_cast<float>(mn);
      inv[cc] = static_cast<float>(mx - mn) * static_cast<float>(1.0 / 255.0);
    }
  }
  // lo and inv_scale per element of a row
  thread_local std::vector<float> lo_row, inv_row;
  lo_row.resize(static_cast<std::size_t>(n));
  inv_row.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    lo_row[static_cast<std::size_t>(i)] = lo[static_cast<std::size_t>(i % ch)];
    inv_row[static_cast<std::size_t>(i)] = inv[static_cast<std::size_t>(i % ch)];
  }
  dst.reset(src.width, src.height, ch);
  for (int y = 0; y < src.height; ++y)
    autocontrast_row_v2(src.row(y), lo_row.data(), inv_row.data(), n, dst.view().row(y));
}

}  // namespace ringfeed::image::tensor
