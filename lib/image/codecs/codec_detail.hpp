// Private to lib/image: pieces of the decoder shared between its files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <ringfeed/image/image.hpp>
#include <ringfeed/image/decode.hpp>

namespace ringfeed::image::detail {

/// JPEG headers decoder::read_info parsed so far, in this process (tests:
/// a path reads each image's header once).
[[nodiscard]] std::uint64_t jpeg_headers_read() noexcept;

/// The Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF payload
/// (starting at the "II*\0" / "MM\0*" header); 1 when absent or invalid.
[[nodiscard]] int exif_orientation_from_tiff(const std::uint8_t* data, std::size_t size) noexcept;

/// The EXIF orientation of a JPEG: walks the markers up to the first scan
/// and reads the first APP1 "Exif" segment, as Pillow does. 1 when absent.
[[nodiscard]] int jpeg_exif_orientation(std::span<const std::byte> bytes) noexcept;

/// PNG header facts (IHDR, and eXIf orientation). Throws image_error.
[[nodiscard]] image_info png_read_info(std::span<const std::byte> bytes, std::string_view name);

/// Whole-image PNG decode to RGB as Pillow's convert("RGB"). Throws
/// image_error naming `name` with libspng's reason.
image_info png_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels);

/// WebP header facts (canvas size, alpha, EXIF orientation). Throws image_error.
[[nodiscard]] image_info webp_read_info(std::span<const std::byte> bytes, std::string_view name);

/// WebP decode to RGB as Pillow's convert("RGB"): lossy, lossless, alpha
/// (dropped) and the first frame of an animation. Throws image_error.
image_info webp_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                       std::uint64_t max_pixels);

/// BMP (1/4/8/16/24/32-bit, uncompressed or BI_BITFIELDS; bmp.cpp).
[[nodiscard]] image_info bmp_read_info(std::span<const std::byte> bytes, std::string_view name);
image_info bmp_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels);

/// PBM/PGM/PPM, P1-P6, 8- and 16-bit (pnm.cpp).
[[nodiscard]] image_info pnm_read_info(std::span<const std::byte> bytes, std::string_view name);
image_info pnm_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels);


/// TIFF header facts of the first page (IFD0). Throws image_error.
[[nodiscard]] image_info tiff_read_info(std::span<const std::byte> bytes, std::string_view name);

/// Whole-image decode of a TIFF's first page to RGB as Pillow's
/// convert("RGB"). Throws image_error naming `name` with libtiff's reason,
/// or the layout Pillow would not convert either.
image_info tiff_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                       std::uint64_t max_pixels);

/// Throws image_error naming `name` when width × height is over
/// `max_pixels` (a decompression bomb) or either side is not positive.
void check_pixel_limit(std::string_view name, std::int64_t width, std::int64_t height, std::uint64_t max_pixels);

// --- formats other than JPEG (codecs.cpp dispatches to them) ---------------
// Each decodes the whole image to RGB exactly as Pillow 9.4's
// Image.open(f).convert("RGB") does, and throws image_error naming `name`
// and the reason for anything it cannot decode; none crashes on bad input.

/// The format the magic bytes name, JPEG included; nullopt if none.
[[nodiscard]] std::optional<image_format> sniff_format(std::span<const std::byte> bytes) noexcept;
/// Header facts of a non-JPEG image. Throws image_error.
[[nodiscard]] image_info read_info_other(image_format format, std::span<const std::byte> bytes, std::string_view name);
/// Whole-image decode of a non-JPEG image to RGB. Throws image_error.
image_info decode_other(image_format format, std::span<const std::byte> bytes, std::string_view name,
                        image_buffer& out, std::uint64_t max_pixels);

/// Human name of a format we recognise but do not decode ("GIF", "BMP",
/// ...), or empty.
[[nodiscard]] std::string_view foreign_format_name(std::span<const std::byte> bytes) noexcept;

}  // namespace ringfeed::image::detail
