// ringfeed::image::transform_op — one step of an ordered transform list
// (transform_list.hpp), with torchvision 0.14's semantics on PIL images.
//
// A step sees a `frame`: what torchvision would hold at that point of a
// Compose — a PIL image (uint8, interleaved, 1 channel for mode "L" or 3 for
// "RGB"), a uint8 tensor (after PILToTensor; kept interleaved here, laid out
// CHW only when written out) or a float32 CHW tensor (after ToTensor or
// ConvertImageDtype). Each step draws its random parameters (torchvision's
// get_params) from a sample_rng of its own stream and then applies them; the
// two halves are separate functions of each op (draw(), apply()) so tests
// pin parameters and compare pixels, or look at the draws alone.
//
// Streams: the op at position i of a list draws from stream i + 1; the k-th
// child of a container op whose stream is s draws from s · 64 + k + 1. So
// a sample's augmentation depends only on (seed, epoch, index) and the list,
// and the two classic presets keep the streams they always had (1 for the
// crop, 2 for the flip).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/image/image.hpp>
#include <ringfeed/random.hpp>

namespace ringfeed::image {

/// What a frame holds.
enum class frame_kind : std::uint8_t {
  image,      ///< a PIL image: uint8 HWC, 1 ("L") or 3 ("RGB") channels
  tensor_u8,  ///< a uint8 tensor (PILToTensor): pixels as for image, CHW when written
  tensor_f32  ///< a float32 CHW tensor (ToTensor, ConvertImageDtype(float))
};

[[nodiscard]] std::string_view to_string(frame_kind k) noexcept;

/// The value flowing from one op to the next. Buffers keep their capacity:
/// a worker reusing one frame stops allocating after its largest image.
struct frame {
  frame_kind kind = frame_kind::image;
  image_buffer pixels;        ///< image and tensor_u8
  std::vector<float> values;  ///< tensor_f32: channels × height × width
  int channels = 0;
  int height = 0;
  int width = 0;

  [[nodiscard]] size2 size() const noexcept { return {width, height}; }
  /// Makes this a float tensor of the given shape (contents unspecified).
  void reset_tensor(int c, int h, int w);
  /// Adopts `pixels` as the image (after an op wrote its result there).
  void set_image(frame_kind k);
  [[nodiscard]] float* plane(int c) noexcept {
    return values.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(height) * width;
  }
};

/// What is known about a frame before any image is seen: kind, channels,
/// and the size when it no longer depends on the image.
struct frame_shape {
  frame_kind kind = frame_kind::image;
  int channels = 3;
  std::optional<size2> size;  ///< nullopt: depends on the source image
  /// Every later op that changes the size (a crop, a fixed resize) makes it
  /// known; ops that only keep it need nothing.
};

/// Per-thread scratch of the ops (a resampler, spare buffers). One per
/// worker thread, reused; see pipeline_workspace.
struct op_scratch;

/// One op of a transform list. Immutable after construction and shared
/// between threads: draw() and apply() are const and touch only their
/// arguments.
class transform_op {
 public:
  virtual ~transform_op() = default;

  /// torchvision's class name ("RandomResizedCrop").
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// The op in the spec grammar (transform_list.hpp), every argument
  /// spelled out: parse(spec()) gives an equal op.
  [[nodiscard]] virtual std::string spec() const = 0;
  /// The frame after this op, given the frame before it. Throws
  /// std::invalid_argument when the op cannot take that frame (Normalize on
  /// a PIL image, a flip of a float tensor is fine, ...), naming both.
  [[nodiscard]] virtual frame_shape infer(const frame_shape& in) const = 0;
  /// Draws this sample's parameters (torchvision's get_params / forward
  /// draws) for a frame of size `in` and `channels`, and returns them as the
  /// numbers torchvision would compute, in its order (a test hook: the
  /// statistical tests compare them with torchvision's own draws).
  [[nodiscard]] virtual std::vector<double> draw_for_test(sample_rng& rng, size2 in, int channels) const = 0;
  /// Draws and applies: `f` becomes this op's output. `stream` is this op's
  /// stream (see the header comment), for containers that give their
  /// children streams of their own.
  virtual void run(frame& f, sample_rng& rng, const sample_key& key, std::uint32_t stream,
                   op_scratch& scratch) const = 0;
  /// True when run() never draws (the op is deterministic).
  [[nodiscard]] virtual bool deterministic() const noexcept { return true; }
};

/// The stream of child `k` (0-based) of a container op drawing from
/// `parent`.
[[nodiscard]] constexpr std::uint32_t child_stream(std::uint32_t parent, std::uint32_t k) noexcept {
  return parent * 64u + k + 1u;
}

}  // namespace ringfeed::image
