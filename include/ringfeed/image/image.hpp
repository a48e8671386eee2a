// ringfeed::image — pixel views, a reusable pixel buffer and the image
// layer's error type.
//
// Pixels are 8-bit, interleaved (HWC), `channels` per pixel (3 = RGB), rows
// `stride` bytes apart. Views never own; image_buffer owns and keeps its
// capacity, so a worker that reuses one buffer stops allocating once it has
// seen its largest image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringfeed::image {

/// Thrown when an image cannot be decoded or transformed. `name()` is the
/// file name or path the caller passed in; `reason()` the library's words
/// (libjpeg-turbo's or libspng's message, or ours). what() is
/// "<name>: <reason>".
class image_error : public std::runtime_error {
 public:
  image_error(std::string_view name, std::string_view reason);

  [[nodiscard]] const std::string& name() const noexcept { return m_name; }
  [[nodiscard]] const std::string& reason() const noexcept { return m_reason; }

 private:
  std::string m_name;
  std::string m_reason;
};

/// A rectangle in pixels, in torchvision's (top, left, height, width) order.
/// top/left may be negative where a transform pads (center_crop of a small
/// image), never in a view's crop().
struct crop_box {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;

  [[nodiscard]] int bottom() const noexcept { return top + height; }
  [[nodiscard]] int right() const noexcept { return left + width; }
  [[nodiscard]] bool empty() const noexcept { return height <= 0 || width <= 0; }
  friend bool operator==(const crop_box&, const crop_box&) = default;
};

/// The rectangle `a` and `b` share (empty, at their far corner's top-left,
/// when they do not meet).
[[nodiscard]] inline crop_box intersect(const crop_box& a, const crop_box& b) noexcept {
  const int top = a.top > b.top ? a.top : b.top;
  const int left = a.left > b.left ? a.left : b.left;
  const int bottom = a.bottom() < b.bottom() ? a.bottom() : b.bottom();
  const int right = a.right() < b.right() ? a.right() : b.right();
  if (bottom <= top || right <= left) return {top, left, 0, 0};
  return {top, left, bottom - top, right - left};
}

/// A width × height pair.
struct size2 {
  int width = 0;
  int height = 0;
  friend bool operator==(const size2&, const size2&) = default;
};

/// Read-only view of interleaved 8-bit pixels.
struct image_view {
  const std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  std::ptrdiff_t stride = 0;  ///< bytes from one row to the next

  [[nodiscard]] const std::uint8_t* row(int y) const noexcept { return data + y * stride; }
  [[nodiscard]] size2 size() const noexcept { return {width, height}; }
  /// The sub-rectangle `b`, which must lie inside this view.
  [[nodiscard]] image_view crop(const crop_box& b) const noexcept {
    return {data + b.top * stride + static_cast<std::ptrdiff_t>(b.left) * channels, b.width, b.height,
            channels, stride};
  }
};

/// Rows [top, top + rows.height) of a decoded image of `size`, all of its
/// columns: what a reader kept when the transforms need only some rows
/// (pipeline::rows_read, a pixel cache hit).
struct image_rows {
  image_view rows;
  int top = 0;
  size2 size;
  [[nodiscard]] static image_rows whole(image_view v) noexcept { return {v, 0, v.size()}; }
};

/// Writable view of interleaved 8-bit pixels.
struct mutable_image_view {
  std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  std::ptrdiff_t stride = 0;  ///< bytes from one row to the next

  [[nodiscard]] std::uint8_t* row(int y) const noexcept { return data + y * stride; }
  [[nodiscard]] size2 size() const noexcept { return {width, height}; }
  /// The sub-rectangle `b`, which must lie inside this view.
  [[nodiscard]] mutable_image_view crop(const crop_box& b) const noexcept {
    return {data + b.top * stride + static_cast<std::ptrdiff_t>(b.left) * channels, b.width, b.height,
            channels, stride};
  }
  operator image_view() const noexcept { return {data, width, height, channels, stride}; }
};

/// An owned, tightly packed (stride = width × channels) pixel buffer that
/// keeps its capacity: reset() to a size that fits allocates nothing and
/// leaves the contents unspecified. Move-only. Not thread-safe.
class image_buffer {
 public:
  image_buffer() noexcept = default;
  image_buffer(int width, int height, int channels) { reset(width, height, channels); }
  image_buffer(image_buffer&&) noexcept = default;
  image_buffer& operator=(image_buffer&&) noexcept = default;
  image_buffer(const image_buffer&) = delete;
  image_buffer& operator=(const image_buffer&) = delete;

  /// Makes this a width × height × channels image; grows the storage only
  /// when the capacity is too small. Throws std::invalid_argument for
  /// negative sizes or channels outside 1..4.
  void reset(int width, int height, int channels);
  /// Makes this a copy of `src` (which must not view this buffer).
  void assign(image_view src);

  [[nodiscard]] image_view view() const noexcept {
    return {m_pixels.get(), m_width, m_height, m_channels, stride()};
  }
  [[nodiscard]] mutable_image_view view() noexcept {
    return {m_pixels.get(), m_width, m_height, m_channels, stride()};
  }
  [[nodiscard]] std::uint8_t* data() noexcept { return m_pixels.get(); }
  [[nodiscard]] const std::uint8_t* data() const noexcept { return m_pixels.get(); }
  [[nodiscard]] int width() const noexcept { return m_width; }
  [[nodiscard]] int height() const noexcept { return m_height; }
  [[nodiscard]] int channels() const noexcept { return m_channels; }
  [[nodiscard]] std::ptrdiff_t stride() const noexcept {
    return static_cast<std::ptrdiff_t>(m_width) * m_channels;
  }
  /// Bytes of pixels held now (width × height × channels).
  [[nodiscard]] std::size_t size_bytes() const noexcept {
    return static_cast<std::size_t>(stride()) * static_cast<std::size_t>(m_height);
  }
  /// Bytes the buffer can hold without allocating.
  [[nodiscard]] std::size_t capacity() const noexcept { return m_capacity; }

 private:
  std::unique_ptr<std::uint8_t[]> m_pixels;
  std::size_t m_capacity = 0;
  int m_width = 0;
  int m_height = 0;
  int m_channels = 0;
};

}  // namespace ringfeed::image
