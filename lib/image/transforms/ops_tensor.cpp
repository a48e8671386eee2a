// The transform-list ops on tensors: ToTensor, PILToTensor,
// ConvertImageDtype, Normalize and RandomErasing, with torch's float32
// arithmetic (v / 255, (v − mean) / std) so results are bit-identical.
#include "ops_detail.hpp"
#include "image/transforms/planes.hpp"
#include "timm_augment.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>

namespace ringfeed::image {

void bytes_to_float(frame& f, const std::array<std::uint32_t, 256>& bits) {
  const std::uint32_t* const table[3] = {bits.data(), bits.data(), bits.data()};
  const image_view v = f.pixels.view();
  f.reset_tensor(v.channels, v.height, v.width);
  detail::lookup_planes(v, false, table, reinterpret_cast<std::uint32_t*>(f.values.data()));
}

void float_to_bytes(frame& f, bool scale) {
  f.pixels.reset(f.width, f.height, f.channels);
  const mutable_image_view v = f.pixels.view();
  constexpr float k = 255.0f + 1.0f - 1e-3f;
  for (int c = 0; c < f.channels; ++c) {
    const float* in = f.plane(c);
    for (int y = 0; y < f.height; ++y)
      for (int x = 0; x < f.width; ++x, ++in) v.row(y)[x * f.channels + c] = torch_to_uint8(scale ? *in * k : *in);
  }
  f.kind = frame_kind::tensor_u8;
}

namespace {

// image or uint8 tensor → float32 CHW, v / 255 (ToTensor, ConvertImageDtype):
// the 256 quotients' bits from normalize_table (no Normalize), as the fused
// output writes them.
void to_float(frame& f) {
  static const std::array<std::uint32_t, 256> quotient = normalize_table(dtype::float32, nullptr)[0];
  bytes_to_float(f, quotient);
}

class to_tensor_op final : public transform_op {
 public:
  std::string_view name() const noexcept override { return "ToTensor"; }
  std::string spec() const override { return "ToTensor()"; }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("ToTensor", in, {frame_kind::image});
    frame_shape out = in;
    out.kind = frame_kind::tensor_f32;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override { to_float(f); }
};

class pil_to_tensor_op final : public transform_op {
 public:
  std::string_view name() const noexcept override { return "PILToTensor"; }
  std::string spec() const override { return "PILToTensor()"; }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("PILToTensor", in, {frame_kind::image});
    frame_shape out = in;
    out.kind = frame_kind::tensor_u8;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {
    f.kind = frame_kind::tensor_u8;
  }
};

// ConvertImageDtype(torch.float32 | torch.uint8), F_t.convert_image_dtype.
class convert_dtype_op final : public transform_op {
 public:
  explicit convert_dtype_op(bool to_float) : m_to_float(to_float) {}
  std::string_view name() const noexcept override { return "ConvertImageDtype"; }
  std::string spec() const override { return m_to_float ? "ConvertImageDtype(float32)" : "ConvertImageDtype(uint8)"; }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("ConvertImageDtype", in, {frame_kind::tensor_u8, frame_kind::tensor_f32});
    frame_shape out = in;
    out.kind = m_to_float ? frame_kind::tensor_f32 : frame_kind::tensor_u8;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {
    if (m_to_float && f.kind == frame_kind::tensor_u8) return to_float(f);
    if (m_to_float || f.kind == frame_kind::tensor_u8) return;
    float_to_bytes(f, true);  // image.mul(255 + 1 − 1e-3).to(uint8)
  }

 private:
  bool m_to_float;
};

class normalize_op final : public transform_op {
 public:
  normalize_op(std::vector<double> mean, std::vector<double> std) : m_mean(std::move(mean)), m_std(std::move(std)) {
    if (m_mean.empty() || m_std.empty()) throw std::invalid_argument("Normalize: mean and std must not be empty");
    check_normalize_std("Normalize", m_std);
  }
  std::string_view name() const noexcept override { return "Normalize"; }
  std::string spec() const override {
    return "Normalize(mean=" + spec_tuple(m_mean) + ", std=" + spec_tuple(m_std) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (in.kind != frame_kind::tensor_f32)
      throw std::invalid_argument(std::string("Normalize expects a float tensor, but the transform before it gives ") +
                                  std::string(to_string(in.kind)) + " (add ToTensor() or ConvertImageDtype(float32))");
    check_channels(in.channels);
    return in;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {
    check_channels(f.channels);
    const std::size_t n = static_cast<std::size_t>(f.height) * f.width;
    for (int c = 0; c < f.channels; ++c) {
      const auto m = static_cast<float>(m_mean[m_mean.size() == 1 ? 0 : c]);
      const auto s = static_cast<float>(m_std[m_std.size() == 1 ? 0 : c]);
      float* p = f.plane(c);
      for (std::size_t i = 0; i < n; ++i) p[i] = (p[i] - m) / s;
    }
  }
  const std::vector<double>& mean() const noexcept { return m_mean; }
  const std::vector<double>& stddev() const noexcept { return m_std; }

 private:
  void check_channels(int channels) const {
    // torch broadcasting of a [k, 1, 1] mean/std against [C, H, W].
    for (const auto* v : {&m_mean, &m_std})
      if (v->size() != 1 && v->size() != static_cast<std::size_t>(channels))
        throw std::invalid_argument("Normalize: mean and std have " + std::to_string(v->size()) +
                                    " values, the tensor has " + std::to_string(channels) +
                                    " channels (give 1 or " + std::to_string(channels) + ")");
  }
  std::vector<double> m_mean;
  std::vector<double> m_std;
};

// RandomErasing(p, scale, ratio, value), on tensors only (as torchvision).
class random_erasing_op final : public transform_op {
 public:
  random_erasing_op(double p, std::array<double, 2> scale, std::array<double, 2> ratio, std::vector<double> value,
                    bool random)
      : m_p(p), m_scale(scale), m_ratio(ratio), m_value(std::move(value)), m_random(random) {
    if (m_scale[0] < 0 || m_scale[1] > 1) throw std::invalid_argument("RandomErasing: Scale should be between 0 and 1");
    if (!(p >= 0 && p <= 1))
      throw std::invalid_argument("RandomErasing: Random erasing probability should be between 0 and 1");
    if (!(m_ratio[0] > 0 && m_ratio[1] > 0)) throw std::invalid_argument("RandomErasing: ratio must be positive");
  }
  std::string_view name() const noexcept override { return "RandomErasing"; }
  std::string spec() const override {
    return "RandomErasing(p=" + spec_number(m_p) + ", scale=" + spec_tuple(m_scale) + ", ratio=" +
           spec_tuple(m_ratio) + ", value=" + (m_random ? std::string("'random'") : spec_tuple(m_value)) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind("RandomErasing", in, {frame_kind::tensor_f32, frame_kind::tensor_u8});
    if (!m_random && m_value.size() != 1 && m_value.size() != static_cast<std::size_t>(in.channels))
      throw std::invalid_argument("RandomErasing: If value is a sequence, it should have either a single value or " +
                                  std::to_string(in.channels) + " (number of input channels)");
    if (m_random && in.kind == frame_kind::tensor_u8)
      throw std::invalid_argument("RandomErasing: value='random' needs a float tensor");
    return in;
  }
  bool deterministic() const noexcept override { return false; }

  struct params {
    bool erase = false;
    int i = 0, j = 0, h = 0, w = 0;
  };
  // RandomErasing.forward + get_params: p, then up to 10 attempts.
  params draw(sample_rng& rng, size2 in) const {
    params r;
    if (!(rng.uniform() < m_p)) return r;
    r.erase = true;
    const double area = static_cast<double>(in.height) * in.width;
    const double lr0 = std::log(m_ratio[0]);
    const double lr1 = std::log(m_ratio[1]);
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double erase_area = area * rng.uniform(m_scale[0], m_scale[1]);
      const double aspect = std::exp(rng.uniform(lr0, lr1));
      const int h = static_cast<int>(std::nearbyint(std::sqrt(erase_area * aspect)));
      const int w = static_cast<int>(std::nearbyint(std::sqrt(erase_area / aspect)));
      if (!(h < in.height && w < in.width)) continue;
      r.h = h;
      r.w = w;
      r.i = draw_int(rng, 0, in.height - h + 1);
      r.j = draw_int(rng, 0, in.width - w + 1);
      return r;
    }
    r.erase = false;  // torchvision returns the image itself
    return r;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const params p = draw(rng, in);
    if (!p.erase) return {0};
    return {1, double(p.i), double(p.j), double(p.h), double(p.w)};
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch&) const override {
    const params p = draw(rng, f.size());
    if (!p.erase) return;
    if (f.kind == frame_kind::tensor_f32) {
      fill(p, f.channels, rng, [&](int c, std::size_t at, float v) { f.plane(c)[at] = v; }, f.width);
      return;
    }
    // Assigning a float/int value into a uint8 tensor truncates.
    for (int c = 0; c < f.channels; ++c) {
      const auto v = static_cast<std::uint8_t>(static_cast<int>(value(c)));
      for (int y = p.i; y < p.i + p.h; ++y)
        for (int x = p.j; x < p.j + p.w; ++x) f.pixels.view().row(y)[x * f.channels + c] = v;
    }
  }
  // run() on a float tensor, then the output conversion, straight on the
  // output (run_on_output).
  void erase_output(std::span<std::byte> dst, const output_shape& shape, sample_rng& rng) const {
    const params p = draw(rng, {shape.width, shape.height});
    if (!p.erase) return;
    const std::size_t plane = static_cast<std::size_t>(shape.height) * static_cast<std::size_t>(shape.width);
    const auto store = [&](int c, std::size_t at, float v) {
      detail::store_output(dst.data(), shape.spec, shape.channels, plane, c, at, v);
    };
    fill(p, shape.channels, rng, store, shape.width);
  }

 private:
  double value(int c) const { return m_random ? 0.0 : m_value[m_value.size() == 1 ? 0 : static_cast<std::size_t>(c)]; }
  // The erased box's floats, channel by channel, row by row: `store(c,
  // y * width + x, v)`; 'random' draws one normal value per element in
  // that order, as torch's normal_() fills a [C, h, w] tensor.
  template <class Store>
  void fill(const params& p, int channels, sample_rng& rng, Store store, int width) const {
    for (int c = 0; c < channels; ++c) {
      const auto v = static_cast<float>(value(c));
      for (int y = p.i; y < p.i + p.h; ++y)
        for (int x = p.j; x < p.j + p.w; ++x)
          store(c, static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x),
                m_random ? static_cast<float>(normal(rng)) : v);
    }
  }
  static double normal(sample_rng& rng) {  // Box–Muller; torch's normal_() is N(0, 1) too
    const double u1 = 1.0 - rng.uniform();
    const double u2 = rng.uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double m_p;
  std::array<double, 2> m_scale;
  std::array<double, 2> m_ratio;
  std::vector<double> m_value;
  bool m_random;
};

op_ptr make_to_tensor(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<to_tensor_op>();
}
op_ptr make_pil_to_tensor(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<pil_to_tensor_op>();
}
op_ptr make_convert_dtype(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("dtype")) a.fail("dtype", "missing");
  const int k = a.choice("dtype", {"float32", "float", "uint8"}, 0);
  return std::make_shared<convert_dtype_op>(k != 2);
}
op_ptr make_normalize(const spec_call& c) {
  const spec_args a(c);
  if (!a.has("mean")) a.fail("mean", "missing");
  if (!a.has("std")) a.fail("std", "missing");
  (void)a.boolean("inplace", false);
  return std::make_shared<normalize_op>(a.numbers("mean", {}), a.numbers("std", {}));
}
op_ptr make_random_erasing(const spec_call& c) {
  const spec_args a(c);
  const auto scale = a.numbers("scale", {0.02, 0.33});
  const auto ratio = a.numbers("ratio", {0.3, 3.3});
  if (scale.size() != 2) a.fail("scale", "expected a sequence of 2 numbers");
  if (ratio.size() != 2) a.fail("ratio", "expected a sequence of 2 numbers");
  (void)a.boolean("inplace", false);
  bool random = false;
  std::vector<double> value{0};
  if (const spec_value* v = a.get("value"); v != nullptr && v->type == spec_value::kind::string) {
    if (v->text != "random") a.fail("value", "If value is str, it should be 'random'");
    random = true;
  } else {
    value = a.numbers("value", {0});
  }
  return std::make_shared<random_erasing_op>(a.number("p", 0.5), std::array<double, 2>{scale[0], scale[1]},
                                             std::array<double, 2>{ratio[0], ratio[1]}, value, random);
}

}  // namespace

bool is_normalize_op(const transform_op& op, std::vector<double>& mean, std::vector<double>& stddev) {
  const auto* n = dynamic_cast<const normalize_op*>(&op);
  if (n == nullptr) return false;
  mean = n->mean();
  stddev = n->stddev();
  return true;
}

bool runs_on_output(const transform_op& op) {
  return dynamic_cast<const random_erasing_op*>(&op) != nullptr || run_timm_erasing_on_output(op, {}, {}, nullptr);
}

void run_on_output(const transform_op& op, std::span<std::byte> dst, const output_shape& shape, const sample_key& key,
                   std::uint32_t stream) {
  const auto* erasing = dynamic_cast<const random_erasing_op*>(&op);
  if ((erasing == nullptr && !runs_on_output(op)) || !shape.spec.normalized())
    throw std::invalid_argument(std::string(op.name()) + " cannot run on a " + to_string(shape.spec) + " output");
  sample_rng rng(key, stream);
  if (erasing == nullptr) {
    (void)run_timm_erasing_on_output(op, dst, shape, &rng);
    return;
  }
  erasing->erase_output(dst, shape, rng);
}

std::span<const op_entry> tensor_op_entries() {
  static const op_entry entries[] = {
      {"ToTensor", make_to_tensor},         {"PILToTensor", make_pil_to_tensor},
      {"ConvertImageDtype", make_convert_dtype}, {"Normalize", make_normalize},
      {"RandomErasing", make_random_erasing},
  };
  return entries;
}

}  // namespace ringfeed::image
