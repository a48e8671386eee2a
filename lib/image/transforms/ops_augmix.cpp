// AugMix as a list op, as torchvision 0.14 runs it on a PIL image: the image
// becomes a uint8 tensor, `mixture_width` chains of 1..3 (or chain_depth)
// ops run through torchvision's tensor kernels (tensor_kernels.hpp; the
// PIL-exact versions where the tensor kernel computes the same integers:
// posterize, solarize, equalize), and the chains are mixed in float32 with
// Dirichlet weights, in forward()'s order of operations, then truncated
// back to an 8-bit image.
//
// Draws, in forward()'s order: the Beta(α, α) split of the original and the
// mixtures (a 2-parameter Dirichlet), the chains' Dirichlet(α, …) weights,
// then per chain its depth, and per step the op, its magnitude bin in
// [0, severity) (ops with magnitudes) and its sign (signed ops). Dirichlet
// samples are normalised Marsaglia–Tsang gammas in double, cast to float32
// and clamped as torch's _s_dirichlet_cpu does.
//
// torchvision.transforms.v2.AugMix ("v2.AugMix", from transforms.py) has
// the same tables, draws and mixing, on a PIL image or a uint8 tensor
// alike, but v2's arithmetic in its chains: v2's inverse affine matrix,
// rotate_image's angle % 360 and rot90 fast paths, Solarize's threshold
// 255 · linspace(1, 0) rounded to float32, and v2's saturation, contrast,
// sharpness and autocontrast kernels (tensor_kernels.hpp).
#include "ops_detail.hpp"
#include "timm_augment.hpp"

#include <boost/random/normal_distribution.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include <ringfeed/image/color.hpp>
#include <ringfeed/image/tensor_kernels.hpp>

namespace ringfeed::image {

namespace {

enum class mix_op : unsigned char {
  shear_x, shear_y, translate_x, translate_y, rotate, posterize, solarize, autocontrast, equalize,
  brightness, color, contrast, sharpness
};
constexpr int basic_ops = 9, all_ops = 13;  // _augmentation_space's dict, all_ops appends four

bool has_magnitudes(mix_op o) { return o != mix_op::autocontrast && o != mix_op::equalize; }
bool signed_op(mix_op o) {
  return o <= mix_op::rotate || o >= mix_op::brightness;
}

// _augmentation_space(num_bins=10, (height, width))[op][0][bin].
double magnitude_of(mix_op o, int bin, size2 size, linspace_rule rule, bool v2) {
  constexpr int bins = 10;
  const auto linspace_at = [rule](double start, double end, int steps, int i) {
    return image::linspace_at(rule, start, end, steps, i);
  };
  switch (o) {
    case mix_op::shear_x:
    case mix_op::shear_y: return linspace_at(0.0, 0.3, bins, bin);
    case mix_op::translate_x: return linspace_at(0.0, size.width / 3.0, bins, bin);
    case mix_op::translate_y: return linspace_at(0.0, size.height / 3.0, bins, bin);
    case mix_op::rotate: return linspace_at(0.0, 30.0, bins, bin);
    case mix_op::posterize: return posterize_bits_at(4, 4.0, bins, bin);
    case mix_op::solarize: return v2 ? linspace_at(1.0, 0.0, bins, bin) : linspace_at(255.0, 0.0, bins, bin);
    case mix_op::brightness:
    case mix_op::color:
    case mix_op::contrast:
    case mix_op::sharpness: return linspace_at(0.0, 0.9, bins, bin);
    default: return 0.0;
  }
}

}  // namespace

namespace {
// Box–Muller from u1 in (0, 1] and u2 in [0, 1), its cos half.
inline double box_muller(double u1, double u2) {
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}
}  // namespace

// A standard normal draw (Box–Muller).
double standard_normal(sample_rng& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]
  const double u2 = rng.uniform();
  return box_muller(u1, u2);
}

namespace {
// sample_rng as the 32-bit uniform random bit generator Boost.Random takes.
struct u32_engine {
  using result_type = std::uint32_t;
  sample_rng& rng;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return 0xFFFFFFFFu; }
  result_type operator()() { return rng.next_u32(); }
};
}  // namespace

void standard_normals(sample_rng& rng, std::span<float> out) {
  // Pixel-mode erasing draws tens of thousands per image. Boost.Random's
  // ziggurat (Marsaglia and Tsang, 128 layers) takes one 32-bit draw per
  // float value outside the rare rejections, with no log, square root or
  // sincos: about 2.5 times faster than Box–Muller's pairs, which cost this
  // recipe 7% of its CPU. Exact in distribution, as timm's normal_() is.
  u32_engine engine{rng};
  boost::random::normal_distribution<float> normal;
  for (float& v : out) v = normal(engine);
}

// Gamma(alpha, 1): Marsaglia and Tsang, "A simple method for generating
// gamma variables" (ACM TOMS 2000), boosted for alpha < 1, as ATen's
// sample_gamma.
double gamma_draw(sample_rng& rng, double alpha) {
  double scale = 1.0;
  if (alpha < 1.0) {
    scale = std::pow(1.0 - rng.uniform(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    const double xx = x * x;
    if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
    if (std::log(u) < 0.5 * xx + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

namespace {

// torch._sample_dirichlet of `n` equal concentrations: float32, each in
// [FLT_MIN, the float below 1].
std::vector<float> dirichlet(sample_rng& rng, double alpha, int n) {
  std::vector<double> g(static_cast<std::size_t>(n));
  double sum = 0;
  for (double& v : g) sum += v = std::max(std::numeric_limits<double>::min(), gamma_draw(rng, alpha));
  std::vector<float> out;
  for (double v : g)
    out.push_back(std::clamp(static_cast<float>(v / sum), std::numeric_limits<float>::min(),
                             std::nextafter(1.0f, 0.0f)));
  return out;
}

struct mix_step {
  mix_op op;
  double magnitude;
};

struct mix_draw {
  std::vector<float> m;       // [original, mixtures]
  std::vector<float> chains;  // the chains' Dirichlet weights (before × m[1])
  std::vector<std::vector<mix_step>> steps;
  std::vector<int> ints;      // every torch.randint draw's value, in order (the test hook)
};

// v2's _apply_image_or_video_transform on a uint8 tensor, where it differs
// from v1's; false for the ops whose v1 arithmetic v2 shares.
bool apply_v2(image_view src, const mix_step& st, bool bilinear, std::span<const double> fill, bool fused_grid,
              image_buffer& dst) {
  const double m = st.magnitude;
  const double deg = std::atan(m) * (180.0 / std::numbers::pi);
  const std::array<double, 2> corner{-src.width * 0.5, -src.height * 0.5};
  switch (st.op) {
    case mix_op::shear_x:
      tensor::affine(src, inverse_affine_matrix_v2(corner, 0.0, {0, 0}, 1.0, {deg, 0.0}), bilinear, fill, dst, fused_grid, true);
      return true;
    case mix_op::shear_y:
      tensor::affine(src, inverse_affine_matrix_v2(corner, 0.0, {0, 0}, 1.0, {0.0, deg}), bilinear, fill, dst, fused_grid, true);
      return true;
    case mix_op::translate_x:
      tensor::affine(src, inverse_affine_matrix_v2({0, 0}, 0.0, {std::trunc(m), 0}, 1.0, {0, 0}), bilinear, fill, dst,
                     fused_grid, true);
      return true;
    case mix_op::translate_y:
      tensor::affine(src, inverse_affine_matrix_v2({0, 0}, 0.0, {0, std::trunc(m)}, 1.0, {0, 0}), bilinear, fill, dst,
                     fused_grid, true);
      return true;
    case mix_op::rotate: {
      double angle = std::fmod(m, 360.0);  // angle % 360, Python's
      if (angle < 0) angle += 360.0;
      if (angle == 0.0 || angle == 180.0 || (src.width == src.height && (angle == 90.0 || angle == 270.0)))
        rotate(src, angle, interpolation::nearest, false, std::nullopt, fill_color{}, dst);  // rot90: a transpose
      else
        tensor::affine(src, inverse_affine_matrix_v2({0, 0}, -angle, {0, 0}, 1.0, {0, 0}), bilinear, fill, dst,
                       fused_grid, true);
      return true;
    }
    case mix_op::solarize: solarize(src, static_cast<float>(255.0 * m), dst); return true;  // uint8 >= float32
    case mix_op::color: tensor::adjust_saturation_v2(src, 1.0 + m, dst); return true;
    case mix_op::contrast: tensor::adjust_contrast_v2(src, 1.0 + m, dst); return true;
    case mix_op::sharpness: tensor::adjust_sharpness_v2(src, 1.0 + m, dst); return true;
    case mix_op::autocontrast: tensor::autocontrast_v2(src, dst); return true;
    default: return false;
  }
}

// _apply_op on a uint8 tensor.
void apply(image_view src, const mix_step& st, bool bilinear, std::span<const double> fill, bool fused_grid,
           image_buffer& dst) {
  const double m = st.magnitude;
  const double deg = std::atan(m) * (180.0 / std::numbers::pi);  // math.degrees(math.atan(m))
  const std::array<double, 2> corner{-src.width * 0.5, -src.height * 0.5};  // center=[0, 0] in torch's frame
  switch (st.op) {
    case mix_op::shear_x:
      return tensor::affine(src, inverse_affine_matrix(corner, 0.0, {0, 0}, 1.0, {deg, 0.0}), bilinear, fill, dst, fused_grid);
    case mix_op::shear_y:
      return tensor::affine(src, inverse_affine_matrix(corner, 0.0, {0, 0}, 1.0, {0.0, deg}), bilinear, fill, dst, fused_grid);
    case mix_op::translate_x:
      return tensor::affine(src, inverse_affine_matrix({0, 0}, 0.0, {std::trunc(m), 0}, 1.0, {0, 0}), bilinear, fill,
                            dst, fused_grid);
    case mix_op::translate_y:
      return tensor::affine(src, inverse_affine_matrix({0, 0}, 0.0, {0, std::trunc(m)}, 1.0, {0, 0}), bilinear, fill,
                            dst, fused_grid);
    case mix_op::rotate:  // F.rotate: the inverse matrix of −angle about the centre
      return tensor::affine(src, inverse_affine_matrix({0, 0}, -m, {0, 0}, 1.0, {0, 0}), bilinear, fill, dst, fused_grid);
    case mix_op::posterize: return posterize(src, static_cast<int>(m), dst);
    case mix_op::solarize: return solarize(src, m, dst);
    case mix_op::autocontrast: return tensor::autocontrast(src, dst);
    case mix_op::equalize: return equalize(src, dst);
    case mix_op::brightness: return tensor::adjust_brightness(src, 1.0 + m, dst);
    case mix_op::color: return tensor::adjust_saturation(src, 1.0 + m, dst);
    case mix_op::contrast: return tensor::adjust_contrast(src, 1.0 + m, dst);
    case mix_op::sharpness: return tensor::adjust_sharpness(src, 1.0 + m, dst);
  }
}

// The mixing loops, one float32 rounding per torch op.
void scale_row(const std::uint8_t* in, float weight, float* mix, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) mix[i] = weight * static_cast<float>(in[i]);
}

void add_scaled_row(const std::uint8_t* in, float weight, float* mix, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float term = weight * static_cast<float>(in[i]);
    mix[i] = mix[i] + term;
  }
}

void truncate_row(const float* mix, std::uint8_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(std::clamp(mix[i], 0.0f, 255.0f));
}

class augmix_op final : public transform_op {
 public:
  struct options {
    int severity = 3, width = 3, depth = -1;
    double alpha = 1.0;
    bool all = true, bilinear = true;
    std::vector<double> fill;  // empty: None
    linspace_rule linspace = current_torch_reference().linspace;  // the magnitude bins
    bool fused_grid = current_torch_reference().fused_bmm;         // the geometric ops' grid
    bool v2 = false;  // torchvision.transforms.v2.AugMix: v2's kernels in the chains
  };
  explicit augmix_op(options o) : m_o(std::move(o)) {}
  std::string_view name() const noexcept override { return "AugMix"; }
  std::string spec() const override {
    return std::string(m_o.v2 ? "v2." : "") + "AugMix(severity=" + std::to_string(m_o.severity) + ", mixture_width=" + std::to_string(m_o.width) +
           ", chain_depth=" + std::to_string(m_o.depth) + ", alpha=" + spec_number(m_o.alpha) +
           ", all_ops=" + (m_o.all ? "True" : "False") + ", interpolation=" + (m_o.bilinear ? "bilinear" : "nearest") +
           ", fill=" + (m_o.fill.empty() ? std::string("None") : spec_tuple(m_o.fill)) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (m_o.v2) {  // v2's AugMix takes a PIL image or a uint8 tensor; it computes on the tensor either way
      require_kind(name(), in, {frame_kind::image, frame_kind::tensor_u8});
    } else {
      require_kind(name(), in, {frame_kind::image});
    }
    if (in.channels > 0) check_fill(in.channels);
    return in;
  }
  bool deterministic() const noexcept override { return false; }

  mix_draw draw(sample_rng& rng, size2 size) const {
    mix_draw d;
    d.m = dirichlet(rng, m_o.alpha, 2);
    d.chains = dirichlet(rng, m_o.alpha, m_o.width);
    const auto draw_int = [&](int lo, int hi) {  // torch.randint(lo, hi)
      d.ints.push_back(static_cast<int>(rng.uniform_int(lo, hi)));
      return d.ints.back();
    };
    for (int i = 0; i < m_o.width; ++i) {
      const int depth = m_o.depth > 0 ? m_o.depth : draw_int(1, 4);
      auto& chain = d.steps.emplace_back();
      for (int k = 0; k < depth; ++k) {
        const auto op = static_cast<mix_op>(draw_int(0, m_o.all ? all_ops : basic_ops));
        double m = has_magnitudes(op) ? magnitude_of(op, draw_int(0, m_o.severity), size, m_o.linspace, m_o.v2) : 0.0;
        if (signed_op(op) && draw_int(0, 2) == 1) m = -m;
        chain.push_back({op, m});
      }
    }
    return d;
  }
  // [m0, m1, chain weights…, every randint draw's value in torch's order]
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const mix_draw d = draw(rng, in);
    std::vector<double> out(d.m.begin(), d.m.end());
    out.insert(out.end(), d.chains.begin(), d.chains.end());
    out.insert(out.end(), d.ints.begin(), d.ints.end());
    return out;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (!m_o.v2) require_image("AugMix", f);
    const mix_draw d = draw(rng, f.size());
    const image_view orig = f.pixels.view();
    check_fill(orig.channels);  // whichever ops this sample drew
    const auto row_len = static_cast<std::size_t>(orig.width) * static_cast<std::size_t>(orig.channels);
    std::vector<float>& mix = s.spare_values;
    mix.resize(row_len * static_cast<std::size_t>(orig.height));
    const float m0 = d.m[0], m1 = d.m[1];
    for (int y = 0; y < orig.height; ++y)  // m[:, 0] · batch
      scale_row(orig.row(y), m0, mix.data() + static_cast<std::size_t>(y) * row_len, row_len);
    thread_local image_buffer a, b;
    for (std::size_t c = 0; c < d.steps.size(); ++c) {
      image_view aug = orig;
      for (const mix_step& st : d.steps[c]) {
        if (!m_o.v2 || !apply_v2(aug, st, m_o.bilinear, m_o.fill, m_o.fused_grid, b))
          apply(aug, st, m_o.bilinear, m_o.fill, m_o.fused_grid, b);
        std::swap(a, b);
        aug = a.view();
      }
      const float weight = d.chains[c] * m1;  // combined_weights[:, i]
      for (int y = 0; y < orig.height; ++y)   // mix.add_(weight · aug)
        add_scaled_row(aug.row(y), weight, mix.data() + static_cast<std::size_t>(y) * row_len, row_len);
    }
    image_buffer& out = s.spare;
    out.reset(orig.width, orig.height, orig.channels);
    for (int y = 0; y < orig.height; ++y)  // mix.to(uint8): truncation
      truncate_row(mix.data() + static_cast<std::size_t>(y) * row_len, out.view().row(y), row_len);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  // One fill value, or one per channel (_apply_grid_transform's broadcast).
  void check_fill(int channels) const {
    if (m_o.fill.size() > 1 && static_cast<int>(m_o.fill.size()) != channels)
      throw std::invalid_argument("AugMix: fill has " + std::to_string(m_o.fill.size()) + " values for an image of " +
                                  std::to_string(channels) + " channels");
  }

  options m_o;
};

op_ptr make_augmix(const spec_call& c) {
  const spec_args a(c);
  augmix_op::options o;
  o.v2 = c.name.starts_with("v2.");
  o.severity = a.integer("severity", 3);
  if (o.severity < 1 || o.severity > 10) a.fail("severity", "must be between [1, 10]");
  o.width = a.integer("mixture_width", 3);
  if (o.width < 1 || o.width > 64) a.fail("mixture_width", "must be in [1, 64]");
  o.depth = a.integer("chain_depth", -1);
  if (o.depth > 64) a.fail("chain_depth", "must be at most 64 (0 or less: a random depth in [1, 3])");
  o.alpha = a.number("alpha", 1.0);
  if (!(o.alpha > 0.0 && o.alpha <= 1e6)) a.fail("alpha", "must be positive (a Dirichlet concentration)");
  o.all = a.boolean("all_ops", true);
  const auto interp = static_cast<interpolation>(a.choice("interpolation", interpolation_names, 1));
  if (interp != interpolation::nearest && interp != interpolation::bilinear)
    a.fail("interpolation", "AugMix runs torchvision's tensor kernels, which take nearest or bilinear");
  o.bilinear = interp == interpolation::bilinear;
  if (a.has("fill")) {
    o.fill = a.numbers("fill", {});
    if (o.fill.empty()) a.fail("fill", "expected a number or a sequence of numbers");
    for (double v : o.fill)
      if (!(v >= 0.0 && v <= 255.0)) a.fail("fill", "values must lie in [0, 255] (uint8 pixels)");
  }
  return std::make_shared<augmix_op>(std::move(o));
}

}  // namespace

std::span<const op_entry> augmix_op_entries() {
  static const op_entry entries[] = {{"AugMix", make_augmix}, {"v2.AugMix", make_augmix}};
  return entries;
}

}  // namespace ringfeed::image
