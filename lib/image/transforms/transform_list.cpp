// transform_list: the builder, the spec round trip and compile() (the fused
// head, the appended ops and the output suffix).
#include <ringfeed/image/transform_list.hpp>

#include "ops_detail.hpp"

#include <stdexcept>

namespace ringfeed::image {

namespace {

std::string interp_name(interpolation i) {
  static constexpr const char* names[] = {"nearest", "bilinear", "bicubic", "box", "hamming", "lanczos"};
  return names[static_cast<int>(i)];
}

std::string list_of(const std::vector<double>& v) { return spec_tuple(v); }

// The fused decoder handles the resampling filters; NEAREST is an affine
// path of its own.
std::optional<resample_filter> filter_of(interpolation i) {
  switch (i) {
    case interpolation::bilinear: return resample_filter::bilinear;
    case interpolation::bicubic: return resample_filter::bicubic;
    case interpolation::box: return resample_filter::box;
    case interpolation::hamming: return resample_filter::hamming;
    case interpolation::lanczos: return resample_filter::lanczos;
    case interpolation::nearest: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

transform_list transform_list::parse(std::string_view spec) {
  transform_list t;
  for (const spec_call& c : parse_spec_calls(spec)) t.add(make_op(c));
  if (t.m_ops.size() > 63) throw transform_spec_error(0, "at most 63 transforms in a list");
  return t;
}

std::string transform_list::supported_ops() { return supported_op_names(); }

std::vector<double> transform_list::augment_magnitudes(std::string_view op, int bins, size2 size, bool wide) {
  return image::augment_magnitudes(op, bins, size, wide, current_torch_reference().linspace, false);
}

transform_list transform_list::train(int size) {
  transform_list t;
  t.random_resized_crop({size, size}).random_horizontal_flip().to_tensor().normalize(
      {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225});
  return t;
}

transform_list transform_list::val(int resize, int crop) {
  transform_list t;
  t.resize(resize).center_crop({crop, crop}).to_tensor().normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225});
  return t;
}

transform_list& transform_list::add(std::string_view spec) {
  for (const spec_call& c : parse_spec_calls(spec)) add(make_op(c));
  return *this;
}

transform_list& transform_list::add(std::shared_ptr<const transform_op> op) {
  if (!op) throw std::invalid_argument("transform_list::add: null op");
  m_ops.push_back(std::move(op));
  return *this;
}

transform_list& transform_list::resize(int smaller_edge, interpolation interp, int max_size) {
  return add("Resize(" + std::to_string(smaller_edge) + ", interpolation=" + interp_name(interp) +
             (max_size > 0 ? ", max_size=" + std::to_string(max_size) : std::string()) + ")");
}

transform_list& transform_list::resize(size2 size, interpolation interp) {
  return add("Resize((" + std::to_string(size.height) + ", " + std::to_string(size.width) +
             "), interpolation=" + interp_name(interp) + ")");
}

transform_list& transform_list::center_crop(size2 size) {
  return add("CenterCrop((" + std::to_string(size.height) + ", " + std::to_string(size.width) + "))");
}

transform_list& transform_list::random_resized_crop(size2 size, const random_resized_crop_range& range,
                                                    interpolation interp) {
  return add("RandomResizedCrop((" + std::to_string(size.height) + ", " + std::to_string(size.width) +
             "), scale=" + spec_tuple(range.scale) + ", ratio=" + spec_tuple(range.ratio) +
             ", interpolation=" + interp_name(interp) + ")");
}

transform_list& transform_list::random_horizontal_flip(double p) {
  return add("RandomHorizontalFlip(p=" + spec_number(p) + ")");
}
transform_list& transform_list::random_vertical_flip(double p) {
  return add("RandomVerticalFlip(p=" + spec_number(p) + ")");
}
transform_list& transform_list::to_tensor() { return add("ToTensor()"); }
transform_list& transform_list::pil_to_tensor() { return add("PILToTensor()"); }
transform_list& transform_list::convert_image_dtype(bool to_float) {
  return add(to_float ? "ConvertImageDtype(float32)" : "ConvertImageDtype(uint8)");
}
transform_list& transform_list::normalize(const std::vector<double>& mean, const std::vector<double>& std) {
  return add("Normalize(mean=" + list_of(mean) + ", std=" + list_of(std) + ")");
}
transform_list& transform_list::random_erasing(double p, std::array<double, 2> scale, std::array<double, 2> ratio,
                                               const std::vector<double>& value) {
  return add("RandomErasing(p=" + spec_number(p) + ", scale=" + spec_tuple(scale) + ", ratio=" + spec_tuple(ratio) +
             ", value=" + list_of(value) + ")");
}
transform_list& transform_list::random_apply(const transform_list& ops, double p) {
  return add("RandomApply([" + ops.spec_items() + "], p=" + spec_number(p) + ")");
}
transform_list& transform_list::random_order(const transform_list& ops) {
  return add("RandomOrder([" + ops.spec_items() + "])");
}
transform_list& transform_list::random_choice(const transform_list& ops, const std::vector<double>& p) {
  return add("RandomChoice([" + ops.spec_items() + "], p=" + (p.empty() ? std::string("None") : list_of(p)) + ")");
}

std::string transform_list::spec_items() const {
  std::string s;
  for (std::size_t i = 0; i < m_ops.size(); ++i) s += (i ? ", " : "") + m_ops[i]->spec();
  return s;
}

std::string transform_list::spec() const {
  std::string s;
  for (std::size_t i = 0; i < m_ops.size(); ++i) s += (i ? "; " : "") + m_ops[i]->spec();
  return s;
}

frame_shape transform_list::infer(frame_shape in) const {
  for (std::size_t i = 0; i < m_ops.size(); ++i) {
    try {
      in = m_ops[i]->infer(in);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("transform " + std::to_string(i) + " (" + std::string(m_ops[i]->name()) +
                                  "): " + e.what());
    }
  }
  return in;
}

pipeline transform_list::compile(pipeline_mode mode) const {
  (void)infer();  // names the op that does not fit
  pipeline p;
  p.set_mode(mode);
  std::size_t i = 0;
  const std::size_t n = m_ops.size();
  // The head: [Resize | RandomResizedCrop] [CenterCrop] [RandomHorizontalFlip].
  if (i < n) {
    const fusable_geometry g = describe_geometry(*m_ops[i]);
    const auto filter = filter_of(g.interp);
    if (g.type == fusable_geometry::kind::random_resized_crop && filter && i == 0) {
      p.random_resized_crop(g.size, g.range);  // draws from stream 1 = position 0 + 1
      p.set_filter(*filter);
      ++i;
    } else if (g.type == fusable_geometry::kind::resize_shorter && filter && !g.max_size) {
      p.resize(g.smaller_edge, *filter);
      ++i;
    } else if (g.type == fusable_geometry::kind::resize_exact && filter) {
      p.resize(g.size, *filter);
      ++i;
    }
  }
  if (i < n && describe_geometry(*m_ops[i]).type == fusable_geometry::kind::center_crop) {
    p.center_crop(describe_geometry(*m_ops[i]).size);
    ++i;
  }
  if (double flip_p = 0; i < n && is_flip_op(*m_ops[i], true, flip_p)) {
    p.horizontal_flip(flip_p);
    p.set_flip_stream(static_cast<std::uint32_t>(i + 1));
    ++i;
  }
  // The output suffix: ToTensor [Normalize] (or PILToTensor +
  // ConvertImageDtype(float32), or v2's [ToImage | PILToTensor]
  // ToDtype(float32, scale=True)) on an image or uint8 tensor is the output
  // conversion, and RandomErasing ops after it run on the output it writes.
  std::size_t on_output = n;
  while (on_output > i && runs_on_output(*m_ops[on_output - 1])) --on_output;
  std::size_t end = on_output;
  std::vector<double> mean, stddev;
  bool normalize = false;
  if (end > i && is_normalize_op(*m_ops[end - 1], mean, stddev)) {
    normalize = true;
    --end;
  }
  const auto spec_at = [&](std::size_t k) { return m_ops[k]->spec(); };
  bool to_float = false, reciprocal = false;
  frame_kind before = frame_kind::image;  // what the ops kept before the conversion must leave
  if (end > i && spec_at(end - 1) == "ToTensor()") {
    to_float = true;
    --end;
  } else if (end > i + 1 && spec_at(end - 1) == "ConvertImageDtype(float32)" && spec_at(end - 2) == "PILToTensor()") {
    to_float = true;
    end -= 2;
  } else if (end > i && spec_at(end - 1) == "ToDtype(dtype=float32, scale=True)") {
    to_float = reciprocal = true;
    --end;
    if (end > i && (spec_at(end - 1) == "ToImage()" || spec_at(end - 1) == "PILToTensor()"))
      --end;  // an image's bytes, as the uint8 tensor holds them
    else
      before = frame_kind::tensor_u8;  // ToDtype passes a PIL image through: only a tensor is converted
  }
  if (!to_float) {  // Normalize and RandomErasing stay ops of their own
    end = n;
    on_output = n;
    normalize = false;
  }
  for (std::size_t k = i; k < end; ++k) p.append(m_ops[k], static_cast<std::uint32_t>(k + 1));
  if (to_float) {
    const frame_shape last = p.last_frame();
    if (last.kind != before) {  // not the frame the conversion takes: keep the ops
      for (std::size_t k = end; k < n; ++k) p.append(m_ops[k], static_cast<std::uint32_t>(k + 1));
      return p;
    }
    if (normalize || reciprocal) {
      normalize_params np;  // without Normalize: mean 0, std 1 (exact)
      np.std = {1.0f, 1.0f, 1.0f};
      np.reciprocal = reciprocal;
      for (std::size_t c = 0; normalize && c < 3; ++c) {
        np.mean[c] = static_cast<float>(mean[mean.size() == 1 ? 0 : std::min(c, mean.size() - 1)]);
        np.std[c] = static_cast<float>(stddev[stddev.size() == 1 ? 0 : std::min(c, stddev.size() - 1)]);
      }
      p.normalize(np);
    }
    p.set_output(output_spec::float32_nchw());
    for (std::size_t k = on_output; k < n; ++k) p.append_on_output(m_ops[k], static_cast<std::uint32_t>(k + 1));
  }
  return p;
}

}  // namespace ringfeed::image
