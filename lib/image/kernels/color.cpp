// Colour and pixel ops with Pillow 9.4's arithmetic (see color.hpp), written
// from its C and Python code:
// - Image.blend (libImaging/Blend.c): alpha is a C float; in1 + alpha ×
//   (in2 − in1) in float, truncated; outside [0, 1] clipped first.
// - convert("L") (Convert.c rgb2l): (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
// - convert("HSV") / back (Convert.c rgb2hsv_row, hsv2rgb): a mix of float
//   and double operations, reproduced type for type below.
// - ImageEnhance: Brightness / Contrast / Color / Sharpness are blends with a
//   "degenerate" image; where that image is a constant, the blend is a
//   256-entry table (same arithmetic, computed once per call).
// - Filter.c's 3×3 filter (SMOOTH for Sharpness): float sums in its order,
//   + 0.5, clip8 truncation; border pixels copied.
// - ImageOps point ops go through Image.point, which clips table entries to
//   0..255 (CLIP8).
#include <ringfeed/image/color.hpp>

#include "simd_clones.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ringfeed::image {
namespace {

using lut256 = std::array<std::uint8_t, 256>;

void check_image(image_view v, const char* op) {
  if (v.channels != 1 && v.channels != 3)
    throw std::invalid_argument(std::string(op) + ": images have 1 (L) or 3 (RGB) channels, not " +
                                std::to_string(v.channels));
  if (v.width < 0 || v.height < 0 || (v.data == nullptr && v.width > 0 && v.height > 0))
    throw std::invalid_argument(std::string(op) + ": bad image view");
}

void check_finite(double f, const char* op, const char* what) {
  if (!std::isfinite(f)) throw std::invalid_argument(std::string(op) + ": " + what + " must be finite");
}

std::size_t row_bytes(image_view v) {
  return static_cast<std::size_t>(v.width) * static_cast<std::size_t>(v.channels);
}

// Pillow's rgb2l.
inline std::uint8_t luma(const std::uint8_t* p) {
  return static_cast<std::uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

// Hot row loops get an AVX2 clone picked at load time (simd_clones.hpp):
// the same integer / float operations, wider vectors (2× here for the
// stride-3 luma loop).
#define RINGFEED_ROW_CLONES RINGFEED_AVX2_CLONES

// out[x] = L of the RGB pixel x, for n pixels.
RINGFEED_ROW_CLONES void luma_row(const std::uint8_t* in, std::uint8_t* out, int n) {
  for (int x = 0; x < n; ++x) out[x] = luma(in + 3 * x);
}

// One Blend.c output byte: `a` the degenerate image's, `b` the source's.
inline std::uint8_t blend_in_range(float alpha, int a, int b) {
  return static_cast<std::uint8_t>(static_cast<int>(static_cast<float>(a) + alpha * static_cast<float>(b - a)));
}
inline std::uint8_t blend_clipped(float alpha, int a, int b) {
  const float t = static_cast<float>(a) + alpha * static_cast<float>(b - a);
  // ≤ 0 → 0, ≥ 255 → 255, else truncation: the same as clamping first.
  return static_cast<std::uint8_t>(static_cast<int>(std::min(std::max(t, 0.0f), 255.0f)));
}
inline bool in_unit_range(float alpha) { return alpha >= 0.0f && alpha <= 1.0f; }

// blend(constant `a`, v, alpha) for every v.
lut256 blend_table(int a, float alpha) {
  lut256 t{};
  const bool inside = in_unit_range(alpha);
  for (int v = 0; v < 256; ++v)
    t[static_cast<std::size_t>(v)] = inside ? blend_in_range(alpha, a, v) : blend_clipped(alpha, a, v);
  return t;
}

void apply_lut(image_view src, const lut256& lut, image_buffer& dst) {
  dst.reset(src.width, src.height, src.channels);
  const std::size_t n = row_bytes(src);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (std::size_t x = 0; x < n; ++x) out[x] = lut[in[x]];
  }
}

// dst = f(src) byte by byte, for an f the vectorizer can inline.
template <class F>
void map_bytes(image_view src, image_buffer& dst, F f) {
  dst.reset(src.width, src.height, src.channels);
  const std::size_t n = row_bytes(src);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (std::size_t x = 0; x < n; ++x) out[x] = f(in[x]);
  }
}

// One table per channel (ImageOps on RGB: Image.point with 768 entries).
void apply_luts(image_view src, const std::array<lut256, 3>& luts, image_buffer& dst) {
  if (src.channels == 1) return apply_lut(src, luts[0], dst);
  dst.reset(src.width, src.height, 3);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int x = 0; x < src.width; ++x, in += 3, out += 3) {
      out[0] = luts[0][in[0]];
      out[1] = luts[1][in[1]];
      out[2] = luts[2][in[2]];
    }
  }
}

// Per-channel histograms (Image.histogram). Neighbouring pixels often
// share a value, and incrementing one counter twice in a row waits for the
// first store; alternate pixels therefore count into two 32-bit copies,
// summed into the 64-bit result every `block` pixels (before a copy can
// overflow). About 2x faster on photos; the counts are the same.
std::array<std::array<std::uint64_t, 256>, 3> histograms(image_view src) {
  std::array<std::array<std::uint64_t, 256>, 3> h{};
  std::array<std::array<std::uint32_t, 256>, 6> part{};  // [copy * 3 + channel]
  constexpr std::uint64_t block = std::uint64_t{1} << 30;
  std::uint64_t pending = 0;
  const auto flush = [&] {
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t v = 0; v < 256; ++v) h[k][v] += std::uint64_t{part[k][v]} + part[k + 3][v];
    part = {};
    pending = 0;
  };
  for (int y = 0; y < src.height; ++y) {
    if (pending + static_cast<std::uint64_t>(src.width) > block) flush();
    pending += static_cast<std::uint64_t>(src.width);
    const std::uint8_t* in = src.row(y);
    int x = 0;
    if (src.channels == 1) {
      for (; x + 1 < src.width; x += 2) {
        ++part[0][in[x]];
        ++part[3][in[x + 1]];
      }
      if (x < src.width) ++part[0][in[x]];
    } else {
      for (; x + 1 < src.width; x += 2, in += 6) {
        ++part[0][in[0]];
        ++part[1][in[1]];
        ++part[2][in[2]];
        ++part[3][in[3]];
        ++part[4][in[4]];
        ++part[5][in[5]];
      }
      if (x < src.width) {
        ++part[0][in[0]];
        ++part[1][in[1]];
        ++part[2][in[2]];
      }
    }
  }
  flush();
  return h;
}

// --- Convert.c's HSV, type for type -----------------------------------------

inline std::uint8_t clip8i(int v) { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); }

inline void rgb_to_hsv(const std::uint8_t* in, std::uint8_t* hsv) {
  const std::uint8_t r = in[0], g = in[1], b = in[2];
  const std::uint8_t maxc = std::max(r, std::max(g, b));
  const std::uint8_t minc = std::min(r, std::min(g, b));
  hsv[2] = maxc;
  if (minc == maxc) {
    hsv[0] = 0;
    hsv[1] = 0;
    return;
  }
  const float cr = static_cast<float>(maxc - minc);
  const float s = cr / static_cast<float>(maxc);
  // rc, gc, bc = (maxc − channel) / cr; only the two a branch reads.
  const auto part = [cr, maxc](std::uint8_t c) { return static_cast<float>(maxc - c) / cr; };
  float h;
  if (r == maxc) h = part(b) - part(g);
  else if (g == maxc) h = static_cast<float>(2.0 + static_cast<double>(part(r)) - static_cast<double>(part(b)));
  else h = static_cast<float>(4.0 + static_cast<double>(part(g)) - static_cast<double>(part(r)));
  // fmod(h / 6.0 + 1.0, 1.0): the argument lies in [5/6, 11/6), where fmod
  // is one exact subtraction.
  const double wrapped = static_cast<double>(h) / 6.0 + 1.0;
  h = static_cast<float>(wrapped >= 1.0 ? wrapped - 1.0 : wrapped);
  hsv[0] = clip8i(static_cast<int>(static_cast<double>(h) * 255.0));
  hsv[1] = clip8i(static_cast<int>(static_cast<double>(s) * 255.0));
}

// C's round() (half away from zero) for x ≥ 0, without a libm call: the
// fraction x − trunc(x) is exact.
inline int round_nonneg(double x) {
  const auto t = static_cast<std::int64_t>(x);
  return static_cast<int>(t + (x - static_cast<double>(t) >= 0.5 ? 1 : 0));
}

inline void hsv_to_rgb(std::uint8_t h, std::uint8_t s, std::uint8_t v, std::uint8_t* out) {
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const double h6 = static_cast<double>(static_cast<float>(h)) * 6.0 / 255.0;
  const int i = static_cast<int>(h6);  // floor: h6 ≥ 0
  const float f = static_cast<float>(h6 - static_cast<double>(static_cast<float>(i)));
  const float fs = static_cast<float>(static_cast<double>(static_cast<float>(s)) / 255.0);
  const double vf = static_cast<double>(static_cast<float>(v));
  // All three products are ≥ 0: fs ≤ 1 and 0 ≤ f < 1.
  const std::uint8_t p = clip8i(round_nonneg(vf * (1.0 - static_cast<double>(fs))));
  const std::uint8_t q = clip8i(round_nonneg(vf * (1.0 - static_cast<double>(fs * f))));
  const std::uint8_t t =
      clip8i(round_nonneg(vf * (1.0 - static_cast<double>(fs) * (1.0 - static_cast<double>(f)))));
  switch (i % 6) {
    case 0: out[0] = v; out[1] = t; out[2] = p; break;
    case 1: out[0] = q; out[1] = v; out[2] = p; break;
    case 2: out[0] = p; out[1] = v; out[2] = t; break;
    case 3: out[0] = p; out[1] = q; out[2] = v; break;
    case 4: out[0] = t; out[1] = p; out[2] = v; break;
    default: out[0] = v; out[1] = p; out[2] = q; break;
  }
}

// --- Filter.c's 3×3 SMOOTH ----------------------------------------------------

// Kernel entries as _filter computes them: FLOAT32 values / (float)13.
const float smooth_edge = 1.0f / 13.0f;
const float smooth_center = 5.0f / 13.0f;

// One filtered byte; a, b, c are the rows y+1, y, y−1 (Filter.c's in1, in0,
// in_1), x the byte index, d the channel count.
inline float smooth_at(const std::uint8_t* a, const std::uint8_t* b, const std::uint8_t* c, std::size_t x,
                       std::size_t d) {
  const float k = smooth_edge;
  float ss = 0.5f;
  ss += static_cast<float>(a[x - d]) * k + static_cast<float>(a[x]) * k + static_cast<float>(a[x + d]) * k;
  ss += static_cast<float>(b[x - d]) * k + static_cast<float>(b[x]) * smooth_center +
        static_cast<float>(b[x + d]) * k;
  ss += static_cast<float>(c[x - d]) * k + static_cast<float>(c[x]) * k + static_cast<float>(c[x + d]) * k;
  return ss;
}

// Filter.c's clip8 (≤ 0 → 0, ≥ 255 → 255, else truncation), branch-free.
inline std::uint8_t clip8f(float in) {
  return static_cast<std::uint8_t>(static_cast<int>(std::min(std::max(in, 0.0f), 255.0f)));
}

// The SMOOTH filter's bytes [d, n − d) of one row (the ends are copied).
RINGFEED_ROW_CLONES void smooth_row(const std::uint8_t* below, const std::uint8_t* in, const std::uint8_t* above,
                                    std::uint8_t* out, std::size_t n, std::size_t d) {
  for (std::size_t x = d; x < n - d; ++x) out[x] = clip8f(smooth_at(below, in, above, x, d));
}

// out[x] = blend(out[x], in[x]) for a row: `out` holds the degenerate image.
RINGFEED_ROW_CLONES void blend_row_in_place(std::uint8_t* out, const std::uint8_t* in, std::size_t n, float alpha) {
  if (in_unit_range(alpha))
    for (std::size_t x = 0; x < n; ++x) out[x] = blend_in_range(alpha, out[x], in[x]);
  else
    for (std::size_t x = 0; x < n; ++x) out[x] = blend_clipped(alpha, out[x], in[x]);
}

}  // namespace

void blend(image_view a, image_view b, double alpha, image_buffer& dst) {
  check_image(a, "blend");
  check_image(b, "blend");
  check_finite(alpha, "blend", "alpha");
  if (a.width != b.width || a.height != b.height || a.channels != b.channels)
    throw std::invalid_argument("blend: the two images differ in size or channels");
  const float al = static_cast<float>(alpha);
  if (al == 0.0f) return dst.assign(a);
  if (al == 1.0f) return dst.assign(b);
  dst.reset(a.width, a.height, a.channels);
  const std::size_t n = row_bytes(a);
  const bool inside = in_unit_range(al);
  for (int y = 0; y < a.height; ++y) {
    const std::uint8_t* p = a.row(y);
    const std::uint8_t* q = b.row(y);
    std::uint8_t* out = dst.view().row(y);
    if (inside)
      for (std::size_t x = 0; x < n; ++x) out[x] = blend_in_range(al, p[x], q[x]);
    else
      for (std::size_t x = 0; x < n; ++x) out[x] = blend_clipped(al, p[x], q[x]);
  }
}

void adjust_brightness(image_view src, double factor, image_buffer& dst) {
  check_image(src, "adjust_brightness");
  check_finite(factor, "adjust_brightness", "factor");
  apply_lut(src, blend_table(0, static_cast<float>(factor)), dst);
}

void adjust_contrast(image_view src, double factor, image_buffer& dst) {
  check_image(src, "adjust_contrast");
  check_finite(factor, "adjust_contrast", "factor");
  std::uint64_t sum = 0;
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    if (src.channels == 1)
      for (int x = 0; x < src.width; ++x) sum += in[x];
    else
      for (int x = 0; x < src.width; ++x) sum += luma(in + 3 * x);
  }
  const double count = static_cast<double>(src.width) * static_cast<double>(src.height);
  // ImageStat: mean = float sum / count; ImageEnhance: int(mean + 0.5).
  const int mean = count > 0 ? static_cast<int>(static_cast<double>(sum) / count + 0.5) : 0;
  apply_lut(src, blend_table(mean, static_cast<float>(factor)), dst);
}

void adjust_saturation(image_view src, double factor, image_buffer& dst) {
  check_image(src, "adjust_saturation");
  check_finite(factor, "adjust_saturation", "factor");
  // On L, the degenerate image is src itself: blend(src, src) = src.
  if (src.channels == 1) return dst.assign(src);
  const float al = static_cast<float>(factor);
  if (al == 1.0f) return dst.assign(src);
  dst.reset(src.width, src.height, 3);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int x = 0; x < src.width; ++x) {  // the degenerate row: L as RGB
      const std::uint8_t l = luma(in + 3 * x);
      out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = l;
    }
    blend_row_in_place(out, in, row_bytes(src), al);
  }
}

void adjust_hue(image_view src, double hue_factor, image_buffer& dst) {
  check_image(src, "adjust_hue");
  if (!(hue_factor >= -0.5 && hue_factor <= 0.5))
    throw std::invalid_argument("adjust_hue: hue_factor " + std::to_string(hue_factor) + " is not in [-0.5, 0.5]");
  if (src.channels == 1) return dst.assign(src);
  // np.uint8(hue_factor * 255): truncate toward zero, wrap modulo 256.
  const auto shift = static_cast<std::uint8_t>(static_cast<int>(hue_factor * 255.0));
  dst.reset(src.width, src.height, 3);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    for (int x = 0; x < src.width; ++x, in += 3, out += 3) {
      std::uint8_t hsv[3];
      rgb_to_hsv(in, hsv);
      hsv_to_rgb(static_cast<std::uint8_t>(hsv[0] + shift), hsv[1], hsv[2], out);
    }
  }
}

void to_grayscale(image_view src, int num_output_channels, image_buffer& dst) {
  check_image(src, "to_grayscale");
  if (num_output_channels != 1 && num_output_channels != 3)
    throw std::invalid_argument("to_grayscale: num_output_channels should be either 1 or 3, not " +
                                std::to_string(num_output_channels));
  if (src.channels == 1 && num_output_channels == 1) return dst.assign(src);
  dst.reset(src.width, src.height, num_output_channels);
  for (int y = 0; y < src.height; ++y) {
    const std::uint8_t* in = src.row(y);
    std::uint8_t* out = dst.view().row(y);
    if (src.channels == 1) {
      for (int x = 0; x < src.width; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
    } else if (num_output_channels == 1) {
      luma_row(in, out, src.width);
    } else {
      for (int x = 0; x < src.width; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = luma(in + 3 * x);
    }
  }
}

void adjust_sharpness(image_view src, double factor, image_buffer& dst) {
  check_image(src, "adjust_sharpness");
  check_finite(factor, "adjust_sharpness", "factor");
  const float al = static_cast<float>(factor);
  // Filter.c copies images smaller than the kernel: blend(src, src) = src.
  if (src.width < 3 || src.height < 3 || al == 1.0f) return dst.assign(src);
  dst.reset(src.width, src.height, src.channels);
  const auto d = static_cast<std::size_t>(src.channels);
  const std::size_t n = row_bytes(src);
  // Border rows and columns: the degenerate image equals src there, and
  // blend(v, v) = v.
  std::memcpy(dst.view().row(0), src.row(0), n);
  std::memcpy(dst.view().row(src.height - 1), src.row(src.height - 1), n);
  for (int y = 1; y < src.height - 1; ++y) {
    const std::uint8_t* above = src.row(y - 1);
    const std::uint8_t* in = src.row(y);
    const std::uint8_t* below = src.row(y + 1);
    std::uint8_t* out = dst.view().row(y);
    std::memcpy(out, in, d);
    std::memcpy(out + n - d, in + n - d, d);
    smooth_row(below, in, above, out, n, d);
    blend_row_in_place(out + d, in + d, n - 2 * d, al);
  }
}

void posterize(image_view src, int bits, image_buffer& dst) {
  check_image(src, "posterize");
  if (bits < 0 || bits > 8)
    throw std::invalid_argument("posterize: the number of bits should be between 0 and 8, not " +
                                std::to_string(bits));
  const auto mask = static_cast<std::uint8_t>(~((1 << (8 - bits)) - 1));
  map_bytes(src, dst, [mask](std::uint8_t v) { return static_cast<std::uint8_t>(v & mask); });
}

void solarize(image_view src, double threshold, image_buffer& dst) {
  check_image(src, "solarize");
  if (std::isnan(threshold)) throw std::invalid_argument("solarize: threshold is NaN");
  // v < threshold exactly as Python compares an int with a float.
  const int first = threshold > 255.0 ? 256 : threshold <= 0.0 ? 0 : static_cast<int>(std::ceil(threshold));
  if (first == 0) return invert(src, dst);
  // v < first ⟺ v ≤ last, in bytes: the loop vectorizes 16 or 32 lanes wide.
  const auto last = static_cast<std::uint8_t>(first - 1);
  map_bytes(src, dst, [last](std::uint8_t v) { return v <= last ? v : static_cast<std::uint8_t>(255 - v); });
}

void autocontrast(image_view src, image_buffer& dst) {
  check_image(src, "autocontrast");
  const auto h = histograms(src);
  std::array<lut256, 3> luts{};
  for (std::size_t k = 0; k < static_cast<std::size_t>(src.channels); ++k) {
    int lo = 0;
    while (lo < 255 && h[k][static_cast<std::size_t>(lo)] == 0) ++lo;
    int hi = 255;
    while (hi > 0 && h[k][static_cast<std::size_t>(hi)] == 0) --hi;
    for (int v = 0; v < 256; ++v) {
      int out = v;
      if (hi > lo) {
        const double scale = 255.0 / (hi - lo);
        const double offset = -lo * scale;
        out = std::clamp(static_cast<int>(v * scale + offset), 0, 255);
      }
      luts[k][static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(out);
    }
  }
  apply_luts(src, luts, dst);
}

void equalize(image_view src, image_buffer& dst) {
  check_image(src, "equalize");
  const auto h = histograms(src);
  std::array<lut256, 3> luts{};
  for (std::size_t k = 0; k < static_cast<std::size_t>(src.channels); ++k) {
    std::uint64_t total = 0;
    std::uint64_t last = 0;
    int used = 0;
    for (std::uint64_t c : h[k]) {
      if (c == 0) continue;
      total += c;
      last = c;
      ++used;
    }
    const std::uint64_t step = used <= 1 ? 0 : (total - last) / 255;
    std::uint64_t n = step / 2;
    for (std::size_t v = 0; v < 256; ++v) {
      luts[k][v] = step == 0 ? static_cast<std::uint8_t>(v)
                             : static_cast<std::uint8_t>(std::min<std::uint64_t>(n / step, 255));
      n += h[k][v];
    }
  }
  apply_luts(src, luts, dst);
}

void invert(image_view src, image_buffer& dst) {
  check_image(src, "invert");
  map_bytes(src, dst, [](std::uint8_t v) { return static_cast<std::uint8_t>(255 - v); });
}

}  // namespace ringfeed::image
