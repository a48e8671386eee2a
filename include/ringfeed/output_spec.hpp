// ringfeed::output_spec — the one vocabulary for what images look like in
// memory: an element type (dtype) and an order of dimensions (layout). The
// image pipeline, the CUDA uploader, batches (tensor_view) and every front
// end (C API, Python, CLI) speak it.
//
// The combinations:
//  - uint8 NHWC: RGB bytes, rows of width × 3 (what crosses PCIe; the
//    consumer, e.g. the device kernel, normalizes);
//  - uint8 NCHW: planes of bytes (a transform list ending with PILToTensor);
//  - float32, float16, bfloat16, NCHW or NHWC: ToTensor + Normalize, as
//    planes R, G, B (NCHW) or interleaved R, G, B per pixel (NHWC, what
//    torch's channels_last memory format holds). float16 is IEEE binary16,
//    bfloat16 the top half of the float32 value, both rounded to nearest
//    even from the float32 value (what torch's .to(dtype) gives).
//
// parse_output() reads the user-facing names ("float32", "float16",
// "bfloat16", "uint8", and "float32_nhwc", "float16_nhwc", "bfloat16_nhwc")
// for the CLI's --output, the C API's "output" key and Python's output=;
// output_name() gives them back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringfeed {

enum class dtype : std::uint8_t { uint8, float32, float16, bfloat16 };
enum class layout : std::uint8_t { nhwc, nchw };

/// Bytes of one element.
[[nodiscard]] constexpr std::size_t element_size(dtype t) noexcept {
  return t == dtype::float32 ? 4 : t == dtype::uint8 ? 1 : 2;
}

/// "uint8", "float32", "float16", "bfloat16".
[[nodiscard]] std::string_view to_string(dtype t) noexcept;
/// "NHWC", "NCHW".
[[nodiscard]] std::string_view to_string(layout l) noexcept;

/// Element type and dimension order of images (see the header comment).
struct output_spec {
  ringfeed::dtype dtype = ringfeed::dtype::uint8;
  ringfeed::layout layout = ringfeed::layout::nhwc;

  [[nodiscard]] static constexpr output_spec uint8_nhwc() noexcept { return {dtype::uint8, layout::nhwc}; }
  [[nodiscard]] static constexpr output_spec float32_nchw() noexcept { return {dtype::float32, layout::nchw}; }
  [[nodiscard]] static constexpr output_spec float16_nchw() noexcept { return {dtype::float16, layout::nchw}; }
  /// uint8 CHW: what a transform list ending with PILToTensor gives.
  [[nodiscard]] static constexpr output_spec uint8_nchw() noexcept { return {dtype::uint8, layout::nchw}; }

  /// Whether dtype and layout are values of their enums (every pair of
  /// them is a supported output).
  [[nodiscard]] constexpr bool supported() const noexcept {
    return dtype <= ringfeed::dtype::bfloat16 && layout <= ringfeed::layout::nchw;
  }
  /// Throws std::invalid_argument naming this combination and the supported
  /// ones unless supported().
  void check() const;
  /// Float outputs are ToTensor + Normalize; uint8 is the bytes as decoded.
  [[nodiscard]] constexpr bool normalized() const noexcept { return dtype != ringfeed::dtype::uint8; }
  [[nodiscard]] constexpr std::size_t element_size() const noexcept { return ringfeed::element_size(dtype); }

  friend bool operator==(const output_spec&, const output_spec&) = default;
};

/// "float32 NCHW", "uint8 NHWC", ...
[[nodiscard]] std::string to_string(output_spec s);

/// The user-facing output names: "float32", "float16", "bfloat16" (NCHW),
/// the same with "_nhwc" (NHWC), "uint8" (uint8 NHWC). Throws
/// std::invalid_argument naming `name` and listing the accepted names.
[[nodiscard]] output_spec parse_output(std::string_view name);
/// The user-facing name of `s` (parse_output's inverse); "uint8" for both
/// uint8 layouts (NCHW is what a list ending with PILToTensor gives).
[[nodiscard]] std::string output_name(output_spec s);

}  // namespace ringfeed
