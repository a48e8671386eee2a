// Private to the transform-list ops: one of timm's `AugmentOp`s
// (timm.data.auto_augment), the unit its RandAugment, AutoAugment and
// AugMixAugment are made of. An AugmentOp is a named PIL operation with a
// probability, a magnitude on timm's 0..10 scale (optionally noisy:
// magnitude_std, clipped to [0, magnitude_max or 10]) that its level
// function maps to the operation's argument, and the fill and resampling
// filter(s) of its geometric operations (timm's hparams).
//
// timm's draws for one call, in its order (AugmentOp.__call__): the
// probability (random.random() > prob skips; no draw when prob >= 1), the
// magnitude noise (random.gauss, or random.uniform(0, m) for an infinite
// std), the level function's sign (random.random() > 0.5 negates) and, for
// shear/translate/rotate, the filter (random.choice of two). ringfeed draws
// the same quantities from its own sample_rng, in that order.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops_detail.hpp"

namespace ringfeed::image {

/// timm's op names this ringfeed runs (NAME_TO_OP less GaussianBlur,
/// GaussianBlurRand and Desaturate, which are refused by name).
enum class timm_aug : unsigned char {
  auto_contrast, equalize, invert, rotate, posterize, posterize_increasing, posterize_original, solarize,
  solarize_increasing, solarize_add, color, color_increasing, contrast, contrast_increasing, brightness,
  brightness_increasing, sharpness, sharpness_increasing, shear_x, shear_y, translate_x, translate_y,
  translate_x_rel, translate_y_rel
};

/// One timm AugmentOp's settings (its attributes and hparams).
struct timm_augment_options {
  timm_aug op = timm_aug::auto_contrast;
  double prob = 0.5;
  double magnitude = 10;
  double magnitude_std = 0;      ///< 0: none; inf: uniform(0, magnitude)
  double magnitude_max = 0;      ///< 0: timm's _LEVEL_DENOM (10)
  std::vector<double> fill{128, 128, 128};  ///< fillcolor (hparams img_mean)
  std::vector<interpolation> filters{interpolation::bilinear, interpolation::bicubic};  ///< resample
  double translate_const = 250;  ///< TranslateX/Y: pixels at magnitude 10
  double translate_pct = 0.45;   ///< TranslateX/YRel: fraction at magnitude 10
};

/// What one call of an AugmentOp drew.
struct timm_augment_draw {
  bool applied = false;
  double magnitude = 0;  ///< after noise and clipping
  double arg = 0;        ///< the level function's argument (NaN: the op takes none)
  int filter = -1;       ///< index into `filters` (-1: not a geometric op)
};

/// One timm AugmentOp as a list op (spec name TimmAugmentOp) on a PIL image.
class timm_augment_op final : public transform_op {
 public:
  explicit timm_augment_op(timm_augment_options o);
  std::string_view name() const noexcept override { return "TimmAugmentOp"; }
  std::string spec() const override;
  frame_shape infer(const frame_shape& in) const override;
  bool deterministic() const noexcept override { return false; }
  /// {applied, magnitude, arg, filter} (see timm_augment_draw).
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int channels) const override;
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override;

  /// AugmentOp.__call__'s draws for an image of `size`.
  [[nodiscard]] timm_augment_draw draw(sample_rng& rng, size2 size) const;
  /// aug_fn(img, *level_args, **kwargs) with the drawn values.
  void apply(frame& f, const timm_augment_draw& d, op_scratch& s) const;
  [[nodiscard]] const timm_augment_options& options() const noexcept { return m_o; }

 private:
  timm_augment_options m_o;
};

/// Builds a TimmAugmentOp from its call (transform_spec_error on bad
/// arguments, naming them).
[[nodiscard]] std::shared_ptr<const timm_augment_op> make_timm_augment_op(const spec_call& c);

/// True when `op` is a TimmRandomErasing; with `rng`, runs it on `dst`, a
/// float32 or float16 NCHW output of `shape` (run_on_output).
bool run_timm_erasing_on_output(const transform_op& op, std::span<std::byte> dst, const output_shape& shape,
                                sample_rng* rng);

/// A standard normal and a Gamma(alpha, 1) draw (ops_augmix.cpp).
[[nodiscard]] double standard_normal(sample_rng& rng);
[[nodiscard]] double gamma_draw(sample_rng& rng, double alpha);
/// Standard normals for every value of `out`, as float (Boost.Random's
/// ziggurat on the sample's draws: how many it takes varies).
void standard_normals(sample_rng& rng, std::span<float> out);

}  // namespace ringfeed::image
