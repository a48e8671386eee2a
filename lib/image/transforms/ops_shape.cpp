// The transform-list ops that reshape an image: Resize, CenterCrop,
// RandomResizedCrop and the flips, with torchvision 0.14's transforms.py /
// functional.py semantics on PIL images; on tensors the resizes run torch's
// interpolate (tensor_geometry.cpp).
#include "ops_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/pipeline.hpp>

namespace ringfeed::image {

// F.crop on any frame: `b` may leave the image; outside is zero (PIL's crop
// and torchvision's pad-then-crop of tensors both give zeros).
void crop_frame(frame& f, const crop_box& b, op_scratch& s) {
  if (f.kind == frame_kind::tensor_f32) {
    std::vector<float>& out = s.spare_values;
    out.assign(static_cast<std::size_t>(f.channels) * b.height * b.width, 0.0f);
    for (int c = 0; c < f.channels; ++c)
      for (int y = std::max(0, -b.top); y < b.height && b.top + y < f.height; ++y)
        for (int x = std::max(0, -b.left); x < b.width && b.left + x < f.width; ++x)
          out[(static_cast<std::size_t>(c) * b.height + y) * b.width + x] =
              f.plane(c)[static_cast<std::size_t>(b.top + y) * f.width + b.left + x];
    std::swap(f.values, out);
    f.height = b.height;
    f.width = b.width;
    return;
  }
  crop(f.pixels.view(), b, s.spare);
  std::swap(f.pixels, s.spare);
  f.set_image(f.kind);
}

namespace {

// --- pixel helpers on frames ------------------------------------------------------

void flip_frame(frame& f, bool horizontal, op_scratch& s) {
  if (f.kind != frame_kind::tensor_f32) {
    if (horizontal) {
      hflip(f.pixels.view(), s.spare);
    } else {
      vflip(f.pixels.view(), s.spare);
    }
    std::swap(f.pixels, s.spare);
    return;
  }
  for (int c = 0; c < f.channels; ++c) {
    float* p = f.plane(c);
    const auto w = static_cast<std::size_t>(f.width);
    if (horizontal) {
      for (int y = 0; y < f.height; ++y) std::reverse(p + y * w, p + (y + 1) * w);
    } else {
      for (int a = 0, b = f.height - 1; a < b; ++a, --b) std::swap_ranges(p + a * w, p + (a + 1) * w, p + b * w);
    }
  }
}

std::string size_spec(size2 s, bool square_as_int) {
  if (square_as_int && s.width == s.height) return std::to_string(s.width);
  // Appended piece by piece: "(" + std::to_string(...) trips GCC 12's
  // bogus -Wrestrict at -O3 (GCC bug 105651).
  std::string out = "(";
  out += std::to_string(s.height);
  out += ", ";
  out += std::to_string(s.width);
  out += ')';
  return out;
}

// torchvision's size argument: int, [s] or (h, w). Returns h, w (w = 0 for
// "shorter side").
size2 parse_size(const spec_args& a, std::string_view param, bool allow_shorter) {
  const std::vector<double> v = a.numbers(param, {});
  if (v.empty() || v.size() > 2) a.fail(param, "expected an int or a sequence of 1 or 2 ints");
  for (double d : v)
    if (!(std::floor(d) == d) || d < 1 || d > 1 << 20) a.fail(param, "sizes must be positive integers");
  if (v.size() == 1) {
    const int s = static_cast<int>(v[0]);
    return allow_shorter ? size2{0, s} : size2{s, s};
  }
  return {static_cast<int>(v[1]), static_cast<int>(v[0])};
}

std::string_view interpolation_spec(interpolation i) { return interpolation_names[static_cast<int>(i)]; }

// --- Resize -------------------------------------------------------------------------

class resize_op final : public transform_op {
 public:
  resize_op(size2 size, interpolation interp, std::optional<int> max_size, std::optional<bool> antialias)
      : m_size(size), m_interp(interp), m_max_size(max_size), m_antialias(antialias),
        m_tensor(make_tensor_resize(interp, antialias)) {
    if (m_max_size && m_size.width != 0)
      throw std::invalid_argument("Resize: max_size is only for a size that gives the smaller edge (an int)");
    if (m_max_size && *m_max_size <= m_size.height)
      throw std::invalid_argument("Resize: max_size = " + std::to_string(*m_max_size) +
                                  " must be strictly greater than the requested size for the smaller edge size = " +
                                  std::to_string(m_size.height));
  }
  std::string_view name() const noexcept override { return "Resize"; }
  std::string spec() const override {
    std::string s = "Resize(" + (m_size.width == 0 ? std::to_string(m_size.height) : size_spec(m_size, false)) +
                    ", interpolation=" + std::string(interpolation_spec(m_interp));
    if (m_max_size) s += ", max_size=" + std::to_string(*m_max_size);
    if (m_antialias) s += std::string(", antialias=") + (*m_antialias ? "True" : "False");
    return s + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (in.kind != frame_kind::image) check_tensor_interpolation("Resize", m_tensor);
    frame_shape out = in;
    // Resize(shorter side): known when the input's size is.
    if (m_size.width != 0) {
      out.size = m_size;
    } else if (in.size) {
      out.size = output_size(*in.size);
    } else {
      out.size = std::nullopt;
    }
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const size2 out = output_size(f.size());
    if (out == f.size()) return;  // F.resize returns the image itself
    if (f.kind != frame_kind::image) return resize_tensor_frame(f, out, m_tensor, s);
    resize(f.pixels.view(), out, m_interp, s.spare);
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }
  fusable_geometry describe() const {
    fusable_geometry g;
    g.type = m_size.width == 0 ? fusable_geometry::kind::resize_shorter : fusable_geometry::kind::resize_exact;
    g.size = m_size;
    g.smaller_edge = m_size.height;
    g.interp = m_interp;
    g.max_size = m_max_size.has_value();
    return g;
  }
  size2 output_size(size2 in) const {
    if (m_size.width != 0) return m_size;
    return resized_output_size(in, {m_size.height}, m_max_size);
  }

 private:
  size2 m_size;  // width 0: height is the smaller edge
  interpolation m_interp;
  std::optional<int> m_max_size;
  std::optional<bool> m_antialias;  // None: as given (PIL images ignore it)
  tensor_resize m_tensor;
};

std::optional<bool> antialias_arg(const spec_args& a) {
  if (!a.has("antialias")) return std::nullopt;
  return a.boolean("antialias", false);
}

op_ptr make_resize(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("size")) a.fail("size", "missing");
  const size2 size = parse_size(a, "size", true);
  const auto interp = static_cast<interpolation>(a.choice("interpolation", interpolation_names, 1));
  std::optional<int> max_size;
  if (a.has("max_size")) max_size = a.integer("max_size", 0);
  return std::make_shared<resize_op>(size, interp, max_size, antialias_arg(a));
}

// --- CenterCrop ---------------------------------------------------------------------

class center_crop_op final : public transform_op {
 public:
  explicit center_crop_op(size2 size) : m_size(size) {}
  std::string_view name() const noexcept override { return "CenterCrop"; }
  std::string spec() const override { return "CenterCrop(" + size_spec(m_size, false) + ")"; }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    out.size = m_size;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  size2 size() const noexcept { return m_size; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (f.size() == m_size) return;
    crop_frame(f, center_crop_box(f.size(), m_size), s);
  }

 private:
  size2 m_size;
};

op_ptr make_center_crop(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("size")) a.fail("size", "missing");
  return std::make_shared<center_crop_op>(parse_size(a, "size", false));
}

// --- RandomResizedCrop --------------------------------------------------------------

class random_resized_crop_op final : public transform_op {
 public:
  random_resized_crop_op(size2 size, random_resized_crop_range range, interpolation interp,
                         std::optional<bool> antialias)
      : m_size(size), m_range(range), m_interp(interp), m_antialias(antialias),
        m_tensor(make_tensor_resize(interp, antialias)) {}
  std::string_view name() const noexcept override { return "RandomResizedCrop"; }
  std::string spec() const override {
    return "RandomResizedCrop(" + size_spec(m_size, false) + ", scale=" + spec_tuple(m_range.scale) +
           ", ratio=" + spec_tuple(m_range.ratio) + ", interpolation=" + std::string(interpolation_spec(m_interp)) +
           (m_antialias ? std::string(", antialias=") + (*m_antialias ? "True" : "False") : std::string()) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (in.kind != frame_kind::image) check_tensor_interpolation("RandomResizedCrop", m_tensor);
    frame_shape out = in;
    out.size = m_size;
    return out;
  }
  bool deterministic() const noexcept override { return false; }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const crop_box b = random_resized_crop_box(in, m_range, rng);
    return {double(b.top), double(b.left), double(b.height), double(b.width)};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const crop_box b = random_resized_crop_box(f.size(), m_range, rng);
    if (f.kind != frame_kind::image) {  // F.resized_crop: crop, then resize unless the size is right
      crop_frame(f, b, s);
      finish_tensor(f, s);
      return;
    }
    const image_view region = f.pixels.view().crop(b);
    if (b.height == m_size.height && b.width == m_size.width) {
      crop(f.pixels.view(), b, s.spare);
    } else {
      resize(region, m_size, m_interp, s.spare);
    }
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }
  void finish_tensor(frame& f, op_scratch& s) const {
    if (f.size() != m_size) resize_tensor_frame(f, m_size, m_tensor, s);
  }
  // The same from a uint8 region outside the frame, without copying it first.
  void finish_tensor(image_view region, frame& f, op_scratch& s) const {
    if (region.size() != m_size) return resize_tensor_view(region, frame_kind::tensor_u8, m_size, m_tensor, f, s);
    f.pixels.assign(region);
    f.set_image(frame_kind::tensor_u8);
  }
  fusable_geometry describe() const {
    fusable_geometry g;
    g.type = fusable_geometry::kind::random_resized_crop;
    g.size = m_size;
    g.range = m_range;
    g.interp = m_interp;
    return g;
  }

 private:
  size2 m_size;
  random_resized_crop_range m_range;
  interpolation m_interp;
  std::optional<bool> m_antialias;
  tensor_resize m_tensor;
};

op_ptr make_random_resized_crop(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("size")) a.fail("size", "missing");
  random_resized_crop_range r;
  const auto scale = a.numbers("scale", {0.08, 1.0});
  const auto ratio = a.numbers("ratio", {3.0 / 4.0, 4.0 / 3.0});
  if (scale.size() != 2) a.fail("scale", "expected a sequence of 2 numbers");
  if (ratio.size() != 2) a.fail("ratio", "expected a sequence of 2 numbers");
  r.scale = {scale[0], scale[1]};
  r.ratio = {ratio[0], ratio[1]};
  if (!(r.ratio[0] > 0 && r.ratio[1] > 0)) a.fail("ratio", "must be positive");
  return std::make_shared<random_resized_crop_op>(
      parse_size(a, "size", false), r, static_cast<interpolation>(a.choice("interpolation", interpolation_names, 1)),
      antialias_arg(a));
}

// --- flips ----------------------------------------------------------------------------

class flip_op final : public transform_op {
 public:
  flip_op(bool horizontal, double p) : m_horizontal(horizontal), m_p(p) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument(std::string(name()) + ": p must be in [0, 1]");
  }
  std::string_view name() const noexcept override {
    return m_horizontal ? "RandomHorizontalFlip" : "RandomVerticalFlip";
  }
  std::string spec() const override { return std::string(name()) + "(p=" + spec_number(m_p) + ")"; }
  frame_shape infer(const frame_shape& in) const override { return in; }
  bool deterministic() const noexcept override { return false; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override { return {rng.uniform()}; }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (rng.uniform() < m_p) flip_frame(f, m_horizontal, s);  // torch.rand(1) < p
  }
  double p() const noexcept { return m_p; }

 private:
  bool m_horizontal;
  double m_p;
};

op_ptr make_hflip(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<flip_op>(true, a.number("p", 0.5));
}
op_ptr make_vflip(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<flip_op>(false, a.number("p", 0.5));
}

}  // namespace

bool is_flip_op(const transform_op& op, bool horizontal, double& p) {
  const auto* f = dynamic_cast<const flip_op*>(&op);
  if (f == nullptr || (f->name() == "RandomHorizontalFlip") != horizontal) return false;
  p = f->p();
  return true;
}

fusable_geometry describe_geometry(const transform_op& op) {
  if (const auto* r = dynamic_cast<const resize_op*>(&op)) return r->describe();
  if (const auto* r = dynamic_cast<const random_resized_crop_op*>(&op)) return r->describe();
  if (const auto* c = dynamic_cast<const center_crop_op*>(&op)) {
    fusable_geometry g;
    g.type = fusable_geometry::kind::center_crop;
    g.size = c->size();
    return g;
  }
  return {};
}

bool finish_tensor_crop(const transform_op& op, image_view region, frame& f, op_scratch& s) {
  const auto* r = dynamic_cast<const random_resized_crop_op*>(&op);
  if (r == nullptr) return false;
  r->finish_tensor(region, f, s);
  return true;
}

std::span<const op_entry> shape_op_entries() {
  static const op_entry entries[] = {
      {"Resize", make_resize},
      {"CenterCrop", make_center_crop},
      {"RandomResizedCrop", make_random_resized_crop},
      {"RandomHorizontalFlip", make_hflip},
      {"RandomVerticalFlip", make_vflip},
  };
  return entries;
}

}  // namespace ringfeed::image
