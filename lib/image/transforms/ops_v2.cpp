// torchvision.transforms.v2's own ops that have no v1 twin: ToImage,
// ToDtype and ToPureTensor (v2's Compose and the ops with v1 twins are the
// v1 ops: on PIL images v2 calls the same Pillow kernels). Each follows v2's
// kernels: where v1 divides by 255, ToDtype(float32, scale=True)
// multiplies by float32(1 / 255), which differs in 126 of the 256 values.
#include "ops_detail.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace ringfeed::image {

namespace {

// ToImage(): a PIL image becomes a uint8 CHW tensor (tv_tensors.Image); a
// tensor stays as it is.
class to_image_op final : public transform_op {
 public:
  std::string_view name() const noexcept override { return "ToImage"; }
  std::string spec() const override { return "ToImage()"; }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    if (in.kind == frame_kind::image) out.kind = frame_kind::tensor_u8;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {
    if (f.kind == frame_kind::image) f.kind = frame_kind::tensor_u8;
  }
};

// ToPureTensor(): a tv_tensor becomes a plain tensor; bytes unchanged.
class to_pure_tensor_op final : public transform_op {
 public:
  std::string_view name() const noexcept override { return "ToPureTensor"; }
  std::string spec() const override { return "ToPureTensor()"; }
  frame_shape infer(const frame_shape& in) const override { return in; }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame&, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {}
};

// The float32 bits of each byte v after `.to(float32)`: with `scale`
// v · float32(1 / 255) (`.mul_(1.0 / 255)`), else v.
std::array<std::uint32_t, 256> float_bits(bool scale) {
  std::array<std::uint32_t, 256> t{};
  const auto inv = static_cast<float>(1.0 / 255.0);
  for (int v = 0; v < 256; ++v)
    t[static_cast<std::size_t>(v)] = std::bit_cast<std::uint32_t>(scale ? static_cast<float>(v) * inv
                                                                         : static_cast<float>(v));
  return t;
}

// ToDtype(dtype, scale): v2's to_dtype_image. A PIL image passes through
// (v2 converts tensors only).
class to_dtype_op final : public transform_op {
 public:
  to_dtype_op(bool to_float, bool scale) : m_to_float(to_float), m_scale(scale) {}
  std::string_view name() const noexcept override { return "ToDtype"; }
  std::string spec() const override {
    return std::string("ToDtype(dtype=") + (m_to_float ? "float32" : "uint8") + ", scale=" +
           (m_scale ? "True" : "False") + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    if (in.kind != frame_kind::image) out.kind = m_to_float ? frame_kind::tensor_f32 : frame_kind::tensor_u8;
    return out;
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key&, std::uint32_t, op_scratch&) const override {
    static const std::array<std::uint32_t, 256> scaled = float_bits(true), plain = float_bits(false);
    if (f.kind == frame_kind::tensor_u8 && m_to_float) bytes_to_float(f, m_scale ? scaled : plain);
    else if (f.kind == frame_kind::tensor_f32 && !m_to_float) float_to_bytes(f, m_scale);
  }

 private:
  bool m_to_float, m_scale;
};

op_ptr make_to_image(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<to_image_op>();
}
op_ptr make_to_pure_tensor(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<to_pure_tensor_op>();
}
op_ptr make_to_dtype(const spec_call& c) {
  const spec_args a(c);
  static constexpr std::string_view dtypes[] = {"float32", "uint8", "float16", "bfloat16", "float64"};
  const int d = a.choice("dtype", dtypes, -1);
  if (d < 0) a.fail("dtype", "missing: ToDtype(dtype) takes float32 or uint8");
  if (d > 1)
    a.fail("dtype", std::string(dtypes[d]) + " inside a transform is not run by ringfeed; end the list in float32 "
                                             "and ask for output='float16' (bfloat16 and float64: not supported)");
  return std::make_shared<to_dtype_op>(d == 0, a.boolean("scale", false));
}

}  // namespace

std::span<const op_entry> v2_op_entries() {
  static const op_entry entries[] = {
      {"ToImage", make_to_image},
      {"ToDtype", make_to_dtype},
      {"ToPureTensor", make_to_pure_tensor},
  };
  return entries;
}

}  // namespace ringfeed::image
