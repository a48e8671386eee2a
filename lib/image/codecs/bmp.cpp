// BMP, read by hand the way Pillow 9.4's BmpImagePlugin and convert("RGB")
// do it: 1/4/8-bit palette, 16-bit 555 and 565 (BI_RGB / BI_BITFIELDS),
// 24-bit, 32-bit (alpha or X dropped), bottom-up and top-down rows, with
// Pillow's quirks (gray-ramp palettes read as its "1"/"L" modes, short
// palettes, the bfOffBits fix-up, the last row without its padding).
// RLE4/RLE8 as Pillow's own (Python) RLE decoder.
// A small bounds-checked reader rather than stb_image: stb is not pixel-exact
// with Pillow on 16-bit data (it widens 5-bit channels by bit replication,
// 16 -> 132, where Pillow computes 16*255/31 = 131) nor on Pillow's palette
// quirks, and has a history of crashes on hostile headers.
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {
namespace {

constexpr std::uint32_t bi_rgb = 0;
constexpr std::uint32_t bi_rle8 = 1;
constexpr std::uint32_t bi_rle4 = 2;
constexpr std::uint32_t bi_bitfields = 3;

struct bmp_header {
  std::int64_t width = 0;
  std::int64_t height = 0;  // positive; top_down says which way rows go
  bool top_down = false;
  int bits = 0;
  std::uint32_t compression = 0;
  std::uint32_t masks[4] = {0, 0, 0, 0};  // r, g, b, a (BI_BITFIELDS)
  std::size_t palette_at = 0;
  std::size_t palette_entry = 4;  // bytes per palette entry (3 for OS/2 1.x)
  std::size_t colors = 0;         // declared (biClrUsed, or 1 << bits)
  std::size_t palette_bytes = 0;  // what the file holds of it
  // How Pillow unpacks the pixels: its "1" or "L" mode when the palette is
  // a gray ramp (then at 1 or 8 bits per pixel whatever `bits` says), else
  // palette indices at `bits`.
  enum class unpack : std::uint8_t { palette, bilevel, gray, direct } kind = unpack::direct;
  std::size_t data_at = 0;
};

std::uint32_t u16(const std::uint8_t* p) { return static_cast<std::uint32_t>(p[0] | (p[1] << 8)); }
std::uint32_t u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

[[noreturn]] void fail(std::string_view name, const std::string& why) { throw image_error(name, "BMP: " + why); }

bmp_header parse(std::span<const std::byte> bytes, std::string_view name) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n < 14 + 4 || p[0] != 'B' || p[1] != 'M') fail(name, "truncated file header");
  bmp_header h;
  const std::uint32_t offset = u32(p + 10);
  const std::uint32_t hsize = u32(p + 14);
  if (n < 14 + std::size_t{hsize} || hsize < 12) fail(name, "truncated or invalid info header");
  const std::uint8_t* d = p + 14;
  if (hsize == 12) {  // OS/2 1.x BITMAPCOREHEADER
    h.width = u16(d + 4);
    h.height = u16(d + 6);
    h.bits = static_cast<int>(u16(d + 10));
    h.palette_entry = 3;
  } else if (hsize == 40 || hsize == 64 || hsize == 108 || hsize == 124) {  // Pillow's set
    // As Pillow: both unsigned, and top-down only when the height's top
    // byte is 0xFF (any other huge height is refused as a bomb).
    h.width = u32(d + 4);
    const std::uint32_t hh = u32(d + 8);
    h.top_down = d[11] == 0xFF;
    h.height = h.top_down ? (std::int64_t{1} << 32) - hh : hh;
    h.bits = static_cast<int>(u16(d + 14));
    h.compression = u32(d + 16);
    h.colors = u32(d + 32);
  } else {
    fail(name, "unsupported header size " + std::to_string(hsize));
  }
  std::size_t after = 14 + std::size_t{hsize};
  if (h.compression == bi_bitfields) {
    if (hsize > 40) {
      for (int i = 0; i < 4; ++i) h.masks[i] = u32(d + 40 + 4 * i);
    } else {
      if (n < after + 12) fail(name, "truncated bit field masks");
      for (int i = 0; i < 3; ++i) h.masks[i] = u32(p + after + 4 * i);
      after += 12;
    }
  } else if (h.compression == bi_rle8 || h.compression == bi_rle4) {
    if (h.bits > 8) fail(name, "RLE compression on a " + std::to_string(h.bits) + "-bit image");
  } else if (h.compression != bi_rgb) {
    fail(name, "unsupported compression " + std::to_string(h.compression));
  }
  switch (h.bits) {
    case 1: case 4: case 8: {
      if (h.compression == bi_bitfields) fail(name, "bit fields on a palette image");
      if (h.colors == 0) h.colors = std::size_t{1} << h.bits;
      if (h.colors > 65536) fail(name, "palette of " + std::to_string(h.colors) + " colours");
      // Pillow reads what there is of the palette; a short one is no error.
      h.palette_at = after;
      h.palette_bytes = std::min(n - std::min(n, after), h.colors * h.palette_entry);
      // Pillow's gray test: entry i is (i, i, i) (i mod 256), or black and
      // white for two colours; a short entry is not gray.
      bool gray = true;
      for (std::size_t i = 0; i < h.colors && gray; ++i) {
        const std::size_t at = i * h.palette_entry;
        const auto want = static_cast<std::uint8_t>(h.colors == 2 ? (i == 0 ? 0 : 255) : i & 255);
        gray = at + 3 <= h.palette_bytes && p[after + at] == want && p[after + at + 1] == want &&
               p[after + at + 2] == want;
      }
      if (gray) {
        h.kind = h.colors == 2 ? bmp_header::unpack::bilevel : bmp_header::unpack::gray;
      } else {
        h.kind = bmp_header::unpack::palette;
        if (h.palette_bytes / h.palette_entry > 256) fail(name, "invalid palette size");
      }
      break;
    }
    case 16: case 24: case 32:
      h.colors = 0;  // a palette here is only a hint for quantising; ignored
      break;
    default:
      fail(name, "unsupported bit depth " + std::to_string(h.bits));
  }
  if (h.compression == bi_bitfields) {
    const std::uint32_t* m = h.masks;
    const bool ok =
        (h.bits == 32 && ((m[0] == 0xFF0000 && m[1] == 0xFF00 && m[2] == 0xFF && (m[3] == 0 || m[3] == 0xFF000000)) ||
                          (m[0] == 0xFF000000 && m[1] == 0xFF0000 && m[2] == 0xFF00 && (m[3] == 0 || m[3] == 0xFF)) ||
                          (m[0] == 0xFF && m[1] == 0xFF00 && m[2] == 0xFF0000 && m[3] == 0xFF000000) ||
                          (m[0] == 0 && m[1] == 0 && m[2] == 0 && m[3] == 0))) ||
        (h.bits == 24 && m[0] == 0xFF0000 && m[1] == 0xFF00 && m[2] == 0xFF) ||
        (h.bits == 16 && ((m[0] == 0xF800 && m[1] == 0x7E0 && m[2] == 0x1F) ||
                          (m[0] == 0x7C00 && m[1] == 0x3E0 && m[2] == 0x1F)));
    if (!ok) fail(name, "unsupported bit field layout");
  }
  // Pixels start at bfOffBits, or right after the palette when it is 0;
  // Pillow's fix-up for writers whose bfOffBits forgets the palette too.
  std::size_t data_at = offset;
  if (data_at == 14 + std::size_t{hsize} && h.bits <= 8) data_at += 4 * h.colors;
  h.data_at = data_at != 0 ? data_at : h.palette_at + h.palette_bytes;
  if (h.bits > 8 && offset == 0) h.data_at = after;
  return h;
}

image_info info_of(const bmp_header& h) {
  image_info info;
  info.format = image_format::bmp;
  info.width = static_cast<int>(std::min<std::int64_t>(h.width, INT32_MAX));
  info.height = static_cast<int>(std::min<std::int64_t>(h.height, INT32_MAX));
  info.components = h.bits <= 8 ? 1 : 3;
  info.bit_depth = h.bits <= 8 ? h.bits : 8;
  return info;
}

// Pillow 9.4's BmpRleDecoder, step for step (its quirks included: an
// absolute RLE4 run of n pixels reads n / 2 bytes, runs are clipped to the
// row only in encoded mode, the delta escape reads two bytes and then two
// more, word alignment is by file offset), then its raw "P"/"L" unpack of
// the index stream, which must cover the image.
void decode_rle(const bmp_header& h, std::span<const std::byte> bytes, std::string_view name,
                const std::array<std::uint8_t, 256 * 3>& pal, image_buffer& out) {
  // Pillow's mode "1" (a black-and-white palette) has no "P" unpacker.
  if (h.kind == bmp_header::unpack::bilevel) fail(name, "RLE on a black-and-white palette image");
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  const bool rle4 = h.compression == bi_rle4;
  const std::size_t xsize = static_cast<std::size_t>(h.width);
  const std::size_t total = xsize * static_cast<std::size_t>(h.height);
  std::vector<std::uint8_t> idx(total);
  std::size_t len = 0;  // what Pillow's `data` would hold (may pass `total`)
  const auto push = [&](std::uint8_t v) {
    if (len < total) idx[len] = v;
    ++len;
  };
  std::size_t pos = h.data_at;
  std::size_t x = 0;
  while (len < total) {
    if (pos + 2 > n) break;
    const std::uint8_t count = p[pos];
    const std::uint8_t byte = p[pos + 1];
    pos += 2;
    if (count != 0) {  // encoded run
      const std::size_t run = x + count > xsize ? (x < xsize ? xsize - x : 0) : count;
      for (std::size_t i = 0; i < run && len < total; ++i)
        push(rle4 ? static_cast<std::uint8_t>(i % 2 == 0 ? byte >> 4 : byte & 0x0F) : byte);
      x += run;
    } else if (byte == 0) {  // end of line
      while (len % xsize != 0) push(0);
      x = 0;
    } else if (byte == 1) {  // end of bitmap
      break;
    } else if (byte == 2) {  // delta
      if (pos + 2 > n) break;
      pos += 2;
      if (pos + 2 > n) fail(name, "truncated RLE delta");
      const std::size_t right = p[pos];
      const std::size_t up = p[pos + 1];
      pos += 2;
      const std::size_t end = len + right + up * xsize;
      while (len < end && len < total) push(0);
      len = end;
      x = len % xsize;
    } else {  // absolute run
      const std::size_t want = rle4 ? byte / 2u : byte;
      const std::size_t got = std::min(want, n - pos);
      for (std::size_t i = 0; i < got; ++i) {
        const std::uint8_t b = p[pos + i];
        if (rle4) {
          push(static_cast<std::uint8_t>(b >> 4));
          push(static_cast<std::uint8_t>(b & 0x0F));
        } else {
          push(b);
        }
      }
      pos += got;
      if (got < want) break;
      x += byte;
      if (pos % 2 != 0) ++pos;
    }
  }
  if (len < total) fail(name, "not enough image data");
  out.reset(static_cast<int>(h.width), static_cast<int>(h.height), 3);
  const mutable_image_view v = out.view();
  const std::size_t rows = static_cast<std::size_t>(h.height);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* src = idx.data() + r * xsize;
    std::uint8_t* o = v.row(static_cast<int>(h.top_down ? r : rows - 1 - r));
    for (std::size_t i = 0; i < xsize; ++i) std::memcpy(o + 3 * i, pal.data() + 3 * src[i], 3);
  }
}

}  // namespace

image_info bmp_read_info(std::span<const std::byte> bytes, std::string_view name) {
  return info_of(parse(bytes, name));
}

image_info bmp_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels) {
  const bmp_header h = parse(bytes, name);
  check_pixel_limit(name, h.width, h.height, max_pixels);
  const image_info info = info_of(h);
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t w = static_cast<std::size_t>(h.width);
  const std::size_t rows = static_cast<std::size_t>(h.height);
  const std::size_t stride = ((w * static_cast<std::size_t>(h.bits) + 31) >> 3) & ~std::size_t{3};
  using unpack = bmp_header::unpack;
  // Palette: Pillow starts from a gray ramp and overwrites the entries the
  // file holds, so out-of-range indices read as (i, i, i). Its gray modes
  // are that ramp (bilevel: 0 and 255).
  std::array<std::uint8_t, 256 * 3> pal{};
  for (std::size_t i = 0; i < 256; ++i) pal[3 * i] = pal[3 * i + 1] = pal[3 * i + 2] = static_cast<std::uint8_t>(i);
  if (h.kind == unpack::bilevel) std::memset(pal.data() + 3, 255, 3);
  if (h.kind == unpack::palette) {
    for (std::size_t i = 0; i < h.palette_bytes / h.palette_entry; ++i) {
      const std::uint8_t* e = p + h.palette_at + i * h.palette_entry;
      pal[3 * i] = e[2];
      pal[3 * i + 1] = e[1];
      pal[3 * i + 2] = e[0];
    }
  }

  if (h.compression == bi_rle8 || h.compression == bi_rle4) {
    decode_rle(h, bytes, name, pal, out);
    return info;
  }

  // The bits per pixel Pillow unpacks at (its "1" and "L" modes ignore
  // `bits`): a row of them must fit in the stride.
  const int ubits = h.kind == unpack::bilevel ? 1 : h.kind == unpack::gray ? 8 : h.bits;
  const std::size_t row_bytes = (w * static_cast<std::size_t>(ubits) + 7) / 8;
  if (row_bytes > stride) fail(name, "rows too short for the pixel mode");
  // Like Pillow's raw decoder, every row but the last needs its padding.
  if (h.data_at > bytes.size() || bytes.size() - h.data_at < row_bytes ||
      (bytes.size() - h.data_at - row_bytes) / stride < rows - 1)
    fail(name, "image file is truncated");

  out.reset(info.width, info.height, 3);
  const mutable_image_view v = out.view();
  const std::uint32_t* m = h.masks;
  const bool rgb565 = h.compression == bi_bitfields && h.bits == 16 && m[0] == 0xF800;
  // 32-bit: byte positions of R, G, B within the little-endian pixel.
  int rs = 2, gs = 1, bs = 0;
  if (h.compression == bi_bitfields && h.bits == 32) {
    if (m[0] == 0xFF000000) rs = 3, gs = 2, bs = 1;
    else if (m[0] == 0xFF) rs = 0, gs = 1, bs = 2;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* src = p + h.data_at + r * stride;
    std::uint8_t* o = v.row(static_cast<int>(h.top_down ? r : rows - 1 - r));
    switch (h.bits) {
      case 1: case 4: case 8: {
        const int b = ubits;
        const int per = 8 / b;
        const unsigned mask = (1u << b) - 1;
        for (std::size_t x = 0; x < w; ++x) {
          const unsigned shift = static_cast<unsigned>(8 - b * (1 + static_cast<int>(x % per)));
          const unsigned idx = (src[x / per] >> shift) & mask;
          std::memcpy(o + 3 * x, pal.data() + 3 * idx, 3);
        }
        break;
      }
      case 16:
        for (std::size_t x = 0; x < w; ++x) {
          const std::uint32_t px = u16(src + 2 * x);
          if (rgb565) {
            o[3 * x] = static_cast<std::uint8_t>(((px >> 11) & 31) * 255 / 31);
            o[3 * x + 1] = static_cast<std::uint8_t>(((px >> 5) & 63) * 255 / 63);
          } else {
            o[3 * x] = static_cast<std::uint8_t>(((px >> 10) & 31) * 255 / 31);
            o[3 * x + 1] = static_cast<std::uint8_t>(((px >> 5) & 31) * 255 / 31);
          }
          o[3 * x + 2] = static_cast<std::uint8_t>((px & 31) * 255 / 31);
        }
        break;
      case 24:
        for (std::size_t x = 0; x < w; ++x) {
          o[3 * x] = src[3 * x + 2];
          o[3 * x + 1] = src[3 * x + 1];
          o[3 * x + 2] = src[3 * x];
        }
        break;
      case 32:
        for (std::size_t x = 0; x < w; ++x) {
          o[3 * x] = src[4 * x + rs];
          o[3 * x + 1] = src[4 * x + gs];
          o[3 * x + 2] = src[4 * x + bs];
        }
        break;
      default:
        break;
    }
  }
  return info;
}

}  // namespace ringfeed::image::detail
