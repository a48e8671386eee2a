// Random batches for the device resize tests (device_resize_tests.cpp on
// the host and the simulated device, device_resize_cuda_tests.cpp on a
// GPU): each image a decoded region holding what its resize reads,
// placed at an odd offset into one source buffer, with the CPU resampler's
// output (mirrored when flipped) as the expected bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <ringfeed/image/resample.hpp>

#include "../../lib/cuda/device_resize.hpp"

namespace ringfeed::test {

/// 16-byte aligned bytes (a table's home on the host).
class aligned_bytes {
 public:
  explicit aligned_bytes(std::size_t n)
      : m_n(n), m_p(static_cast<std::byte*>(::operator new(std::max<std::size_t>(n, 1), std::align_val_t{16}))) {}
  ~aligned_bytes() { ::operator delete(m_p, std::align_val_t{16}); }
  aligned_bytes(const aligned_bytes&) = delete;
  aligned_bytes& operator=(const aligned_bytes&) = delete;
  [[nodiscard]] std::byte* data() noexcept { return m_p; }
  [[nodiscard]] std::size_t size() const noexcept { return m_n; }

 private:
  std::size_t m_n;
  std::byte* m_p;
};

/// A batch: the images, their source and target buffers, the expected
/// target bytes. Target bytes no image owns hold `fill` and must keep it.
struct resize_batch {
  std::vector<cuda::resize_image> images;
  std::vector<std::uint8_t> source;
  std::vector<std::uint8_t> expected;  // the whole target after the resize
  std::size_t target_bytes = 0;
  std::string description;             // for INFO
  static constexpr std::uint8_t fill = 0xA5;
};

inline std::vector<std::uint8_t> resize_noise(std::size_t n, std::mt19937& rng) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng() >> 24);
  return v;
}

/// One random request: sizes up and down (or unchanged on an axis, so
/// passes are skipped), every filter, sometimes a box with fractional
/// edges, sometimes an output window.
inline image::resample_request random_request(std::mt19937& rng) {
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  image::resample_request rq;
  rq.input = {pick(1, 160), pick(1, 160)};
  rq.filter = static_cast<image::resample_filter>(pick(0, 4));
  const auto out_size = [&](int in) {
    switch (pick(0, 3)) {
      case 0: return in;                           // unchanged: the pass may be skipped
      case 1: return pick(1, std::max(1, in));     // down
      default: return pick(1, 2 * in + 20);        // up or down
    }
  };
  rq.output = {out_size(rq.input.width), out_size(rq.input.height)};
  if (pick(0, 2) == 0) {
    const auto edge = [&](int size, float& a, float& b) {
      a = static_cast<float>(pick(0, size * 4)) / 8.0f;  // in eighths of a pixel
      b = a + static_cast<float>(pick(0, size * 8)) / 8.0f;
      b = std::min(b, static_cast<float>(size));
      if (pick(0, 3) == 0) a = 0.0f;
    };
    image::resample_box box;
    edge(rq.input.width, box.x0, box.x1);
    edge(rq.input.height, box.y0, box.y1);
    rq.box = box;
  }
  if (pick(0, 2) == 0) {
    image::crop_box w;
    w.top = pick(0, rq.output.height - 1);
    w.left = pick(0, rq.output.width - 1);
    w.height = pick(1, rq.output.height - w.top);
    w.width = pick(1, rq.output.width - w.left);
    rq.window = w;
  }
  return rq;
}

/// A batch of 1..max_images random images: each decoded region is
/// resampler::source_region(request) of a noise image, exactly or with
/// margins, at a random gap after the previous one; outputs likewise in
/// the target.
inline resize_batch random_batch(std::mt19937& rng, int max_images = 5) {
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  resize_batch b;
  image::resampler rs;
  const int n = pick(1, max_images);
  std::vector<std::vector<std::uint8_t>> outputs;
  std::ostringstream what;
  for (int i = 0; i < n; ++i) {
    cuda::resize_image im;
    const image::resample_request rq = random_request(rng);  // of the whole image
    im.request = rq;
    im.flip = pick(0, 1) == 1;
    const auto full =
        resize_noise(static_cast<std::size_t>(rq.input.width) * static_cast<std::size_t>(rq.input.height) * 3, rng);
    const image::image_view full_view{full.data(), rq.input.width, rq.input.height, 3, rq.input.width * 3};
    // The decoded region: what the resize reads, or (a third of the time)
    // more of the image around it, as a decoder may give.
    image::crop_box region = image::resampler::source_region(rq);
    if (pick(0, 2) == 0) {
      const int left = pick(0, region.left);
      const int top = pick(0, region.top);
      region = {top, left, pick(region.bottom(), rq.input.height) - top, pick(region.right(), rq.input.width) - left};
    }
    im.request.src_left = region.left;
    im.request.src_top = region.top;
    im.src_width = region.width;
    im.src_height = region.height;
    const image::crop_box window =
        rq.window.empty() ? image::crop_box{0, 0, rq.output.height, rq.output.width} : rq.window;
    // The expected output: the CPU resampler on the whole image, mirrored when flipped.
    std::vector<std::uint8_t> out(static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height) *
                                  3);
    rs.resize(full_view, rq, {out.data(), window.width, window.height, 3, window.width * 3});
    if (im.flip)
      for (int y = 0; y < window.height; ++y)
        for (int x = 0; x < window.width / 2; ++x)
          for (int c = 0; c < 3; ++c)
            std::swap(out[(static_cast<std::size_t>(y) * window.width + x) * 3 + c],
                      out[(static_cast<std::size_t>(y) * window.width + (window.width - 1 - x)) * 3 + c]);
    // The region, packed, at a gap after the previous one.
    b.source.resize(b.source.size() + static_cast<std::size_t>(pick(0, 37)), 0x5A);
    im.src_offset = b.source.size();
    for (int y = 0; y < region.height; ++y) {
      const std::uint8_t* row = full_view.row(region.top + y) + static_cast<std::ptrdiff_t>(region.left) * 3;
      b.source.insert(b.source.end(), row, row + static_cast<std::ptrdiff_t>(region.width) * 3);
    }
    b.expected.resize(b.expected.size() + static_cast<std::size_t>(pick(0, 29)), resize_batch::fill);
    im.dst_offset = b.expected.size();
    b.expected.insert(b.expected.end(), out.begin(), out.end());
    b.images.push_back(im);
    what << "[" << rq.input.width << "x" << rq.input.height << " filter " << static_cast<int>(rq.filter) << " -> "
         << rq.output.width << "x" << rq.output.height;
    if (rq.box) what << " box " << rq.box->x0 << "," << rq.box->y0 << "," << rq.box->x1 << "," << rq.box->y1;
    if (!rq.window.empty())
      what << " window " << rq.window.left << "," << rq.window.top << " " << rq.window.width << "x" << rq.window.height;
    what << " region " << region.left << "," << region.top << " " << region.width << "x" << region.height
         << (im.flip ? " flip" : "") << "] ";
  }
  b.expected.resize(b.expected.size() + static_cast<std::size_t>(pick(0, 7)), resize_batch::fill);
  b.target_bytes = b.expected.size();
  b.description = what.str();
  return b;
}

/// "" when `got` is the batch's expected target, else where they first
/// differ: the byte, the image (or the gap) and the pixel, both values.
inline std::string first_difference(const resize_batch& b, const std::vector<std::uint8_t>& got) {
  if (got.size() != b.expected.size())
    return "target of " + std::to_string(got.size()) + " bytes, expected " + std::to_string(b.expected.size());
  const auto diff = std::mismatch(got.begin(), got.end(), b.expected.begin());
  if (diff.first == got.end()) return {};
  const auto at = static_cast<std::size_t>(diff.first - got.begin());
  std::ostringstream s;
  s << "byte " << at << ": got " << int{*diff.first} << ", expected " << int{*diff.second};
  for (std::size_t i = 0; i < b.images.size(); ++i) {
    const auto& rq = b.images[i].request;
    const int w = rq.window.empty() ? rq.output.width : rq.window.width;
    const int h = rq.window.empty() ? rq.output.height : rq.window.height;
    const std::size_t begin = b.images[i].dst_offset;
    const std::size_t end = begin + static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3;
    if (at >= begin && at < end) {
      const std::size_t px = (at - begin) / 3;
      s << " (image " << i << ", output pixel x " << px % static_cast<std::size_t>(w) << " y "
        << px / static_cast<std::size_t>(w) << " channel " << (at - begin) % 3 << ")";
      return s.str();
    }
  }
  s << " (between images)";
  return s.str();
}

}  // namespace ringfeed::test
