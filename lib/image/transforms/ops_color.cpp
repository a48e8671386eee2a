// The transform-list ops that change colours: ColorJitter, Grayscale,
// RandomGrayscale, GaussianBlur and the Random{Posterize, Solarize,
// Autocontrast, Equalize, AdjustSharpness, Invert} family (torchvision
// 0.14's draws; color.hpp's Pillow/torch-exact pixels).
#include "ops_detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <ringfeed/image/color.hpp>

namespace ringfeed::image {

namespace {

// Runs `fn(view, dst)` on the frame's image and adopts the result.
template <class Fn>
void apply_image(frame& f, op_scratch& s, std::string_view op, Fn&& fn) {
  require_image(op, f);
  fn(image_view(f.pixels.view()), s.spare);
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

// --- ColorJitter -------------------------------------------------------------------

// ColorJitter._check_input: a number v ≥ 0 → [c − v, c + v] (the low end
// clipped at 0 where asked); a pair within `bound`; nothing to do → empty.
std::vector<double> jitter_range(const spec_args& a, std::string_view name, double center, double lo, double hi,
                                 bool clip_first_on_zero) {
  const spec_value* v = a.get(name);
  if (v == nullptr || v->type == spec_value::kind::none) return {};
  std::vector<double> r = a.numbers(name, {});
  if (v->type == spec_value::kind::number) {
    if (!(r[0] >= 0)) a.fail(name, "If " + std::string(name) + " is a single number, it must be non negative.");
    r = {center - r[0], center + r[0]};
    if (clip_first_on_zero) r[0] = std::max(r[0], 0.0);
  } else if (r.size() != 2) {
    a.fail(name, std::string(name) + " should be a single number or a list/tuple with length 2.");
  }
  // torchvision 0.14 checks the bounds of a pair only, so hue=0.6 failed in adjust_hue at the
  // first image; later torchvision checks both forms here, and so do we.
  if (!(lo <= r[0] && r[0] <= r[1] && r[1] <= hi))
    a.fail(name, std::string(name) + " values should be between (" + spec_number(lo) + ", " + spec_number(hi) + ")");
  if (r[0] == center && r[1] == center) return {};
  return r;
}

class color_jitter_op final : public transform_op {
 public:
  color_jitter_op(std::array<std::vector<double>, 4> ranges) : m_ranges(std::move(ranges)) {}
  std::string_view name() const noexcept override { return "ColorJitter"; }
  std::string spec() const override {
    static constexpr const char* names[] = {"brightness", "contrast", "saturation", "hue"};
    std::string s = "ColorJitter(";
    for (int k = 0; k < 4; ++k)
      s += std::string(k ? ", " : "") + names[k] + "=" + (m_ranges[k].empty() ? "None" : spec_tuple(m_ranges[k]));
    return s + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("ColorJitter", in, {frame_kind::image});
    return in;
  }
  bool deterministic() const noexcept override { return false; }
  struct params {
    std::array<int, 4> order{};
    std::array<double, 4> factor{};
  };
  // get_params: torch.randperm(4), then one uniform per jittered property
  // in the order brightness, contrast, saturation, hue.
  params draw(sample_rng& rng) const {
    params p;
    std::iota(p.order.begin(), p.order.end(), 0);
    for (int i = 3; i > 0; --i) std::swap(p.order[i], p.order[static_cast<std::size_t>(rng.uniform_int(0, i + 1))]);
    for (int k = 0; k < 4; ++k)
      p.factor[k] = m_ranges[k].empty() ? std::numeric_limits<double>::quiet_NaN()
                                        : torch_uniform(rng, m_ranges[k][0], m_ranges[k][1]);
    return p;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    const params p = draw(rng);
    return {double(p.order[0]), double(p.order[1]), double(p.order[2]), double(p.order[3]),
            p.factor[0], p.factor[1], p.factor[2], p.factor[3]};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const params p = draw(rng);
    for (int k : p.order) {
      if (m_ranges[k].empty()) continue;
      const double v = p.factor[k];
      apply_image(f, s, "ColorJitter", [&](image_view src, image_buffer& dst) {
        switch (k) {
          case 0: adjust_brightness(src, v, dst); break;
          case 1: adjust_contrast(src, v, dst); break;
          case 2: adjust_saturation(src, v, dst); break;
          default: adjust_hue(src, v, dst); break;
        }
      });
    }
  }

 private:
  std::array<std::vector<double>, 4> m_ranges;  // brightness, contrast, saturation, hue; empty: off
};

op_ptr make_color_jitter(const spec_call& c) {
  const spec_args a(c);
  const double inf = std::numeric_limits<double>::infinity();
  return std::make_shared<color_jitter_op>(std::array<std::vector<double>, 4>{
      jitter_range(a, "brightness", 1, 0, inf, true), jitter_range(a, "contrast", 1, 0, inf, true),
      jitter_range(a, "saturation", 1, 0, inf, true), jitter_range(a, "hue", 0, -0.5, 0.5, false)});
}

// --- Grayscale, RandomGrayscale ----------------------------------------------------

class grayscale_op final : public transform_op {
 public:
  // channels 0: RandomGrayscale (keep the input's count), drawn with p.
  grayscale_op(int channels, double p, bool random) : m_channels(channels), m_p(p), m_random(random) {
    if (!random && channels != 1 && channels != 3)
      throw std::invalid_argument("Grayscale: num_output_channels should be either 1 or 3");
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("RandomGrayscale: p must be in [0, 1]");
  }
  std::string_view name() const noexcept override { return m_random ? "RandomGrayscale" : "Grayscale"; }
  std::string spec() const override {
    return m_random ? "RandomGrayscale(p=" + spec_number(m_p) + ")"
                    : "Grayscale(num_output_channels=" + std::to_string(m_channels) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    frame_shape out = in;
    if (!m_random) out.channels = m_channels;
    return out;
  }
  bool deterministic() const noexcept override { return !m_random; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    return m_random ? std::vector<double>{rng.uniform() < m_p ? 1.0 : 0.0} : std::vector<double>{};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (m_random && !(rng.uniform() < m_p)) return;  // torch.rand(1) < p
    const int channels = m_random ? f.channels : m_channels;
    apply_image(f, s, name(), [&](image_view src, image_buffer& dst) { to_grayscale(src, channels, dst); });
  }

 private:
  int m_channels;
  double m_p;
  bool m_random;
};

op_ptr make_grayscale(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<grayscale_op>(a.integer("num_output_channels", 1), 1.0, false);
}
op_ptr make_random_grayscale(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<grayscale_op>(0, a.number("p", 0.1), true);
}

// --- GaussianBlur --------------------------------------------------------------------

class gaussian_blur_op final : public transform_op {
 public:
  gaussian_blur_op(std::array<int, 2> kernel, std::array<double, 2> sigma) : m_kernel(kernel), m_sigma(sigma) {}
  std::string_view name() const noexcept override { return "GaussianBlur"; }
  std::string spec() const override {
    return "GaussianBlur((" + std::to_string(m_kernel[0]) + ", " + std::to_string(m_kernel[1]) +
           "), sigma=" + spec_tuple(m_sigma) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("GaussianBlur", in, {frame_kind::image});
    return in;
  }
  bool deterministic() const noexcept override { return m_sigma[0] == m_sigma[1]; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    return {torch_uniform(rng, m_sigma[0], m_sigma[1])};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const double sigma = torch_uniform(rng, m_sigma[0], m_sigma[1]);
    apply_image(f, s, "GaussianBlur",
                [&](image_view src, image_buffer& dst) { gaussian_blur(src, m_kernel, {sigma, sigma}, dst); });
  }

 private:
  std::array<int, 2> m_kernel;  // (kx, ky)
  std::array<double, 2> m_sigma;
};

op_ptr make_gaussian_blur(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("kernel_size")) a.fail("kernel_size", "missing");
  const auto k = a.numbers("kernel_size", {});
  if (k.empty() || k.size() > 2) a.fail("kernel_size", "Kernel size should be a tuple/list of two integers");
  std::array<int, 2> kernel{};
  for (int i = 0; i < 2; ++i) {
    const double v = k[k.size() == 1 ? 0 : i];
    if (std::floor(v) != v || v <= 0 || std::fmod(v, 2) == 0 || v > 4097)
      a.fail("kernel_size", "Kernel size value should be an odd and positive number.");
    kernel[i] = static_cast<int>(v);
  }
  const spec_value* sv = a.get("sigma");
  const auto sg = a.numbers("sigma", {0.1, 2.0});
  std::array<double, 2> sigma{};
  if (sv != nullptr && sv->type == spec_value::kind::number) {
    if (!(sg[0] > 0)) a.fail("sigma", "If sigma is a single number, it must be positive.");
    sigma = {sg[0], sg[0]};
  } else if (sg.size() == 2) {
    if (!(0 < sg[0] && sg[0] <= sg[1])) a.fail("sigma", "sigma values should be positive and of the form (min, max).");
    sigma = {sg[0], sg[1]};
  } else {
    a.fail("sigma", "sigma should be a single number or a list/tuple with length 2.");
  }
  return std::make_shared<gaussian_blur_op>(kernel, sigma);
}

// --- the Random<pixel op>(…, p) family -------------------------------------------------

enum class pixel_op : unsigned char { posterize, solarize, autocontrast, equalize, sharpness, invert };

class random_pixel_op final : public transform_op {
 public:
  random_pixel_op(pixel_op op, double arg, double p) : m_op(op), m_arg(arg), m_p(p) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument(std::string(name()) + ": p must be in [0, 1]");
  }
  std::string_view name() const noexcept override {
    static constexpr std::string_view names[] = {"RandomPosterize", "RandomSolarize", "RandomAutocontrast",
                                                 "RandomEqualize",  "RandomAdjustSharpness", "RandomInvert"};
    return names[static_cast<int>(m_op)];
  }
  std::string spec() const override {
    std::string s = std::string(name()) + "(";
    if (m_op == pixel_op::posterize) s += "bits=" + spec_number(m_arg) + ", ";
    if (m_op == pixel_op::solarize) s += "threshold=" + spec_number(m_arg) + ", ";
    if (m_op == pixel_op::sharpness) s += "sharpness_factor=" + spec_number(m_arg) + ", ";
    return s + "p=" + spec_number(m_p) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    return in;
  }
  bool deterministic() const noexcept override { return false; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    return {rng.uniform() < m_p ? 1.0 : 0.0};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (!(rng.uniform() < m_p)) return;  // `if torch.rand(1).item() < self.p`
    apply_image(f, s, name(), [&](image_view src, image_buffer& dst) {
      switch (m_op) {
        case pixel_op::posterize: posterize(src, static_cast<int>(m_arg), dst); break;
        case pixel_op::solarize: solarize(src, m_arg, dst); break;
        case pixel_op::autocontrast: autocontrast(src, dst); break;
        case pixel_op::equalize: equalize(src, dst); break;
        case pixel_op::sharpness: adjust_sharpness(src, m_arg, dst); break;
        case pixel_op::invert: invert(src, dst); break;
      }
    });
  }

 private:
  pixel_op m_op;
  double m_arg;
  double m_p;
};

template <pixel_op Op>
op_ptr make_random_pixel(const spec_call& c) {
  double arg = 0;
  double p = 0.5;
  if constexpr (Op == pixel_op::posterize || Op == pixel_op::solarize || Op == pixel_op::sharpness) {
    const char* param = Op == pixel_op::posterize ? "bits" : Op == pixel_op::solarize ? "threshold" : "sharpness_factor";
    const spec_args a(c);
    if (!a.has(param)) a.fail(param, "missing");
    arg = a.number(param, 0);
    p = a.number("p", 0.5);
    if (Op == pixel_op::posterize && (std::floor(arg) != arg || arg < 0 || arg > 8))
      a.fail(param, "bits must be an int in [0, 8]");
    if (Op == pixel_op::sharpness && arg < 0) a.fail(param, "sharpness_factor is not non-negative.");
  } else {
    const spec_args a(c);
    p = a.number("p", 0.5);
  }
  return std::make_shared<random_pixel_op>(Op, arg, p);
}

}  // namespace

std::span<const op_entry> color_op_entries() {
  static const op_entry entries[] = {
      {"ColorJitter", make_color_jitter},
      {"Grayscale", make_grayscale},
      {"RandomGrayscale", make_random_grayscale},
      {"GaussianBlur", make_gaussian_blur},
      {"RandomPosterize", make_random_pixel<pixel_op::posterize>},
      {"RandomSolarize", make_random_pixel<pixel_op::solarize>},
      {"RandomAutocontrast", make_random_pixel<pixel_op::autocontrast>},
      {"RandomEqualize", make_random_pixel<pixel_op::equalize>},
      {"RandomAdjustSharpness", make_random_pixel<pixel_op::sharpness>},
      {"RandomInvert", make_random_pixel<pixel_op::invert>},
  };
  return entries;
}

}  // namespace ringfeed::image
