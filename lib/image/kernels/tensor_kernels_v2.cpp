// torchvision.transforms.v2's tensor kernels that differ from v1's (see
// tensor_kernels.hpp), as torch 2.x's vectorized CPU kernels compute them:
// each torch op one float32 rounding, `add_(other, alpha=a)` one fused
// multiply-add (std::fma; this file is compiled with -ffp-contract=off so
// no other expression is fused). Checked against torchvision 0.29 on torch
// 2.14 in tests/python/test_augment_v2.py.
#include <ringfeed/image/tensor_kernels.hpp>

#include <algorithm>
#include <array>
#include <cmath>
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

// .clamp_(0, 255).to(torch.uint8): truncation.
std::uint8_t to_u8(float v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f)); }

// _rgb_to_grayscale_image(preserve_dtype=False) then floor_:
// r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).
float gray_v2(const std::uint8_t* px) {
  const float l0 = static_cast<float>(px[0]) * 0.2989f;
  const float l1 = std::fma(static_cast<float>(px[1]), 0.587f, l0);
  return std::floor(std::fma(static_cast<float>(px[2]), 0.114f, l1));
}

}  // namespace

void adjust_saturation_v2(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_saturation", src);
  if (src.channels == 1) return dst.assign(src);
  dst.reset(src.width, src.height, 3);
  const float r = static_cast<float>(factor);        // image.mul(ratio)
  const float r2 = static_cast<float>(1.0 - factor);  // add_(gray, alpha=1 - ratio)
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int x = 0; x < src.width; ++x, in += 3, out += 3) {
      const float gray = gray_v2(in);
      for (int c = 0; c < 3; ++c) out[c] = to_u8(std::fma(gray, r2, static_cast<float>(in[c]) * r));
    }
  }
}

void adjust_contrast_v2(image_view src, double factor, image_buffer& dst) {
  require_channels("adjust_contrast", src);
  const int ch = src.channels;
  std::vector<float> gray(static_cast<std::size_t>(src.width) * static_cast<std::size_t>(src.height));
  std::size_t k = 0;
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    for (int x = 0; x < src.width; ++x, ++k, in += ch) gray[k] = ch == 3 ? gray_v2(in) : static_cast<float>(in[0]);
  }
  const auto n = static_cast<std::int64_t>(gray.size());
  const float mean = torch_sum(gray.data(), n) / static_cast<float>(n);  // torch.mean: integers, exact below 2^24
  const float r = static_cast<float>(factor);
  const float r2 = static_cast<float>(1.0 - factor);
  dst.reset(src.width, src.height, ch);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int i = 0; i < src.width * ch; ++i) out[i] = to_u8(std::fma(mean, r2, static_cast<float>(in[i]) * r));
  }
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
    const std::uint8_t* up = mid - src.stride;
    const std::uint8_t* down = mid + src.stride;
    std::uint8_t* out = dst.view().row(y);
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
}

void autocontrast_v2(image_view src, image_buffer& dst) {
  require_channels("autocontrast", src);
  const int ch = src.channels;
  std::array<float, 3> lo{}, inv{};
  for (int c = 0; c < ch; ++c) {
    int mn = 255, mx = 0;
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < src.width; ++x) {
        const int v = src.row(y)[static_cast<std::ptrdiff_t>(x) * ch + c];
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
    const auto cc = static_cast<std::size_t>(c);
    if (mx <= mn) {  // eq_idxs (or an empty image): minimum 0, inv_scale 1
      lo[cc] = 0.0f, inv[cc] = 1.0f;
    } else {  // maximum.sub_(minimum).mul_(1.0 / bound)
      lo[cc] = static_cast<float>(mn);
      inv[cc] = static_cast<float>(mx - mn) * static_cast<float>(1.0 / 255.0);
    }
  }
  dst.reset(src.width, src.height, ch);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int i = 0; i < src.width * ch; ++i) {
      const auto cc = static_cast<std::size_t>(i % ch);
      out[i] = to_u8((static_cast<float>(in[i]) - lo[cc]) / inv[cc]);  // diff.div_(inv_scale)
    }
  }
}

}  // namespace ringfeed::image::tensor
