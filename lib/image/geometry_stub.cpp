// TEMPORARY stand-in for the geometry branch's geometry.cpp (merged next):
// only what the transform list needs to build and run its first tests.
#include <ringfeed/image/geometry.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <ringfeed/image/resample.hpp>
#include <ringfeed/image/transforms.hpp>

namespace ringfeed::image {

size2 resized_output_size(size2 in, const std::vector<int>& size, std::optional<int> max_size) {
  if (size.size() == 2) return {size[1], size[0]};
  size2 s = resized_size(in, size[0]);
  if (max_size) {
    const bool w_short = in.width <= in.height;
    int new_short = size[0];
    int new_long = w_short ? s.height : s.width;
    if (new_long > *max_size) {
      new_short = static_cast<int>(static_cast<double>(static_cast<long long>(*max_size) * new_short) / new_long);
      new_long = *max_size;
    }
    s = w_short ? size2{new_short, new_long} : size2{new_long, new_short};
  }
  return s;
}

void resize(image_view src, size2 out, interpolation interp, image_buffer& dst) {
  thread_local resampler rs;
  dst.reset(out.width, out.height, src.channels);
  static constexpr resample_filter map[] = {resample_filter::bilinear, resample_filter::bilinear,
                                            resample_filter::bicubic,  resample_filter::box,
                                            resample_filter::hamming,  resample_filter::lanczos};
  if (interp == interpolation::nearest) throw std::invalid_argument("resize: nearest not in this build yet");
  rs.resize(src, dst.view(), map[static_cast<int>(interp)]);
}

void crop(image_view src, crop_box b, image_buffer& dst) {
  dst.reset(b.width, b.height, src.channels);
  std::memset(dst.data(), 0, dst.size_bytes());
  for (int y = std::max(0, -b.top); y < b.height && b.top + y < src.height; ++y) {
    const int x0 = std::max(0, -b.left);
    const int x1 = std::min(b.width, src.width - b.left);
    if (x1 > x0)
      std::memcpy(dst.view().row(y) + x0 * src.channels, src.row(b.top + y) + (b.left + x0) * src.channels,
                  static_cast<std::size_t>(x1 - x0) * src.channels);
  }
}

}  // namespace ringfeed::image
