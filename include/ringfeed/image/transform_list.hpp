// ringfeed::image::transform_list — an ordered list of torchvision ops, the
// one vocabulary behind the C++ builder, the spec string
// (transform_spec.hpp: the CLI's --transform and the C API) and Python's
// ringfeed.transforms (which writes the spec).
//
//   auto t = ringfeed::image::transform_list{}
//                .random_resized_crop({176, 176})
//                .random_horizontal_flip()
//                .to_tensor()
//                .normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225});
//   opt.pipeline = t.compile(ringfeed::image::pipeline_mode::fast);
//
// compile() makes the per-sample plan once: a head the decoder fuses with
// (Resize or RandomResizedCrop, then CenterCrop, then RandomHorizontalFlip:
// region and, in fast mode, DCT-scaled decode), the ops after it run on the
// decoded pixels in order, and a trailing ToTensor [+ Normalize] written
// straight into the batch slot. The two classic presets are such lists
// (train(), val()) and compile to the pipeline they always were.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/transform_op.hpp>
#include <ringfeed/image/pipeline.hpp>

namespace ringfeed::image {

class transform_list {
 public:
  transform_list() = default;

  /// The list a spec string describes (transform_spec.hpp). Throws
  /// transform_spec_error naming the column and the reason, and
  /// std::invalid_argument for arguments torchvision would reject.
  [[nodiscard]] static transform_list parse(std::string_view spec);
  /// The op names parse() knows, sorted, comma-separated.
  [[nodiscard]] static std::string supported_ops();
  /// Test hook: the magnitude bins AutoAugment / RandAugment (`wide`:
  /// TrivialAugmentWide) use for `op` ("ShearX", "Posterize", ...) on a
  /// `size` image, as torchvision's _augmentation_space computes them
  /// under the current torch reference (torch_reference.hpp).
  [[nodiscard]] static std::vector<double> augment_magnitudes(std::string_view op, int bins, size2 size, bool wide);
  /// RandomResizedCrop(size) + RandomHorizontalFlip() + ToTensor() +
  /// Normalize(ImageNet).
  [[nodiscard]] static transform_list train(int size = 224);
  /// Resize(resize) + CenterCrop(crop) + ToTensor() + Normalize(ImageNet).
  [[nodiscard]] static transform_list val(int resize = 256, int crop = 224);

  // One function per op, torchvision's arguments and defaults. Each throws
  // std::invalid_argument where torchvision's constructor raises.
  transform_list& resize(int smaller_edge, interpolation interp = interpolation::bilinear, int max_size = 0);
  transform_list& resize(size2 size, interpolation interp = interpolation::bilinear);
  transform_list& center_crop(size2 size);
  transform_list& random_resized_crop(size2 size, const random_resized_crop_range& range = {},
                                      interpolation interp = interpolation::bilinear);
  transform_list& random_horizontal_flip(double p = 0.5);
  transform_list& random_vertical_flip(double p = 0.5);
  transform_list& to_tensor();
  transform_list& pil_to_tensor();
  /// ConvertImageDtype(torch.float32) when `to_float`, else (torch.uint8).
  transform_list& convert_image_dtype(bool to_float = true);
  transform_list& normalize(const std::vector<double>& mean, const std::vector<double>& std);
  /// RandomErasing with a constant value (per channel or one for all).
  transform_list& random_erasing(double p = 0.5, std::array<double, 2> scale = {0.02, 0.33},
                                 std::array<double, 2> ratio = {0.3, 3.3}, const std::vector<double>& value = {0});
  transform_list& random_apply(const transform_list& ops, double p = 0.5);
  transform_list& random_order(const transform_list& ops);
  /// RandomChoice: `p` empty for equal weights.
  transform_list& random_choice(const transform_list& ops, const std::vector<double>& p = {});

  // The other ops (transform_list_ops.cpp). `padding` is (left, top, right,
  // bottom); `fill` one value or one per channel; an empty optional is
  // torchvision's None.
  transform_list& pad(std::array<int, 4> padding, const std::vector<double>& fill = {0},
                      padding_mode mode = padding_mode::constant);
  transform_list& random_crop(size2 size, std::optional<std::array<int, 4>> padding = std::nullopt,
                              bool pad_if_needed = false, const std::vector<double>& fill = {0},
                              padding_mode mode = padding_mode::constant);
  /// ColorJitter(brightness, contrast, saturation, hue) in torchvision's
  /// scalar form (b: [max(0, 1 − b), 1 + b]; hue h: [−h, h]); explicit
  /// ranges through add("ColorJitter(brightness=(0.5, 1.5))").
  transform_list& color_jitter(double brightness = 0, double contrast = 0, double saturation = 0, double hue = 0);
  transform_list& grayscale(int num_output_channels = 1);
  transform_list& random_grayscale(double p = 0.1);
  /// GaussianBlur((kx, ky), sigma=(lo, hi)).
  transform_list& gaussian_blur(std::array<int, 2> kernel_size, std::array<double, 2> sigma = {0.1, 2.0});
  transform_list& random_rotation(std::array<double, 2> degrees, interpolation interp = interpolation::nearest,
                                  bool expand = false, std::optional<std::array<double, 2>> center = std::nullopt,
                                  const std::vector<double>& fill = {0});
  transform_list& random_affine(std::array<double, 2> degrees,
                                std::optional<std::array<double, 2>> translate = std::nullopt,
                                std::optional<std::array<double, 2>> scale = std::nullopt,
                                std::optional<std::array<double, 4>> shear = std::nullopt,
                                interpolation interp = interpolation::nearest, const std::vector<double>& fill = {0},
                                std::optional<std::array<double, 2>> center = std::nullopt);
  transform_list& random_posterize(int bits, double p = 0.5);
  transform_list& random_solarize(double threshold, double p = 0.5);
  transform_list& random_autocontrast(double p = 0.5);
  transform_list& random_equalize(double p = 0.5);
  transform_list& random_adjust_sharpness(double sharpness_factor, double p = 0.5);
  transform_list& random_invert(double p = 0.5);
  enum class augment_policy : std::uint8_t { imagenet, cifar10, svhn };
  transform_list& auto_augment(augment_policy policy = augment_policy::imagenet,
                               interpolation interp = interpolation::nearest,
                               std::optional<std::vector<double>> fill = std::nullopt);
  transform_list& rand_augment(int num_ops = 2, int magnitude = 9, int num_magnitude_bins = 31,
                               interpolation interp = interpolation::nearest,
                               std::optional<std::vector<double>> fill = std::nullopt);
  transform_list& trivial_augment_wide(int num_magnitude_bins = 31, interpolation interp = interpolation::nearest,
                                       std::optional<std::vector<double>> fill = std::nullopt);
  transform_list& augmix(int severity = 3, int mixture_width = 3, int chain_depth = -1, double alpha = 1.0,
                         bool all_ops = true, interpolation interp = interpolation::bilinear,
                         std::optional<std::vector<double>> fill = std::nullopt);
  /// Appends op(s) written in the spec grammar ("ColorJitter(0.4, 0.4)").
  transform_list& add(std::string_view spec);
  transform_list& add(std::shared_ptr<const transform_op> op);

  [[nodiscard]] const std::vector<std::shared_ptr<const transform_op>>& ops() const noexcept { return m_ops; }
  [[nodiscard]] bool empty() const noexcept { return m_ops.empty(); }
  /// The spec string of the whole list; parse(spec()) gives an equal list.
  [[nodiscard]] std::string spec() const;
  /// What the list makes of a frame `in` (default: an RGB image of a size
  /// that varies). Throws std::invalid_argument naming the op (and its
  /// position) that cannot take what the one before it gives.
  [[nodiscard]] frame_shape infer(frame_shape in = {}) const;

  /// The per-sample plan (see the header comment). Throws
  /// std::invalid_argument when infer() does. `fast_min_reduction` as
  /// pipeline::set_fast_min_reduction.
  [[nodiscard]] pipeline compile(pipeline_mode mode = pipeline_mode::exact) const;

 private:
  [[nodiscard]] std::string spec_items() const;
  std::vector<std::shared_ptr<const transform_op>> m_ops;
};

}  // namespace ringfeed::image
