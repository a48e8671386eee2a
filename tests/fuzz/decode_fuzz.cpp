// libFuzzer target: one image decoder through the public entry points the
// loader uses: decoder::read_info, decoder::decode (whole image, as Pillow's
// convert("RGB")) and decoder::decode_scaled (fast mode's DCT scaling and
// region). Built once per format (RINGFEED_FUZZ_FORMAT names it): inputs
// whose magic bytes name another format are passed over, so each target's
// time goes to its own decoder.
//
// The contract: every input is decoded or throws image_error (naming the
// file); a header over the pixel limit is refused before allocation. One
// decoder serves every input, as one does every file on a worker thread, so
// state left behind by a failed decode is exercised too.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <ringfeed/image/decode.hpp>

#include "fuzz_support.hpp"

namespace img = ringfeed::image;
using ringfeed::fuzz::require;

namespace {

// 1 Mpixel: room for every seed (the largest is 640x480), small enough that
// the many inputs declaring big images with little data (a truncated file
// of any size) stay fast; above it, the pixel-limit path is what runs.
constexpr std::uint64_t max_pixels = std::uint64_t{1} << 20;
constexpr const char* name = "fuzz-input";

void check_buffer(const img::image_buffer& out) {
  // Reads every byte: ASan reports a buffer smaller than its size says.
  const img::image_view v = out.view();
  unsigned sum = 0;
  for (int y = 0; y < v.height; ++y) {
    const std::uint8_t* row = v.row(y);
    for (int x = 0; x < v.width * v.channels; ++x) sum += row[x];
  }
  __asm__ volatile("" : : "r"(sum));  // keeps the reads
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                                     reinterpret_cast<const std::byte*>(data) + size);
  const auto format = img::detect_format(bytes);
  if (!format || *format != img::image_format::RINGFEED_FUZZ_FORMAT) return 0;

  static img::decoder dec;
  static img::image_buffer out;
  img::image_info header;
  try {
    header = dec.read_info(bytes, name);
  } catch (const img::image_error&) {
  }

  img::decode_options options;
  options.max_pixels = max_pixels;
  options.apply_exif_orientation = (size & 1) != 0;
  try {
    const img::image_info info = dec.decode(bytes, name, out, options);
    require(static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height) <= max_pixels,
            "a decoded image is within max_pixels");
    require(out.channels() == 3, "decode gives RGB");
    const img::size2 want = options.apply_exif_orientation ? info.oriented_size() : img::size2{info.width, info.height};
    require(out.width() == want.width && out.height() == want.height, "the buffer has the size decode returned");
    check_buffer(out);
  } catch (const img::image_error&) {
    return 0;  // named: what bad input must do
  }

  // A reduced decode of what decoded: a scale and a region chosen from the
  // input's size, so a given input always asks the same.
  img::scaled_request request;
  request.scale_denom = 1 << (size % 4);
  request.max_pixels = max_pixels;
  try {
    const int sw = (header.width + request.scale_denom - 1) / request.scale_denom;
    const int sh = (header.height + request.scale_denom - 1) / request.scale_denom;
    if ((size / 4) % 2 == 1 && sw > 2 && sh > 2) request.region = {sh / 3, sw / 3, std::max(1, sh / 2), std::max(1, sw / 2)};
    const img::scaled_result got = dec.decode_scaled(bytes, name, request, out);
    require(got.held.width == out.width() && got.held.height == out.height(), "decode_scaled's buffer is `held`");
    check_buffer(out);
  } catch (const img::image_error&) {
  }
  return 0;
}
