// timm's size-dependent geometry (timm.data.transforms) as list ops on PIL
// images: ResizeKeepRatio (TimmResizeKeepRatio: get_params' ratio of the
// image to the target, blended between its shorter and longer side by
// `longest`, optionally scaled and stretched at random, each side rounded
// half to even; then F.resize to that exact size with the filter or a
// random choice of filters), CenterCropOrPad (TimmCenterCropOrPad: F.pad
// to at least the size, then F.center_crop's crop) and RandomCropOrPad
// (TimmRandomCropOrPad: a signed random offset per side). The kernels are the
// torchvision ops' (Pillow's resample, pad and crop).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <ringfeed/image/geometry.hpp>

#include "timm_augment.hpp"

namespace ringfeed::image {

namespace {

std::string filters_spec(const std::vector<interpolation>& filters) {
  std::string s = "(";
  for (std::size_t i = 0; i < filters.size(); ++i)
    s += (i ? ", '" : "'") + std::string(interpolation_names[static_cast<int>(filters[i])]) + "'";
  return s + (filters.size() == 1 ? ",)" : ")");
}

// An interpolation argument: one name or a list of names (a random choice).
std::vector<interpolation> filters_arg(const spec_args& a, std::string_view param) {
  const spec_value* v = a.get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return {interpolation::bilinear};
  std::vector<interpolation> out;
  const auto one = [&](const spec_value& item) {
    if (item.type != spec_value::kind::name && item.type != spec_value::kind::string)
      a.fail(param, "expected interpolation names");
    std::string n = item.text.substr(item.text.rfind('.') == std::string::npos ? 0 : item.text.rfind('.') + 1);
    for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto* it = std::find(std::begin(interpolation_names), std::end(interpolation_names), n);
    if (it == std::end(interpolation_names)) a.fail(param, "unknown interpolation '" + item.text + "'");
    out.push_back(static_cast<interpolation>(it - std::begin(interpolation_names)));
  };
  if (v->type == spec_value::kind::list) {
    for (const spec_value& item : v->items) one(item);
  } else {
    one(*v);
  }
  if (out.empty()) a.fail(param, "an empty list");
  return out;
}

std::array<double, 2> pair_arg(const spec_args& a, std::string_view param, std::array<double, 2> fallback) {
  const auto v = a.numbers(param, {fallback[0], fallback[1]});
  if (v.size() != 2) a.fail(param, "expected a sequence of 2 numbers");
  return {v[0], v[1]};
}

size2 size_arg(const spec_args& a) {
  const auto v = a.numbers("size", {});
  if (v.empty() || v.size() > 2) a.fail("size", "expected a size or (height, width)");
  const int h = static_cast<int>(v[0]);
  const int w = static_cast<int>(v.size() == 2 ? v[1] : v[0]);
  if (h < 1 || w < 1 || h != v[0]) a.fail("size", "must be positive integers");
  return {w, h};
}

// --- ResizeKeepRatio -------------------------------------------------------------------

class resize_keep_ratio_op final : public transform_op {
 public:
  struct options {
    size2 size{};
    double longest = 0;
    std::vector<interpolation> filters{interpolation::bilinear};
    double scale_prob = 0;
    std::array<double, 2> scale_range{0.85, 1.05};
    bool scale_area = false;
    double aspect_prob = 0;
    std::array<double, 2> aspect_range{0.9, 1.11};
  };
  explicit resize_keep_ratio_op(options o) : m_o(std::move(o)) {}
  std::string_view name() const noexcept override { return "TimmResizeKeepRatio"; }
  std::string spec() const override {
    return "TimmResizeKeepRatio(size=(" + std::to_string(m_o.size.height) + ", " + std::to_string(m_o.size.width) +
           "), longest=" + spec_number(m_o.longest) + ", interpolation=" + filters_spec(m_o.filters) +
           ", random_scale_prob=" + spec_number(m_o.scale_prob) + ", random_scale_range=" +
           spec_tuple(m_o.scale_range) + ", random_scale_area=" + (m_o.scale_area ? "True" : "False") +
           ", random_aspect_prob=" + spec_number(m_o.aspect_prob) +
           ", random_aspect_range=" + spec_tuple(m_o.aspect_range) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    frame_shape out = in;
    out.size.reset();
    return out;
  }
  bool deterministic() const noexcept override {
    return m_o.scale_prob <= 0 && m_o.aspect_prob <= 0 && m_o.filters.size() == 1;
  }
  struct params {
    size2 size;
    int filter = 0;
  };
  // get_params, then the filter's random.choice.
  params draw(sample_rng& rng, size2 in) const {
    const double ratio_h = static_cast<double>(in.height) / m_o.size.height;
    const double ratio_w = static_cast<double>(in.width) / m_o.size.width;
    const double ratio =
        std::max(ratio_h, ratio_w) * m_o.longest + std::min(ratio_h, ratio_w) * (1. - m_o.longest);
    std::array<double, 2> factor{1., 1.};  // (height, width)
    if (m_o.scale_prob > 0 && rng.uniform() < m_o.scale_prob) {
      double f = rng.uniform(m_o.scale_range[0], m_o.scale_range[1]);
      if (m_o.scale_area) f = 1. / std::sqrt(f);
      factor = {f, f};
    }
    if (m_o.aspect_prob > 0 && rng.uniform() < m_o.aspect_prob) {
      const double aspect =
          std::sqrt(std::exp(rng.uniform(std::log(m_o.aspect_range[0]), std::log(m_o.aspect_range[1]))));
      factor = {factor[0] / aspect, factor[1] * aspect};
    }
    params p;
    p.size = {static_cast<int>(std::nearbyint(in.width * factor[1] / ratio)),
              static_cast<int>(std::nearbyint(in.height * factor[0] / ratio))};
    if (m_o.filters.size() > 1)
      p.filter = static_cast<int>(rng.uniform_int(0, static_cast<std::int64_t>(m_o.filters.size())));
    return p;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const params p = draw(rng, in);
    return {double(p.size.height), double(p.size.width), double(p.filter)};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const params p = draw(rng, f.size());
    if (p.size.width < 1 || p.size.height < 1)
      throw std::invalid_argument("TimmResizeKeepRatio: the image's size " + std::to_string(f.width) + "x" +
                                  std::to_string(f.height) + " resizes to an empty one");
    resize(f.pixels.view(), p.size, m_o.filters[static_cast<std::size_t>(p.filter)], s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  options m_o;
};

op_ptr make_resize_keep_ratio(const spec_call& c) {
  const spec_args a(c);
  resize_keep_ratio_op::options o;
  o.size = size_arg(a);
  o.longest = a.number("longest", 0);
  o.filters = filters_arg(a, "interpolation");
  o.scale_prob = a.number("random_scale_prob", 0);
  o.scale_range = pair_arg(a, "random_scale_range", {0.85, 1.05});
  o.scale_area = a.boolean("random_scale_area", false);
  o.aspect_prob = a.number("random_aspect_prob", 0);
  o.aspect_range = pair_arg(a, "random_aspect_range", {0.9, 1.11});
  if (!(o.longest >= 0 && o.longest <= 1)) a.fail("longest", "must be in [0, 1]");
  if (!(o.aspect_range[0] > 0 && o.aspect_range[1] > 0)) a.fail("random_aspect_range", "must be positive");
  if (o.scale_area && !(o.scale_range[0] > 0 && o.scale_range[1] > 0))
    a.fail("random_scale_range", "must be positive with random_scale_area");
  return std::make_shared<resize_keep_ratio_op>(std::move(o));
}

// --- CenterCropOrPad -------------------------------------------------------------------

// What CenterCropOrPad and RandomCropOrPad share: a `size` image, padded
// (fill, mode) where the image is smaller; their spec, frame and arguments.
class crop_or_pad_base : public transform_op {
 public:
  crop_or_pad_base(size2 size, std::vector<double> fill, padding_mode mode)
      : m_size(size), m_fill(std::move(fill)), m_mode(mode) {}
  std::string spec() const override {
    constexpr std::string_view modes[] = {"constant", "edge", "reflect", "symmetric"};
    return std::string(name()) + "(size=(" + std::to_string(m_size.height) + ", " + std::to_string(m_size.width) +
           "), fill=" + spec_tuple(m_fill) + ", padding_mode='" + std::string(modes[static_cast<int>(m_mode)]) +
           "')";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    frame_shape out = in;
    out.size = m_size;
    return out;
  }

 protected:
  size2 m_size;
  std::vector<double> m_fill;
  padding_mode m_mode;
};

template <class Op>
op_ptr make_crop_or_pad(const spec_call& c) {
  const spec_args a(c);
  std::vector<double> fill = a.numbers("fill", {0});
  if (fill.empty()) a.fail("fill", "expected a number or a sequence of numbers");
  const int mode = a.choice("padding_mode", {"constant", "edge", "reflect", "symmetric"}, 0);
  return std::make_shared<Op>(size_arg(a), std::move(fill), static_cast<padding_mode>(mode));
}

class center_crop_or_pad_op final : public crop_or_pad_base {
 public:
  using crop_or_pad_base::crop_or_pad_base;
  std::string_view name() const noexcept override { return "TimmCenterCropOrPad"; }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const int cw = m_size.width, ch = m_size.height;
    if (cw > f.width || ch > f.height) {
      const int left = cw > f.width ? (cw - f.width) / 2 : 0;
      const int top = ch > f.height ? (ch - f.height) / 2 : 0;
      const int right = cw > f.width ? (cw - f.width + 1) / 2 : 0;
      const int bottom = ch > f.height ? (ch - f.height + 1) / 2 : 0;
      pad(f.pixels.view(), left, top, right, bottom, m_mode, resolve_fill(name(), m_fill, f.channels), s.spare);
      std::swap(f.pixels, s.spare);
      f.set_image(f.kind);
      if (cw == f.width && ch == f.height) return;
    }
    // int(round((image - crop) / 2.0)): half to even
    const int top = static_cast<int>(std::nearbyint((f.height - ch) / 2.0));
    const int left = static_cast<int>(std::nearbyint((f.width - cw) / 2.0));
    crop(f.pixels.view(), {top, left, ch, cw}, s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }
};

// --- RandomCropOrPad -------------------------------------------------------------------

// RandomCropOrPad: get_params draws top = copysign(randint(0, |image − size|),
// image − size) per side (a crop offset inside a larger image, a pad before
// a smaller one), then crop_or_pad pads what lies outside and crops.
class random_crop_or_pad_op final : public crop_or_pad_base {
 public:
  using crop_or_pad_base::crop_or_pad_base;
  std::string_view name() const noexcept override { return "TimmRandomCropOrPad"; }
  bool deterministic() const noexcept override { return false; }
  static int signed_offset(sample_rng& rng, int delta) {
    const int k = static_cast<int>(rng.uniform_int(0, std::abs(delta) + 1));  // random.randint(0, |delta|)
    return delta < 0 ? -k : k;
  }
  std::array<int, 2> draw(sample_rng& rng, size2 in) const {
    const int top = signed_offset(rng, in.height - m_size.height);
    const int left = signed_offset(rng, in.width - m_size.width);
    return {top, left};
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const auto d = draw(rng, in);
    return {double(d[0]), double(d[1])};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    auto [top, left] = draw(rng, f.size());
    const int right = left + m_size.width, bottom = top + m_size.height;
    if (left < 0 || top < 0 || right > f.width || bottom > f.height) {  // crop_or_pad's padding_ltrb
      pad(f.pixels.view(), std::max(-left + std::min(0, right), 0), std::max(-top + std::min(0, bottom), 0),
          std::max(right - std::max(f.width, left), 0), std::max(bottom - std::max(f.height, top), 0), m_mode,
          resolve_fill(name(), m_fill, f.channels), s.spare);
      std::swap(f.pixels, s.spare);
      f.set_image(f.kind);
    }
    crop(f.pixels.view(), {std::max(top, 0), std::max(left, 0), m_size.height, m_size.width}, s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }
};

}  // namespace

std::span<const op_entry> timm_geometry_op_entries() {
  static const op_entry entries[] = {
      {"TimmResizeKeepRatio", make_resize_keep_ratio},
      {"TimmCenterCropOrPad", make_crop_or_pad<center_crop_or_pad_op>},
      {"TimmRandomCropOrPad", make_crop_or_pad<random_crop_or_pad_op>},
  };
  return entries;
}

}  // namespace ringfeed::image
