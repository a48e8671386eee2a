// Which decoder reads which format: the magic bytes decide, whatever the
// extension. JPEG is jpeg.cpp's own; every other format is one file here
// (png.cpp, tiff.cpp, ...) behind read_info_other / decode_other.
#include <cstring>
#include <string>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {

std::optional<image_format> sniff_format(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return image_format::jpeg;
  static constexpr std::uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n >= 8 && std::memcmp(p, png_magic, 8) == 0) return image_format::png;
  if (n >= 12 && std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0) return image_format::webp;
  if (n >= 2 && p[0] == 'B' && p[1] == 'M') return image_format::bmp;
  if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6') return image_format::pnm;
  // Classic TIFF (42) and BigTIFF (43): Pillow 9.4 reads both, as libtiff does.
  if (n >= 4 && ((p[0] == 'I' && p[1] == 'I' && (p[2] == 42 || p[2] == 43) && p[3] == 0) ||
                 (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && (p[3] == 42 || p[3] == 43))))
    return image_format::tiff;
  return std::nullopt;
}

void check_pixel_limit(std::string_view name, std::int64_t width, std::int64_t height, std::uint64_t max_pixels) {
  if (width <= 0 || height <= 0)
    throw image_error(name, "the header declares a " + std::to_string(width) + "x" + std::to_string(height) +
                                " image");
  const auto pixels = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
  if (pixels > max_pixels)
    throw image_error(name, "the header declares " + std::to_string(width) + "x" + std::to_string(height) + " = " +
                                std::to_string(pixels) + " pixels, more than the limit of " +
                                std::to_string(max_pixels) +
                                " (a decompression bomb?); raise max_pixels to read it");
}

image_info read_info_other(image_format format, std::span<const std::byte> bytes, std::string_view name) {
  switch (format) {
    case image_format::png:
      return png_read_info(bytes, name);
    case image_format::webp:
      return webp_read_info(bytes, name);
    case image_format::bmp:
      return bmp_read_info(bytes, name);
    case image_format::pnm:
      return pnm_read_info(bytes, name);
    case image_format::tiff:
      return tiff_read_info(bytes, name);
    default:
      break;
  }
  throw image_error(name, "no decoder for this format");
}

image_info decode_other(image_format format, std::span<const std::byte> bytes, std::string_view name,
                        image_buffer& out, std::uint64_t max_pixels) {
  switch (format) {
    case image_format::png:
      return png_decode(bytes, name, out, max_pixels);
    case image_format::webp:
      return webp_decode(bytes, name, out, max_pixels);
    case image_format::bmp:
      return bmp_decode(bytes, name, out, max_pixels);
    case image_format::pnm:
      return pnm_decode(bytes, name, out, max_pixels);
    case image_format::tiff:
      return tiff_decode(bytes, name, out, max_pixels);
    default:
      break;
  }
  throw image_error(name, "no decoder for this format");
}

}  // namespace ringfeed::image::detail
