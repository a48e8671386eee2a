// transform_list's builder functions for the ops beyond the presets' (see
// transform_list.hpp): each writes the op in the spec grammar and adds it,
// so the builder, the spec string, the CLI and Python share one parser and
// one set of argument checks.
#include <ringfeed/image/transform_list.hpp>

#include "ops_detail.hpp"

#include <initializer_list>
#include <string>
#include <string_view>

namespace ringfeed::image {

namespace {

// Concatenation by appending: GCC 12's -Wrestrict misfires on chains of
// `"literal" + std::string` temporaries at -O2 (PR 105651).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

std::string interp(interpolation i) { return std::string(interpolation_names[static_cast<int>(i)]); }

std::string mode(padding_mode m) {
  static constexpr const char* names[] = {"constant", "edge", "reflect", "symmetric"};
  return names[static_cast<int>(m)];
}

std::string ints(const std::array<int, 4>& v) {
  return cat({"(", std::to_string(v[0]), ", ", std::to_string(v[1]), ", ", std::to_string(v[2]), ", ",
              std::to_string(v[3]), ")"});
}

template <typename T>
std::string optional_of(const std::optional<T>& v) {
  return v ? spec_tuple(*v) : std::string("None");
}

std::string size_of(size2 s) { return cat({"(", std::to_string(s.height), ", ", std::to_string(s.width), ")"}); }

std::string p_of(double p) { return cat({"p=", spec_number(p)}); }

}  // namespace

transform_list& transform_list::pad(std::array<int, 4> padding, const std::vector<double>& fill, padding_mode m) {
  return add(cat({"Pad(", ints(padding), ", fill=", spec_tuple(fill), ", padding_mode=", mode(m), ")"}));
}

transform_list& transform_list::random_crop(size2 size, std::optional<std::array<int, 4>> padding, bool pad_if_needed,
                                            const std::vector<double>& fill, padding_mode m) {
  return add(cat({"RandomCrop(", size_of(size), ", padding=", padding ? ints(*padding) : std::string("None"),
                  ", pad_if_needed=", pad_if_needed ? "True" : "False", ", fill=", spec_tuple(fill),
                  ", padding_mode=", mode(m), ")"}));
}

transform_list& transform_list::color_jitter(double brightness, double contrast, double saturation, double hue) {
  return add(cat({"ColorJitter(", spec_number(brightness), ", ", spec_number(contrast), ", ", spec_number(saturation),
                  ", ", spec_number(hue), ")"}));
}

transform_list& transform_list::grayscale(int num_output_channels) {
  return add(cat({"Grayscale(num_output_channels=", std::to_string(num_output_channels), ")"}));
}

transform_list& transform_list::random_grayscale(double p) { return add(cat({"RandomGrayscale(", p_of(p), ")"})); }

transform_list& transform_list::gaussian_blur(std::array<int, 2> kernel_size, std::array<double, 2> sigma) {
  return add(cat({"GaussianBlur((", std::to_string(kernel_size[0]), ", ", std::to_string(kernel_size[1]),
                  "), sigma=", spec_tuple(sigma), ")"}));
}

transform_list& transform_list::random_rotation(std::array<double, 2> degrees, interpolation i, bool expand,
                                                std::optional<std::array<double, 2>> center,
                                                const std::vector<double>& fill) {
  return add(cat({"RandomRotation(", spec_tuple(degrees), ", interpolation=", interp(i),
                  ", expand=", expand ? "True" : "False", ", center=", optional_of(center),
                  ", fill=", spec_tuple(fill), ")"}));
}

transform_list& transform_list::random_affine(std::array<double, 2> degrees,
                                              std::optional<std::array<double, 2>> translate,
                                              std::optional<std::array<double, 2>> scale,
                                              std::optional<std::array<double, 4>> shear, interpolation i,
                                              const std::vector<double>& fill,
                                              std::optional<std::array<double, 2>> center) {
  return add(cat({"RandomAffine(", spec_tuple(degrees), ", translate=", optional_of(translate),
                  ", scale=", optional_of(scale), ", shear=", optional_of(shear), ", interpolation=", interp(i),
                  ", fill=", spec_tuple(fill), ", center=", optional_of(center), ")"}));
}

transform_list& transform_list::random_posterize(int bits, double p) {
  return add(cat({"RandomPosterize(", std::to_string(bits), ", ", p_of(p), ")"}));
}

transform_list& transform_list::random_solarize(double threshold, double p) {
  return add(cat({"RandomSolarize(", spec_number(threshold), ", ", p_of(p), ")"}));
}

transform_list& transform_list::random_autocontrast(double p) {
  return add(cat({"RandomAutocontrast(", p_of(p), ")"}));
}

transform_list& transform_list::random_equalize(double p) { return add(cat({"RandomEqualize(", p_of(p), ")"})); }

transform_list& transform_list::random_adjust_sharpness(double sharpness_factor, double p) {
  return add(cat({"RandomAdjustSharpness(", spec_number(sharpness_factor), ", ", p_of(p), ")"}));
}

transform_list& transform_list::random_invert(double p) { return add(cat({"RandomInvert(", p_of(p), ")"})); }

transform_list& transform_list::auto_augment(augment_policy policy, interpolation i,
                                             std::optional<std::vector<double>> fill) {
  static constexpr const char* policies[] = {"imagenet", "cifar10", "svhn"};
  return add(cat({"AutoAugment(policy=", policies[static_cast<int>(policy)], ", interpolation=", interp(i),
                  ", fill=", optional_of(fill), ")"}));
}

transform_list& transform_list::rand_augment(int num_ops, int magnitude, int num_magnitude_bins, interpolation i,
                                             std::optional<std::vector<double>> fill) {
  return add(cat({"RandAugment(num_ops=", std::to_string(num_ops), ", magnitude=", std::to_string(magnitude),
                  ", num_magnitude_bins=", std::to_string(num_magnitude_bins), ", interpolation=", interp(i),
                  ", fill=", optional_of(fill), ")"}));
}

transform_list& transform_list::trivial_augment_wide(int num_magnitude_bins, interpolation i,
                                                     std::optional<std::vector<double>> fill) {
  return add(cat({"TrivialAugmentWide(num_magnitude_bins=", std::to_string(num_magnitude_bins),
                  ", interpolation=", interp(i), ", fill=", optional_of(fill), ")"}));
}

transform_list& transform_list::augmix(int severity, int mixture_width, int chain_depth, double alpha, bool all_ops,
                                       interpolation i, std::optional<std::vector<double>> fill) {
  return add(cat({"AugMix(severity=", std::to_string(severity), ", mixture_width=", std::to_string(mixture_width),
                  ", chain_depth=", std::to_string(chain_depth), ", alpha=", spec_number(alpha),
                  ", all_ops=", all_ops ? "True" : "False", ", interpolation=", interp(i),
                  ", fill=", optional_of(fill), ")"}));
}

}  // namespace ringfeed::image
