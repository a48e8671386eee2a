// Private to the transform-list ops: the per-thread scratch, the argument
// binder that maps a parsed call onto torchvision's constructor signature,
// and the tables of op factories each ops_*.cpp file contributes.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/resample.hpp>
#include <ringfeed/image/pipeline.hpp>
#include <ringfeed/image/transform_op.hpp>
#include <ringfeed/image/transform_spec.hpp>
#include <ringfeed/image/torch_reference.hpp>

namespace ringfeed::image {

struct op_scratch {
  image_buffer spare;                // an op's output before it becomes the frame's pixels
  std::vector<float> spare_values;   // the same for float tensors
};

using op_ptr = std::shared_ptr<const transform_op>;

/// A parsed call bound to a signature: positional arguments in the order of
/// `params`, then keywords by name. Accessors throw transform_spec_error
/// naming the op, the argument and what it expected.
class spec_args {
 public:
  /// Binds `call` to its op's signature (find_op_signature).
  explicit spec_args(const spec_call& call);

  [[nodiscard]] const std::string& op() const noexcept { return m_call->name; }
  [[nodiscard]] std::size_t column() const noexcept { return m_call->column; }
  /// The value given for `param`, or null.
  [[nodiscard]] const spec_value* get(std::string_view param) const;
  [[nodiscard]] bool has(std::string_view param) const {
    const spec_value* v = get(param);
    return v != nullptr && v->type != spec_value::kind::none;
  }

  [[nodiscard]] double number(std::string_view param, double fallback) const;
  [[nodiscard]] int integer(std::string_view param, int fallback) const;
  [[nodiscard]] bool boolean(std::string_view param, bool fallback) const;
  /// A number or a list of numbers (a single number gives one element).
  [[nodiscard]] std::vector<double> numbers(std::string_view param, std::vector<double> fallback) const;
  /// An enum member: a name or a string, matched without case after the
  /// last '.'; returns its index in `choices`.
  [[nodiscard]] int choice(std::string_view param, std::span<const std::string_view> choices, int fallback) const;
  [[nodiscard]] int choice(std::string_view param, std::initializer_list<std::string_view> choices,
                           int fallback) const {
    return choice(param, std::span<const std::string_view>(choices.begin(), choices.size()), fallback);
  }
  /// A list of transforms (RandomApply's `transforms`).
  [[nodiscard]] std::vector<op_ptr> transforms(std::string_view param) const;

  [[noreturn]] void fail(std::string_view param, const std::string& reason) const;

 private:
  const spec_call* m_call;
  std::vector<std::pair<std::string_view, const spec_value*>> m_bound;
};

/// One op the spec grammar knows.
struct op_entry {
  std::string_view name;
  op_ptr (*make)(const spec_call&);
};

/// The tables (one per ops_*.cpp file).
[[nodiscard]] std::span<const op_entry> shape_op_entries();
[[nodiscard]] std::span<const op_entry> tensor_op_entries();
[[nodiscard]] std::span<const op_entry> geometry_op_entries();
[[nodiscard]] std::span<const op_entry> color_op_entries();
[[nodiscard]] std::span<const op_entry> augment_op_entries();
[[nodiscard]] std::span<const op_entry> augmix_op_entries();
[[nodiscard]] std::span<const op_entry> container_op_entries();
[[nodiscard]] std::span<const op_entry> v2_op_entries();
/// timm's (ops_timm_augment.cpp, ops_timm_policies.cpp, ops_timm_erasing.cpp,
/// ops_timm_geometry.cpp).
[[nodiscard]] std::span<const op_entry> timm_augment_op_entries();
[[nodiscard]] std::span<const op_entry> timm_policy_op_entries();
[[nodiscard]] std::span<const op_entry> timm_erasing_op_entries();
[[nodiscard]] std::span<const op_entry> timm_geometry_op_entries();

/// What compile() needs to know of a geometric op to fuse it with the
/// decoder.
struct fusable_geometry {
  enum class kind : unsigned char { none, resize_shorter, resize_exact, random_resized_crop, center_crop };
  kind type = kind::none;
  size2 size{};          // resize_exact, random_resized_crop, center_crop
  int smaller_edge = 0;  // resize_shorter
  random_resized_crop_range range{};
  interpolation interp = interpolation::bilinear;
  bool max_size = false;  // Resize with max_size (not fused)
};
[[nodiscard]] fusable_geometry describe_geometry(const transform_op& op);
/// For a RandomResizedCrop on a uint8 tensor whose crop it drew is
/// `region` (the pipeline decoded only that region of the file): the rest
/// of its run() into `f`, F.resized_crop's resize unless the crop has the
/// size (then a copy of `region`). False, `f` untouched, for any other op.
bool finish_tensor_crop(const transform_op& op, image_view region, frame& f, op_scratch& s);

/// True for Normalize; sets its mean and std.
[[nodiscard]] bool is_normalize_op(const transform_op& op, std::vector<double>& mean, std::vector<double>& stddev);

/// True for an op that can also run on the float output in the batch slot,
/// after the output conversion (RandomErasing on a float tensor): compile()
/// moves such ops at the end of a list there, so ToTensor [+ Normalize]
/// still writes the slot in one pass.
[[nodiscard]] bool runs_on_output(const transform_op& op);
/// Runs such an op on `dst`, an output of `shape` (float32 or float16
/// NCHW), drawing from (key, stream) as run_op does: the same values as
/// the op on the float tensor, then the output conversion.
void run_on_output(const transform_op& op, std::span<std::byte> dst, const output_shape& shape, const sample_key& key,
                   std::uint32_t stream);

/// True when `op` is a RandomHorizontalFlip (`horizontal`) or
/// RandomVerticalFlip; sets `p`. For compile(), which fuses flips.
[[nodiscard]] bool is_flip_op(const transform_op& op, bool horizontal, double& p);

/// Bin `k` of the augment spaces' Posterize table:
/// top − (arange(bins) / ((bins − 1) / divisor)).round().int(), a float32
/// quotient rounded half to even (ops_augment.cpp).
[[nodiscard]] int posterize_bits_at(int top, double divisor, int bins, int k);

/// ops_augment.cpp's magnitude tables (transform_list::augment_magnitudes);
/// v2: torchvision.transforms.v2's (Solarize as a fraction of 255).
[[nodiscard]] std::vector<double> augment_magnitudes(std::string_view op, int bins, size2 size, bool wide,
                                                     linspace_rule rule, bool v2);

/// torch's float → uint8 cast (`.to(torch.uint8)`) as x86 builds compile it:
/// truncation to int32 (cvttss2si), then the low byte. Values outside
/// [0, 256) wrap (1802.7 → 10, −49.5 → 207), and NaN, ±inf and values past
/// int32 give 0x80000000's low byte, 0. A Normalize before
/// ConvertImageDtype(uint8) makes such values; torchvision returns them so.
[[nodiscard]] inline std::uint8_t torch_to_uint8(float s) {
  if (!(s >= -2147483648.0f && s < 2147483648.0f)) return 0;
  return static_cast<std::uint8_t>(static_cast<std::int32_t>(s));
}

/// An image or uint8 tensor (1 to 3 channels) becomes a float32 CHW tensor
/// whose value for byte v has the bits `bits[v]` (ops_tensor.cpp: ToTensor's
/// v / 255, v2's ToDtype).
void bytes_to_float(frame& f, const std::array<std::uint32_t, 256>& bits);
/// A float32 tensor becomes a uint8 one by torch's cast: with `scale`
/// image.mul(255 + 1 − 1e-3).to(uint8) (ConvertImageDtype, ToDtype), else
/// image.to(uint8); both in float32.
void float_to_bytes(frame& f, bool scale);

/// How a resize op runs on a tensor frame (tensor_geometry.cpp): the
/// interpolation, torchvision's antialias (None → False; only bilinear and
/// bicubic use it), and whether a uint8 tensor keeps uint8 (torch 2.x's v2
/// resize_image on this CPU, torch_reference) or is resized as floats and
/// rounded (torch 1.x's F_t.resize).
struct tensor_resize {
  interpolation interp = interpolation::bilinear;
  bool antialias = false;
  bool native_uint8 = false;
  /// Set when the reference is torch 1.x, whose float interpolate kernels
  /// (v1's F_t.resize of every tensor) sum in orders ringfeed does not
  /// follow: bilinear and bicubic on tensors are refused there, by name.
  std::string torch1;
};
/// The tensor_resize of an op built now (reads current_torch_reference()).
[[nodiscard]] tensor_resize make_tensor_resize(interpolation interp, std::optional<bool> antialias);
/// std::invalid_argument naming `op` unless `how` runs on tensors
/// (nearest, bilinear, bicubic: torch's interpolate modes torchvision
/// uses; under torch 1.x nearest only).
void check_tensor_interpolation(std::string_view op, const tensor_resize& how);
/// F.resize of a tensor frame (uint8 or float32) to `out`.
void resize_tensor_frame(frame& f, size2 out, const tensor_resize& how, op_scratch& s);
/// F.resize of the uint8 tensor `src` (any view, not f's pixels) to `out`,
/// into `f` as a frame of `kind`.
void resize_tensor_view(image_view src, frame_kind kind, size2 out, const tensor_resize& how, frame& f,
                        op_scratch& s);
/// F.crop of any frame: `b` may leave the frame, outside is zero (PIL's
/// crop and torchvision's pad-then-crop of tensors alike) (ops_shape.cpp).
void crop_frame(frame& f, const crop_box& b, op_scratch& s);
/// F.pad of a tensor frame: torch's pad (constant `fill`, replicate,
/// reflect) and torchvision's symmetric. On a uint8 tensor each fill value
/// must be an integer in 0..255, on a float tensor it is float(fill);
/// std::invalid_argument naming `op` otherwise, or for negative paddings
/// of a float tensor.
void pad_tensor_frame(frame& f, std::array<int, 4> ltrb, padding_mode mode, const std::vector<double>& fill,
                      op_scratch& s, std::string_view op);

/// Builds the op a call names; transform_spec_error for an unknown op
/// (listing the supported ones) or bad arguments.
[[nodiscard]] op_ptr make_op(const spec_call& call);

/// Every op name the grammar knows, comma-separated (for error messages).
[[nodiscard]] std::string supported_op_names();

// --- helpers for ops ---------------------------------------------------------------

/// Runs `op` with `stream` on `f` (the way the list runs its ops).
void run_op(const transform_op& op, frame& f, const sample_key& key, std::uint32_t stream, op_scratch& s);

/// "(a, b, c)" for spec() output.
[[nodiscard]] std::string spec_tuple(std::span<const double> v);

/// std::invalid_argument "<op> expects <what>, got <kind> (<channels>
/// channels)" when the frame is not `kind`.
void require_kind(std::string_view op, const frame_shape& in, std::initializer_list<frame_kind> kinds);

/// std::invalid_argument unless `f` holds a PIL image.
void require_image(std::string_view op, const frame& f);

/// torchvision's _parse_fill for an image of `channels` bands, then int()
/// and Pillow's CLIP8. Throws std::invalid_argument on a length mismatch.
[[nodiscard]] fill_color resolve_fill(std::string_view op, const std::vector<double>& fill, int channels);

/// torchvision's Normalize check: std::invalid_argument when a std is zero
/// as float32 (a negative one only flips the sign, and is allowed). For the
/// Normalize op and the fused pipeline::normalize alike.
template <class Range>
void check_normalize_std(std::string_view op, const Range& std) {
  for (const auto s : std)
    if (static_cast<float>(s) == 0.0f)
      throw std::invalid_argument(std::string(op) +
                                  ": std evaluated to zero after conversion to torch.float32, leading to division by zero.");
}

/// The InterpolationMode names, in `interpolation`'s order.
inline constexpr std::string_view interpolation_names[] = {"nearest", "bilinear", "bicubic",
                                                           "box",     "hamming",  "lanczos"};

/// float(torch.empty(1).uniform_(lo, hi)): torchvision draws its angles,
/// scales, shears, sigmas and jitter factors as float32 tensors, so a
/// pinned range (lo == hi) gives float32(lo), not lo.
[[nodiscard]] inline double torch_uniform(sample_rng& rng, double lo, double hi) {
  return static_cast<double>(static_cast<float>(rng.uniform(lo, hi)));
}

/// torch.randint(lo, hi) from a uniform draw, as the tests model it.
[[nodiscard]] inline int draw_int(sample_rng& rng, int lo, int hi) {
  return static_cast<int>(rng.uniform_int(lo, hi));
}

}  // namespace ringfeed::image
