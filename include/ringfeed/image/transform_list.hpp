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

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/image/geometry.hpp>
#include <ringfeed/image/transform_op.hpp>
#include <ringfeed/image/transforms.hpp>

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
  /// `size` image, as torchvision's _augmentation_space computes them.
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
