// Geometry ops without resampling: torchvision's resized output size, crop,
// flips and pad (functional.py / functional_pil.py, ImageOps.expand,
// numpy's np.pad).
#include <ringfeed/image/geometry.hpp>

#include "geometry_detail.hpp"
#include "image/kernels/cpu_features.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringfeed::image {

namespace {

using geometry_detail::bad;
using geometry_detail::check_source;
using geometry_detail::row_bytes;

// Copies source columns `map[x]` (per output column) of one row; C is the
// channel count (a constant, so the copy unrolls).
template <int C>
void gather_row(const std::uint8_t* in, const int* map, int width, std::uint8_t* out) {
  for (int x = 0; x < width; ++x) {
    const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(map[x]) * C;
    for (int c = 0; c < C; ++c) out[x * C + c] = p[c];
  }
}

// numpy's np.pad index map along one axis of length n padded by (l, r):
// out[i] = in[map[i]]. edge clamps; reflect/symmetric replay numpy's
// iterative _set_reflect_both (chunks no longer than the current padded
// length, alternating left and right), which is not periodic when the
// padding exceeds the image; a 1-long axis repeats its pixel (numpy's
// legacy rule).
void pad_map(std::vector<int>& v, int n, int l, int r, padding_mode mode) {
  const int total = l + n + r;
  v.resize(static_cast<std::size_t>(total));
  for (int i = 0; i < total; ++i) v[static_cast<std::size_t>(i)] = std::clamp(i - l, 0, n - 1);
  if (mode == padding_mode::edge || n == 1) return;
  const bool include_edge = mode == padding_mode::symmetric;
  const int edge_offset = include_edge ? 1 : 0;
  int lp = l;
  int rp = r;
  while (lp > 0 || rp > 0) {
    const int old_length = total - rp - lp - (include_edge ? 0 : 1);
    if (lp > 0) {
      const int chunk = std::min(old_length, lp);
      const int start = lp - edge_offset + chunk;
      for (int k = 0; k < chunk; ++k) v[static_cast<std::size_t>(lp - chunk + k)] = v[static_cast<std::size_t>(start - k)];
      lp -= chunk;
    }
    if (rp > 0) {
      const int chunk = std::min(old_length, rp);
      const int start = total - rp + edge_offset - 2;
      for (int k = 0; k < chunk; ++k) v[static_cast<std::size_t>(total - rp + k)] = v[static_cast<std::size_t>(start - k)];
      rp -= chunk;
    }
  }
}

#if defined(__x86_64__)
// One RGB row of hflip, five pixels reversed per byte shuffle (the
// pipeline's flip_ssse3, out of place). Output pixels [x, x + 5) are input
// pixels [w - 5 - x, w - x); the load reads one byte past them, inside the
// row while x >= 1, and the store writes one byte past them, inside the
// row while x + 5 < w, rewritten by the next pixel. Needs w >= 2.
__attribute__((target("ssse3"))) void hflip_row_ssse3(const std::uint8_t* in, int w, std::uint8_t* out) {
  const __m128i reverse5 = _mm_setr_epi8(12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, -1);
  int x = 1;
  for (; x + 5 < w; x += 5) {
    const auto* from = reinterpret_cast<const __m128i*>(in + static_cast<std::ptrdiff_t>(w - 5 - x) * 3);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + static_cast<std::ptrdiff_t>(x) * 3),
                     _mm_shuffle_epi8(_mm_loadu_si128(from), reverse5));
  }
  for (; x < w; ++x) std::memcpy(out + x * 3, in + static_cast<std::ptrdiff_t>(w - 1 - x) * 3, 3);
  std::memcpy(out, in + static_cast<std::ptrdiff_t>(w - 1) * 3, 3);  // x = 0
}
#endif

}  // namespace

size2 resized_output_size(size2 in, const std::vector<int>& size, std::optional<int> max_size) {
  if (size.size() != 1 && size.size() != 2)
    bad("resize", "size must be an int or a 1 or 2 element sequence, not a " + std::to_string(size.size()) +
                      " element sequence");
  if (max_size && size.size() != 1)
    bad("resize", "max_size should only be passed if size specifies the length of the smaller edge");
  if (size.size() == 2) return {size[1], size[0]};
  const int w = in.width;
  const int h = in.height;
  const bool wide = !(w <= h);
  const long long shorter = wide ? h : w;
  const long long longer = wide ? w : h;
  const int requested = size[0];
  if (shorter == 0) bad("resize", "the image has a zero side");
  // Python: int(requested * long / short): an exact integer product, one
  // correctly rounded division, truncation toward zero.
  int new_short = requested;
  int new_long = static_cast<int>(static_cast<double>(requested * longer) / static_cast<double>(shorter));
  if (max_size) {
    if (*max_size <= requested)
      bad("resize", "max_size = " + std::to_string(*max_size) +
                        " must be strictly greater than the requested size for the smaller edge size = " +
                        std::to_string(requested));
    if (new_long > *max_size) {
      new_short = static_cast<int>(static_cast<double>(static_cast<long long>(*max_size) * new_short) /
                                   static_cast<double>(new_long));
      new_long = *max_size;
    }
  }
  return wide ? size2{new_long, new_short} : size2{new_short, new_long};
}

void crop(image_view src, crop_box box, image_buffer& dst) {
  check_source("crop", src);
  if (box.width < 0) bad("crop", "the box's right is less than its left (width " + std::to_string(box.width) + ")");
  if (box.height < 0) bad("crop", "the box's bottom is less than its top (height " + std::to_string(box.height) + ")");
  const int c = src.channels;
  dst.reset(box.width, box.height, c);
  // The part of the box inside the image; Pillow's ImagingCrop leaves the
  // rest 0.
  const int x0 = std::clamp(box.left, 0, src.width);
  const int x1 = std::clamp(box.right(), 0, src.width);
  const int y0 = std::clamp(box.top, 0, src.height);
  const int y1 = std::clamp(box.bottom(), 0, src.height);
  const bool full = x0 == box.left && x1 == box.right() && y0 == box.top && y1 == box.bottom();
  if (!full && dst.size_bytes() > 0) std::memset(dst.data(), 0, dst.size_bytes());
  if (x1 <= x0) return;
  const std::size_t n = row_bytes(x1 - x0, c);
  const std::size_t at = row_bytes(x0 - box.left, c);
  for (int y = y0; y < y1; ++y)
    std::memcpy(dst.view().row(y - box.top) + at, src.row(y) + row_bytes(x0, c), n);
}

void hflip(image_view src, image_buffer& dst) {
  check_source("hflip", src);
  dst.reset(src.width, src.height, src.channels);
  const mutable_image_view o = dst.view();
  const int w = src.width;
#if defined(__x86_64__)
  static const bool ssse3 = detail::cpu_has_avx2();  // AVX2 implies SSSE3
  if (src.channels == 3 && w >= 6 && ssse3) {
    for (int y = 0; y < src.height; ++y) hflip_row_ssse3(src.row(y), w, o.row(y));
    return;
  }
#endif
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = o.row(y);
    if (src.channels == 1) {
      for (int x = 0; x < w; ++x) out[w - 1 - x] = in[x];
    } else if (y + 1 < src.height && w > 0) {
      // RGB pixels moved 4 bytes at a time (as Pillow moves its 4-byte
      // pixels): the extra byte read lies in the next row, the extra byte
      // written is the next output pixel's, rewritten right after.
      const std::uint8_t* p = in + static_cast<std::ptrdiff_t>(w - 1) * 3;
      for (int x = 0; x < w - 1; ++x, p -= 3) {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        std::memcpy(out + 3 * x, &v, 4);
      }
      std::memcpy(out + 3 * (w - 1), in, 3);
    } else {
      for (int x = 0; x < w; ++x) std::memcpy(out + 3 * x, in + static_cast<std::ptrdiff_t>(w - 1 - x) * 3, 3);
    }
  }
}

void vflip(image_view src, image_buffer& dst) {
  check_source("vflip", src);
  dst.reset(src.width, src.height, src.channels);
  const std::size_t n = row_bytes(src.width, src.channels);
  for (int y = 0; y < src.height; ++y) std::memcpy(dst.view().row(src.height - 1 - y), src.row(y), n);
}

void pad(image_view src, int left, int top, int right, int bottom, padding_mode mode, fill_color fill,
         image_buffer& dst) {
  check_source("pad", src);
  const int c = src.channels;
  if (mode == padding_mode::constant) {
    // ImageOps.expand: a new image filled with `fill`, the source pasted at
    // (left, top); negative paddings move it out of the frame (a crop).
    const long long w = static_cast<long long>(left) + src.width + right;
    const long long h = static_cast<long long>(top) + src.height + bottom;
    if (w < 0 || h < 0) bad("pad", "width and height must be >= 0 (padding gives " + std::to_string(w) + "x" + std::to_string(h) + ")");
    dst.reset(static_cast<int>(w), static_cast<int>(h), c);
    const mutable_image_view o = dst.view();
    if (o.width == 0 || o.height == 0) return;
    const int x0 = std::max(0, -left);
    const int x1 = std::min(src.width, o.width - left);
    const int y0 = std::max(0, -top);
    const int y1 = std::min(src.height, o.height - top);
    // One row of fill, copied to the rows (and the borders of the rows)
    // the image does not cover.
    thread_local std::vector<std::uint8_t> fill_row;
    const std::size_t n = row_bytes(o.width, c);
    fill_row.resize(n);
    std::uint8_t* const f = fill_row.data();
    if (c == 1) {
      std::memset(f, fill[0], n);
    } else {
      for (std::size_t i = 0; i < n; i += 3) std::memcpy(f + i, fill.data(), 3);
    }
    const bool covered = x1 > x0;
    const std::size_t lb = covered ? row_bytes(x0 + left, c) : n;
    const std::size_t mid = covered ? row_bytes(x1 - x0, c) : 0;
    for (int y = 0; y < o.height; ++y) {
      std::uint8_t* out = o.row(y);
      const int sy = y - top;
      if (!covered || sy < y0 || sy >= y1) {
        std::memcpy(out, f, n);
        continue;
      }
      std::memcpy(out, f, lb);
      std::memcpy(out + lb, src.row(sy) + row_bytes(x0, c), mid);
      std::memcpy(out + lb + mid, f + lb + mid, n - lb - mid);
    }
    return;
  }
  // functional_pil.pad: negative paddings crop (img.crop), then np.pad.
  const int cl = std::max(0, -left);
  const int ct = std::max(0, -top);
  const int cr = std::max(0, -right);
  const int cb = std::max(0, -bottom);
  if (src.width - cr < cl) bad("pad", "negative padding crops more than the image's width");
  if (src.height - cb < ct) bad("pad", "negative padding crops more than the image's height");
  const image_view in = src.crop({ct, cl, src.height - cb - ct, src.width - cr - cl});
  const int pl = std::max(0, left);
  const int pt = std::max(0, top);
  const int pr = std::max(0, right);
  const int pb = std::max(0, bottom);
  if ((in.width == 0 || in.height == 0) &&
      ((in.height == 0 && pt + pb > 0) || (in.width == 0 && pl + pr > 0)))
    bad("pad", "can't extend an empty axis using modes other than 'constant'");
  dst.reset(in.width + pl + pr, in.height + pt + pb, c);
  if (dst.size_bytes() == 0) return;
  // Index maps kept per thread: no allocation per call after warm-up.
  thread_local std::vector<int> cols;
  thread_local std::vector<int> rows;
  pad_map(cols, in.width, pl, pr, mode);
  pad_map(rows, in.height, pt, pb, mode);
  for (int y = 0; y < dst.height(); ++y) {
    const std::uint8_t* r = in.row(rows[static_cast<std::size_t>(y)]);
    std::uint8_t* out = dst.view().row(y);
    // The middle is a straight copy; only the borders gather.
    std::memcpy(out + row_bytes(pl, c), r, row_bytes(in.width, c));
    if (c == 1) {
      gather_row<1>(r, cols.data(), pl, out);
      gather_row<1>(r, cols.data() + pl + in.width, pr, out + row_bytes(pl + in.width, 1));
    } else {
      gather_row<3>(r, cols.data(), pl, out);
      gather_row<3>(r, cols.data() + pl + in.width, pr, out + row_bytes(pl + in.width, 3));
    }
  }
}

}  // namespace ringfeed::image
