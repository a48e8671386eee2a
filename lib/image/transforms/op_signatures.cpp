// ringfeed::image::op_signatures: torchvision 0.14's constructor signature
// (v2's for ToImage, ToDtype and ToPureTensor) of every op the spec grammar knows, the one list of them: spec_args binds
// calls to it, and the Python binding generates ringfeed.transforms'
// classes from it (transforms.py). Defaults are written in spec syntax;
// transform_list_tests checks that writing each one out changes nothing.
#include <algorithm>

#include <ringfeed/image/transform_spec.hpp>

namespace ringfeed::image {
namespace {

// clang-format off
constexpr op_param Resize_params[] = {{"size", {}, "224"}, {"interpolation", "InterpolationMode.BILINEAR"}, {"max_size", "None"}, {"antialias", "None"}};
constexpr op_param CenterCrop_params[] = {{"size", {}, "224"}};
constexpr op_param Pad_params[] = {{"padding", {}, "4"}, {"fill", "0"}, {"padding_mode", "'constant'"}};
constexpr op_param RandomCrop_params[] = {{"size", {}, "32"}, {"padding", "None"}, {"pad_if_needed", "False"}, {"fill", "0"}, {"padding_mode", "'constant'"}};
constexpr op_param RandomResizedCrop_params[] = {{"size", {}, "224"}, {"scale", "(0.08, 1.0)"}, {"ratio", "(0.75, 1.3333333333333333)"}, {"interpolation", "InterpolationMode.BILINEAR"}, {"antialias", "None"}};
constexpr op_param RandomHorizontalFlip_params[] = {{"p", "0.5"}};
constexpr op_param RandomVerticalFlip_params[] = {{"p", "0.5"}};
constexpr op_param ColorJitter_params[] = {{"brightness", "0"}, {"contrast", "0"}, {"saturation", "0"}, {"hue", "0"}};
constexpr op_param Grayscale_params[] = {{"num_output_channels", "1"}};
constexpr op_param RandomGrayscale_params[] = {{"p", "0.1"}};
constexpr op_param GaussianBlur_params[] = {{"kernel_size", {}, "3"}, {"sigma", "(0.1, 2.0)"}};
constexpr op_param RandomRotation_params[] = {{"degrees", {}, "10"}, {"interpolation", "InterpolationMode.NEAREST"}, {"expand", "False"}, {"center", "None"}, {"fill", "0"}};
constexpr op_param RandomAffine_params[] = {{"degrees", {}, "10"}, {"translate", "None"}, {"scale", "None"}, {"shear", "None"}, {"interpolation", "InterpolationMode.NEAREST"}, {"fill", "0"}, {"center", "None"}};
constexpr op_param RandomPosterize_params[] = {{"bits", {}, "4"}, {"p", "0.5"}};
constexpr op_param RandomSolarize_params[] = {{"threshold", {}, "128"}, {"p", "0.5"}};
constexpr op_param RandomAutocontrast_params[] = {{"p", "0.5"}};
constexpr op_param RandomEqualize_params[] = {{"p", "0.5"}};
constexpr op_param RandomAdjustSharpness_params[] = {{"sharpness_factor", {}, "2"}, {"p", "0.5"}};
constexpr op_param RandomInvert_params[] = {{"p", "0.5"}};
constexpr op_param AutoAugment_params[] = {{"policy", "AutoAugmentPolicy.IMAGENET"}, {"interpolation", "InterpolationMode.NEAREST"}, {"fill", "None"}};
constexpr op_param RandAugment_params[] = {{"num_ops", "2"}, {"magnitude", "9"}, {"num_magnitude_bins", "31"}, {"interpolation", "InterpolationMode.NEAREST"}, {"fill", "None"}};
constexpr op_param TrivialAugmentWide_params[] = {{"num_magnitude_bins", "31"}, {"interpolation", "InterpolationMode.NEAREST"}, {"fill", "None"}};
constexpr op_param AugMix_params[] = {{"severity", "3"}, {"mixture_width", "3"}, {"chain_depth", "-1"}, {"alpha", "1.0"}, {"all_ops", "True"}, {"interpolation", "InterpolationMode.BILINEAR"}, {"fill", "None"}};
constexpr op_param ConvertImageDtype_params[] = {{"dtype", {}, "float32"}};
constexpr op_param Normalize_params[] = {{"mean", {}, "(0.5,)"}, {"std", {}, "(0.5,)"}, {"inplace", "False"}};
constexpr op_param RandomErasing_params[] = {{"p", "0.5"}, {"scale", "(0.02, 0.33)"}, {"ratio", "(0.3, 3.3)"}, {"value", "0"}, {"inplace", "False"}};
constexpr op_param Compose_params[] = {{"transforms", {}, "[RandomHorizontalFlip()]"}};
// torchvision.transforms.v2's own (0.16 and later); Compose is v1's and v2's
constexpr op_param ToDtype_params[] = {{"dtype", {}, "float32"}, {"scale", "False"}};
constexpr op_param RandomApply_params[] = {{"transforms", {}, "[RandomHorizontalFlip()]"}, {"p", "0.5"}};
constexpr op_param RandomChoice_params[] = {{"transforms", {}, "[RandomHorizontalFlip(), RandomVerticalFlip()]"}, {"p", "None"}};
constexpr op_param RandomOrder_params[] = {{"transforms", {}, "[RandomHorizontalFlip(), RandomVerticalFlip()]"}};
// timm's (timm.data.auto_augment's AugmentOp and policies, timm.data.random_erasing): Timm-named, never torchvision's
constexpr op_param TimmAugmentOp_params[] = {{"name", {}, "'Rotate'"}, {"prob", "0.5"}, {"magnitude", "10"}, {"magnitude_std", "0"}, {"magnitude_max", "None"}, {"fill", "(128, 128, 128)"}, {"interpolation", "('bilinear', 'bicubic')"}, {"translate_const", "250"}, {"translate_pct", "0.45"}};
constexpr op_param TimmRandAugment_params[] = {{"ops", {}, "[TimmAugmentOp('Rotate')]"}, {"num_layers", "2"}, {"choice_weights", "None"}};
constexpr op_param TimmAutoAugment_params[] = {{"policy", {}, "[[TimmAugmentOp('Rotate')]]"}};
constexpr op_param TimmAugMix_params[] = {{"ops", {}, "[TimmAugmentOp('Rotate', prob=1.0)]"}, {"alpha", "1.0"}, {"width", "3"}, {"depth", "-1"}, {"blended", "False"}};
constexpr op_param TimmRandomErasing_params[] = {{"probability", "0.5"}, {"min_area", "0.02"}, {"max_area", "0.3333333333333333"}, {"log_aspect_ratio", "(-1.2039728043259361, 1.2039728043259361)"}, {"min_count", "1"}, {"max_count", "None"}, {"mode", "'const'"}, {"num_splits", "0"}};
constexpr op_param TimmResizeKeepRatio_params[] = {{"size", {}, "224"}, {"longest", "0.0"}, {"interpolation", "'bilinear'"}, {"random_scale_prob", "0.0"}, {"random_scale_range", "(0.85, 1.05)"}, {"random_scale_area", "False"}, {"random_aspect_prob", "0.0"}, {"random_aspect_range", "(0.9, 1.11)"}};
constexpr op_param TimmCenterCropOrPad_params[] = {{"size", {}, "224"}, {"fill", "0"}, {"padding_mode", "'constant'"}};
constexpr op_param TimmRandomCropOrPad_params[] = {{"size", {}, "224"}, {"fill", "0"}, {"padding_mode", "'constant'"}};
// clang-format on

constexpr op_signature signatures[] = {
    {"Resize", Resize_params},
    {"CenterCrop", CenterCrop_params},
    {"Pad", Pad_params},
    {"RandomCrop", RandomCrop_params},
    {"RandomResizedCrop", RandomResizedCrop_params},
    {"RandomHorizontalFlip", RandomHorizontalFlip_params},
    {"RandomVerticalFlip", RandomVerticalFlip_params},
    {"ColorJitter", ColorJitter_params},
    {"Grayscale", Grayscale_params},
    {"RandomGrayscale", RandomGrayscale_params},
    {"GaussianBlur", GaussianBlur_params},
    {"RandomRotation", RandomRotation_params},
    {"RandomAffine", RandomAffine_params},
    {"RandomPosterize", RandomPosterize_params},
    {"RandomSolarize", RandomSolarize_params},
    {"RandomAutocontrast", RandomAutocontrast_params},
    {"RandomEqualize", RandomEqualize_params},
    {"RandomAdjustSharpness", RandomAdjustSharpness_params},
    {"RandomInvert", RandomInvert_params},
    {"AutoAugment", AutoAugment_params},
    {"RandAugment", RandAugment_params},
    {"TrivialAugmentWide", TrivialAugmentWide_params},
    {"AugMix", AugMix_params},
    {"ToTensor", {}},
    {"PILToTensor", {}},
    {"ConvertImageDtype", ConvertImageDtype_params},
    {"Normalize", Normalize_params},
    {"RandomErasing", RandomErasing_params},
    {"ToImage", {}},
    {"ToDtype", ToDtype_params},
    {"ToPureTensor", {}},
    // torchvision.transforms.v2's classes that share v1's constructor but
    // not its arithmetic (v2's inverse affine matrix, its tensor kernels):
    // transforms.py writes them under these names when the object comes
    // from the v2 module.
    {"v2.RandomAffine", RandomAffine_params},
    {"v2.RandomRotation", RandomRotation_params},
    {"v2.AutoAugment", AutoAugment_params},
    {"v2.RandAugment", RandAugment_params},
    {"v2.TrivialAugmentWide", TrivialAugmentWide_params},
    {"v2.AugMix", AugMix_params},
    {"Compose", Compose_params},
    {"RandomApply", RandomApply_params},
    {"RandomChoice", RandomChoice_params},
    {"RandomOrder", RandomOrder_params},
    {"TimmAugmentOp", TimmAugmentOp_params},
    {"TimmRandAugment", TimmRandAugment_params},
    {"TimmAutoAugment", TimmAutoAugment_params},
    {"TimmAugMix", TimmAugMix_params},
    {"TimmRandomErasing", TimmRandomErasing_params},
    {"TimmResizeKeepRatio", TimmResizeKeepRatio_params},
    {"TimmCenterCropOrPad", TimmCenterCropOrPad_params},
    {"TimmRandomCropOrPad", TimmRandomCropOrPad_params},
};

}  // namespace

std::span<const op_signature> op_signatures() noexcept { return signatures; }

const op_signature* find_op_signature(std::string_view name) noexcept {
  const auto* it = std::find_if(std::begin(signatures), std::end(signatures),
                                [&](const op_signature& s) { return s.name == name; });
  return it == std::end(signatures) ? nullptr : it;
}

}  // namespace ringfeed::image
