// timm's AugmentOp (timm.data.auto_augment) as the list op TimmAugmentOp:
// its level functions (LEVEL_TO_ARG) in Python's double arithmetic, and its
// PIL operations (NAME_TO_OP) through the Pillow-exact kernels the
// torchvision ops use (geometry.hpp, color.hpp). timm's geometry differs
// from torchvision's: shear and translate hand Image.transform the matrix
// (1, f, 0, 0, 1, 0) etc. directly, rotate is Image.rotate, the fill is the
// dataset mean and the filter may be a random choice.
#include "timm_augment.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <ringfeed/image/color.hpp>
#include <ringfeed/image/geometry.hpp>

namespace ringfeed::image {

namespace {

constexpr std::string_view timm_names[] = {
    "AutoContrast", "Equalize",          "Invert",     "Rotate",          "Posterize",  "PosterizeIncreasing",
    "PosterizeOriginal", "Solarize",     "SolarizeIncreasing", "SolarizeAdd", "Color", "ColorIncreasing",
    "Contrast",     "ContrastIncreasing", "Brightness", "BrightnessIncreasing", "Sharpness", "SharpnessIncreasing",
    "ShearX",       "ShearY",            "TranslateX", "TranslateY",      "TranslateXRel", "TranslateYRel"};

constexpr double level_denom = 10.0;  // _LEVEL_DENOM

bool geometric(timm_aug a) {
  return a == timm_aug::rotate || a >= timm_aug::shear_x;
}

// Python's int() of a non-negative double.
double py_int(double v) { return std::trunc(v); }

}  // namespace

timm_augment_op::timm_augment_op(timm_augment_options o) : m_o(std::move(o)) {
  if (m_o.filters.empty()) throw std::invalid_argument("TimmAugmentOp: no resampling filter");
  for (interpolation i : m_o.filters)
    if (i != interpolation::nearest && i != interpolation::bilinear && i != interpolation::bicubic)
      throw std::invalid_argument("TimmAugmentOp: Pillow's affine transforms take nearest, bilinear or bicubic");
}

std::string timm_augment_op::spec() const {
  std::string interp = "(";
  for (std::size_t i = 0; i < m_o.filters.size(); ++i)
    interp += (i ? ", '" : "'") + std::string(interpolation_names[static_cast<int>(m_o.filters[i])]) + "'";
  interp += m_o.filters.size() == 1 ? ",)" : ")";
  return "TimmAugmentOp(name='" + std::string(timm_names[static_cast<int>(m_o.op)]) +
         "', prob=" + spec_number(m_o.prob) + ", magnitude=" + spec_number(m_o.magnitude) +
         ", magnitude_std=" + spec_number(m_o.magnitude_std) +
         ", magnitude_max=" + (m_o.magnitude_max > 0 ? spec_number(m_o.magnitude_max) : std::string("None")) +
         ", fill=" + spec_tuple(m_o.fill) + ", interpolation=" + interp +
         ", translate_const=" + spec_number(m_o.translate_const) +
         ", translate_pct=" + spec_number(m_o.translate_pct) + ")";
}

frame_shape timm_augment_op::infer(const frame_shape& in) const {
  require_kind("TimmAugmentOp", in, {frame_kind::image});
  if (geometric(m_o.op) && m_o.fill.size() != static_cast<std::size_t>(in.channels)) {
    if (in.channels == 1)  // Image.new("L", size, (r, g, b)) in Image.transform / rotate
      throw std::invalid_argument("TimmAugmentOp(" + std::string(timm_names[static_cast<int>(m_o.op)]) +
                                  "): color must be int or single-element tuple (Pillow refuses a fill of " +
                                  std::to_string(m_o.fill.size()) + " values on a 1-band image)");
    throw std::invalid_argument("TimmAugmentOp(" + std::string(timm_names[static_cast<int>(m_o.op)]) +
                                "): a fill of " + std::to_string(m_o.fill.size()) +
                                " values on a 3-band image is not run (Pillow packs an int fill into RGB)");
  }
  return in;
}

timm_augment_draw timm_augment_op::draw(sample_rng& rng, size2) const {
  timm_augment_draw d;
  d.arg = std::nan("");
  if (m_o.prob < 1.0 && rng.uniform() > m_o.prob) return d;
  d.applied = true;
  double m = m_o.magnitude;
  if (m_o.magnitude_std > 0) {
    if (std::isinf(m_o.magnitude_std))
      m = rng.uniform(0, m);  // random.uniform(0, magnitude)
    else
      m = m + m_o.magnitude_std * standard_normal(rng);  // random.gauss(magnitude, std)
  }
  const double upper = m_o.magnitude_max > 0 ? m_o.magnitude_max : level_denom;
  m = std::max(0.0, std::min(m, upper));
  d.magnitude = m;
  const auto negate = [&rng](double v) { return rng.uniform() > 0.5 ? -v : v; };  // _randomly_negate
  const double level = m / level_denom;
  switch (m_o.op) {
    case timm_aug::auto_contrast:
    case timm_aug::equalize:
    case timm_aug::invert: break;
    case timm_aug::rotate: d.arg = negate(level * 30.); break;
    case timm_aug::posterize: d.arg = py_int(level * 4); break;
    case timm_aug::posterize_increasing: d.arg = 4 - py_int(level * 4); break;
    case timm_aug::posterize_original: d.arg = py_int(level * 4) + 4; break;
    case timm_aug::solarize: d.arg = std::min(256.0, py_int(level * 256)); break;
    case timm_aug::solarize_increasing: d.arg = 256 - std::min(256.0, py_int(level * 256)); break;
    case timm_aug::solarize_add: d.arg = std::min(128.0, py_int(level * 110)); break;
    case timm_aug::color:
    case timm_aug::contrast:
    case timm_aug::brightness:
    case timm_aug::sharpness: d.arg = level * 1.8 + 0.1; break;
    case timm_aug::color_increasing:
    case timm_aug::contrast_increasing:
    case timm_aug::brightness_increasing:
    case timm_aug::sharpness_increasing: d.arg = std::max(0.1, 1.0 + negate(level * .9)); break;
    case timm_aug::shear_x:
    case timm_aug::shear_y: d.arg = negate(level * 0.3); break;
    case timm_aug::translate_x:
    case timm_aug::translate_y: d.arg = negate(level * m_o.translate_const); break;
    case timm_aug::translate_x_rel:
    case timm_aug::translate_y_rel: d.arg = negate(level * m_o.translate_pct); break;
  }
  if (geometric(m_o.op))  // _check_args_tf: random.choice(resample) when a tuple
    d.filter = m_o.filters.size() == 1
                   ? 0
                   : static_cast<int>(rng.uniform_int(0, static_cast<std::int64_t>(m_o.filters.size())));
  return d;
}

std::vector<double> timm_augment_op::draw_for_test(sample_rng& rng, size2 in, int) const {
  const timm_augment_draw d = draw(rng, in);
  return {d.applied ? 1.0 : 0.0, d.magnitude, d.arg, static_cast<double>(d.filter)};
}

void timm_augment_op::apply(frame& f, const timm_augment_draw& d, op_scratch& s) const {
  if (!d.applied) return;
  const image_view src = f.pixels.view();
  image_buffer& dst = s.spare;
  const double v = d.arg;
  fill_color fc{};
  for (std::size_t c = 0; c < 3; ++c) {
    const double x = m_o.fill[std::min(c, m_o.fill.size() - 1)];
    fc[c] = static_cast<std::uint8_t>(x < 0 ? 0 : x > 255 ? 255 : x);
  }
  const interpolation filter = d.filter >= 0 ? m_o.filters[static_cast<std::size_t>(d.filter)] : interpolation::nearest;
  const size2 size = f.size();
  switch (m_o.op) {
    case timm_aug::auto_contrast: autocontrast(src, dst); break;
    case timm_aug::equalize: equalize(src, dst); break;
    case timm_aug::invert: invert(src, dst); break;
    case timm_aug::rotate: rotate(src, v, filter, false, std::nullopt, fc, dst); break;
    case timm_aug::posterize:
    case timm_aug::posterize_increasing:
    case timm_aug::posterize_original:
      if (v >= 8) return;  // posterize(): bits_to_keep >= 8 returns the image
      posterize(src, static_cast<int>(v), dst);
      break;
    case timm_aug::solarize:
    case timm_aug::solarize_increasing: solarize(src, v, dst); break;
    case timm_aug::solarize_add: {
      // solarize_add's lut: i < 128 ? min(255, i + add) : i, through img.point.
      std::array<std::uint8_t, 256> lut{};
      for (int i = 0; i < 256; ++i)
        lut[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i < 128 ? std::min(255.0, i + v) : i);
      dst.reset(size.width, size.height, f.channels);
      const mutable_image_view out = dst.view();
      for (int y = 0; y < size.height; ++y) {
        const std::uint8_t* in = src.row(y);
        std::uint8_t* o = out.row(y);
        for (int x = 0; x < size.width * f.channels; ++x) o[x] = lut[in[x]];
      }
      break;
    }
    case timm_aug::color:
    case timm_aug::color_increasing: adjust_saturation(src, v, dst); break;
    case timm_aug::contrast:
    case timm_aug::contrast_increasing: adjust_contrast(src, v, dst); break;
    case timm_aug::brightness:
    case timm_aug::brightness_increasing: adjust_brightness(src, v, dst); break;
    case timm_aug::sharpness:
    case timm_aug::sharpness_increasing: adjust_sharpness(src, v, dst); break;
    case timm_aug::shear_x: affine(src, {1, v, 0, 0, 1, 0}, size, filter, fc, dst); break;
    case timm_aug::shear_y: affine(src, {1, 0, 0, v, 1, 0}, size, filter, fc, dst); break;
    case timm_aug::translate_x: affine(src, {1, 0, v, 0, 1, 0}, size, filter, fc, dst); break;
    case timm_aug::translate_y: affine(src, {1, 0, 0, 0, 1, v}, size, filter, fc, dst); break;
    case timm_aug::translate_x_rel: affine(src, {1, 0, v * size.width, 0, 1, 0}, size, filter, fc, dst); break;
    case timm_aug::translate_y_rel: affine(src, {1, 0, 0, 0, 1, v * size.height}, size, filter, fc, dst); break;
  }
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

void timm_augment_op::run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const {
  apply(f, draw(rng, f.size()), s);
}

std::shared_ptr<const timm_augment_op> make_timm_augment_op(const spec_call& c) {
  const spec_args a(c);
  timm_augment_options o;
  const spec_value* name = a.get("name");
  if (name == nullptr || name->type != spec_value::kind::string) a.fail("name", "expected timm's op name");
  const auto* found = std::find(std::begin(timm_names), std::end(timm_names), name->text);
  if (found == std::end(timm_names))
    a.fail("name", "'" + name->text + "' is not an op ringfeed runs (GaussianBlur, GaussianBlurRand and Desaturate, "
                   "timm's 3-Augment ops, are not)");
  o.op = static_cast<timm_aug>(found - std::begin(timm_names));
  o.prob = a.number("prob", 0.5);
  o.magnitude = a.number("magnitude", 10);
  o.magnitude_std = a.number("magnitude_std", 0);
  o.magnitude_max = a.number("magnitude_max", 0);
  o.translate_const = a.number("translate_const", 250);
  o.translate_pct = a.number("translate_pct", 0.45);
  if (!(o.prob >= 0 && o.prob <= 1)) a.fail("prob", "must be in [0, 1]");
  if (!std::isfinite(o.magnitude)) a.fail("magnitude", "must be finite");
  if (std::isnan(o.magnitude_std)) a.fail("magnitude_std", "must be a number");
  if (!(o.magnitude_max >= 0) || std::isinf(o.magnitude_max)) a.fail("magnitude_max", "must be finite and >= 0");
  o.fill = a.numbers("fill", {128, 128, 128});
  if (o.fill.empty() || o.fill.size() > 3) a.fail("fill", "expected 1 to 3 numbers");
  if (const spec_value* v = a.get("interpolation"); v != nullptr && v->type != spec_value::kind::none) {
    o.filters.clear();
    const auto one = [&](const spec_value& item) {
      if (item.type != spec_value::kind::name && item.type != spec_value::kind::string)
        a.fail("interpolation", "expected filter names");
      std::string n = item.text.substr(item.text.rfind('.') == std::string::npos ? 0 : item.text.rfind('.') + 1);
      for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const auto* it = std::find(std::begin(interpolation_names), std::end(interpolation_names), n);
      if (it == std::end(interpolation_names) || it - std::begin(interpolation_names) > 2)
        a.fail("interpolation", "unknown filter '" + item.text + "' (Pillow's affine transforms take nearest, "
                                "bilinear or bicubic)");
      o.filters.push_back(static_cast<interpolation>(it - std::begin(interpolation_names)));
    };
    if (v->type == spec_value::kind::list) {
      for (const spec_value& item : v->items) one(item);
      if (o.filters.empty()) a.fail("interpolation", "an empty list of filters");
    } else {
      one(*v);
    }
  }
  return std::make_shared<timm_augment_op>(std::move(o));
}

namespace {
op_ptr make_augment_op(const spec_call& c) { return make_timm_augment_op(c); }
}  // namespace

std::span<const op_entry> timm_augment_op_entries() {
  static const op_entry entries[] = {{"TimmAugmentOp", make_augment_op}};
  return entries;
}

}  // namespace ringfeed::image
