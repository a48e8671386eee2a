// Private to geometry.cpp and geometry_transform.cpp: argument checks and
// row sizes both halves of the geometry ops use.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <ringfeed/image/image.hpp>

namespace ringfeed::image::geometry_detail {

[[noreturn]] inline void bad(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string(op) + ": " + why);
}

inline void check_source(const char* op, image_view src) {
  if (src.channels != 1 && src.channels != 3) bad(op, "images have 1 or 3 channels, got " + std::to_string(src.channels));
  if (src.width < 0 || src.height < 0) bad(op, "negative image size");
}

inline std::size_t row_bytes(int width, int channels) {
  return static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
}

}  // namespace ringfeed::image::geometry_detail
