// ringfeed::image::decoder — JPEG (libjpeg-turbo), PNG (libspng) and TIFF
// (libtiff) bytes to RGB pixels, matching Pillow's `Image.open(f).convert("RGB")`.
//
// Exact decodes use libjpeg-turbo's libjpeg API with the defaults Pillow uses
// (ISLOW DCT, fancy upsampling), so pixels equal Pillow's bit for bit:
// grayscale is replicated, CMYK/YCCK goes through Pillow's inverted-CMYK →
// RGB formula, progressive and arithmetic-coded files decode like any other.
// The format is found from the magic bytes, never the file name (ImageNet
// has a PNG named .JPEG). PNG: palette, gray (1–16 bit), 16-bit and alpha are
// converted as Pillow converts them (alpha dropped; 16-bit RGB keeps the
// high byte; 16-bit gray is clipped at 255, Pillow's "I" → "RGB" rule).
// TIFF: the first page, by the same rules, CMYK by Pillow's formula; layouts
// Pillow cannot convert are refused.
//
// Fast decodes (decode_scaled) use DCT-domain scaling (1/2, 1/4, 1/8) and
// region-of-interest decoding (jpeg_crop_scanline / jpeg_skip_scanlines):
// work is proportional to the region and the scale, not the file.
//
// Errors: every failure throws image_error naming the file and giving
// libjpeg-turbo's or libspng's reason. A truncated JPEG is an error
// (libjpeg's "Premature end of JPEG file" warning is fatal here), as are
// corrupt entropy data, empty and foreign files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image {

/// What the magic bytes say (whatever the file's extension).
enum class image_format : std::uint8_t { jpeg, png, webp, tiff, bmp, pnm };

/// Decodes refused before any pixel memory is allocated: more pixels than
/// this (Pillow's DecompressionBombError limit, 2 × 89,478,485) is a
/// decompression bomb, not an image. decode_options::max_pixels changes it.
inline constexpr std::uint64_t default_max_pixels = 178'956'970;

/// JPEG chroma subsampling of a YCbCr/YCCK file (`none` for grayscale,
/// RGB or CMYK components stored at full resolution, and for PNG).
enum class chroma_subsampling : std::uint8_t { none, s444, s422, s420, s440, s411, s441, other };

/// Header facts, for planning a decode.
struct image_info {
  image_format format = image_format::jpeg;
  int width = 0;            ///< stored width, before any EXIF orientation (TIFF: upright, as delivered)
  int height = 0;           ///< stored height
  int components = 0;       ///< JPEG: 1, 3 or 4 in the file; PNG: channels incl. alpha
  chroma_subsampling subsampling = chroma_subsampling::none;
  bool progressive = false;  ///< JPEG progressive (SOF2/SOF10)
  bool arithmetic = false;   ///< JPEG arithmetic-coded (SOF9/SOF10)
  int bit_depth = 8;         ///< PNG sample depth (1..16); 8 for JPEG
  /// EXIF orientation 1..8 (1 when absent or invalid). Always 1 for TIFF:
  /// its Orientation tag is applied by every decode, as Pillow's TIFF loader
  /// does on open, and width/height are the upright size.
  int orientation = 1;

  /// The size after applying `orientation` (5–8 swap width and height).
  [[nodiscard]] size2 oriented_size() const noexcept {
    return orientation >= 5 ? size2{height, width} : size2{width, height};
  }
};

/// Options of an exact decode.
struct decode_options {
  /// Rotate/flip by the EXIF orientation tag (JPEG, PNG eXIf, WebP), as
  /// PIL.ImageOps.exif_transpose on Image.open(f).convert("RGB"). Off by
  /// default: torchvision's loader never calls exif_transpose. TIFF is
  /// upright either way (Pillow applies its tag on open; see image_info).
  bool apply_exif_orientation = false;
  /// By default only libjpeg warnings that mean lost or corrupt data
  /// (premature end of file, corrupt entropy data, bad Huffman/arithmetic
  /// code, resync) are errors; benign ones ("extraneous bytes before
  /// marker", unknown JFIF revision, bogus ICC) are not, as in Pillow. True
  /// makes every warning an error.
  bool fail_on_any_warning = false;
  /// Images with more pixels than this are refused, naming the file and the
  /// size its header declares, before memory is allocated.
  std::uint64_t max_pixels = default_max_pixels;
};

/// A reduced decode: DCT-domain scale and a region of the scaled image.
struct scaled_request {
  int scale_denom = 1;  ///< 1, 2, 4 or 8: output is ceil(size / scale_denom)
  /// Region of the *scaled* image that must be exact; empty = whole image.
  crop_box region{};
  bool fail_on_any_warning = false;  ///< as decode_options
  std::uint64_t max_pixels = default_max_pixels;  ///< as decode_options
};

/// What decode_scaled() wrote into its buffer.
struct scaled_result {
  int scale_denom = 1;  ///< the scale used (PNG, TIFF: always 1)
  size2 scaled_size;    ///< size of the whole scaled image
  /// The rectangle of the scaled image that the buffer holds (buffer pixel
  /// (0, 0) is scaled pixel (held.left, held.top)). It contains the
  /// requested region; pixels of the requested region equal a full decode
  /// at this scale, pixels outside it may differ at the edge columns.
  crop_box held;
};

/// Decodes JPEG, PNG, WebP, TIFF, BMP and PNM (PBM/PGM/PPM) bytes to RGB.
/// Holds one libjpeg decompressor that is reused across images and reusable
/// scratch: after warm-up, JPEG decoding allocates only inside libjpeg (its
/// per-image pools); each PNG creates one libspng context, each WebP one
/// libwebp WebPAnimDecoder (two RGBA canvases), each TIFF one libtiff
/// handle. Move-only. Not thread-safe: one per worker thread.
class decoder {
 public:
  decoder();
  ~decoder();
  decoder(decoder&&) noexcept;
  decoder& operator=(decoder&&) noexcept;
  decoder(const decoder&) = delete;
  decoder& operator=(const decoder&) = delete;

  /// Reads the header only (JPEG markers up to the first scan; PNG IHDR;
  /// TIFF's first IFD).
  /// Throws image_error naming `name` for empty, foreign or corrupt headers.
  [[nodiscard]] image_info read_info(std::span<const std::byte> bytes, std::string_view name);

  /// Full decode to RGB (3 channels) in `out`, equal to Pillow's
  /// `Image.open(f).convert("RGB")` (then exif_transpose when asked).
  /// Returns the header facts. Throws image_error naming `name`.
  image_info decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                    const decode_options& options = {});

  /// Reduced decode to RGB for fast mode: DCT-domain scaling by
  /// 1/`scale_denom` and only the rows and columns around `region`. EXIF
  /// orientation is not applied (TIFF comes out upright, as from decode). Formats other than JPEG decode whole at scale 1. Throws
  /// image_error naming `name`; std::invalid_argument for a bad request.
  scaled_result decode_scaled(std::span<const std::byte> bytes, std::string_view name,
                              const scaled_request& request, image_buffer& out);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

/// The format the magic bytes announce, or nullopt (not JPEG, PNG, WebP, BMP or PNM).
[[nodiscard]] std::optional<image_format> detect_format(std::span<const std::byte> bytes) noexcept;

/// The libjpeg-turbo this build decodes with, as LIBJPEG_TURBO_VERSION_NUMBER
/// (2001005: 2.1.5). The pixel cache keys its entries by it: another
/// version may round differently.
[[nodiscard]] long jpeg_library_version() noexcept;

/// Size libjpeg gives a dimension decoded at 1/`denom`: ceil(size / denom).
[[nodiscard]] constexpr int scaled_dimension(int size, int denom) noexcept {
  return (size + denom - 1) / denom;
}

/// Applies EXIF `orientation` (1..8) to `src`, writing the result to `dst`
/// (reset to the oriented size), as PIL.ImageOps.exif_transpose does.
void apply_orientation(image_view src, int orientation, image_buffer& dst);

}  // namespace ringfeed::image
