// The transform-list ops that pad or warp an image: Pad, RandomCrop,
// RandomRotation and RandomAffine (torchvision 0.14's transforms.py draws,
// geometry.hpp's Pillow-exact pixels).
#include "ops_detail.hpp"

#include <cmath>
#include <stdexcept>

#include <ringfeed/image/tensor_kernels.hpp>

namespace ringfeed::image {

fill_color resolve_fill(std::string_view op, const std::vector<double>& fill, int channels) {
  // _parse_fill: None → 0; a number → every band; a sequence must have one
  // value per band; then int() (truncation) and Pillow's CLIP8.
  if (fill.size() != 1 && fill.size() != static_cast<std::size_t>(channels))
    throw std::invalid_argument(std::string(op) + ": The number of elements in 'fill' does not match the number of "
                                "bands of the image (" + std::to_string(fill.size()) + " != " +
                                std::to_string(channels) + ")");
  fill_color out{};
  for (int c = 0; c < 3; ++c) {
    const double v = std::trunc(fill[fill.size() == 1 ? 0 : std::min<std::size_t>(c, fill.size() - 1)]);
    out[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  return out;
}

namespace {

std::vector<double> fill_arg(const spec_args& a, std::string_view param) {
  std::vector<double> fill = a.numbers(param, {0});
  if (fill.empty()) a.fail(param, "expected a number or a sequence of numbers");
  return fill;
}

// torchvision's padding argument → (left, top, right, bottom).
std::array<int, 4> padding_arg(const spec_args& a, std::string_view param) {
  const std::vector<double> p = a.numbers(param, {});
  for (double d : p)
    if (std::floor(d) != d || std::fabs(d) > 1 << 20) a.fail(param, "paddings must be integers");
  switch (p.size()) {
    case 1: return {int(p[0]), int(p[0]), int(p[0]), int(p[0])};
    case 2: return {int(p[0]), int(p[1]), int(p[0]), int(p[1])};
    case 4: return {int(p[0]), int(p[1]), int(p[2]), int(p[3])};
    default:
      a.fail(param, "Padding must be an int or a 1, 2, or 4 element tuple, not a " + std::to_string(p.size()) +
                        " element tuple");
  }
}

constexpr std::string_view padding_modes[] = {"constant", "edge", "reflect", "symmetric"};

std::string mode_name(padding_mode m) { return std::string(padding_modes[static_cast<int>(m)]); }

void pad_frame(frame& f, std::array<int, 4> p, padding_mode mode, const std::vector<double>& fill, op_scratch& s,
               std::string_view op) {
  if (f.kind != frame_kind::image) return pad_tensor_frame(f, p, mode, fill, s, op);
  pad(f.pixels.view(), p[0], p[1], p[2], p[3], mode, resolve_fill(op, fill, f.channels), s.spare);
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

std::string fill_spec(const std::vector<double>& fill) {
  return fill.size() == 1 ? spec_number(fill[0]) : spec_tuple(fill);
}

class pad_op final : public transform_op {
 public:
  pad_op(std::array<int, 4> padding, std::vector<double> fill, padding_mode mode)
      : m_padding(padding), m_fill(std::move(fill)), m_mode(mode) {}
  std::string_view name() const noexcept override { return "Pad"; }
  std::string spec() const override {
    return "Pad((" + std::to_string(m_padding[0]) + ", " + std::to_string(m_padding[1]) + ", " +
           std::to_string(m_padding[2]) + ", " + std::to_string(m_padding[3]) + "), fill=" + fill_spec(m_fill) +
           ", padding_mode=" + mode_name(m_mode) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    if (in.size)
      out.size = size2{in.size->width + m_padding[0] + m_padding[2], in.size->height + m_padding[1] + m_padding[3]};
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch& s) const override {
    pad_frame(f, m_padding, m_mode, m_fill, s, "Pad");
  }

 private:
  std::array<int, 4> m_padding;
  std::vector<double> m_fill;
  padding_mode m_mode;
};

op_ptr make_pad(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("padding")) a.fail("padding", "missing");
  return std::make_shared<pad_op>(padding_arg(a, "padding"), fill_arg(a, "fill"),
                                  static_cast<padding_mode>(a.choice("padding_mode", padding_modes, 0)));
}

class random_crop_op final : public transform_op {
 public:
  random_crop_op(size2 size, std::optional<std::array<int, 4>> padding, bool pad_if_needed, std::vector<double> fill,
                 padding_mode mode)
      : m_size(size), m_padding(padding), m_pad_if_needed(pad_if_needed), m_fill(std::move(fill)), m_mode(mode) {}
  std::string_view name() const noexcept override { return "RandomCrop"; }
  std::string spec() const override {
    // Appended piece by piece: GCC 12's -Wrestrict misfires on one long
    // chain of temporaries here at -O2 (a false positive, PR 105651).
    std::string s = "RandomCrop((";
    s.append(std::to_string(m_size.height)).append(", ").append(std::to_string(m_size.width)).append("), padding=");
    if (m_padding) {
      s.append("(");
      for (std::size_t k = 0; k < 4; ++k) s.append(k ? ", " : "").append(std::to_string((*m_padding)[k]));
      s.append(")");
    } else {
      s.append("None");
    }
    s.append(", pad_if_needed=").append(m_pad_if_needed ? "True" : "False").append(", fill=").append(fill_spec(m_fill));
    s.append(", padding_mode=").append(mode_name(m_mode)).append(")");
    return s;
  }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    out.size = m_size;
    return out;
  }
  bool deterministic() const noexcept override { return false; }
  // RandomCrop.get_params after the padding forward() applies.
  crop_box draw(sample_rng& rng, size2 in) const {
    const int h = in.height, w = in.width;
    if (h < m_size.height || w < m_size.width)
      throw std::invalid_argument("RandomCrop: Required crop size (" + std::to_string(m_size.height) + ", " +
                                  std::to_string(m_size.width) + ") is larger than input image size (" +
                                  std::to_string(h) + ", " + std::to_string(w) + ")");
    if (w == m_size.width && h == m_size.height) return {0, 0, h, w};
    const int i = draw_int(rng, 0, h - m_size.height + 1);
    const int j = draw_int(rng, 0, w - m_size.width + 1);
    return {i, j, m_size.height, m_size.width};
  }
  size2 padded(size2 in) const {
    if (m_padding) {
      in.width += (*m_padding)[0] + (*m_padding)[2];
      in.height += (*m_padding)[1] + (*m_padding)[3];
    }
    if (m_pad_if_needed && in.width < m_size.width) in.width = 2 * m_size.width - in.width;
    if (m_pad_if_needed && in.height < m_size.height) in.height = 2 * m_size.height - in.height;
    return in;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const crop_box b = draw(rng, padded(in));
    return {double(b.top), double(b.left), double(b.height), double(b.width)};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (m_padding) pad_frame(f, *m_padding, m_mode, m_fill, s, "RandomCrop");
    // pad_if_needed pads by (size − side) on both sides, as F.pad([d, 0]).
    if (m_pad_if_needed && f.width < m_size.width) {
      const int d = m_size.width - f.width;
      pad_frame(f, {d, 0, d, 0}, m_mode, m_fill, s, "RandomCrop");
    }
    if (m_pad_if_needed && f.height < m_size.height) {
      const int d = m_size.height - f.height;
      pad_frame(f, {0, d, 0, d}, m_mode, m_fill, s, "RandomCrop");
    }
    const crop_box b = draw(rng, f.size());
    if (b.height == f.height && b.width == f.width) return;
    if (f.kind == frame_kind::tensor_f32) return crop_frame(f, b, s);
    crop(f.pixels.view(), b, s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  size2 m_size;
  std::optional<std::array<int, 4>> m_padding;
  bool m_pad_if_needed;
  std::vector<double> m_fill;
  padding_mode m_mode;
};

size2 crop_size_arg(const spec_args& a) {
  const std::vector<double> v = a.numbers("size", {});
  if (v.empty() || v.size() > 2) a.fail("size", "Please provide only two dimensions (h, w) for size.");
  for (double d : v)
    if (std::floor(d) != d || d < 1 || d > 1 << 20) a.fail("size", "sizes must be positive integers");
  return v.size() == 1 ? size2{int(v[0]), int(v[0])} : size2{int(v[1]), int(v[0])};
}

op_ptr make_random_crop(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("size")) a.fail("size", "missing");
  std::optional<std::array<int, 4>> padding;
  if (a.has("padding")) padding = padding_arg(a, "padding");
  return std::make_shared<random_crop_op>(crop_size_arg(a), padding, a.boolean("pad_if_needed", false),
                                          fill_arg(a, "fill"),
                                          static_cast<padding_mode>(a.choice("padding_mode", padding_modes, 0)));
}

// _setup_angle: a number x ≥ 0 means (−x, x); else a sequence of `sizes`.
std::vector<double> angle_arg(const spec_args& a, std::string_view param, std::initializer_list<std::size_t> sizes) {
  const spec_value* v = a.get(param);
  std::vector<double> d = a.numbers(param, {});
  if (v != nullptr && v->type == spec_value::kind::number) {
    if (d[0] < 0) a.fail(param, "If " + std::string(param) + " is a single number, it must be positive.");
    return {-d[0], d[0]};
  }
  for (std::size_t s : sizes)
    if (d.size() == s) return d;
  a.fail(param, std::string(param) + " should be a sequence of length " +
                    (sizes.size() == 1 ? "2" : "2 or 4") + ".");
}

std::optional<std::array<double, 2>> center_arg(const spec_args& a) {
  if (!a.has("center")) return std::nullopt;
  const auto c = a.numbers("center", {});
  if (c.size() != 2) a.fail("center", "center should be a sequence of length 2.");
  return std::array<double, 2>{c[0], c[1]};
}

interpolation warp_interp(const spec_args& a) {
  const auto i = static_cast<interpolation>(a.choice("interpolation", interpolation_names, 0));
  if (i != interpolation::nearest && i != interpolation::bilinear && i != interpolation::bicubic)
    a.fail("interpolation", "Pillow's affine transforms take nearest, bilinear or bicubic");
  return i;
}

std::string interp_word(interpolation i) {
  return i == interpolation::nearest ? "nearest" : i == interpolation::bilinear ? "bilinear" : "bicubic";
}

std::string center_spec(const std::optional<std::array<double, 2>>& c) {
  return c ? spec_tuple(*c) : std::string("None");
}

// On a uint8 tensor (v2's rotate_image / affine_image after ToImage):
// grid_sample takes nearest and bilinear.
void require_v2_tensor_warp(std::string_view op, interpolation interp) {
  if (interp != interpolation::nearest && interp != interpolation::bilinear)
    throw std::invalid_argument(std::string(op) + " on a uint8 tensor takes nearest or bilinear interpolation "
                                "(torchvision refuses the others there)");
}

class random_rotation_op final : public transform_op {
 public:
  random_rotation_op(std::vector<double> degrees, interpolation interp, bool expand,
                     std::optional<std::array<double, 2>> center, std::vector<double> fill, bool v2)
      : m_degrees(std::move(degrees)), m_interp(interp), m_expand(expand), m_center(center), m_fill(std::move(fill)),
        m_v2(v2) {}
  std::string_view name() const noexcept override { return "RandomRotation"; }
  std::string spec() const override {
    return std::string(m_v2 ? "v2." : "") + "RandomRotation(" + spec_tuple(m_degrees) + ", interpolation=" + interp_word(m_interp) +
           ", expand=" + (m_expand ? "True" : "False") + ", center=" + center_spec(m_center) +
           ", fill=" + fill_spec(m_fill) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (m_v2 && in.kind == frame_kind::tensor_u8) {
      require_v2_tensor_warp("RandomRotation", m_interp);
      if (m_expand)
        throw std::invalid_argument("RandomRotation on a uint8 tensor with expand=True is not run by ringfeed "
                                    "(v2's _compute_affine_output_size); expand=False is, or put it before ToImage()");
      return in;
    }
    require_kind("RandomRotation", in, {frame_kind::image});
    frame_shape out = in;
    if (m_expand) out.size = std::nullopt;
    return out;
  }
  bool deterministic() const noexcept override { return false; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    return {torch_uniform(rng, m_degrees[0], m_degrees[1])};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const double angle = torch_uniform(rng, m_degrees[0], m_degrees[1]);
    if (f.kind == frame_kind::tensor_u8) {
      rotate_tensor(f.pixels.view(), angle, s.spare);
    } else {
      rotate(f.pixels.view(), angle, m_interp, m_expand, m_center, resolve_fill("RandomRotation", m_fill, f.channels),
             s.spare);
    }
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  std::vector<double> m_degrees;
  interpolation m_interp;
  bool m_expand;
  std::optional<std::array<double, 2>> m_center;
  std::vector<double> m_fill;
  bool m_v2;
  bool m_fused_grid = current_torch_reference().fused_bmm;  // on a uint8 tensor: the grid's bmm

  // v2's rotate_image (expand=False): angle % 360; without a centre 0, 180
  // and (square) 90/270 are copies and rot90s, Pillow's transposes; else
  // the grid of v2's inverse matrix of −angle about the centre in torch's
  // centred frame.
  void rotate_tensor(image_view src, double angle, image_buffer& dst) const {
    angle = std::fmod(angle, 360.0);
    if (angle < 0) angle += 360.0;
    if (!m_center &&
        (angle == 0.0 || angle == 180.0 || (src.width == src.height && (angle == 90.0 || angle == 270.0)))) {
      rotate(src, angle, interpolation::nearest, false, std::nullopt, fill_color{}, dst);
      return;
    }
    std::array<double, 2> center{0.0, 0.0};
    if (m_center) center = {(*m_center)[0] - src.width * 0.5, (*m_center)[1] - src.height * 0.5};
    tensor::affine(src, inverse_affine_matrix_v2(center, -angle, {0, 0}, 1.0, {0, 0}),
                   m_interp == interpolation::bilinear, m_fill, dst, m_fused_grid, /*v2_blend=*/true);
  }
};

op_ptr make_random_rotation(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("degrees")) a.fail("degrees", "missing");
  return std::make_shared<random_rotation_op>(angle_arg(a, "degrees", {2}), warp_interp(a),
                                              a.boolean("expand", false), center_arg(a), fill_arg(a, "fill"),
                                              c.name.starts_with("v2."));
}

class random_affine_op final : public transform_op {
 public:
  struct options {
    std::vector<double> degrees;
    std::optional<std::array<double, 2>> translate, scale;
    std::vector<double> shear;  // empty: None
    interpolation interp = interpolation::nearest;
    std::vector<double> fill{0};
    std::optional<std::array<double, 2>> center;
    bool v2 = false;  // torchvision.transforms.v2.RandomAffine: v2's inverse matrix
    bool fused_grid = current_torch_reference().fused_bmm;  // on a uint8 tensor: the grid's bmm
  };
  explicit random_affine_op(options o) : m_o(std::move(o)) {}
  std::string_view name() const noexcept override { return "RandomAffine"; }
  std::string spec() const override {
    const auto opt = [](const std::optional<std::array<double, 2>>& v) { return v ? spec_tuple(*v) : std::string("None"); };
    return std::string(m_o.v2 ? "v2." : "") + "RandomAffine(" + spec_tuple(m_o.degrees) + ", translate=" + opt(m_o.translate) + ", scale=" +
           opt(m_o.scale) + ", shear=" + (m_o.shear.empty() ? std::string("None") : spec_tuple(m_o.shear)) +
           ", interpolation=" + interp_word(m_o.interp) + ", fill=" + fill_spec(m_o.fill) +
           ", center=" + center_spec(m_o.center) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (!m_o.v2 || in.kind != frame_kind::tensor_u8) {
      require_kind("RandomAffine", in, {frame_kind::image});
      return in;
    }
    require_v2_tensor_warp("RandomAffine", m_o.interp);  // v2's affine_image
    return in;
  }
  bool deterministic() const noexcept override { return false; }
  // RandomAffine.get_params(degrees, translate, scale, shear, [w, h]).
  struct params {
    double angle = 0;
    std::array<double, 2> translate{0, 0};
    double scale = 1;
    std::array<double, 2> shear{0, 0};
  };
  params draw(sample_rng& rng, size2 in) const {
    params p;
    p.angle = torch_uniform(rng, m_o.degrees[0], m_o.degrees[1]);
    if (m_o.translate) {
      const double max_dx = (*m_o.translate)[0] * in.width;
      const double max_dy = (*m_o.translate)[1] * in.height;
      p.translate[0] = std::nearbyint(torch_uniform(rng, -max_dx, max_dx));
      p.translate[1] = std::nearbyint(torch_uniform(rng, -max_dy, max_dy));
    }
    if (m_o.scale) p.scale = torch_uniform(rng, (*m_o.scale)[0], (*m_o.scale)[1]);
    if (!m_o.shear.empty()) {
      p.shear[0] = torch_uniform(rng, m_o.shear[0], m_o.shear[1]);
      if (m_o.shear.size() == 4) p.shear[1] = torch_uniform(rng, m_o.shear[2], m_o.shear[3]);
    }
    return p;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const params p = draw(rng, in);
    return {p.angle, p.translate[0], p.translate[1], p.scale, p.shear[0], p.shear[1]};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const params p = draw(rng, f.size());
    if (f.kind == frame_kind::tensor_u8) {  // v2's affine_image: the centre in torch's centred frame
      std::array<double, 2> center{0.0, 0.0};
      if (m_o.center) center = {(*m_o.center)[0] - f.width * 0.5, (*m_o.center)[1] - f.height * 0.5};
      tensor::affine(f.pixels.view(), inverse_affine_matrix_v2(center, p.angle, p.translate, p.scale, p.shear),
                     m_o.interp == interpolation::bilinear, m_o.fill, s.spare, m_o.fused_grid, /*v2_blend=*/true);
      std::swap(f.pixels, s.spare);
      f.set_image(f.kind);
      return;
    }
    const std::array<double, 2> center =
        m_o.center.value_or(std::array<double, 2>{f.width * 0.5, f.height * 0.5});
    const auto m = m_o.v2 ? inverse_affine_matrix_v2(center, p.angle, p.translate, p.scale, p.shear)
                          : inverse_affine_matrix(center, p.angle, p.translate, p.scale, p.shear);
    affine(f.pixels.view(), m, f.size(), m_o.interp, resolve_fill("RandomAffine", m_o.fill, f.channels), s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  options m_o;
};

std::optional<std::array<double, 2>> pair_arg(const spec_args& a, std::string_view param) {
  if (!a.has(param)) return std::nullopt;
  const auto v = a.numbers(param, {});
  if (v.size() != 2) a.fail(param, std::string(param) + " should be a sequence of length 2.");
  return std::array<double, 2>{v[0], v[1]};
}

op_ptr make_random_affine(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("degrees")) a.fail("degrees", "missing");
  random_affine_op::options o;
  o.degrees = angle_arg(a, "degrees", {2});
  o.translate = pair_arg(a, "translate");
  if (o.translate)
    for (double t : *o.translate)
      if (!(t >= 0 && t <= 1)) a.fail("translate", "translation values should be between 0 and 1");
  o.scale = pair_arg(a, "scale");
  if (o.scale)
    for (double s : *o.scale)
      if (!(s > 0)) a.fail("scale", "scale values should be positive");
  if (a.has("shear")) o.shear = angle_arg(a, "shear", {2, 4});
  o.interp = warp_interp(a);
  o.fill = fill_arg(a, "fill");
  o.center = center_arg(a);
  o.v2 = c.name.starts_with("v2.");
  return std::make_shared<random_affine_op>(std::move(o));
}

}  // namespace

std::span<const op_entry> geometry_op_entries() {
  static const op_entry entries[] = {
      {"Pad", make_pad},
      {"RandomCrop", make_random_crop},
      {"RandomRotation", make_random_rotation},
      {"v2.RandomRotation", make_random_rotation},
      {"RandomAffine", make_random_affine},
      {"v2.RandomAffine", make_random_affine},
  };
  return entries;
}

}  // namespace ringfeed::image
