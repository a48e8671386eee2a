#include <ringfeed/image/pipeline.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "image/transforms/ops_detail.hpp"
#include "image/transforms/planes.hpp"

namespace ringfeed::image {

// --- torchvision parameter rules ------------------------------------------------

size2 resized_size(size2 in, int shorter_side) noexcept {
  // _compute_resized_output_size: new_long = int(size * long / short), the
  // division in double (Python's true division of two ints).
  const bool w_short = in.width <= in.height;
  const int short_side = w_short ? in.width : in.height;
  const int long_side = w_short ? in.height : in.width;
  const auto new_long = static_cast<int>(static_cast<double>(static_cast<long long>(shorter_side) * long_side) /
                                         static_cast<double>(short_side));
  return w_short ? size2{shorter_side, new_long} : size2{new_long, shorter_side};
}

namespace {
// int(round(d / 2.0)) for an integer d, with Python's round half to even.
int half_round_even(int d) {
  const int q = d >> 1;  // floor(d / 2)
  if ((d & 1) == 0) return q;
  return (q & 1) == 0 ? q : q + 1;  // d/2 = q + 0.5: the even of q, q + 1
}
}  // namespace

crop_box center_crop_box(size2 in, size2 crop) noexcept {
  // torchvision pads (left/top = (crop - in) // 2) when the crop is larger,
  // then crops at round((padded - crop) / 2) = 0 along that axis.
  crop_box b{0, 0, crop.height, crop.width};
  b.top = crop.height > in.height ? -((crop.height - in.height) / 2) : half_round_even(in.height - crop.height);
  b.left = crop.width > in.width ? -((crop.width - in.width) / 2) : half_round_even(in.width - crop.width);
  return b;
}

crop_box random_resized_crop_box(size2 in, const random_resized_crop_range& range, sample_rng& rng) {
  return random_resized_crop_box(in, range, [&rng] { return rng.uniform(); });
}

// --- output conversion ----------------------------------------------------------

std::uint16_t float_to_half(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u | ((abs >> 13) & 0x3FFu) : 0u));
  if (abs >= 0x477FF000u)  // rounds to >= 65520: overflow to infinity
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // value = mant · 2^(exp-150); half ulp = 2^-24
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (to nearest even).
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | h);
}

std::uint16_t float_to_bfloat16(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  // c10::BFloat16's round_to_nearest_even: a NaN becomes the quiet NaN
  // 0x7FC0; else add 0x7FFF plus the lowest kept bit, so a tie rounds to
  // the even neighbour (an overflow carries into infinity, as it should).
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

namespace {

// ToTensor + Normalize for one channel value, in float32 as torch computes
// it: v / 255 (true division; v2's ToDtype: v · float32(1 / 255)), then
// (x - mean) / std.
float normalized(int v, int c, const normalize_params* norm) {
  float x = norm != nullptr && norm->reciprocal ? static_cast<float>(v) * static_cast<float>(1.0 / 255.0)
                                                : static_cast<float>(v) / 255.0f;
  if (norm != nullptr) x = (x - norm->mean[static_cast<std::size_t>(c)]) / norm->std[static_cast<std::size_t>(c)];
  return x;
}

}  // namespace

normalize_table_t normalize_table(dtype type, const normalize_params* norm) {
  normalize_table_t table{};
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      std::uint32_t bits = static_cast<std::uint32_t>(v);
      if (type == dtype::float32) {
        bits = std::bit_cast<std::uint32_t>(normalized(v, c, norm));
      } else if (type == dtype::float16) {
        bits = float_to_half(normalized(v, c, norm));
      } else if (type == dtype::bfloat16) {
        bits = float_to_bfloat16(normalized(v, c, norm));
      }
      table[static_cast<std::size_t>(c)][static_cast<std::size_t>(v)] = bits;
    }
  }
  return table;
}

namespace {

// normalize_table(type, norm), kept per thread for the next sample of the
// same recipe (768 float divisions saved per sample).
const normalize_table_t& cached_normalize_table(dtype type, const normalize_params* norm) {
  struct entry {
    bool valid = false;
    dtype type = dtype::uint8;
    bool has_norm = false;
    normalize_params norm{};
    normalize_table_t table{};
  };
  thread_local entry cache;
  const bool same = cache.valid && cache.type == type && cache.has_norm == (norm != nullptr) &&
                    (norm == nullptr || cache.norm == *norm);
  if (!same) {
    cache.table = normalize_table(type, norm);
    cache.type = type;
    cache.has_norm = norm != nullptr;
    if (norm != nullptr) cache.norm = *norm;
    cache.valid = true;
  }
  return cache.table;
}

}  // namespace

namespace detail {

void write_normalized(image_view src, bool flip, output_spec spec, const normalize_params* norm, std::byte* dst) {
  const dtype type = spec.dtype;
  const normalize_table_t& table = cached_normalize_table(type, norm);
  const std::uint32_t* const lut[3] = {table[0].data(), table[1].data(), table[2].data()};
  if (spec.layout == layout::nhwc)
    lookup_interleaved(src, flip, lut, element_size(type), dst);
  else if (type == dtype::float32)
    compute_planes(src, flip, norm, lut, reinterpret_cast<float*>(dst));
  else
    lookup_planes(src, flip, lut, reinterpret_cast<std::uint16_t*>(dst));
}

}  // namespace detail

void write_output(image_view src, bool flip, output_spec spec, const normalize_params* norm,
                  std::span<std::byte> dst) {
  if (src.channels != 3) throw std::invalid_argument("write_output: source must be RGB");
  spec.check();
  if (spec == output_spec::uint8_nchw())
    throw std::invalid_argument("write_output: uint8 NCHW is PILToTensor's output (a transform list's), "
                                "not a conversion of RGB bytes");
  const output_shape shape{3, src.height, src.width, spec};
  if (dst.size() != shape.bytes())
    throw std::invalid_argument("write_output: destination is " + std::to_string(dst.size()) + " bytes, needs " +
                                std::to_string(shape.bytes()));
  switch (spec.dtype) {
    case dtype::uint8: {
      auto* out = reinterpret_cast<std::uint8_t*>(dst.data());
      const std::size_t row_bytes = static_cast<std::size_t>(src.width) * 3;
      for (int y = 0; y < src.height; ++y) {
        std::uint8_t* o = out + static_cast<std::size_t>(y) * row_bytes;
        if (!flip) {
          std::memcpy(o, src.row(y), row_bytes);
        } else {
          const std::uint8_t* in = src.row(y);
          for (int x = 0; x < src.width; ++x) std::memcpy(o + x * 3, in + (src.width - 1 - x) * 3, 3);
        }
      }
      break;
    }
    case dtype::float32:
    case dtype::float16:
    case dtype::bfloat16: detail::write_normalized(src, flip, spec, norm, dst.data()); break;
  }
}

// --- pipeline builder -------------------------------------------------------------

namespace {
enum stage : int { stage_none = 0, stage_geometry = 1, stage_center_crop = 2, stage_flip = 3, stage_normalize = 4 };
constexpr const char* order_help =
    "steps go in the order [resize | random_resized_crop] [center_crop] [horizontal_flip] [normalize]";
}  // namespace

void pipeline::check_can_add(int stage_of_step, const char* what) const {
  if (stage_of_step <= m_stage)
    throw std::invalid_argument(std::string("pipeline: ") + what + " cannot come here: " + order_help);
}

pipeline pipeline::train(int size, pipeline_mode mode) {
  pipeline p;
  p.random_resized_crop(size).horizontal_flip(0.5).normalize(imagenet_normalize).set_mode(mode);
  return p;
}

pipeline pipeline::val(int resize, int crop, pipeline_mode mode) {
  pipeline p;
  p.resize(resize).center_crop(crop).normalize(imagenet_normalize).set_mode(mode);
  return p;
}

pipeline& pipeline::random_resized_crop(size2 size, const random_resized_crop_range& range) {
  check_can_add(stage_geometry, "random_resized_crop");
  if (size.width < 1 || size.height < 1) throw std::invalid_argument("random_resized_crop: size must be positive");
  if (!(range.scale[0] > 0 && range.scale[0] <= range.scale[1]) || !(range.ratio[0] > 0 && range.ratio[1] > 0))
    throw std::invalid_argument("random_resized_crop: need 0 < scale[0] <= scale[1] and positive ratios");
  m_geometry = geometry::random_resized_crop;
  m_size = size;
  m_range = range;
  m_filter = resample_filter::bilinear;
  m_stage = stage_geometry;
  return *this;
}

pipeline& pipeline::resize(int shorter_side, resample_filter filter) {
  check_can_add(stage_geometry, "resize");
  if (shorter_side < 1) throw std::invalid_argument("resize: size must be positive");
  m_geometry = geometry::resize_shorter;
  m_shorter_side = shorter_side;
  m_filter = filter;
  m_stage = stage_geometry;
  return *this;
}

pipeline& pipeline::resize(size2 size, resample_filter filter) {
  check_can_add(stage_geometry, "resize");
  if (size.width < 1 || size.height < 1) throw std::invalid_argument("resize: size must be positive");
  m_geometry = geometry::resize_exact;
  m_size = size;
  m_filter = filter;
  m_stage = stage_geometry;
  return *this;
}

pipeline& pipeline::center_crop(size2 size) {
  check_can_add(stage_center_crop, "center_crop");
  if (size.width < 1 || size.height < 1) throw std::invalid_argument("center_crop: size must be positive");
  m_center_crop = size;
  m_stage = stage_center_crop;
  return *this;
}

pipeline& pipeline::horizontal_flip(double p) {
  check_can_add(stage_flip, "horizontal_flip");
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("horizontal_flip: p must be in [0, 1]");
  m_flip_p = p;
  m_stage = stage_flip;
  return *this;
}

pipeline& pipeline::normalize(const normalize_params& params) {
  check_can_add(stage_normalize, "normalize");
  check_normalize_std("normalize", params.std);
  m_normalize = params;
  m_stage = stage_normalize;
  return *this;
}

pipeline& pipeline::set_output(output_spec spec) {
  spec.check();
  const frame_shape last = last_frame();
  // v2's ToDtype(float32, scale=True) of a uint8 tensor, fused
  // (transform_list::compile): the output write makes the float tensor.
  // After an image (ToImage fused away) the output may also be its bytes,
  // for the device to convert with the same table (device_convertible).
  const bool to_float = m_normalize && m_normalize->reciprocal && last.kind == frame_kind::tensor_u8;
  if ((last.kind == frame_kind::tensor_f32 || !m_output_ops.empty() || to_float) && !spec.normalized()) {
    const std::string why =
        m_output_ops.empty() ? "" : " (" + std::string(m_output_ops.back()->name()) + " runs on the float output)";
    throw std::invalid_argument("pipeline: the transforms end with a float tensor" + why +
                                "; the output must be float32, float16 or bfloat16, not " + to_string(spec));
  }
  if (last.kind == frame_kind::tensor_u8 && !to_float && spec != output_spec::uint8_nchw())
    throw std::invalid_argument("pipeline: the transforms end with a uint8 tensor (PILToTensor); the output is "
                                "uint8 NCHW, not " + to_string(spec));
  if (last.kind == frame_kind::image && spec == output_spec::uint8_nchw())
    throw std::invalid_argument("pipeline: uint8 NCHW is the output of PILToTensor; these transforms end with "
                                "an image (uint8 NHWC)");
  m_output = spec;
  return *this;
}

pipeline& pipeline::set_filter(resample_filter filter) noexcept {
  m_filter = filter;
  return *this;
}

pipeline& pipeline::set_flip_stream(std::uint32_t stream) noexcept {
  m_flip_stream = stream;
  return *this;
}

frame_shape pipeline::head_frame() const noexcept {
  frame_shape f;
  f.kind = frame_kind::image;
  f.channels = 3;
  if (m_center_crop) {
    f.size = *m_center_crop;
  } else if (m_geometry == geometry::random_resized_crop || m_geometry == geometry::resize_exact) {
    f.size = m_size;
  }
  return f;
}

pipeline& pipeline::append(std::shared_ptr<const transform_op> op, std::uint32_t stream) {
  if (!op) throw std::invalid_argument("pipeline::append: null op");
  if (m_normalize) throw std::invalid_argument("pipeline::append: ops go before normalize");
  if (!m_output_ops.empty()) throw std::invalid_argument("pipeline::append: ops go before the output's ops");
  m_tail_shape = op->infer(last_frame());
  m_tail.push_back(std::move(op));
  m_tail_streams.push_back(stream);
  m_crop_region = m_geometry == geometry::none && !m_center_crop && m_flip_p <= 0.0 && m_tail.size() >= 2 &&
                  m_tail[0]->name() == "ToImage" &&
                  describe_geometry(*m_tail[1]).type == fusable_geometry::kind::random_resized_crop;
  if (m_tail_shape.kind == frame_kind::tensor_u8) m_output = output_spec::uint8_nchw();
  if (m_tail_shape.kind == frame_kind::tensor_f32 && !m_output.normalized()) m_output = output_spec::float32_nchw();
  if (m_tail_shape.kind == frame_kind::image && m_output == output_spec::uint8_nchw()) m_output = output_spec::uint8_nhwc();
  return *this;
}

pipeline& pipeline::append_on_output(std::shared_ptr<const transform_op> op, std::uint32_t stream) {
  if (!op) throw std::invalid_argument("pipeline::append_on_output: null op");
  if (!m_output.normalized())
    throw std::invalid_argument("pipeline::append_on_output: " + std::string(op->name()) +
                                " needs a float output, not " + to_string(m_output));
  if (!runs_on_output(*op))
    throw std::invalid_argument("pipeline::append_on_output: " + std::string(op->name()) +
                                " cannot run on the output (RandomErasing can)");
  frame_shape f = last_frame();
  f.kind = frame_kind::tensor_f32;
  (void)op->infer(f);  // checks its arguments against the channels
  m_output_ops.push_back(std::move(op));
  m_output_streams.push_back(stream);
  return *this;
}

pipeline& pipeline::set_mode(pipeline_mode mode) noexcept {
  m_mode = mode;
  return *this;
}

pipeline& pipeline::set_decode_options(const decode_options& options) noexcept {
  m_decode = options;
  return *this;
}

pipeline& pipeline::set_fast_min_reduction(double factor) {
  if (!(factor >= 1.0)) throw std::invalid_argument("set_fast_min_reduction: factor must be >= 1");
  m_fast_min_reduction = factor;
  return *this;
}

std::optional<output_shape> pipeline::fixed_shape() const noexcept {
  if (!m_tail.empty()) {
    if (!m_tail_shape.size) return std::nullopt;
    return output_shape{m_tail_shape.channels, m_tail_shape.size->height, m_tail_shape.size->width, m_output};
  }
  if (m_center_crop) return output_shape{3, m_center_crop->height, m_center_crop->width, m_output};
  if (m_geometry == geometry::random_resized_crop || m_geometry == geometry::resize_exact)
    return output_shape{3, m_size.height, m_size.width, m_output};
  return std::nullopt;
}

output_shape pipeline::shape_for(size2 source) const noexcept {
  if (auto fixed = fixed_shape()) return *fixed;
  const size2 s = m_geometry == geometry::resize_shorter ? resized_size(source, m_shorter_side) : source;
  return {3, s.height, s.width, m_output};
}

std::optional<output_shape> pipeline::output_for(size2 source) const {
  if (auto fixed = fixed_shape()) return fixed;
  frame_shape f = head_frame();  // a size of its own unless the head keeps or scales the source's
  if (!f.size) f.size = m_geometry == geometry::resize_shorter ? resized_size(source, m_shorter_side) : source;
  for (const auto& op : m_tail) f = op->infer(f);
  if (!f.size) return std::nullopt;
  return output_shape{f.channels, f.size->height, f.size->width, m_output};
}

sample_plan pipeline::plan(size2 source, const sample_key& key) const {
  if (source.width < 1 || source.height < 1) throw std::invalid_argument("pipeline::plan: empty source");
  sample_plan p;
  p.source = source;
  p.filter = m_filter;
  p.crop = {0, 0, source.height, source.width};
  p.resized = source;
  switch (m_geometry) {
    case geometry::none: break;
    case geometry::resize_shorter: p.resized = resized_size(source, m_shorter_side); break;
    case geometry::resize_exact: p.resized = m_size; break;
    case geometry::random_resized_crop: {
      sample_rng rng(key, /*stream=*/1);
      p.crop = random_resized_crop_box(source, m_range, rng);
      p.resized = m_size;
      break;
    }
  }
  p.window = m_center_crop ? center_crop_box(p.resized, *m_center_crop)
                           : crop_box{0, 0, p.resized.height, p.resized.width};
  if (m_flip_p > 0.0) {
    sample_rng rng(key, m_flip_stream);
    p.flip = rng.uniform() < m_flip_p;
  }
  return p;
}

}  // namespace ringfeed::image
