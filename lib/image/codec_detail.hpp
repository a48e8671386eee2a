// Private to lib/image: pieces of the decoder shared between its files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <ringfeed/image/image.hpp>
#include <ringfeed/image/jpeg.hpp>

namespace ringfeed::image::detail {

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
image_info png_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out);

/// Human name of a format we recognise but do not decode ("GIF", "BMP",
/// ...), or empty.
[[nodiscard]] std::string_view foreign_format_name(std::span<const std::byte> bytes) noexcept;

}  // namespace ringfeed::image::detail
