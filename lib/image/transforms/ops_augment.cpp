// AutoAugment (ImageNet, CIFAR10 and SVHN policies), RandAugment and
// TrivialAugmentWide as list ops: torchvision 0.14's autoaugment.py — its
// policy tables, its float32 magnitude bins (torch.linspace), its draws —
// over the same Pillow-exact ops (geometry.hpp, color.hpp) its _apply_op
// calls on PIL images. Their torchvision.transforms.v2 twins (spec names
// "v2.AutoAugment", ...; transforms.py picks them by the object's module)
// have the same tables and draws on PIL images but v2's arithmetic where
// it differs: v2's inverse affine matrix for the shears and translations,
// and Solarize's magnitude as a fraction, float32 linspace(1, 0), times
// 255.0 (v1: linspace(255, 0)). After ToImage (a uint8 tensor frame) the v2
// ops run v2's tensor kernels (apply_aug_tensor); v1's stay PIL-only.
#include "ops_detail.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include <ringfeed/image/color.hpp>
#include <ringfeed/image/tensor_kernels.hpp>

namespace ringfeed::image {

int posterize_bits_at(int top, double divisor, int bins, int k) {
  const float q = static_cast<float>((bins - 1) / divisor);
  return top - static_cast<int>(std::nearbyint(static_cast<float>(k) / q));
}

namespace {

enum class aug : unsigned char {
  identity, shear_x, shear_y, translate_x, translate_y, rotate, brightness, color, contrast, sharpness,
  posterize, solarize, autocontrast, equalize, invert
};

constexpr std::string_view aug_names[] = {"Identity",   "ShearX",    "ShearY",   "TranslateX", "TranslateY",
                                          "Rotate",     "Brightness", "Color",   "Contrast",   "Sharpness",
                                          "Posterize",  "Solarize",  "AutoContrast", "Equalize", "Invert"};

// The magnitude of bin `k` of `bins` for op `a` on a width × height image
// (the _augmentation_space tables); `wide` selects TrivialAugmentWide's.
// Returns NaN for the ops without magnitudes.
double magnitude_of(aug a, int k, int bins, size2 size, bool wide, linspace_rule rule, bool v2) {
  const auto linspace_at = [rule](double start, double end, int steps, int i) {
    return image::linspace_at(rule, start, end, steps, i);
  };
  switch (a) {
    case aug::shear_x:
    case aug::shear_y: return linspace_at(0.0, wide ? 0.99 : 0.3, bins, k);
    case aug::translate_x: return linspace_at(0.0, wide ? 32.0 : 150.0 / 331.0 * size.width, bins, k);
    case aug::translate_y: return linspace_at(0.0, wide ? 32.0 : 150.0 / 331.0 * size.height, bins, k);
    case aug::rotate: return linspace_at(0.0, wide ? 135.0 : 30.0, bins, k);
    case aug::brightness:
    case aug::color:
    case aug::contrast:
    case aug::sharpness: return linspace_at(0.0, wide ? 0.99 : 0.9, bins, k);
    case aug::posterize: return posterize_bits_at(8, wide ? 6.0 : 4.0, bins, k);
    case aug::solarize: return v2 ? linspace_at(1.0, 0.0, bins, k) : linspace_at(255.0, 0.0, bins, k);
    default: return std::nan("");
  }
}

bool signed_op(aug a) {
  return a == aug::shear_x || a == aug::shear_y || a == aug::translate_x || a == aug::translate_y ||
         a == aug::rotate || a == aug::brightness || a == aug::color || a == aug::contrast || a == aug::sharpness;
}

// _apply_op on a PIL image (v2: _apply_image_or_video_transform).
void apply_aug(frame& f, aug a, double m, interpolation interp, const std::vector<double>& fill, bool v2,
               op_scratch& s) {
  if (a == aug::identity) return;
  require_image("_apply_op", f);
  const image_view src = f.pixels.view();
  image_buffer& dst = s.spare;
  const fill_color fc = resolve_fill(aug_names[static_cast<int>(a)], fill, f.channels);
  const double deg = std::atan(m) * (180.0 / std::numbers::pi);  // math.degrees(math.atan(m))
  const std::array<double, 2> centre{f.width * 0.5, f.height * 0.5};
  const auto matrix_of = v2 ? inverse_affine_matrix_v2 : inverse_affine_matrix;
  switch (a) {
    case aug::shear_x:
      affine(src, matrix_of({0, 0}, 0.0, {0, 0}, 1.0, {deg, 0.0}), f.size(), interp, fc, dst);
      break;
    case aug::shear_y:
      affine(src, matrix_of({0, 0}, 0.0, {0, 0}, 1.0, {0.0, deg}), f.size(), interp, fc, dst);
      break;
    case aug::translate_x:
      affine(src, matrix_of(centre, 0.0, {std::trunc(m), 0}, 1.0, {0, 0}), f.size(), interp, fc, dst);
      break;
    case aug::translate_y:
      affine(src, matrix_of(centre, 0.0, {0, std::trunc(m)}, 1.0, {0, 0}), f.size(), interp, fc, dst);
      break;
    case aug::rotate: rotate(src, m, interp, false, std::nullopt, fc, dst); break;
    case aug::brightness: adjust_brightness(src, 1.0 + m, dst); break;
    case aug::color: adjust_saturation(src, 1.0 + m, dst); break;
    case aug::contrast: adjust_contrast(src, 1.0 + m, dst); break;
    case aug::sharpness: adjust_sharpness(src, 1.0 + m, dst); break;
    case aug::posterize: posterize(src, static_cast<int>(m), dst); break;
    case aug::solarize: solarize(src, v2 ? 255.0 * m : m, dst); break;  // v2: bound (255.0) * magnitude
    case aug::autocontrast: autocontrast(src, dst); break;
    case aug::equalize: equalize(src, dst); break;
    case aug::invert: invert(src, dst); break;
    case aug::identity: return;
  }
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

// v2's _apply_image_or_video_transform on a uint8 tensor (after ToImage;
// `fill` empty: None): torchvision's tensor kernels (tensor_kernels.hpp) — v2's own
// where they differ from v1's — with v2's inverse affine matrix in torch's
// centred coordinates (center=[0, 0] for the shears is the top-left corner
// there), and rotate_image's fast paths (rot90 and copies: the same
// transposes as Pillow's, geometry.hpp's rotate).
void apply_aug_tensor(frame& f, aug a, double m, bool bilinear, std::span<const double> fill, bool fused_grid,
                      op_scratch& s) {
  if (a == aug::identity) return;
  const image_view src = f.pixels.view();
  image_buffer& dst = s.spare;
  const double deg = std::atan(m) * (180.0 / std::numbers::pi);  // math.degrees(math.atan(m))
  const std::array<double, 2> corner{-f.width * 0.5, -f.height * 0.5};
  const auto grid = [&](const std::array<double, 6>& matrix) {
    tensor::affine(src, matrix, bilinear, fill, dst, fused_grid, /*v2_blend=*/true);
  };
  switch (a) {
    case aug::shear_x: grid(inverse_affine_matrix_v2(corner, 0.0, {0, 0}, 1.0, {deg, 0.0})); break;
    case aug::shear_y: grid(inverse_affine_matrix_v2(corner, 0.0, {0, 0}, 1.0, {0.0, deg})); break;
    case aug::translate_x: grid(inverse_affine_matrix_v2({0, 0}, 0.0, {std::trunc(m), 0}, 1.0, {0, 0})); break;
    case aug::translate_y: grid(inverse_affine_matrix_v2({0, 0}, 0.0, {0, std::trunc(m)}, 1.0, {0, 0})); break;
    case aug::rotate: {
      double angle = std::fmod(m, 360.0);  // angle % 360, Python's
      if (angle < 0) angle += 360.0;
      if (angle == 0.0 || angle == 180.0 || (f.width == f.height && (angle == 90.0 || angle == 270.0)))
        rotate(src, angle, interpolation::nearest, false, std::nullopt, fill_color{}, dst);  // a transpose
      else
        grid(inverse_affine_matrix_v2({0, 0}, -angle, {0, 0}, 1.0, {0, 0}));
      break;
    }
    case aug::brightness: tensor::adjust_brightness(src, 1.0 + m, dst); break;
    case aug::color: tensor::adjust_saturation_v2(src, 1.0 + m, dst); break;
    case aug::contrast: tensor::adjust_contrast_v2(src, 1.0 + m, dst); break;
    case aug::sharpness: tensor::adjust_sharpness_v2(src, 1.0 + m, dst); break;
    case aug::posterize: posterize(src, static_cast<int>(m), dst); break;
    case aug::solarize: {
      // image >= 255 * magnitude: the uint8 tensor compared with a Python
      // float promotes both to float32, so the threshold is rounded to one
      solarize(src, static_cast<float>(255.0 * m), dst);
      break;
    }
    case aug::autocontrast: tensor::autocontrast_v2(src, dst); break;
    case aug::equalize: equalize(src, dst); break;
    case aug::invert: invert(src, dst); break;
    case aug::identity: return;
  }
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

// One step of a policy: the op, its probability, its magnitude bin (−1: none).
struct policy_step {
  aug op;
  double p;
  int bin;
};
using policy = std::array<policy_step, 2>;

#define RF_STEP(name, p, bin) policy_step{aug::name, p, bin}
const policy imagenet_policies[] = {
    {RF_STEP(posterize, 0.4, 8), RF_STEP(rotate, 0.6, 9)},      {RF_STEP(solarize, 0.6, 5), RF_STEP(autocontrast, 0.6, -1)},
    {RF_STEP(equalize, 0.8, -1), RF_STEP(equalize, 0.6, -1)},   {RF_STEP(posterize, 0.6, 7), RF_STEP(posterize, 0.6, 6)},
    {RF_STEP(equalize, 0.4, -1), RF_STEP(solarize, 0.2, 4)},    {RF_STEP(equalize, 0.4, -1), RF_STEP(rotate, 0.8, 8)},
    {RF_STEP(solarize, 0.6, 3), RF_STEP(equalize, 0.6, -1)},    {RF_STEP(posterize, 0.8, 5), RF_STEP(equalize, 1.0, -1)},
    {RF_STEP(rotate, 0.2, 3), RF_STEP(solarize, 0.6, 8)},       {RF_STEP(equalize, 0.6, -1), RF_STEP(posterize, 0.4, 6)},
    {RF_STEP(rotate, 0.8, 8), RF_STEP(color, 0.4, 0)},          {RF_STEP(rotate, 0.4, 9), RF_STEP(equalize, 0.6, -1)},
    {RF_STEP(equalize, 0.0, -1), RF_STEP(equalize, 0.8, -1)},   {RF_STEP(invert, 0.6, -1), RF_STEP(equalize, 1.0, -1)},
    {RF_STEP(color, 0.6, 4), RF_STEP(contrast, 1.0, 8)},        {RF_STEP(rotate, 0.8, 8), RF_STEP(color, 1.0, 2)},
    {RF_STEP(color, 0.8, 8), RF_STEP(solarize, 0.8, 7)},        {RF_STEP(sharpness, 0.4, 7), RF_STEP(invert, 0.6, -1)},
    {RF_STEP(shear_x, 0.6, 5), RF_STEP(equalize, 1.0, -1)},     {RF_STEP(color, 0.4, 0), RF_STEP(equalize, 0.6, -1)},
    {RF_STEP(equalize, 0.4, -1), RF_STEP(solarize, 0.2, 4)},    {RF_STEP(solarize, 0.6, 5), RF_STEP(autocontrast, 0.6, -1)},
    {RF_STEP(invert, 0.6, -1), RF_STEP(equalize, 1.0, -1)},     {RF_STEP(color, 0.6, 4), RF_STEP(contrast, 1.0, 8)},
    {RF_STEP(equalize, 0.8, -1), RF_STEP(equalize, 0.6, -1)},
};
const policy cifar10_policies[] = {
    {RF_STEP(invert, 0.1, -1), RF_STEP(contrast, 0.2, 6)},      {RF_STEP(rotate, 0.7, 2), RF_STEP(translate_x, 0.3, 9)},
    {RF_STEP(sharpness, 0.8, 1), RF_STEP(sharpness, 0.9, 3)},   {RF_STEP(shear_y, 0.5, 8), RF_STEP(translate_y, 0.7, 9)},
    {RF_STEP(autocontrast, 0.5, -1), RF_STEP(equalize, 0.9, -1)}, {RF_STEP(shear_y, 0.2, 7), RF_STEP(posterize, 0.3, 7)},
    {RF_STEP(color, 0.4, 3), RF_STEP(brightness, 0.6, 7)},      {RF_STEP(sharpness, 0.3, 9), RF_STEP(brightness, 0.7, 9)},
    {RF_STEP(equalize, 0.6, -1), RF_STEP(equalize, 0.5, -1)},   {RF_STEP(contrast, 0.6, 7), RF_STEP(sharpness, 0.6, 5)},
    {RF_STEP(color, 0.7, 7), RF_STEP(translate_x, 0.5, 8)},     {RF_STEP(equalize, 0.3, -1), RF_STEP(autocontrast, 0.4, -1)},
    {RF_STEP(translate_y, 0.4, 3), RF_STEP(sharpness, 0.2, 6)}, {RF_STEP(brightness, 0.9, 6), RF_STEP(color, 0.2, 8)},
    {RF_STEP(solarize, 0.5, 2), RF_STEP(invert, 0.0, -1)},      {RF_STEP(equalize, 0.2, -1), RF_STEP(autocontrast, 0.6, -1)},
    {RF_STEP(equalize, 0.2, -1), RF_STEP(equalize, 0.6, -1)},   {RF_STEP(color, 0.9, 9), RF_STEP(equalize, 0.6, -1)},
    {RF_STEP(autocontrast, 0.8, -1), RF_STEP(solarize, 0.2, 8)}, {RF_STEP(brightness, 0.1, 3), RF_STEP(color, 0.7, 0)},
    {RF_STEP(solarize, 0.4, 5), RF_STEP(autocontrast, 0.9, -1)}, {RF_STEP(translate_y, 0.9, 9), RF_STEP(translate_y, 0.7, 9)},
    {RF_STEP(autocontrast, 0.9, -1), RF_STEP(solarize, 0.8, 3)}, {RF_STEP(equalize, 0.8, -1), RF_STEP(invert, 0.1, -1)},
    {RF_STEP(translate_y, 0.7, 9), RF_STEP(autocontrast, 0.9, -1)},
};
const policy svhn_policies[] = {
    {RF_STEP(shear_x, 0.9, 4), RF_STEP(invert, 0.2, -1)},       {RF_STEP(shear_y, 0.9, 8), RF_STEP(invert, 0.7, -1)},
    {RF_STEP(equalize, 0.6, -1), RF_STEP(solarize, 0.6, 6)},    {RF_STEP(invert, 0.9, -1), RF_STEP(equalize, 0.6, -1)},
    {RF_STEP(equalize, 0.6, -1), RF_STEP(rotate, 0.9, 3)},      {RF_STEP(shear_x, 0.9, 4), RF_STEP(autocontrast, 0.8, -1)},
    {RF_STEP(shear_y, 0.9, 8), RF_STEP(invert, 0.4, -1)},       {RF_STEP(shear_y, 0.9, 5), RF_STEP(solarize, 0.2, 6)},
    {RF_STEP(invert, 0.9, -1), RF_STEP(autocontrast, 0.8, -1)}, {RF_STEP(equalize, 0.6, -1), RF_STEP(rotate, 0.9, 3)},
    {RF_STEP(shear_x, 0.9, 4), RF_STEP(solarize, 0.3, 3)},      {RF_STEP(shear_y, 0.8, 8), RF_STEP(invert, 0.7, -1)},
    {RF_STEP(equalize, 0.9, -1), RF_STEP(translate_y, 0.6, 6)}, {RF_STEP(invert, 0.9, -1), RF_STEP(equalize, 0.6, -1)},
    {RF_STEP(contrast, 0.3, 3), RF_STEP(rotate, 0.8, 4)},       {RF_STEP(invert, 0.8, -1), RF_STEP(translate_y, 0.0, 2)},
    {RF_STEP(shear_y, 0.7, 6), RF_STEP(solarize, 0.4, 8)},      {RF_STEP(invert, 0.6, -1), RF_STEP(rotate, 0.8, 4)},
    {RF_STEP(shear_y, 0.3, 7), RF_STEP(translate_x, 0.9, 3)},   {RF_STEP(shear_x, 0.1, 6), RF_STEP(invert, 0.6, -1)},
    {RF_STEP(solarize, 0.7, 2), RF_STEP(translate_y, 0.6, 7)},  {RF_STEP(shear_y, 0.8, 4), RF_STEP(invert, 0.8, -1)},
    {RF_STEP(shear_x, 0.7, 9), RF_STEP(translate_y, 0.8, 3)},   {RF_STEP(shear_y, 0.8, 5), RF_STEP(autocontrast, 0.7, -1)},
    {RF_STEP(shear_x, 0.7, 2), RF_STEP(invert, 0.1, -1)},
};
#undef RF_STEP

constexpr std::string_view policy_names[] = {"imagenet", "cifar10", "svhn"};

// RandAugment's and TrivialAugmentWide's op lists (dict order; no Invert).
constexpr aug rand_ops[] = {aug::identity, aug::shear_x, aug::shear_y, aug::translate_x, aug::translate_y,
                            aug::rotate,   aug::brightness, aug::color, aug::contrast,   aug::sharpness,
                            aug::posterize, aug::solarize, aug::autocontrast, aug::equalize};

enum class family : unsigned char { auto_augment, rand_augment, trivial_wide };

struct step_draw {
  aug op = aug::identity;
  double magnitude = 0;
};

class augment_op final : public transform_op {
 public:
  struct options {
    family kind = family::auto_augment;
    int policy = 0;  // AutoAugment
    int num_ops = 2, magnitude = 9, bins = 31;
    interpolation interp = interpolation::nearest;
    std::vector<double> fill{0};
    bool fill_none = true;
    linspace_rule linspace = current_torch_reference().linspace;  // the magnitude bins
    bool v2 = false;  // torchvision.transforms.v2's class: its matrix and Solarize magnitudes
    bool fused_grid = current_torch_reference().fused_bmm;  // the tensor path's affine grid
  };
  explicit augment_op(options o) : m_o(std::move(o)) {}
  std::string_view name() const noexcept override {
    return m_o.kind == family::auto_augment   ? "AutoAugment"
           : m_o.kind == family::rand_augment ? "RandAugment"
                                              : "TrivialAugmentWide";
  }
  std::string spec() const override { return (m_o.v2 ? "v2." : "") + spec_v1(); }
  std::string spec_v1() const {
    const std::string interp = std::string(interpolation_names[static_cast<int>(m_o.interp)]);
    const std::string fill = m_o.fill_none ? "None" : spec_tuple(m_o.fill);
    switch (m_o.kind) {
      case family::auto_augment:
        return "AutoAugment(policy=" + std::string(policy_names[m_o.policy]) + ", interpolation=" + interp +
               ", fill=" + fill + ")";
      case family::rand_augment:
        return "RandAugment(num_ops=" + std::to_string(m_o.num_ops) + ", magnitude=" + std::to_string(m_o.magnitude) +
               ", num_magnitude_bins=" + std::to_string(m_o.bins) + ", interpolation=" + interp + ", fill=" + fill +
               ")";
      case family::trivial_wide:
        return "TrivialAugmentWide(num_magnitude_bins=" + std::to_string(m_o.bins) + ", interpolation=" + interp +
               ", fill=" + fill + ")";
    }
    return {};
  }
  frame_shape infer(const frame_shape& in) const override {
    if (!m_o.v2 || in.kind != frame_kind::tensor_u8) {
      require_kind(name(), in, {frame_kind::image});
      return in;
    }
    // v2 on a uint8 tensor: its grid_sample path, which takes nearest and
    // bilinear
    if (m_o.interp != interpolation::nearest && m_o.interp != interpolation::bilinear)
      throw std::invalid_argument(std::string(name()) + " on a uint8 tensor takes nearest or bilinear "
                                  "interpolation (torchvision refuses the others there)");
    return in;
  }
  bool deterministic() const noexcept override { return false; }

  // forward()'s draws, in torchvision's order: the steps to apply.
  std::vector<step_draw> draw(sample_rng& rng, size2 size) const {
    std::vector<step_draw> steps;
    if (m_o.kind == family::auto_augment) {
      const std::span<const policy> table = m_o.policy == 0   ? std::span<const policy>(imagenet_policies)
                                            : m_o.policy == 1 ? std::span<const policy>(cifar10_policies)
                                                              : std::span<const policy>(svhn_policies);
      const auto id = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(table.size())));
      const double probs[2] = {static_cast<float>(rng.uniform()), static_cast<float>(rng.uniform())};
      const bool negative[2] = {rng.uniform_int(0, 2) == 0, rng.uniform_int(0, 2) == 0};
      for (int i = 0; i < 2; ++i) {
        const policy_step& st = table[id][static_cast<std::size_t>(i)];
        if (!(static_cast<float>(probs[i]) <= static_cast<float>(st.p))) continue;  // float32 tensor <= p
        double m = st.bin >= 0 ? magnitude_of(st.op, st.bin, 10, size, false, m_o.linspace, m_o.v2) : 0.0;
        if (signed_op(st.op) && negative[i]) m = -m;
        steps.push_back({st.op, m});
      }
      return steps;
    }
    const int count = m_o.kind == family::rand_augment ? m_o.num_ops : 1;
    for (int i = 0; i < count; ++i) {
      const aug op = rand_ops[rng.uniform_int(0, static_cast<std::int64_t>(std::size(rand_ops)))];
      double m = 0;
      const bool has_bins = !std::isnan(magnitude_of(op, 0, m_o.bins, size, false, m_o.linspace, m_o.v2));
      if (has_bins) {
        const int k = m_o.kind == family::rand_augment ? m_o.magnitude
                                                        : static_cast<int>(rng.uniform_int(0, m_o.bins));
        m = magnitude_of(op, k, m_o.bins, size, m_o.kind == family::trivial_wide, m_o.linspace, m_o.v2);
      }
      if (signed_op(op) && rng.uniform_int(0, 2) == 1) m = -m;
      steps.push_back({op, m});
    }
    return steps;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    std::vector<double> out;
    for (const step_draw& s : draw(rng, in)) {
      out.push_back(static_cast<double>(s.op));
      out.push_back(s.magnitude);
    }
    return out;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const std::vector<step_draw> steps = draw(rng, f.size());
    if (f.kind == frame_kind::tensor_u8) {
      for (const step_draw& st : steps)
        apply_aug_tensor(f, st.op, st.magnitude, m_o.interp == interpolation::bilinear,
                         m_o.fill_none ? std::span<const double>() : std::span<const double>(m_o.fill), m_o.fused_grid,
                         s);
      return;
    }
    for (const step_draw& st : steps) apply_aug(f, st.op, st.magnitude, m_o.interp, m_o.fill, m_o.v2, s);
  }

 private:
  options m_o;
};

void common_args(const spec_args& a, augment_op::options& o) {
  o.interp = static_cast<interpolation>(a.choice("interpolation", interpolation_names, 0));
  if (o.interp != interpolation::nearest && o.interp != interpolation::bilinear && o.interp != interpolation::bicubic)
    a.fail("interpolation", "Pillow's affine transforms take nearest, bilinear or bicubic");
  o.fill_none = !a.has("fill");
  o.fill = a.numbers("fill", {0});
  if (o.fill.empty()) a.fail("fill", "expected a number or a sequence of numbers");
}

op_ptr make_auto_augment(const spec_call& c) {
  const spec_args a(c);
  augment_op::options o;
  o.v2 = c.name.starts_with("v2.");
  o.kind = family::auto_augment;
  o.policy = a.choice("policy", policy_names, 0);
  common_args(a, o);
  return std::make_shared<augment_op>(std::move(o));
}

op_ptr make_rand_augment(const spec_call& c) {
  const spec_args a(c);
  augment_op::options o;
  o.v2 = c.name.starts_with("v2.");
  o.kind = family::rand_augment;
  o.num_ops = a.integer("num_ops", 2);
  o.magnitude = a.integer("magnitude", 9);
  o.bins = a.integer("num_magnitude_bins", 31);
  if (o.num_ops < 0 || o.num_ops > 64) a.fail("num_ops", "must be in [0, 64]");
  if (o.bins < 1 || o.bins > 1 << 16) a.fail("num_magnitude_bins", "must be positive");
  if (o.magnitude < 0 || o.magnitude >= o.bins)
    a.fail("magnitude", "must index a magnitude bin: 0 <= magnitude < num_magnitude_bins (" +
                            std::to_string(o.bins) + ")");
  common_args(a, o);
  return std::make_shared<augment_op>(std::move(o));
}

op_ptr make_trivial_augment(const spec_call& c) {
  const spec_args a(c);
  augment_op::options o;
  o.v2 = c.name.starts_with("v2.");
  o.kind = family::trivial_wide;
  o.bins = a.integer("num_magnitude_bins", 31);
  if (o.bins < 2 || o.bins > 1 << 16) a.fail("num_magnitude_bins", "must be at least 2");
  common_args(a, o);
  return std::make_shared<augment_op>(std::move(o));
}

}  // namespace

std::vector<double> augment_magnitudes(std::string_view op, int bins, size2 size, bool wide, linspace_rule rule,
                                       bool v2) {
  std::vector<double> out;
  for (int i = 0; i < static_cast<int>(std::size(aug_names)); ++i)
    if (aug_names[i] == op)
      for (int k = 0; k < bins; ++k) out.push_back(magnitude_of(static_cast<aug>(i), k, bins, size, wide, rule, v2));
  return out;
}

std::span<const op_entry> augment_op_entries() {
  static const op_entry entries[] = {
      {"AutoAugment", make_auto_augment},
      {"RandAugment", make_rand_augment},
      {"TrivialAugmentWide", make_trivial_augment},
      {"v2.AutoAugment", make_auto_augment},
      {"v2.RandAugment", make_rand_augment},
      {"v2.TrivialAugmentWide", make_trivial_augment},
  };
  return entries;
}

}  // namespace ringfeed::image
