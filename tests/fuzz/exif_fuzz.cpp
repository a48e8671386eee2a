// libFuzzer target: EXIF orientation parsing, as the decoder runs it on every
// JPEG (the APP1 "Exif" segment before the first scan) and as PNG eXIf and
// WebP EXIF chunks run it on their TIFF-structured payload. Both must return
// an orientation in 1..8 whatever the bytes, never read outside them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../../lib/image/codecs/codec_detail.hpp"
#include "fuzz_support.hpp"

namespace detail = ringfeed::image::detail;
using ringfeed::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // An exact-size copy: ASan then catches a read one byte past the end.
  const std::vector<std::uint8_t> bytes(data, data + size);
  const int from_tiff = detail::exif_orientation_from_tiff(bytes.data(), bytes.size());
  require(from_tiff >= 1 && from_tiff <= 8, "TIFF-structured EXIF gives an orientation in 1..8");
  const int from_jpeg = detail::jpeg_exif_orientation(std::as_bytes(std::span(bytes)));
  require(from_jpeg >= 1 && from_jpeg <= 8, "a JPEG's EXIF gives an orientation in 1..8");
  return 0;
}
