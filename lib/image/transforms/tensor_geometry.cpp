// The geometric ops on tensor frames: torchvision's F.resize and F.pad of
// a uint8 or float32 tensor (after ToImage / PILToTensor / ToTensor /
// ToDtype), with torch's arithmetic (torch_resize.hpp) where the same op on
// a PIL image uses Pillow's. Crops and flips move values only and are the
// same code for every frame (ops_shape.cpp).
#include "ops_detail.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <ringfeed/image/torch_resize.hpp>

namespace ringfeed::image {

tensor_resize make_tensor_resize(interpolation interp, std::optional<bool> antialias) {
  tensor_resize r;
  r.interp = interp;
  r.antialias = antialias.value_or(false) && (interp == interpolation::bilinear || interp == interpolation::bicubic);
  const torch_reference ref = current_torch_reference();
  r.native_uint8 = interp == interpolation::bilinear ? ref.uint8_bilinear : ref.uint8_bicubic;
  if (ref.major < 2) r.torch1 = ref.name;
  return r;
}

void check_tensor_interpolation(std::string_view op, const tensor_resize& how) {
  const std::string name(interpolation_names[static_cast<int>(how.interp)]);
  if (how.interp != interpolation::nearest && how.interp != interpolation::bilinear &&
      how.interp != interpolation::bicubic)
    throw std::invalid_argument(std::string(op) + ": interpolation=" + name +
                                " on a tensor is torch's interpolate mode, which ringfeed does not run (on tensors "
                                "it runs nearest, bilinear and bicubic; on a PIL image every Pillow filter)");
  if (how.interp != interpolation::nearest && !how.torch1.empty())
    throw std::invalid_argument(std::string(op) + ": interpolation=" + name + " on a tensor under " + how.torch1 +
                                ": torch 1.x's float interpolate kernels sum in an order ringfeed does not follow "
                                "(values would differ in the last bits, bytes by 1); ringfeed runs it under torch "
                                "2.x, nearest under both, and every filter on a PIL image (before ToImage / "
                                "PILToTensor)");
}

void resize_tensor_frame(frame& f, size2 out, const tensor_resize& how, op_scratch& s) {
  check_tensor_interpolation("Resize", how);
  const auto m = how.interp == interpolation::nearest    ? torch_resize::mode::nearest
                 : how.interp == interpolation::bilinear ? torch_resize::mode::bilinear
                                                          : torch_resize::mode::bicubic;
  if (f.kind == frame_kind::tensor_f32) {
    torch_resize::resize_f32(f.values.data(), f.channels, f.height, f.width, out, m, how.antialias, s.spare_values);
    std::swap(f.values, s.spare_values);
    f.height = out.height;
    f.width = out.width;
    return;
  }
  resize_tensor_view(f.pixels.view(), f.kind, out, how, f, s);
}

void resize_tensor_view(image_view src, frame_kind kind, size2 out, const tensor_resize& how, frame& f,
                        op_scratch& s) {
  check_tensor_interpolation("Resize", how);
  const auto m = how.interp == interpolation::nearest    ? torch_resize::mode::nearest
                 : how.interp == interpolation::bilinear ? torch_resize::mode::bilinear
                                                          : torch_resize::mode::bicubic;
  // nearest runs on uint8 in every torchvision (v1 casts to float and
  // back, which changes nothing)
  if (m == torch_resize::mode::nearest || how.native_uint8) {
    torch_resize::resize_u8(src, out, m, how.antialias, s.spare);
  } else {
    torch_resize::resize_u8_via_float(src, out, m, how.antialias, s.spare);
  }
  std::swap(f.pixels, s.spare);
  f.set_image(kind);
}

namespace {

// torch's reflect needs each padding below the side it reflects;
// symmetric is taken up to the side (one reflection).
void check_reflect(std::string_view op, std::array<int, 4> p, int width, int height, padding_mode mode) {
  const int slack = mode == padding_mode::symmetric ? 1 : 0;
  if (p[0] >= width + slack || p[2] >= width + slack || p[1] >= height + slack || p[3] >= height + slack)
    throw std::invalid_argument(std::string(op) + ": " + (slack ? "symmetric" : "reflect") +
                                " padding of a tensor larger than the image (" + std::to_string(width) + "x" +
                                std::to_string(height) + ") is not supported");
}

// The source index of padded position `i` on a side of `n` (i may be < 0
// or >= n): edge clamps, reflect mirrors without the border, symmetric
// with it (torchvision's _pad_symmetric).
int source_index(int i, int n, padding_mode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case padding_mode::edge: return std::clamp(i, 0, n - 1);
    case padding_mode::reflect: return i < 0 ? -i : 2 * (n - 1) - i;
    case padding_mode::symmetric: return i < 0 ? -i - 1 : 2 * n - 1 - i;
    case padding_mode::constant: break;
  }
  return -1;
}

}  // namespace

void pad_tensor_frame(frame& f, std::array<int, 4> p, padding_mode mode, const std::vector<double>& fill,
                      op_scratch& s, std::string_view op) {
  if (fill.size() != 1 && fill.size() != static_cast<std::size_t>(f.channels))
    throw std::invalid_argument(std::string(op) + ": fill has " + std::to_string(fill.size()) +
                                " values, the tensor has " + std::to_string(f.channels) + " channels");
  if (mode == padding_mode::reflect || mode == padding_mode::symmetric) check_reflect(op, p, f.width, f.height, mode);
  const auto value = [&](int c) { return fill[fill.size() == 1 ? 0 : static_cast<std::size_t>(c)]; };
  if (f.kind == frame_kind::tensor_u8) {
    fill_color color{};
    for (int c = 0; c < f.channels; ++c) {
      const double v = mode == padding_mode::constant ? value(c) : 0;
      if (!(std::floor(v) == v && v >= 0 && v <= 255))
        throw std::invalid_argument(std::string(op) + ": fill " + spec_number(v) +
                                    " on a uint8 tensor: ringfeed takes integers 0..255 there (torch converts "
                                    "other values by rules it does not follow)");
      color[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(v);
    }
    if (f.channels == 1) color[1] = color[2] = color[0];
    // the same moves as np.pad / ImageOps.expand on the interleaved bytes
    pad(f.pixels.view(), p[0], p[1], p[2], p[3], mode, color, s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
    return;
  }
  for (int k : p)
    if (k < 0) throw std::invalid_argument(std::string(op) + ": negative padding of a float tensor is not supported");
  const int w = f.width + p[0] + p[2];
  const int h = f.height + p[1] + p[3];
  std::vector<float>& out = s.spare_values;
  out.resize(static_cast<std::size_t>(f.channels) * static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  for (int c = 0; c < f.channels; ++c) {
    const float* src = f.plane(c);
    float* dst = out.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
    const auto v = static_cast<float>(value(c));
    for (int y = 0; y < h; ++y) {
      const int sy = source_index(y - p[1], f.height, mode);
      for (int x = 0; x < w; ++x) {
        const int sx = source_index(x - p[0], f.width, mode);
        dst[static_cast<std::size_t>(y) * w + x] =
            sy < 0 || sx < 0 ? v : src[static_cast<std::size_t>(sy) * f.width + sx];
      }
    }
  }
  std::swap(f.values, out);
  f.height = h;
  f.width = w;
}

}  // namespace ringfeed::image
