// PNG through libspng, converted to RGB the way Pillow's PngImagePlugin and
// convert("RGB") do it.
#include <spng.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {
namespace {

struct ctx_deleter {
  void operator()(spng_ctx* ctx) const noexcept { spng_ctx_free(ctx); }
};
using ctx_ptr = std::unique_ptr<spng_ctx, ctx_deleter>;

// Bounds against decompression bombs: a 16k × 16k image and 64 MiB of
// ancillary chunks are far beyond any training image.
constexpr std::uint32_t max_dimension = 1u << 14;
constexpr std::size_t max_chunk = std::size_t{64} << 20;

[[noreturn]] void fail(std::string_view name, const char* what, int err) {
  std::string reason = "PNG: ";
  reason += what;
  reason += ": ";
  reason += spng_strerror(err);
  throw image_error(name, reason);
}

ctx_ptr open(std::span<const std::byte> bytes, std::string_view name, spng_ihdr& ihdr) {
  ctx_ptr ctx(spng_ctx_new(0));
  if (!ctx) throw image_error(name, "PNG: out of memory creating a libspng context");
  spng_set_image_limits(ctx.get(), max_dimension, max_dimension);
  spng_set_chunk_limits(ctx.get(), max_chunk, max_chunk);
  if (int err = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size())) fail(name, "reading", err);
  if (int err = spng_get_ihdr(ctx.get(), &ihdr)) fail(name, "reading the header", err);
  return ctx;
}

int orientation_of(spng_ctx* ctx) {
  spng_exif exif{};
  if (spng_get_exif(ctx, &exif) != 0 || exif.data == nullptr) return 1;
  return exif_orientation_from_tiff(reinterpret_cast<const std::uint8_t*>(exif.data), exif.length);
}

int channels_of(std::uint8_t color_type) {
  switch (color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE: return 1;
    case SPNG_COLOR_TYPE_TRUECOLOR: return 3;
    case SPNG_COLOR_TYPE_INDEXED: return 1;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA: return 2;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA: return 4;
    default: return 0;
  }
}

image_info info_of(const spng_ihdr& ihdr) {
  image_info info;
  info.format = image_format::png;
  info.width = static_cast<int>(ihdr.width);
  info.height = static_cast<int>(ihdr.height);
  info.components = channels_of(ihdr.color_type);
  info.bit_depth = ihdr.bit_depth;
  return info;
}

}  // namespace

image_info png_read_info(std::span<const std::byte> bytes, std::string_view name) {
  spng_ihdr ihdr{};
  const ctx_ptr ctx = open(bytes, name, ihdr);
  image_info info = info_of(ihdr);
  // eXIf may follow IHDR anywhere before IDAT; libspng reads up to the first
  // IDAT for spng_get_exif.
  info.orientation = orientation_of(ctx.get());
  return info;
}

image_info png_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels) {
  spng_ihdr ihdr{};
  const ctx_ptr ctx = open(bytes, name, ihdr);
  image_info info = info_of(ihdr);
  check_pixel_limit(name, info.width, info.height, max_pixels);
  out.reset(info.width, info.height, 3);
  const std::size_t pixels = static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height);

  if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 16) {
    // Pillow opens 16-bit gray as mode "I" and convert("RGB") clips each
    // value at 255 (Convert.c i2rgb): reproduce that, odd as it is.
    std::size_t len = 0;
    if (int err = spng_decoded_image_size(ctx.get(), SPNG_FMT_PNG, &len)) fail(name, "decoding", err);
    if (len != pixels * 2) throw image_error(name, "PNG: unexpected 16-bit gray image size");
    // Decode into the tail of the RGB buffer (2 of its 3 bytes per pixel)
    // and expand front to back: pixel i's source lies at or after its output.
    std::uint8_t* base = out.data();
    std::uint8_t* raw = base + pixels;  // pixels*3 - pixels*2
    if (int err = spng_decode_image(ctx.get(), raw, len, SPNG_FMT_PNG, 0)) fail(name, "decoding", err);
    for (std::size_t i = 0; i < pixels; ++i) {
      std::uint16_t v;
      std::memcpy(&v, raw + 2 * i, 2);  // host-endian with SPNG_FMT_PNG
      const auto g = static_cast<std::uint8_t>(std::min<std::uint16_t>(v, 255));
      base[3 * i] = base[3 * i + 1] = base[3 * i + 2] = g;
    }
  } else {
    // Palette, gray 1..8 bit (scaled by bit replication, as Pillow's L;2 /
    // L;4 / 1 → RGB), RGB and alpha types (alpha dropped), 16-bit RGB(A)
    // and gray+alpha (high byte, as Pillow's ;16B unpackers): all as RGB8.
    std::size_t len = 0;
    if (int err = spng_decoded_image_size(ctx.get(), SPNG_FMT_RGB8, &len)) fail(name, "decoding", err);
    if (len != pixels * 3) throw image_error(name, "PNG: unexpected decoded image size");
    if (int err = spng_decode_image(ctx.get(), out.data(), len, SPNG_FMT_RGB8, 0)) fail(name, "decoding", err);
  }
  info.orientation = orientation_of(ctx.get());
  return info;
}

}  // namespace ringfeed::image::detail
