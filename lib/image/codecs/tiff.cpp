// TIFF through libtiff, read from memory, converted to RGB the way Pillow
// 9.4's TiffImagePlugin and convert("RGB") do it. Only the first page
// (IFD) of a multi-page file is decoded, as Image.open does. What is read
// follows Pillow's OPEN_INFO key: byte order, photometric, sample format,
// bits and ExtraSamples (premultiplied alpha is undone as Pillow does).
// The Orientation tag (274) is applied on every decode, as Pillow 9.4's
// TiffImageFile.load_end does (its `_tile_orientation` transpose): the
// image comes out upright and the tag is spent (image_info::orientation 1).
// Only pixels the file defines are delivered: a strip or tile libtiff
// reports an error for is refused even where libtiff returns it filled in.
//
// libtiff's messages go to per-open handlers (TIFFClientOpenExt with
// TIFFOpenOptions, libtiff >= 4.5) that collect them into the image_error:
// no process-wide handler is touched, nothing is printed, and decodes on
// several threads do not share state.
#include <tiffio.h>

#include <ringfeed/text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {
namespace {

// The largest single allocation libtiff may make for one file (strip or tile
// buffers, tag arrays): far beyond a strip of any image under the default
// pixel limit, and well short of exhausting memory on a corrupt byte count.
constexpr tmsize_t max_single_alloc = tmsize_t{1} << 30;

// What libtiff reads from: the caller's bytes, and the first error it reported.
struct memory_file {
  const std::uint8_t* data = nullptr;
  std::uint64_t size = 0;
  std::uint64_t pos = 0;
  std::string error;
};

tmsize_t read_proc(thandle_t h, void* buf, tmsize_t n) {
  auto* f = static_cast<memory_file*>(h);
  if (n <= 0 || f->pos >= f->size) return 0;
  const auto count = std::min<std::uint64_t>(static_cast<std::uint64_t>(n), f->size - f->pos);
  std::memcpy(buf, f->data + f->pos, count);
  f->pos += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }

toff_t seek_proc(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<memory_file*>(h);
  std::uint64_t base = 0;
  if (whence == SEEK_CUR) base = f->pos;
  else if (whence == SEEK_END) base = f->size;
  else if (whence != SEEK_SET) return static_cast<toff_t>(-1);
  // libtiff passes offsets as unsigned; a backward SEEK_CUR wraps around.
  const std::uint64_t target = base + off;
  f->pos = target;
  return target;
}

int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t h) { return static_cast<memory_file*>(h)->size; }

int map_proc(thandle_t h, void** base, toff_t* size) {
  auto* f = static_cast<memory_file*>(h);
  // Opened read-only: libtiff reads the mapping and never writes it.
  *base = const_cast<std::uint8_t*>(f->data);
  *size = f->size;
  return 1;
}
void unmap_proc(thandle_t, void*, toff_t) {}

int error_handler(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* f = static_cast<memory_file*>(user);
  if (f->error.empty()) {
    char msg[512];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    if (module != nullptr && *module != '\0') {
      f->error = module;
      f->error += ": ";
    }
    f->error += msg;
  }
  return 1;  // handled: libtiff's global handler (stderr) is not called
}

int warning_handler(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct options_deleter {
  void operator()(TIFFOpenOptions* o) const noexcept { TIFFOpenOptionsFree(o); }
};
struct tiff_deleter {
  void operator()(TIFF* t) const noexcept { TIFFClose(t); }
};
using tiff_ptr = std::unique_ptr<TIFF, tiff_deleter>;

[[noreturn]] void fail(std::string_view name, const memory_file& f, std::string_view what) {
  std::string reason = "TIFF: ";
  reason += what;
  if (!f.error.empty()) {
    reason += ": ";
    reason += escape_bytes(f.error);  // libtiff may quote the file's own text
  }
  throw image_error(name, reason);
}

tiff_ptr open(memory_file& f, std::span<const std::byte> bytes, std::string_view name) {
  f.data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  f.size = bytes.size();
  const std::unique_ptr<TIFFOpenOptions, options_deleter> opts(TIFFOpenOptionsAlloc());
  if (!opts) throw image_error(name, "TIFF: out of memory creating libtiff options");
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), error_handler, &f);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), warning_handler, &f);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), max_single_alloc);
  const std::string tiff_name(name);
  tiff_ptr tif(TIFFClientOpenExt(tiff_name.c_str(), "rm", &f, read_proc, write_proc, seek_proc, close_proc,
                                 size_proc, map_proc, unmap_proc, opts.get()));
  if (!tif) fail(name, f, "cannot open");
  return tif;
}

// The header facts of the current directory, Pillow's way of naming them.
struct layout {
  std::uint32_t width = 0, height = 0;
  std::uint16_t bits = 1, samples = 1, format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
  std::uint16_t planar = PLANARCONFIG_CONTIG, compression = COMPRESSION_NONE, orientation = ORIENTATION_TOPLEFT;
  bool big_endian = false;           // "MM": part of Pillow's OPEN_INFO key
  std::vector<std::uint16_t> extra;  // ExtraSamples, also part of that key
};

layout layout_of(TIFF* tif, const memory_file& f, std::string_view name) {
  layout l;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &l.width) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &l.height))
    fail(name, f, "no image size");
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &l.bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &l.samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &l.format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &l.planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &l.compression);
  TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &l.orientation);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &l.photometric))
    l.photometric = l.samples >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  l.big_endian = TIFFIsBigEndian(tif) != 0;
  std::uint16_t count = 0;
  std::uint16_t* types = nullptr;
  if (TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &count, &types) && types != nullptr) l.extra.assign(types, types + count);
  return l;
}

// The Orientation tag as decode applies it: 1..8, else 1 (Pillow's
// transpose table has no entry for other values and leaves the image).
int orientation_of(const layout& l) { return l.orientation >= 1 && l.orientation <= 8 ? l.orientation : 1; }

// The facts of the image as delivered: upright, so 5..8 swap width and
// height, and no orientation left to apply.
image_info info_of(const layout& l) {
  image_info info;
  info.format = image_format::tiff;
  // Sizes beyond int are refused by check_pixel_limit (as non-positive).
  const int w = l.width > 0x7fffffffu ? -1 : static_cast<int>(l.width);
  const int h = l.height > 0x7fffffffu ? -1 : static_cast<int>(l.height);
  const bool swap = orientation_of(l) >= 5;
  info.width = swap ? h : w;
  info.height = swap ? w : h;
  info.components = l.samples;
  info.bit_depth = l.bits;
  info.orientation = 1;
  return info;
}

// How the samples of a pixel become RGB.
enum class kind { gray, gray_inverted, palette, rgb, cmyk };

struct plan {
  kind k = kind::gray;
  int color_samples = 1;       // samples that carry colour; the rest (alpha) are dropped
  bool premultiplied = false;  // RGB scaled by sample 3 (associated alpha): undone first
};

[[noreturn]] void unsupported(std::string_view name, const layout& l, std::string_view what) {
  std::string extra;
  for (std::uint16_t e : l.extra) {  // appended piecewise: GCC 12 -Wrestrict false positive (PR 105651)
    if (!extra.empty()) extra += ',';
    extra += std::to_string(e);
  }
  throw image_error(name, "TIFF: unsupported " + std::string(what) + " (photometric " +
                              std::to_string(l.photometric) + ", " + std::to_string(l.samples) + " samples of " +
                              std::to_string(l.bits) + " bits, sample format " + std::to_string(l.format) +
                              ", extra samples [" + extra + "], " + (l.big_endian ? "big" : "little") +
                              "-endian, compression " + std::to_string(l.compression) + ")");
}

bool extras_are(const layout& l, std::initializer_list<std::uint16_t> want) {
  return std::equal(l.extra.begin(), l.extra.end(), want.begin(), want.end());
}

// Pillow's RGB entries past the three colours: (samples, ExtraSamples) ->
// whether the fourth sample is associated alpha ("RGBa"). Unassociated
// (2), unspecified (0) and Corel's 999 are dropped as they are; four
// samples without ExtraSamples are "RGBA" too. 16 bits: four samples only.
bool rgb_extras_known(const layout& l, bool& premultiplied) {
  premultiplied = false;
  const std::size_t n = l.samples - 3u;
  if (l.extra.empty()) return n == 0 || n == 1;
  if (l.extra.size() != n) return false;
  if (l.bits == 16 && n != 1) return false;
  if (l.extra[0] == EXTRASAMPLE_ASSOCALPHA) premultiplied = true;
  else if (l.extra[0] != EXTRASAMPLE_UNSPECIFIED && l.extra[0] != EXTRASAMPLE_UNASSALPHA &&
           !(l.extra[0] == 999 && n == 1 && l.bits == 8))
    return false;
  return std::all_of(l.extra.begin() + 1, l.extra.end(), [](std::uint16_t e) { return e == EXTRASAMPLE_UNSPECIFIED; });
}

// Only the variants Pillow 9.4 opens (TiffImagePlugin.OPEN_INFO) and
// converts to RGB; the rest are refused.
plan plan_of(const layout& l, std::string_view name) {
  const bool uint = l.format == SAMPLEFORMAT_UINT;
  const bool flt = l.format == SAMPLEFORMAT_IEEEFP;
  if (flt && !(l.bits == 32 && l.samples == 1 && l.photometric <= PHOTOMETRIC_MINISBLACK))
    unsupported(name, l, "floating-point layout");
  if (!uint && !flt) unsupported(name, l, "sample format");
  switch (l.photometric) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK: {
      const bool white = l.photometric == PHOTOMETRIC_MINISWHITE;
      if (l.samples == 2) {
        // Pillow's one gray + alpha: "LA", 8-bit min-is-black with
        // unassociated alpha. No 16-bit, no premultiplied, no min-is-white.
        if (white || l.bits != 8 || !extras_are(l, {EXTRASAMPLE_UNASSALPHA}))
          unsupported(name, l, "gray + alpha layout");
        return {kind::gray, 1};
      }
      if (l.samples != 1 || !l.extra.empty()) unsupported(name, l, "gray layout");
      // Pillow's "F" and "I;16" ignore min-is-white (no inverted unpacker):
      // the samples are read as they are. Its 16-bit min-is-white entry is
      // little-endian only.
      if (flt) return {kind::gray, 1};
      if (l.bits == 16) {
        if (white && l.big_endian) unsupported(name, l, "big-endian inverted 16-bit gray");
        return {kind::gray, 1};
      }
      // 12 bits: Pillow 9.4 opens little-endian min-is-black only ("I;16"
      // through its I;12 unpacker).
      if (l.bits == 12) {
        if (white || l.big_endian) unsupported(name, l, "12-bit gray other than little-endian min-is-black");
        return {kind::gray, 1};
      }
      if (l.bits != 1 && l.bits != 2 && l.bits != 4 && l.bits != 8) unsupported(name, l, "gray depth");
      return {white ? kind::gray_inverted : kind::gray, 1};
    }
    case PHOTOMETRIC_PALETTE:
      if (l.samples != 1 || !l.extra.empty() || (l.bits != 1 && l.bits != 2 && l.bits != 4 && l.bits != 8))
        unsupported(name, l, "palette layout");
      return {kind::palette, 1};
    case PHOTOMETRIC_YCBCR:  // JPEG-compressed only, read as RGB (see decode)
      if (l.compression != COMPRESSION_JPEG) unsupported(name, l, "YCbCr without JPEG compression");
      if (l.bits != 8 || l.samples != 3 || !l.extra.empty()) unsupported(name, l, "YCbCr layout");
      return {kind::rgb, 3};
    case PHOTOMETRIC_RGB: {
      bool premultiplied = false;
      if (l.samples < 3 || l.samples > 6 || (l.bits != 8 && l.bits != 16) || !rgb_extras_known(l, premultiplied))
        unsupported(name, l, "RGB layout");
      // Separate planes: Pillow's own (uncompressed) reader takes one letter
      // of the raw mode a plane and has no unpacker for "a"; its libtiff
      // reader fails on more than four planes.
      if (l.planar == PLANARCONFIG_SEPARATE && l.samples > 4 && l.compression != COMPRESSION_NONE)
        unsupported(name, l, "compressed RGB in more than four planes");
      if (l.planar == PLANARCONFIG_SEPARATE && premultiplied && l.compression == COMPRESSION_NONE)
        unsupported(name, l, "uncompressed premultiplied alpha in separate planes");
      // Four compressed planes without ExtraSamples: libtiff, which Pillow
      // reads them through, takes the fourth for associated alpha, and
      // Pillow's result is unpremultiplied (observed with Pillow 9.4).
      if (l.planar == PLANARCONFIG_SEPARATE && l.samples == 4 && l.extra.empty() &&
          l.compression != COMPRESSION_NONE)
        premultiplied = true;
      return {kind::rgb, 3, premultiplied};
    }
    case PHOTOMETRIC_SEPARATED:
      // CMYK, then 0-2 unspecified extra samples (Pillow's CMYKX, CMYKXX).
      if (l.samples < 4 || l.samples > 6 || l.bits != 8 || l.extra.size() != l.samples - 4u ||
          !std::all_of(l.extra.begin(), l.extra.end(), [](std::uint16_t e) { return e == EXTRASAMPLE_UNSPECIFIED; }))
        unsupported(name, l, "CMYK layout");
      return {kind::cmyk, 4};
    default:
      unsupported(name, l, "photometric interpretation");
  }
}

// Reads sample plane `sample` (all samples when contiguous) of the whole
// image into `dst`, `row_bytes` per row, through strips or tiles.
void read_plane(TIFF* tif, memory_file& f, std::string_view name, const layout& l, std::uint16_t sample,
                std::size_t row_bytes, std::uint8_t* dst) {
  if (TIFFIsTiled(tif)) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    const tmsize_t tile_row = TIFFTileRowSize(tif);
    const tmsize_t tile_size = TIFFTileSize(tif);
    if (tw == 0 || th == 0 || tile_row <= 0 || tile_size <= 0 ||
        static_cast<std::uint64_t>(tile_row) * th > static_cast<std::uint64_t>(tile_size))
      fail(name, f, "bad tile layout");
    // Bytes per pixel of one plane row: row_bytes / width, exact for the
    // whole-byte depths tiles are read at here.
    const std::size_t px_bits = row_bytes * 8 / l.width;
    if (px_bits % 8 != 0 || row_bytes * 8 != px_bits * l.width) fail(name, f, "tiles of sub-byte samples");
    const std::size_t px = px_bits / 8;
    if (static_cast<std::uint64_t>(tile_row) != static_cast<std::uint64_t>(tw) * px) fail(name, f, "bad tile row size");
    // Tiles are padded to multiples of 16 and a few hundred pixels a side,
    // so one may be larger than a small image, but not larger than both the
    // plane and 64 MiB: a header declaring such a tile (a 186-byte file
    // asked for 11 GB) is refused before anything is allocated.
    constexpr std::uint64_t max_tile_bytes = std::uint64_t{64} << 20;
    if (static_cast<std::uint64_t>(tile_size) >
        std::max<std::uint64_t>(static_cast<std::uint64_t>(row_bytes) * l.height, max_tile_bytes))
      fail(name, f, "a tile of " + std::to_string(tw) + "x" + std::to_string(th) + " is larger than the image");
    std::vector<std::uint8_t> tile(static_cast<std::size_t>(tile_size));
    for (std::uint32_t y = 0; y < l.height; y += th) {
      for (std::uint32_t x = 0; x < l.width; x += tw) {
        const ttile_t t = TIFFComputeTile(tif, x, y, 0, sample);
        if (TIFFReadEncodedTile(tif, t, tile.data(), tile_size) < 0) fail(name, f, "reading a tile");
        if (!f.error.empty()) fail(name, f, "corrupt tile data");
        const std::uint32_t w = std::min(tw, l.width - x);
        const std::uint32_t h = std::min(th, l.height - y);
        for (std::uint32_t r = 0; r < h; ++r)
          std::memcpy(dst + (static_cast<std::size_t>(y) + r) * row_bytes + x * px,
                      tile.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(tile_row), w * px);
      }
    }
    return;
  }
  std::uint32_t rows_per_strip = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  rows_per_strip = std::clamp<std::uint32_t>(rows_per_strip, 1, l.height);
  for (std::uint32_t y = 0; y < l.height; y += rows_per_strip) {
    const std::uint32_t h = std::min(rows_per_strip, l.height - y);
    const tstrip_t s = TIFFComputeStrip(tif, y, sample);
    const auto want = static_cast<tmsize_t>(static_cast<std::size_t>(h) * row_bytes);
    // A short strip (a truncated file) is an error, as in Pillow.
    const tmsize_t got = TIFFReadEncodedStrip(tif, s, dst + static_cast<std::size_t>(y) * row_bytes, want);
    if (got < 0) fail(name, f, "reading a strip");
    // Some codecs report an error and still return the strip, filled past
    // the damage (CCITT's "bad code word"): those pixels are not the file's.
    if (!f.error.empty()) fail(name, f, "corrupt strip data");
    if (got < want) fail(name, f, "a strip is shorter than its rows");
  }
}

// Sample i (of `bits` bits) of a row.
inline unsigned sub_byte(const std::uint8_t* row, std::size_t i, int bits) {
  const std::size_t bit = i * static_cast<std::size_t>(bits);
  const unsigned shift = 8u - static_cast<unsigned>(bits) - static_cast<unsigned>(bit % 8);
  return (row[bit / 8] >> shift) & ((1u << bits) - 1u);
}

// Pillow's L;1 / L;2 / L;4 unpackers scale by replicating the bits.
inline std::uint8_t scale_to_8(unsigned v, int bits) {
  switch (bits) {
    case 1: return v ? 255 : 0;
    case 2: return static_cast<std::uint8_t>(v * 0x55);
    case 4: return static_cast<std::uint8_t>(v * 0x11);
    default: return static_cast<std::uint8_t>(v);
  }
}

inline std::uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}

}  // namespace

image_info tiff_read_info(std::span<const std::byte> bytes, std::string_view name) {
  memory_file f;
  const tiff_ptr tif = open(f, bytes, name);
  return info_of(layout_of(tif.get(), f, name));
}

image_info tiff_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                       std::uint64_t max_pixels) {
  memory_file f;
  const tiff_ptr tif = open(f, bytes, name);
  TIFF* t = tif.get();
  // Pillow 9.4 tests for BigTIFF at the third byte only: "MM\0+" is read
  // as a classic TIFF whose first IFD is at 0x80000, i.e. not at all.
  if (TIFFIsBigTIFF(t) && TIFFIsBigEndian(t))
    throw image_error(name, "TIFF: big-endian BigTIFF, which Pillow 9.4 cannot read");
  const layout l = layout_of(t, f, name);
  const image_info info = info_of(l);
  check_pixel_limit(name, info.width, info.height, max_pixels);
  const int orientation = orientation_of(l);
  const plan p = plan_of(l, name);
  if (l.compression != COMPRESSION_NONE && !TIFFIsCODECConfigured(l.compression))
    unsupported(name, l, "compression (not built into libtiff)");
  if (l.compression == COMPRESSION_JPEG && l.photometric == PHOTOMETRIC_YCBCR) {
    // libjpeg converts YCbCr to RGB, as Pillow's libtiff decoder asks.
    if (!TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB)) fail(name, f, "JPEG color mode");
  }

  const std::size_t w = l.width, h = l.height;
  const bool separate = l.planar == PLANARCONFIG_SEPARATE && l.samples > 1;
  const std::size_t planes = separate ? l.samples : 1;
  const std::size_t plane_samples = separate ? 1 : l.samples;
  const std::size_t row_bytes = (w * plane_samples * l.bits + 7) / 8;
  // From here on every libtiff error means undefined pixels (read_plane):
  // forget what opening recovered from.
  f.error.clear();
  // Contiguous raw samples, plane after plane when separate.
  std::vector<std::uint8_t> raw(row_bytes * h * planes);
  for (std::size_t s = 0; s < planes; ++s)
    read_plane(t, f, name, l, static_cast<std::uint16_t>(s), row_bytes, raw.data() + s * row_bytes * h);

  std::vector<std::uint8_t> palette;
  if (p.k == kind::palette) {
    std::uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
    if (!TIFFGetField(t, TIFFTAG_COLORMAP, &r, &g, &b) || !r || !g || !b) fail(name, f, "palette without colormap");
    const std::size_t n = std::size_t{1} << l.bits;
    palette.resize(n * 3);
    for (std::size_t i = 0; i < n; ++i) {
      // Pillow keeps the high byte of each 16-bit colormap entry.
      palette[3 * i] = static_cast<std::uint8_t>(r[i] >> 8);
      palette[3 * i + 1] = static_cast<std::uint8_t>(g[i] >> 8);
      palette[3 * i + 2] = static_cast<std::uint8_t>(b[i] >> 8);
    }
  }

  // The stored (unrotated) RGB goes to `rgb`: `out` itself when upright.
  image_buffer stored;
  image_buffer& rgb = orientation == 1 ? out : stored;
  rgb.reset(static_cast<int>(w), static_cast<int>(h), 3);
  // Sample c of pixel x on row y, as an 8/16/32-bit raw value.
  const std::size_t plane_size = row_bytes * h;
  const auto sample16 = [&](std::size_t y, std::size_t x, std::size_t c) {
    std::uint16_t v;
    const std::uint8_t* src = separate ? raw.data() + c * plane_size + y * row_bytes + 2 * x
                                       : raw.data() + y * row_bytes + 2 * (x * l.samples + c);
    std::memcpy(&v, src, 2);  // host order: libtiff swabs on read
    return v;
  };
  const auto sample8 = [&](std::size_t y, std::size_t x, std::size_t c) {
    return separate ? raw[c * plane_size + y * row_bytes + x] : raw[y * row_bytes + x * l.samples + c];
  };
  for (std::size_t y = 0; y < h; ++y) {
    std::uint8_t* o = rgb.data() + y * w * 3;
    const std::uint8_t* row = raw.data() + y * row_bytes;
    for (std::size_t x = 0; x < w; ++x, o += 3) {
      std::uint8_t px[3];
      switch (p.k) {
        case kind::gray:
        case kind::gray_inverted: {
          std::uint8_t g;
          if (l.format == SAMPLEFORMAT_IEEEFP) {
            // Mode "F": convert("RGB") truncates toward zero and clips.
            float v;
            std::memcpy(&v, row + 4 * x, 4);
            g = !(v > 0.0f) ? 0 : v >= 255.0f ? 255 : static_cast<std::uint8_t>(v);
          } else if (l.bits == 16) {
            // Mode "I;16": convert("RGB") clips at 255 (Convert.c i2rgb).
            g = static_cast<std::uint8_t>(std::min<std::uint16_t>(sample16(y, x, 0), 255));
          } else if (l.bits == 12) {
            // I;12 → I;16 (two samples in three bytes, most significant
            // first), then convert("RGB")'s clip at 255.
            const std::uint8_t* p3 = row + x / 2 * 3;
            const unsigned v = x % 2 == 0 ? (unsigned{p3[0]} << 4) | (p3[1] >> 4) : ((p3[1] & 0x0Fu) << 8) | p3[2];
            g = static_cast<std::uint8_t>(std::min(v, 255u));
          } else if (l.bits == 8) {
            g = sample8(y, x, 0);
          } else {
            g = scale_to_8(sub_byte(row, x, l.bits), l.bits);
          }
          if (p.k == kind::gray_inverted) g = static_cast<std::uint8_t>(255 - g);
          px[0] = px[1] = px[2] = g;
          break;
        }
        case kind::palette: {
          const unsigned i = l.bits == 8 ? row[x] : sub_byte(row, x, l.bits);
          std::memcpy(px, &palette[3 * i], 3);
          break;
        }
        case kind::rgb:
          for (std::size_t c = 0; c < 3; ++c)
            // 16-bit: Pillow's RGB;16L / RGB;16B unpackers keep the high byte.
            px[c] = l.bits == 16 ? static_cast<std::uint8_t>(sample16(y, x, c) >> 8) : sample8(y, x, c);
          if (p.premultiplied) {
            // Pillow's RGBa unpackers (8 bits, or the high bytes of 16):
            // alpha 0 is black, 255 as is, else v * 255 / a clipped.
            const unsigned a = l.bits == 16 ? sample16(y, x, 3) >> 8 : sample8(y, x, 3);
            for (std::uint8_t& v : px)
              v = a == 0 ? 0 : a == 255 ? v : static_cast<std::uint8_t>(std::min(255u, v * 255u / a));
          }
          break;
        case kind::cmyk: {
          // Pillow 9.4 Convert.c cmyk2rgb: (255 - k) scaled down by each ink.
          const int nk = 255 - sample8(y, x, 3);
          for (std::size_t c = 0; c < 3; ++c)
            px[c] = static_cast<std::uint8_t>(std::clamp(nk - muldiv255(sample8(y, x, c), nk), 0, 255));
          break;
        }
      }
      std::memcpy(o, px, 3);
    }
  }
  if (orientation != 1) apply_orientation(stored.view(), orientation, out);
  return info;
}

}  // namespace ringfeed::image::detail
