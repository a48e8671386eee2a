// EXIF orientation: finding the tag, and applying it like
// PIL.ImageOps.exif_transpose.
#include <cstring>
#include <stdexcept>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image {
namespace detail {

int exif_orientation_from_tiff(const std::uint8_t* data, std::size_t size) noexcept {
  if (size < 8) return 1;
  bool little;
  if (data[0] == 'I' && data[1] == 'I' && data[2] == 42 && data[3] == 0)
    little = true;
  else if (data[0] == 'M' && data[1] == 'M' && data[2] == 0 && data[3] == 42)
    little = false;
  else
    return 1;
  const auto u16 = [&](std::size_t at) -> std::uint32_t {
    return little ? data[at] | (data[at + 1] << 8) : (data[at] << 8) | data[at + 1];
  };
  const auto u32 = [&](std::size_t at) -> std::uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  const std::size_t ifd = u32(4);
  if (ifd > size - 2) return 1;
  const std::size_t count = u16(ifd);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + i * 12;
    if (entry + 12 > size) return 1;
    if (u16(entry) != 0x0112) continue;
    if (u16(entry + 2) != 3 /* SHORT */ || u32(entry + 4) < 1) return 1;
    const auto value = static_cast<int>(u16(entry + 8));
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

int jpeg_exif_orientation(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return 1;
  std::size_t pos = 2;
  while (pos + 4 <= n) {
    if (p[pos] != 0xFF) return 1;  // not at a marker: give up quietly
    std::uint8_t marker = p[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    pos += 2;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    if (marker == 0xDA || marker == 0xD9) return 1;                       // scan or end: no EXIF before
    const std::size_t len = (static_cast<std::size_t>(p[pos]) << 8) | p[pos + 1];
    if (len < 2 || pos + len > n) return 1;
    if (marker == 0xE1 && len >= 2 + 6 && std::memcmp(p + pos + 2, "Exif\0", 5) == 0)
      return exif_orientation_from_tiff(p + pos + 2 + 6, len - 2 - 6);
    pos += len;
  }
  return 1;
}

std::string_view foreign_format_name(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  const auto starts = [&](const char* magic, std::size_t len, std::size_t at = 0) {
    return n >= at + len && std::memcmp(p + at, magic, len) == 0;
  };
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return "GIF";
  if (starts("BM", 2)) return "BMP";
  if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return "WebP";
  if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '7') return "PNM";
  if (starts("ftyp", 4, 4)) return "ISO-BMFF (HEIF/AVIF)";
  if (starts("\xFF\x4F\xFF\x51", 4) || starts("\0\0\0\x0CjP  ", 8)) return "JPEG 2000";
  return {};
}

}  // namespace detail

void apply_orientation(image_view src, int orientation, image_buffer& dst) {
  if (orientation < 1 || orientation > 8)
    throw std::invalid_argument("apply_orientation: orientation must be 1..8");
  const int w = src.width;
  const int h = src.height;
  const int c = src.channels;
  const bool swap = orientation >= 5;
  dst.reset(swap ? h : w, swap ? w : h, c);
  const mutable_image_view out = dst.view();
  // For each output pixel (x, y), the source pixel (sx, sy) it shows.
  for (int y = 0; y < out.height; ++y) {
    std::uint8_t* o = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      int sx = x;
      int sy = y;
      switch (orientation) {
        case 2: sx = w - 1 - x; break;                    // FLIP_LEFT_RIGHT
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;    // ROTATE_180
        case 4: sy = h - 1 - y; break;                    // FLIP_TOP_BOTTOM
        case 5: sx = y; sy = x; break;                    // TRANSPOSE
        case 6: sx = y; sy = h - 1 - x; break;            // ROTATE_270 (clockwise)
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;    // TRANSVERSE
        case 8: sx = w - 1 - y; sy = x; break;            // ROTATE_90 (counter-clockwise)
        default: break;
      }
      std::memcpy(o + static_cast<std::ptrdiff_t>(x) * c, src.row(sy) + static_cast<std::ptrdiff_t>(sx) * c,
                  static_cast<std::size_t>(c));
    }
  }
}

}  // namespace ringfeed::image
