// ringfeed::image transforms — torchvision's ImageNet recipes on encoded
// bytes, written straight into a caller's buffer (a slot of a batch slab).
//
// The parameter rules are torchvision 0.14's (Resize's int() of the long
// side, CenterCrop's round-half-even offsets and zero padding,
// RandomResizedCrop's 10 log-uniform attempts and central fallback,
// RandomHorizontalFlip, ToTensor + Normalize in float32); the randomness
// comes from sample_rng keyed by (seed, epoch, sample index), so a sample's
// augmentation does not depend on threads or order.
//
// A pipeline is [resize | random_resized_crop] [center_crop]
// [horizontal_flip] [normalize], added in that order. It runs in one of two
// modes:
//  - exact: full decode + Pillow-exact resampling; the output equals
//    torchvision's on PIL images given the same crop and flip.
//  - fast: the JPEG is decoded at a DCT-domain scale 1/d (d = 2, 4, 8) when
//    the crop shrinks by at least d × fast_min_reduction (default 1.5), and
//    only the rows and columns the output needs are decoded; the rest is
//    resampled as in exact mode. Without DCT scaling, fast output equals
//    exact output byte for byte; with it, PSNR stays above 40 dB (the 1.5
//    margin is what keeps it there: at 1.0, a 2× shrink decoded at 1/2 and
//    not resampled any more drops to ~35 dB on sharp photos).
//
// Usage, per sample on a worker thread:
//   static const auto p = ringfeed::image::pipeline::val(256, 224);
//   thread_local ringfeed::image::pipeline_workspace ws;
//   p.apply(ws, bytes, path, {seed, epoch, index}, slab.slot(k));
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <ringfeed/image/image.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/resample.hpp>
#include <ringfeed/image/transform_op.hpp>
#include <ringfeed/output_spec.hpp>
#include <ringfeed/random.hpp>

namespace ringfeed::image {

// The pipeline draws from ringfeed's generator (random.hpp); callers name
// a sample as image::sample_key.
using ringfeed::sample_key;
using ringfeed::sample_rng;

/// How faithfully to follow torchvision (see the header comment).
enum class pipeline_mode : std::uint8_t { exact, fast };

/// Per-channel mean and standard deviation of Normalize (on [0, 1] values).
/// `reciprocal` says how the bytes became [0, 1] values before it: false is
/// v / 255 (ToTensor, ConvertImageDtype), true is v · float32(1 / 255)
/// (v2's ToDtype(float32, scale=True)); the two differ in 126 of the 256
/// values. v2's ToDtype without a Normalize is mean 0, std 1: exact in
/// float32, so the same bits.
struct normalize_params {
  std::array<float, 3> mean{};
  std::array<float, 3> std{};
  bool reciprocal = false;

  friend bool operator==(const normalize_params&, const normalize_params&) = default;
};

/// torchvision's ImageNet statistics.
inline constexpr normalize_params imagenet_normalize{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};

/// Shape of one sample's output.
struct output_shape {
  int channels = 3;
  int height = 0;
  int width = 0;
  output_spec spec = output_spec::uint8_nhwc();

  /// Bytes the output occupies.
  [[nodiscard]] std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width) * spec.element_size();
  }
  friend bool operator==(const output_shape&, const output_shape&) = default;
};

// --- torchvision 0.14's parameter rules (pure) --------------------------------

/// Resize(shorter_side): the short side becomes `shorter_side`, the long side
/// int(shorter_side * long / short) (truncated, as torchvision does).
[[nodiscard]] size2 resized_size(size2 in, int shorter_side) noexcept;

/// CenterCrop(crop): offsets int(round((in - crop) / 2.0)) with Python's
/// round-half-to-even; when the crop is larger than the image, torchvision
/// pads with zeros first, which shows here as a negative top/left.
[[nodiscard]] crop_box center_crop_box(size2 in, size2 crop) noexcept;

/// RandomResizedCrop's scale and ratio ranges.
struct random_resized_crop_range {
  std::array<double, 2> scale{0.08, 1.0};
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};
};

/// RandomResizedCrop.get_params of torchvision 0.14 with the uniform draws
/// taken from `uniform01` (a callable returning doubles in [0, 1)): up to 10
/// attempts, each drawing target area = area × U(scale), aspect =
/// exp(U(log ratio)), w = round(sqrt(area × aspect)), h = round(sqrt(area /
/// aspect)) (round half to even); an attempt that fits draws top and left as
/// lo + floor(u × n); else the central crop of the clamped aspect ratio.
/// torch's own draws map to these (uniform_(a, b) = a + (b − a)·u).
template <class Uniform01>
[[nodiscard]] crop_box random_resized_crop_box(size2 in, const random_resized_crop_range& range,
                                               Uniform01&& uniform01) {
  const int width = in.width;
  const int height = in.height;
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_r0 = std::log(range.ratio[0]);
  const double log_r1 = std::log(range.ratio[1]);
  const auto draw_int = [&](int n) {  // torch.randint(0, n)
    const auto k = static_cast<int>(uniform01() * static_cast<double>(n));
    return k < n ? k : n - 1;
  };
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * (range.scale[0] + (range.scale[1] - range.scale[0]) * uniform01());
    const double aspect = std::exp(log_r0 + (log_r1 - log_r0) * uniform01());
    // Rounded in double and compared before the cast: a scale or ratio of
    // inf or 1e300 gives values no int holds (torchvision's int() would
    // make a big int and fail the same size check).
    const double wd = std::nearbyint(std::sqrt(target_area * aspect));
    const double hd = std::nearbyint(std::sqrt(target_area / aspect));
    if (!(0 < wd && wd <= width && 0 < hd && hd <= height)) continue;
    const int w = static_cast<int>(wd);
    const int h = static_cast<int>(hd);
    const int i = draw_int(height - h + 1);
    const int j = draw_int(width - w + 1);
    return {i, j, h, w};
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  const double min_ratio = range.ratio[0] < range.ratio[1] ? range.ratio[0] : range.ratio[1];
  const double max_ratio = range.ratio[0] < range.ratio[1] ? range.ratio[1] : range.ratio[0];
  int w = width;
  int h = height;
  if (in_ratio < min_ratio) {
    h = static_cast<int>(std::nearbyint(w / min_ratio));
  } else if (in_ratio > max_ratio) {
    w = static_cast<int>(std::nearbyint(h * max_ratio));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

/// The same with draws from `rng`.
[[nodiscard]] crop_box random_resized_crop_box(size2 in, const random_resized_crop_range& range,
                                               sample_rng& rng);

// --- pipelines -------------------------------------------------------------------

/// Every decision for one sample, randomness resolved. Coordinates are in the
/// (EXIF-oriented, when the pipeline applies orientation) source image.
struct sample_plan {
  size2 source;     ///< size of the decoded source image
  crop_box crop;    ///< region of the source that is resized (inside the source)
  size2 resized;    ///< size `crop` is resized to (equal to its size: no resampling)
  crop_box window;  ///< region of the resized image that is output (outside = zeros)
  bool flip = false;
  resample_filter filter = resample_filter::bilinear;
  friend bool operator==(const sample_plan&, const sample_plan&) = default;
};

/// What apply() did for one sample.
struct sample_result {
  image_info info;       ///< the file's header facts
  sample_plan plan;      ///< the decisions taken
  int scale_denom = 1;   ///< DCT-domain scale used (fast mode), 1 for a full-size decode
};

class pipeline_workspace;

/// A transform recipe: immutable once built, shareable between threads
/// (apply() is const). Builder calls throw std::invalid_argument when a step
/// comes out of order or has bad parameters.
class pipeline {
 public:
  /// Decode only: the whole image as uint8 HWC (size varies per image).
  pipeline() = default;

  /// RandomResizedCrop(size) + RandomHorizontalFlip() + Normalize(ImageNet);
  /// output uint8 HWC (set_output for float).
  [[nodiscard]] static pipeline train(int size = 224, pipeline_mode mode = pipeline_mode::fast);
  /// Resize(resize) + CenterCrop(crop) + Normalize(ImageNet); output uint8 HWC.
  [[nodiscard]] static pipeline val(int resize = 256, int crop = 224,
                                    pipeline_mode mode = pipeline_mode::exact);

  /// RandomResizedCrop(size, scale, ratio), bilinear. First geometric step.
  pipeline& random_resized_crop(size2 size, const random_resized_crop_range& range = {});
  pipeline& random_resized_crop(int size, const random_resized_crop_range& range = {}) {
    return random_resized_crop(size2{size, size}, range);
  }
  /// Resize(shorter_side). First geometric step.
  pipeline& resize(int shorter_side, resample_filter filter = resample_filter::bilinear);
  /// Resize((height, width)) to an exact size. First geometric step.
  pipeline& resize(size2 size, resample_filter filter = resample_filter::bilinear);
  /// CenterCrop((height, width)), after any resize or random_resized_crop.
  pipeline& center_crop(size2 size);
  pipeline& center_crop(int size) { return center_crop(size2{size, size}); }
  /// RandomHorizontalFlip(p), after every geometric step.
  pipeline& horizontal_flip(double p = 0.5);
  /// Normalize(mean, std): applied when the output is float; recorded for
  /// the consumer (see normalization()) when it is uint8.
  pipeline& normalize(const normalize_params& params);

  /// Appends an op that runs on the decoded pixels after the steps above,
  /// drawing from `stream` (transform_list::compile builds these; see
  /// transform_op.hpp for the stream rule). Throws std::invalid_argument
  /// when the op cannot take what the pipeline gives at that point.
  pipeline& append(std::shared_ptr<const transform_op> op, std::uint32_t stream);
  /// Appends an op that runs on the float output in the batch slot, after
  /// the output conversion (transform_list::compile puts a list's trailing
  /// RandomErasing here, so ToTensor [+ Normalize] still writes the slot in
  /// one pass), drawing from `stream`. Needs a float output; throws
  /// std::invalid_argument for an op that cannot run there.
  pipeline& append_on_output(std::shared_ptr<const transform_op> op, std::uint32_t stream);
  /// The resampling filter of resize / random_resized_crop (bilinear by
  /// default).
  pipeline& set_filter(resample_filter filter) noexcept;
  /// The stream horizontal_flip draws from (2 by default: the train preset's).
  pipeline& set_flip_stream(std::uint32_t stream) noexcept;

  /// uint8 NHWC (the default), float32, float16 or bfloat16, NCHW or NHWC
  /// (see output_spec.hpp); uint8 NCHW when appended ops end with a uint8
  /// tensor (PILToTensor). A pipeline ending with a float tensor takes only
  /// float outputs. Throws std::invalid_argument for another combination.
  pipeline& set_output(output_spec spec);
  pipeline& set_mode(pipeline_mode mode) noexcept;
  pipeline& set_decode_options(const decode_options& options) noexcept;
  /// Fast mode picks the largest DCT scale 1/d with d ≤ (downscale factor) /
  /// `factor` (≥ 1; default 1.5). 1.0 scales whenever the region shrinks by
  /// at least d: faster, but PSNR can fall to ~35 dB.
  pipeline& set_fast_min_reduction(double factor);

  [[nodiscard]] pipeline_mode mode() const noexcept { return m_mode; }
  [[nodiscard]] output_spec output() const noexcept { return m_output; }
  [[nodiscard]] const std::optional<normalize_params>& normalization() const noexcept { return m_normalize; }
  [[nodiscard]] const decode_options& decoding() const noexcept { return m_decode; }
  [[nodiscard]] double fast_min_reduction() const noexcept { return m_fast_min_reduction; }
  /// The ops appended after the fused steps.
  [[nodiscard]] const std::vector<std::shared_ptr<const transform_op>>& tail() const noexcept { return m_tail; }
  /// The ops that run on the output (append_on_output).
  [[nodiscard]] const std::vector<std::shared_ptr<const transform_op>>& output_ops() const noexcept {
    return m_output_ops;
  }
  /// What the pipeline's last step gives, before the output conversion.
  [[nodiscard]] frame_shape last_frame() const noexcept { return m_tail.empty() ? head_frame() : m_tail_shape; }
  /// True when the output can be made on a device from uint8 NHWC RGB
  /// (no appended op leaves a tensor or one channel, none runs on the output).
  [[nodiscard]] bool device_convertible() const noexcept {
    const frame_shape f = last_frame();
    return f.kind == frame_kind::image && f.channels == 3 && m_output_ops.empty();
  }

  /// The output shape when it does not depend on the image (a crop last).
  [[nodiscard]] std::optional<output_shape> fixed_shape() const noexcept;
  /// The output shape for a source of `source` size (after orientation).
  [[nodiscard]] output_shape shape_for(size2 source) const noexcept;
  /// The output shape, appended ops included, for every source of `source`
  /// size; nullopt when a random op decides it.
  [[nodiscard]] std::optional<output_shape> output_for(size2 source) const;

  /// Resolves every random choice for a `source`-sized image. Pure.
  [[nodiscard]] sample_plan plan(size2 source, const sample_key& key) const;

  /// Decodes `encoded` (named `name` in errors), transforms it and writes the
  /// result into `dst`, which must be exactly shape_for(source).bytes()
  /// long (fixed_shape()->bytes() for batch slots). Uses only `ws` for
  /// scratch: after warm-up it allocates nothing of its own. Any thread,
  /// one workspace per thread. Throws image_error (bad image) or
  /// std::invalid_argument (dst of the wrong size).
  sample_result apply(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                      const sample_key& key, std::span<std::byte> dst) const;
  /// apply() for bytes whose header the caller has read (`header`:
  /// decoder::read_info's for `encoded`, a router's, say): the same
  /// result, without reading the header again.
  sample_result apply(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_info& header,
                      std::string_view name, const sample_key& key, std::span<std::byte> dst) const;

  /// apply() for an image already decoded (an in-memory dataset, CIFAR's
  /// or MNIST's arrays): `pixels` is RGB (3 channels) or L (1), always
  /// with exact mode's arithmetic. An L image runs as its RGB replicate
  /// (v, v, v): every op then computes each channel as torchvision does for
  /// the L image, and the caller keeps one channel of the output. Throws
  /// std::invalid_argument for another channel count.
  sample_result apply_pixels(pipeline_workspace& ws, image_view pixels, std::string_view name,
                             const sample_key& key, std::span<std::byte> dst) const;

  /// The rows of a decoded `source`-sized image (after orientation) that
  /// apply_pixels() reads for `key`: [first, second), all columns; empty
  /// when it reads none. Pure: the same draws as apply_pixels().
  [[nodiscard]] std::pair<int, int> rows_read(size2 source, const sample_key& key) const;
  /// apply_pixels() for some rows of an image: `pixels.rows` must hold
  /// rows_read(pixels.size, key); the result equals apply_pixels() on the
  /// whole image. Throws std::invalid_argument for rows outside the image.
  sample_result apply_pixel_rows(pipeline_workspace& ws, const image_rows& pixels, std::string_view name,
                                 const sample_key& key, std::span<std::byte> dst) const;

  /// What keeps a GPU decode from running this pipeline on the device: the
  /// first op with no device kernel (its name, "RandAugment"), or "" when
  /// every step can (the fused crop / resize / flip head, then the output
  /// conversion: ToTensor, ConvertImageDtype, Normalize). Pure.
  [[nodiscard]] std::string device_refusal() const;

  // --- the deterministic head (the pixel cache keeps its output) ----------
  /// True when the fused steps (resize, center crop) draw nothing at random:
  /// no RandomResizedCrop, no flip. Their output then depends only on the
  /// image, and apply_head + apply_after_head equal apply_pixels.
  [[nodiscard]] bool head_deterministic() const noexcept;
  /// The fused steps as text (for a cache key): geometry, sizes, filter, crop.
  [[nodiscard]] std::string head_spec() const;
  /// The fused steps' output for decoded `pixels` (RGB or L), uint8 RGB,
  /// with exact mode's arithmetic; a view into `ws`, valid until its next
  /// use. Needs head_deterministic() (else std::logic_error).
  [[nodiscard]] image_view apply_head(pipeline_workspace& ws, image_view pixels, std::string_view name) const;
  /// apply_pixels() for an image that is apply_head()'s output (possibly
  /// the very view it returned): the appended ops and the output conversion.
  sample_result apply_after_head(pipeline_workspace& ws, image_view head, std::string_view name,
                                 const sample_key& key, std::span<std::byte> dst) const;

  /// apply() for an output whose size depends on the image: `dst` is
  /// resized to the output (shape in `shape`).
  sample_result apply_to(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                         const sample_key& key, std::vector<std::byte>& dst, output_shape& shape) const;

  /// apply() with the decisions given: `plan.source` must be the image's
  /// size. For replaying a sample and for tests.
  sample_result apply_plan(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                           const sample_plan& plan, std::span<std::byte> dst) const;
  /// apply_plan() for bytes whose header the caller has read (`header`:
  /// decoder::read_info's for `encoded`): the same result, without reading
  /// the header again.
  sample_result apply_plan(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_info& header,
                           std::string_view name, const sample_plan& plan, std::span<std::byte> dst) const;

 private:
  enum class geometry : std::uint8_t { none, resize_shorter, resize_exact, random_resized_crop };

  void check_can_add(int stage, const char* what) const;
  // `header`: read_info's for `encoded`, or null (read here when needed).
  sample_result apply_plan_any(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_info* header,
                               std::string_view name, const sample_plan& plan, std::span<std::byte> dst) const;
  // `header`: read_info's for `encoded`, or null (read here when needed).
  sample_result apply_any(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_rows* pixels,
                          std::string_view name, const sample_key& key, std::span<std::byte> dst,
                          const image_info* header = nullptr) const;
  frame_shape head_frame() const noexcept;
  void run_output_ops(const output_shape& shape, const sample_key& key, std::span<std::byte> dst) const;
  // The appended ops from `first` on the head frame in `ws`; returns that frame.
  frame& run_tail_ops(pipeline_workspace& ws, const sample_key& key, std::size_t first) const;
  // The appended ops from `first` on the head frame in `ws`, then the output conversion and the output ops.
  void run_tail(pipeline_workspace& ws, std::string_view name, const sample_key& key, std::span<std::byte> dst,
                std::size_t first = 0) const;
  // When m_crop_region: the list's ToImage() and RandomResizedCrop on the
  // tensor, fused with the decoder (fast mode, a JPEG not rotated): the
  // crop drawn as the op draws it, only that region decoded (at scale 1,
  // the same pixels as a full decode's), then the op's torch resize; the
  // head frame then holds what the two ops give, byte for byte. False
  // (nothing done) for another file, which takes the general path.
  // The list ops run_crop_region stands for: ToImage, RandomResizedCrop.
  static constexpr std::size_t crop_region_ops = 2;
  bool run_crop_region(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                       const sample_key& key, sample_result& result, const image_info* header = nullptr) const;

  geometry m_geometry = geometry::none;
  size2 m_size{};          // resize_exact / random_resized_crop output size
  int m_shorter_side = 0;  // resize_shorter
  random_resized_crop_range m_range{};
  resample_filter m_filter = resample_filter::bilinear;
  std::optional<size2> m_center_crop;
  double m_flip_p = 0.0;
  std::optional<normalize_params> m_normalize;
  output_spec m_output = output_spec::uint8_nhwc();
  pipeline_mode m_mode = pipeline_mode::exact;
  decode_options m_decode{};
  double m_fast_min_reduction = 1.5;
  int m_stage = 0;  // last builder stage added, for ordering checks
  std::uint32_t m_flip_stream = 2;
  std::vector<std::shared_ptr<const transform_op>> m_tail;
  std::vector<std::uint32_t> m_tail_streams;
  frame_shape m_tail_shape{};
  bool m_crop_region = false;  // fast mode, no fused head, tail ToImage + RandomResizedCrop (tensor): run_crop_region
  std::vector<std::shared_ptr<const transform_op>> m_output_ops;
  std::vector<std::uint32_t> m_output_streams;
};

/// Per-thread scratch for pipeline::apply: a decoder, a resampler and pixel
/// buffers, all reused. Move-only; not thread-safe (one per worker thread).
class pipeline_workspace {
 public:
  pipeline_workspace();
  ~pipeline_workspace();
  pipeline_workspace(pipeline_workspace&&) noexcept;
  pipeline_workspace& operator=(pipeline_workspace&&) noexcept;
  pipeline_workspace(const pipeline_workspace&) = delete;
  pipeline_workspace& operator=(const pipeline_workspace&) = delete;

 private:
  friend class pipeline;
  struct impl;
  std::unique_ptr<impl> m_impl;
};

/// Writes `src` (RGB, 3 channels) to `dst` as `spec` (a supported one),
/// mirrored when `flip`; float outputs compute ToTensor + Normalize in
/// float32 exactly as torch does ((v / 255 − mean) / std; plain v / 255 when
/// `norm` is null). `dst` must be output_shape{3, h, w, spec}.bytes() long.
/// Also the CPU fallback of the device-side normalization.
void write_output(image_view src, bool flip, output_spec spec, const normalize_params* norm,
                  std::span<std::byte> dst);

/// Per channel, per byte value: the output element's bits as `type`
/// (float32 bits; binary16 or bfloat16 bits in the low half; the value
/// itself for uint8). The one definition of ToTensor + Normalize that write_output,
/// cuda::convert_batch_cpu and the device kernel all use, so their outputs
/// are bit-identical. Pure.
using normalize_table_t = std::array<std::array<std::uint32_t, 256>, 3>;
[[nodiscard]] normalize_table_t normalize_table(dtype type, const normalize_params* norm);

/// IEEE binary16 bits of `value`, rounded to nearest even. Pure.
[[nodiscard]] std::uint16_t float_to_half(float value) noexcept;
/// bfloat16 bits of `value` (its top 16 bits, rounded to nearest even; a
/// NaN gives 0x7FC0): c10::BFloat16's conversion, so what
/// torch.Tensor.to(torch.bfloat16) gives. Pure.
[[nodiscard]] std::uint16_t float_to_bfloat16(float value) noexcept;

}  // namespace ringfeed::image
