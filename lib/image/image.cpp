#include <ringfeed/image/image.hpp>
#include <ringfeed/text.hpp>

#include <cstring>
#include <limits>
#include <string>

namespace ringfeed::image {

namespace {
std::string describe(std::string_view name, std::string_view reason) {
  std::string s;
  s.reserve(name.size() + reason.size() + 2);
  // The name is a path, bytes from outside: quoted escaped.
  s.append(escape_bytes(name)).append(": ").append(reason);
  return s;
}
}  // namespace

image_error::image_error(std::string_view name, std::string_view reason)
    : std::runtime_error(describe(name, reason)), m_name(name), m_reason(reason) {}

void image_buffer::reset(int width, int height, int channels) {
  if (width < 0 || height < 0 || channels < 1 || channels > 4)
    throw std::invalid_argument("image_buffer::reset: bad size " + std::to_string(width) + "x" +
                                std::to_string(height) + "x" + std::to_string(channels));
  const auto bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
                     static_cast<std::size_t>(channels);
  if (bytes > m_capacity) {
    // Grow geometrically-ish so a stream of slightly larger images does not
    // reallocate each time; contents need not survive.
    const std::size_t grown = bytes + bytes / 8;
    m_pixels = std::make_unique_for_overwrite<std::uint8_t[]>(grown);
    m_capacity = grown;
  }
  m_width = width;
  m_height = height;
  m_channels = channels;
}

void image_buffer::assign(image_view src) {
  reset(src.width, src.height, src.channels);
  const auto n = static_cast<std::size_t>(stride());
  if (n == 0) return;
  for (int y = 0; y < src.height; ++y) std::memcpy(m_pixels.get() + static_cast<std::size_t>(y) * n, src.row(y), n);
}

}  // namespace ringfeed::image
