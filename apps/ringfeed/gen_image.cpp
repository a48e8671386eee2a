#include "gen_image.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <turbojpeg.h>

namespace ringfeed::cli {

namespace {

// The scene is built in a Y/Cb/Cr-like space (Y in 0..255, chroma centred on
// 0) because photographs keep most of their detail in luminance and carry
// chroma at low frequency, which is also what makes 4:2:0 look right.
struct canvas {
  int w = 0;
  int h = 0;
  bool color = true;
  std::vector<float> base;    // low-frequency luminance: lighting, regions, objects
  std::vector<float> detail;  // band-limited texture, scaled by `gain`
  std::vector<float> gain;    // how textured each pixel is (sky smooth, grass busy)
  std::vector<float> cb;
  std::vector<float> cr;

  canvas(int width, int height, bool with_color) : w(width), h(height), color(with_color) {
    const auto n = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
    base.assign(n, 0.0f);
    detail.assign(n, 0.0f);
    gain.assign(n, 1.0f);
    if (color) {
      cb.assign(n, 0.0f);
      cr.assign(n, 0.0f);
    }
  }
  [[nodiscard]] std::size_t at(int x, int y) const noexcept {
    return static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
  }
};

constexpr float smoothstep01(float t) noexcept { return t * t * (3.0f - 2.0f * t); }
constexpr float clampf(float v, float lo, float hi) noexcept { return v < lo ? lo : (v > hi ? hi : v); }
inline int round_to_int(float v) noexcept { return static_cast<int>(std::floor(v + 0.5f)); }

// Runs f(0) .. f(n-1) in fixed blocks of 8. GCC 12 at -O2 only vectorizes
// loops whose trip count is a known multiple of the vector width, so this
// shape lets the hot per-row kernels below use SIMD; the tail runs scalar.
// The kernels take __restrict pointers (GCC will not version loops for
// aliasing at -O2) and stay out of line: once inlined, the restrict promise
// is lost and the loop is scalar again. Results are identical either way:
// every element is computed on its own, nothing is reassociated.
template <class F>
inline void blocked(std::size_t n, F&& f) {
  std::size_t x = 0;
  for (; x + 8 <= n; x += 8) {
    for (std::size_t k = 0; k < 8; ++k) f(x + k);
  }
  for (; x < n; ++x) f(x);
}

// out += a + (b - a) * t
[[gnu::noinline]] void add_lerp(float* __restrict out, const float* __restrict a, const float* __restrict b, float t,
                                std::size_t n) {
  blocked(n, [&](std::size_t x) { out[x] += a[x] + (b[x] - a[x]) * t; });
}

// Adds `grid` (gw columns, one value per `cell` pixels, shifted by ox, oy),
// interpolated up to w x h, to `dst`; smoothstep or linear weights. Separable:
// each grid row is interpolated across x once (`upper`, `lower`) and a pixel
// row only blends the two rows around it, a short contiguous loop.
void add_interpolated(std::vector<float>& dst, int w, int h, const std::vector<float>& grid, int gw, float cell,
                      float ox, float oy, bool smooth) {
  const float inv = 1.0f / cell;
  const auto weight = [smooth](float t) { return smooth ? smoothstep01(t) : t; };
  const auto uw = static_cast<std::size_t>(w);
  std::vector<int> ix(uw);
  std::vector<float> sx(uw);
  for (std::size_t x = 0; x < uw; ++x) {
    const float fx = (static_cast<float>(x) + ox) * inv;
    const int i = static_cast<int>(fx);
    ix[x] = i;
    sx[x] = weight(fx - static_cast<float>(i));
  }
  std::vector<float> upper(uw);
  std::vector<float> lower(uw);
  const auto interpolate_row = [&](int j, std::vector<float>& row) {
    const float* g = grid.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(gw);
    for (std::size_t x = 0; x < uw; ++x) {
      const int i = ix[x];
      row[x] = g[i] + (g[i + 1] - g[i]) * sx[x];
    }
  };
  int have = -1;  // the grid row now in `upper`
  for (int y = 0; y < h; ++y) {
    const float fy = (static_cast<float>(y) + oy) * inv;
    const int j = static_cast<int>(fy);
    if (j != have) {
      if (have >= 0 && j == have + 1) {
        std::swap(upper, lower);
      } else {
        interpolate_row(j, upper);
      }
      interpolate_row(j + 1, lower);
      have = j;
    }
    const float sy = weight(fy - static_cast<float>(j));
    add_lerp(dst.data() + static_cast<std::size_t>(y) * uw, upper.data(), lower.data(), sy, uw);
  }
}

// Adds value noise with the given cell size and amplitude to `dst` (w x h):
// a grid of random values in [-amp, amp] at a random offset, smoothstep-
// interpolated. Octaves of it with falling amplitudes give 1/f-like texture.
void add_value_noise(std::vector<float>& dst, int w, int h, float cell, float amp, content_rng& rng) {
  cell = std::max(cell, 1.0f);
  const int gw = static_cast<int>(static_cast<float>(w) / cell) + 3;
  const int gh = static_cast<int>(static_cast<float>(h) / cell) + 3;
  std::vector<float> grid(static_cast<std::size_t>(gw) * static_cast<std::size_t>(gh));
  for (auto& g : grid) g = rng.uniform(-amp, amp);
  const float ox = rng.uniform() * cell;
  const float oy = rng.uniform() * cell;
  add_interpolated(dst, w, h, grid, gw, cell, ox, oy, true);
}

// Octaves from cell `from` down to `to` (each half the previous), first
// amplitude `amp`, each next one times `persistence`.
void add_fractal_noise(std::vector<float>& dst, int w, int h, float from, float to, float amp, float persistence,
                       content_rng& rng) {
  for (float cell = from; cell >= to; cell *= 0.5f, amp *= persistence) {
    add_value_noise(dst, w, h, cell, amp, rng);
  }
}

// The same for a field with nothing finer than ~`to` >= 16 px: made at a
// quarter of the resolution and upsampled in one pass, which saves most of
// the per-octave full-size passes.
void add_smooth_field(std::vector<float>& dst, int w, int h, float from, float to, float amp, float persistence,
                      content_rng& rng) {
  constexpr int factor = 4;
  const int lw = w / factor + 2;
  const int lh = h / factor + 2;
  std::vector<float> low(static_cast<std::size_t>(lw) * static_cast<std::size_t>(lh), 0.0f);
  add_fractal_noise(low, lw, lh, from / factor, to / factor, amp, persistence, rng);
  add_interpolated(dst, w, h, low, lw, static_cast<float>(factor), 0.0f, 0.0f, false);
}

// A random unit vector, without sin/cos (libm results vary between versions).
std::pair<float, float> random_direction(content_rng& rng) noexcept {
  for (;;) {
    const float x = rng.uniform(-1.0f, 1.0f);
    const float y = rng.uniform(-1.0f, 1.0f);
    const float len2 = x * x + y * y;
    if (len2 > 0.01f && len2 <= 1.0f) {
      const float len = std::sqrt(len2);  // IEEE correctly rounded
      return {x / len, y / len};
    }
  }
}

// Sky above a wavy horizon, ground below: the commonest layout of a photo.
void paint_horizon(canvas& c, content_rng& rng) {
  const float scale = static_cast<float>(std::max(c.w, c.h));
  std::vector<float> line(static_cast<std::size_t>(c.w), rng.uniform(0.3f, 0.7f) * static_cast<float>(c.h));
  add_fractal_noise(line, c.w, 1, scale * 0.5f, 4.0f, static_cast<float>(c.h) * rng.uniform(0.02f, 0.12f), 0.5f, rng);
  const float sky_y = rng.uniform(150.0f, 235.0f);
  const float sky_grad = rng.uniform(-50.0f, 10.0f);  // usually brighter towards the top
  const float ground_y = rng.uniform(40.0f, 150.0f);
  const bool dusk = rng.chance(0.2f);
  const float sky_cb = dusk ? rng.uniform(-25.0f, 0.0f) : rng.uniform(5.0f, 30.0f);
  const float sky_cr = dusk ? rng.uniform(5.0f, 30.0f) : rng.uniform(-12.0f, 2.0f);
  const float ground_cb = rng.uniform(-25.0f, 0.0f);  // greens and browns
  const float ground_cr = rng.uniform(-15.0f, 15.0f);
  const float sky_gain = rng.uniform(0.1f, 0.5f);
  const float ground_gain = rng.uniform(0.9f, 1.6f);
  const float soft = rng.uniform(0.7f, 3.0f);
  for (int y = 0; y < c.h; ++y) {
    const float fy = static_cast<float>(y) / static_cast<float>(c.h);
    for (int x = 0; x < c.w; ++x) {
      const float ground =
          clampf((static_cast<float>(y) - line[static_cast<std::size_t>(x)]) / soft + 0.5f, 0.0f, 1.0f);
      const std::size_t i = c.at(x, y);
      const float sky = sky_y + sky_grad * (1.0f - fy);
      c.base[i] += sky + (ground_y - sky) * ground;
      c.gain[i] = sky_gain + (ground_gain - sky_gain) * ground;
      if (c.color) {
        c.cb[i] += sky_cb + (ground_cb - sky_cb) * ground;
        c.cr[i] += sky_cr + (ground_cr - sky_cr) * ground;
      }
    }
  }
}

// One object: an ellipse or a rotated rectangle with its own colour, shading,
// texture strength, optional stripes and an anti-aliased (sometimes defocused)
// edge, alpha-blended over what is already there.
void paint_object(canvas& c, float min_size, float max_size, content_rng& rng) {
  const float scale = static_cast<float>(std::max(c.w, c.h));
  const float cx = rng.uniform(-0.1f, 1.1f) * static_cast<float>(c.w);
  const float cy = rng.uniform(-0.1f, 1.1f) * static_cast<float>(c.h);
  const float rx = std::max(1.5f, rng.uniform(min_size, max_size) * scale);
  const float ry = std::max(2.0f, rx * rng.uniform(0.35f, 1.6f));
  const bool ellipse = rng.chance(0.55f);
  const auto [dc, ds] = random_direction(rng);
  const auto [lx, ly] = random_direction(rng);
  const float shade = rng.uniform(0.0f, 45.0f);
  const float oy = rng.uniform(25.0f, 225.0f);
  const float sat = rng.chance(0.3f) ? 45.0f : 18.0f;
  const float ocb = rng.uniform(-sat, sat);
  const float ocr = rng.uniform(-sat, sat);
  const float ogain = rng.uniform(0.15f, 1.8f);
  const float soft = rng.chance(0.12f) ? rng.uniform(3.0f, 9.0f) : rng.uniform(0.6f, 2.0f);
  const bool striped = rng.chance(0.2f);
  const float period = rng.uniform(4.0f, 28.0f);
  const float stripe_amp = striped ? rng.uniform(8.0f, 35.0f) : 0.0f;

  // Half the side of a box that holds the shape, rotated or not, and its soft edge.
  const float reach = (ellipse ? std::max(rx, ry) : std::sqrt(rx * rx + ry * ry)) + 2.0f * soft + 1.0f;
  const int x0 = std::max(0, static_cast<int>(std::floor(cx - reach)));
  const int x1 = std::min(c.w - 1, static_cast<int>(std::ceil(cx + reach)));
  const int y0 = std::max(0, static_cast<int>(std::floor(cy - reach)));
  const int y1 = std::min(c.h - 1, static_cast<int>(std::ceil(cy + reach)));
  const float rmin = std::min(rx, ry);
  const float inv_soft = 1.0f / soft;
  // Ellipse: cover is 0 beyond q = 1 + soft/2/rmin and 1 inside q = 1 -
  // soft/2/rmin, where q is the normalized radius; compare q squared first and
  // take the square root only in the band between.
  const float q_out = 1.0f + 0.5f * soft / rmin;
  const float q_in = std::max(0.0f, 1.0f - 0.5f * soft / rmin);
  const float q_out2 = q_out * q_out;
  const float q_in2 = q_in * q_in;
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) {
      const float dx = static_cast<float>(x) - cx;
      const float dy = static_cast<float>(y) - cy;
      const float u = dx * dc + dy * ds;
      const float v = dy * dc - dx * ds;
      float cover = 1.0f;
      if (ellipse) {
        const float qu = u / rx;
        const float qv = v / ry;
        const float q2 = qu * qu + qv * qv;
        if (q2 >= q_out2) continue;
        if (q2 > q_in2) cover = clampf(0.5f - (std::sqrt(q2) - 1.0f) * rmin * inv_soft, 0.0f, 1.0f);
      } else {
        const float d = std::max(std::abs(u) - rx, std::abs(v) - ry);  // signed distance, in pixels
        cover = clampf(0.5f - d * inv_soft, 0.0f, 1.0f);
      }
      if (cover <= 0.0f) continue;
      float target = oy + shade * (dx * lx + dy * ly) / reach;
      if (striped) {
        const float p = u / period;
        const float tri = 2.0f * std::abs(p - std::floor(p) - 0.5f);  // triangle wave 0..1
        target += stripe_amp * (tri - 0.5f);
      }
      const std::size_t i = c.at(x, y);
      c.base[i] += (target - c.base[i]) * cover;
      c.gain[i] += (ogain - c.gain[i]) * cover;
      if (c.color) {
        c.cb[i] += (ocb - c.cb[i]) * cover;
        c.cr[i] += (ocr - c.cr[i]) * cover;
      }
    }
  }
}

inline unsigned char to_byte(float v) noexcept {
  return static_cast<unsigned char>(static_cast<int>(std::min(std::max(v, 0.0f), 255.0f) + 0.5f));
}

// Final luminance of one row: texture scaled by gain, lighting, then grain
// and sensor noise scaled by the per-pixel jitter in (-1, 1).
[[gnu::noinline]] void compose_luma(float* __restrict lum, const float* __restrict base, const float* __restrict gain,
                                    const float* __restrict detail, const float* __restrict shade_x,
                                    const float* __restrict jitter, float light, float noise, float grain,
                                    std::size_t n) {
  blocked(n, [&](std::size_t x) {
    lum[x] = (base[x] + gain[x] * detail[x]) * (light - shade_x[x]) + (noise + grain * gain[x]) * jitter[x];
  });
}

// One row of Y, Cb, Cr (chroma centred on 0) to interleaved 8-bit RGB.
[[gnu::noinline]] void to_rgb(unsigned char* __restrict rgb, const float* __restrict lum, const float* __restrict cb,
                              const float* __restrict cr, std::size_t n) {
  blocked(n, [&](std::size_t x) {
    rgb[3 * x + 0] = to_byte(lum[x] + 1.402f * cr[x]);
    rgb[3 * x + 1] = to_byte(lum[x] - 0.344136f * cb[x] - 0.714136f * cr[x]);
    rgb[3 * x + 2] = to_byte(lum[x] + 1.772f * cb[x]);
  });
}

// Triangular-distributed in (-1, 1) from 32 random bits.
inline float triangular(std::uint64_t bits) noexcept {
  constexpr float unit = 1.0f / 65536.0f;
  return static_cast<float>(bits & 0xffffu) * unit + static_cast<float>((bits >> 16) & 0xffffu) * unit - 1.0f;
}

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept {
  std::uint64_t s = splitmix64(seed);
  s = splitmix64(s ^ stream);
  return splitmix64(s ^ (index * 0xd1b54a32d192ed03ULL));
}

bool image_spec::gray() const noexcept { return subsamp == TJSAMP_GRAY; }

std::string_view photo_mix_name(photo_mix mix) noexcept { return mix == photo_mix::large ? "large" : "imagenet"; }

namespace {

// A phone or camera photo of 1-4 megapixels (see draw_image_spec).
image_spec draw_large_spec(std::uint64_t seed) noexcept {
  content_rng rng(seed);
  image_spec s;
  s.content_seed = rng.next();

  const float r = rng.uniform();
  const float aspect = r < 0.5f ? 4.0f / 3.0f : (r < 0.8f ? 1.5f : 16.0f / 9.0f);
  // Megapixels uniform over [1, 4]: drawn a little inside, so that rounding
  // the sides to even numbers (at most -2 px and +-1 px) cannot leave it.
  const float pixels = rng.uniform(1.01f, 3.98f) * 1e6f;
  const int longer = std::min(2592, 2 * static_cast<int>(0.5f * std::sqrt(pixels * aspect)));
  const int shorter = 2 * round_to_int(0.5f * static_cast<float>(longer) / aspect);
  const bool landscape = rng.chance(0.7f);
  s.width = landscape ? longer : shorter;
  s.height = landscape ? shorter : longer;

  const float q = rng.uniform();
  s.quality = q < 0.30f ? 95 : (q < 0.55f ? 90 : (q < 0.65f ? 85 : rng.between(85, 95)));
  const float sub = rng.uniform();
  s.subsamp = sub < 0.85f ? TJSAMP_420 : (sub < 0.95f ? TJSAMP_422 : TJSAMP_444);
  s.progressive = rng.chance(0.08f);
  s.detail_pitch = rng.uniform(1.5f, 2.5f);
  return s;
}

}  // namespace

image_spec draw_image_spec(std::uint64_t seed, photo_mix mix) noexcept {
  if (mix == photo_mix::large) return draw_large_spec(seed);
  content_rng rng(seed);
  image_spec s;
  s.content_seed = rng.next();

  const float kind = rng.uniform();
  const float r = rng.uniform();
  const float aspect = r < 0.55f ? 4.0f / 3.0f : (r < 0.8f ? 1.5f : rng.uniform(1.0f, 1.8f));
  if (kind < 0.01f) {  // thumbnails and icons
    s.width = rng.between(32, 99);
    s.height = rng.between(32, 99);
  } else if (kind < 0.03f) {  // straight from a camera
    const int longer = rng.between(1024, 2000);
    const int shorter = round_to_int(static_cast<float>(longer) / aspect);
    const bool landscape = rng.chance(0.75f);
    s.width = landscape ? longer : shorter;
    s.height = landscape ? shorter : longer;
  } else if (rng.chance(0.75f)) {  // the typical 500x375 and its neighbours
    s.width = rng.chance(0.45f) ? 500 : rng.between(300, 800);
    s.height = std::clamp(round_to_int(static_cast<float>(s.width) / aspect), 250, 600);
  } else {
    s.height = rng.chance(0.5f) ? 500 : rng.between(400, 600);
    s.width = std::clamp(round_to_int(static_cast<float>(s.height) / aspect), 300, s.height);
  }

  const float q = rng.uniform();
  s.quality = q < 0.25f ? 90 : (q < 0.40f ? 95 : (q < 0.50f ? 75 : rng.between(75, 95)));

  const float sub = rng.uniform();
  if (rng.chance(0.03f)) {
    s.subsamp = TJSAMP_GRAY;
  } else {
    s.subsamp = sub < 0.80f ? TJSAMP_420 : (sub < 0.93f ? TJSAMP_444 : TJSAMP_422);
  }
  s.progressive = rng.chance(0.05f);
  return s;
}

void render_image(const image_spec& spec, std::vector<unsigned char>& out) {
  content_rng rng(spec.content_seed);
  const bool color = !spec.gray();
  canvas c(spec.width, spec.height, color);
  const int w = c.w;
  const int h = c.h;
  const float scale = static_cast<float>(std::max(w, h));

  // Lighting and large regions; an overall tint.
  add_smooth_field(c.base, w, h, scale * 0.8f, scale / 12.0f, rng.uniform(15.0f, 40.0f), 0.55f, rng);
  if (color) {
    float tint_cb = rng.uniform(-12.0f, 12.0f);
    float tint_cr = rng.uniform(-12.0f, 12.0f);
    if (spec.class_index >= 0) {
      // 16 chroma offsets around a circle of radius 16 (no libm: the table
      // is cos/sin of k·22.5° written out), used in a stride-7 order so that
      // neighbouring classes get distant colours.
      static constexpr float unit[16][2] = {
          {1.0f, 0.0f},        {0.92388f, 0.38268f},   {0.70711f, 0.70711f},   {0.38268f, 0.92388f},
          {0.0f, 1.0f},        {-0.38268f, 0.92388f},  {-0.70711f, 0.70711f},  {-0.92388f, 0.38268f},
          {-1.0f, 0.0f},       {-0.92388f, -0.38268f}, {-0.70711f, -0.70711f}, {-0.38268f, -0.92388f},
          {0.0f, -1.0f},       {0.38268f, -0.92388f},  {0.70711f, -0.70711f},  {0.92388f, -0.38268f}};
      const auto k = static_cast<std::size_t>(spec.class_index * 7 % 16);
      tint_cb = 16.0f * unit[k][0];
      tint_cr = 16.0f * unit[k][1];
    }
    for (auto& v : c.cb) v = tint_cb;
    for (auto& v : c.cr) v = tint_cr;
    add_smooth_field(c.cb, w, h, scale * 0.6f, scale / 8.0f, rng.uniform(4.0f, 14.0f), 0.5f, rng);
    add_smooth_field(c.cr, w, h, scale * 0.6f, scale / 8.0f, rng.uniform(4.0f, 14.0f), 0.5f, rng);
  }
  if (rng.chance(0.6f)) {
    paint_horizon(c, rng);
  } else {
    const float mean = rng.uniform(60.0f, 190.0f);
    for (auto& v : c.base) v += mean;
  }
  // A few large objects, then clutter.
  const int large = rng.between(2, 6);
  for (int k = 0; k < large; ++k) paint_object(c, 0.06f, 0.3f, rng);
  const int small = rng.between(0, 24);
  for (int k = 0; k < small; ++k) paint_object(c, 0.005f, 0.05f, rng);

  // Texture: octaves from mid-size blotches down to 2 px grain. How busy the
  // image is, and how fast detail falls off, vary per image like real photos.
  // A large photo's finest detail spans detail_pitch pixels: the octaves
  // stop there, and the pixel-scale grain and noise below are weaker by as
  // much (white noise averaged over pitch x pitch pixels).
  const float pitch = spec.detail_pitch;
  const float texture = rng.uniform(0.4f, 2.0f);  // smooth studio shot .. foliage
  const float busy = 28.0f * texture;
  const float roughness = rng.uniform(0.75f, 1.0f);
  add_fractal_noise(c.detail, w, h, std::min(scale / 10.0f, 64.0f * pitch), 1.5f * pitch, busy, roughness, rng);

  // Vignette, texture grain and sensor noise, then to 8-bit RGB (JFIF YCbCr
  // inverse). Row by row through small buffers to keep the loops simple.
  const float vignette = rng.uniform(0.0f, 0.35f) * 0.5f;
  const float noise = rng.uniform(1.5f, 5.0f) / pitch;  // sensor noise, everywhere
  const float grain = 22.0f * texture / pitch;          // pixel-scale texture, where textured
  content_rng pixel_rng(rng.next());
  const auto uw = static_cast<std::size_t>(w);
  std::vector<float> vignette_x(uw);
  for (std::size_t x = 0; x < uw; ++x) {
    const float nx = (static_cast<float>(x) - 0.5f * static_cast<float>(w)) / (0.5f * static_cast<float>(w));
    vignette_x[x] = vignette * nx * nx;
  }
  std::vector<float> jitter(uw + 1);
  std::vector<float> lum(uw);
  out.resize(uw * static_cast<std::size_t>(h) * (color ? 3 : 1));
  unsigned char* px = out.data();
  for (int y = 0; y < h; ++y) {
    const float ny = (static_cast<float>(y) - 0.5f * static_cast<float>(h)) / (0.5f * static_cast<float>(h));
    const float light = 1.0f - vignette * ny * ny;
    for (std::size_t x = 0; x < uw; x += 2) {  // two samples per draw
      const std::uint64_t bits = pixel_rng.next();
      jitter[x] = triangular(bits);
      jitter[x + 1] = triangular(bits >> 32);
    }
    const std::size_t row = c.at(0, y);
    compose_luma(lum.data(), c.base.data() + row, c.gain.data() + row, c.detail.data() + row, vignette_x.data(),
                 jitter.data(), light, noise, grain, uw);
    if (color) {
      to_rgb(px, lum.data(), c.cb.data() + row, c.cr.data() + row, uw);
      px += 3 * uw;
    } else {
      for (std::size_t x = 0; x < uw; ++x) *px++ = to_byte(lum[x]);
    }
  }
}

// --- jpeg_encoder --------------------------------------------------------------

struct jpeg_encoder::state {
  std::vector<unsigned char> pixels;
  std::vector<unsigned char> jpeg;
};

namespace {
struct tj_deleter {
  void operator()(void* h) const noexcept { tjDestroy(h); }
};
using tj_handle = std::unique_ptr<void, tj_deleter>;
}  // namespace

jpeg_encoder::jpeg_encoder() : m_state(std::make_unique<state>()) {}

jpeg_encoder::~jpeg_encoder() = default;
jpeg_encoder::jpeg_encoder(jpeg_encoder&&) noexcept = default;
jpeg_encoder& jpeg_encoder::operator=(jpeg_encoder&&) noexcept = default;

std::span<const unsigned char> jpeg_encoder::encode(const image_spec& spec) {
  render_image(spec, m_state->pixels);
  // A fresh handle per image (about 0.2 us). libturbojpeg 2.1.5 carries state
  // from one tjCompress2() to the next on the same handle: after a
  // TJFLAG_PROGRESSIVE call, later baseline calls come out different (and
  // visibly garbled), so reusing a handle would make each file depend on
  // which images its thread compressed before it.
  const tj_handle handle(tjInitCompress());
  if (!handle)
    throw std::runtime_error(std::string("cannot start the TurboJPEG compressor: ") + tjGetErrorStr2(nullptr));
  const unsigned long capacity = tjBufSize(spec.width, spec.height, spec.subsamp);
  if (capacity == static_cast<unsigned long>(-1)) {
    throw std::runtime_error(std::string("TurboJPEG: ") + tjGetErrorStr2(handle.get()));
  }
  m_state->jpeg.resize(capacity);
  unsigned char* buf = m_state->jpeg.data();
  unsigned long size = capacity;
  // NOREALLOC: tjBufSize is the worst case, so the reused buffer always fits.
  const int flags = TJFLAG_NOREALLOC | (spec.progressive ? TJFLAG_PROGRESSIVE : 0);
  if (tjCompress2(handle.get(), m_state->pixels.data(), spec.width, 0, spec.height,
                  spec.gray() ? TJPF_GRAY : TJPF_RGB, &buf, &size, spec.subsamp, spec.quality, flags) != 0) {
    throw std::runtime_error(std::string("TurboJPEG: ") + tjGetErrorStr2(handle.get()));
  }
  return {m_state->jpeg.data(), static_cast<std::size_t>(size)};
}

}  // namespace ringfeed::cli
