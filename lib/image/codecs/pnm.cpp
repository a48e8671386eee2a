// Netpbm PBM/PGM/PPM (P1-P6, plain ASCII and binary), read the way Pillow
// 9.4's PpmImagePlugin and convert("RGB") do it. A small reader of our own:
// stb_image reads only binary P5/P6, and Debian 12 has no maintained netpbm
// library. Scaling follows Pillow: maxval 255 is raw; any other maxval gives
// round(v / maxval * 255) (Python's round, half to even), except gray with
// maxval > 255, which Pillow opens as mode "I" scaled to 65535 and
// convert("RGB") then clips at 255.
#include <algorithm>

#include <ringfeed/text.hpp>
#include <cfenv>
#include <climits>
#include <cmath>
#include <optional>
#include <string>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {
namespace {

[[noreturn]] void fail(std::string_view name, const std::string& why) { throw image_error(name, "PNM: " + why); }

bool is_space(std::uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

struct pnm_header {
  int kind = 0;  // 1..6
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::uint32_t maxval = 1;
  std::size_t data_at = 0;
  [[nodiscard]] int bands() const { return kind == 3 || kind == 6 ? 3 : 1; }
  [[nodiscard]] bool plain() const { return kind <= 3; }
  [[nodiscard]] bool bitonal() const { return kind == 1 || kind == 4; }
};

// Python's int() of a token (Pillow calls it on every header and plain-data
// token): an optional sign, then digits with single underscores between
// them ("+5", "-0", "1_000"). Tokens are at most 10 characters, so the
// value fits. Anything else is no number.
std::optional<std::int64_t> python_int(std::string_view t) {
  std::size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) ++i;
  if (i == t.size()) return std::nullopt;
  std::int64_t v = 0;
  bool after_digit = false;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '_') {
      if (!after_digit || i + 1 == t.size()) return std::nullopt;
      after_digit = false;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    after_digit = true;
  }
  return negative ? -v : v;
}

// Pillow's _read_token: skips leading whitespace, drops "#..." up to CR/LF
// anywhere (even inside a token), ends at (and consumes) one whitespace.
std::int64_t read_token(const std::uint8_t* p, std::size_t n, std::size_t& pos, std::string_view name) {
  std::string token;
  while (token.size() <= 10) {
    if (pos >= n) break;
    const std::uint8_t c = p[pos++];
    if (is_space(c)) {
      if (token.empty()) continue;
      break;
    }
    if (c == '#') {
      while (pos < n) {
        const std::uint8_t e = p[pos++];
        if (e == '\r' || e == '\n') break;
      }
      continue;
    }
    token += static_cast<char>(c);
  }
  if (token.empty()) fail(name, "reached the end of the file while reading the header");
  if (token.size() > 10) fail(name, "header token too long");
  const std::optional<std::int64_t> v = python_int(token);
  if (!v) fail(name, "header token '" + escape_bytes(token) + "' is not a number");
  return *v;
}

pnm_header parse(std::span<const std::byte> bytes, std::string_view name) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n < 3 || p[0] != 'P' || p[1] < '1' || p[1] > '6' || !is_space(p[2])) fail(name, "unsupported magic");
  pnm_header h;
  h.kind = p[1] - '0';
  std::size_t pos = 3;
  h.width = read_token(p, n, pos, name);
  h.height = read_token(p, n, pos, name);
  // Pillow refuses to identify a file whose size is not positive.
  if (h.width <= 0 || h.height <= 0)
    fail(name, "the header declares a " + std::to_string(h.width) + "x" + std::to_string(h.height) + " image");
  if (h.width > 0xFFFFFFFF || h.height > 0xFFFFFFFF) fail(name, "header value too large");
  if (!h.bitonal()) {
    const std::int64_t maxval = read_token(p, n, pos, name);
    if (maxval <= 0 || maxval > 65535) fail(name, "maxval must be greater than 0 and less than 65536");
    h.maxval = static_cast<std::uint32_t>(maxval);
  }
  h.data_at = pos;
  return h;
}

image_info info_of(const pnm_header& h) {
  image_info info;
  info.format = image_format::pnm;
  info.width = static_cast<int>(std::min<std::int64_t>(h.width, INT32_MAX));
  info.height = static_cast<int>(std::min<std::int64_t>(h.height, INT32_MAX));
  info.components = h.bands();
  info.bit_depth = h.bitonal() ? 1 : (h.maxval > 255 ? 16 : 8);
  return info;
}

// Pillow: min(out_max, round(v / maxval * out_max)), then convert("RGB")
// clips mode "I" at 255.
std::uint8_t scale(std::uint32_t v, std::uint32_t maxval, double out_max) {
  const double r = std::nearbyint(static_cast<double>(v) / maxval * out_max);
  const double c = std::min(out_max, r);
  return static_cast<std::uint8_t>(std::min(c, 255.0));
}

// A plain-data value, which Python's int() lets be negative: Pillow's
// round(v / maxval * out_max) then o8() keeps the low byte of it for "L"
// and "RGB"; its mode "I" (o32, unsigned) cannot hold it: refused.
std::uint8_t scale_plain(std::int64_t v, std::uint32_t maxval, double out_max, std::string_view name) {
  if (v >= 0) return scale(static_cast<std::uint32_t>(v), maxval, out_max);
  const double r = std::nearbyint(static_cast<double>(v) / maxval * out_max);
  if (out_max > 255.0 && r != 0.0)
    fail(name, "negative value " + std::to_string(v) + " in a gray image of maxval " + std::to_string(maxval));
  return static_cast<std::uint8_t>(static_cast<std::int64_t>(r) & 255);
}

}  // namespace

image_info pnm_read_info(std::span<const std::byte> bytes, std::string_view name) {
  return info_of(parse(bytes, name));
}

image_info pnm_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                      std::uint64_t max_pixels) {
  const pnm_header h = parse(bytes, name);
  check_pixel_limit(name, h.width, h.height, max_pixels);
  const image_info info = info_of(h);
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  const std::size_t w = static_cast<std::size_t>(h.width);
  const std::size_t rows = static_cast<std::size_t>(h.height);
  const std::size_t bands = static_cast<std::size_t>(h.bands());
  const std::size_t samples = w * rows * bands;
  const std::size_t avail = n - h.data_at;
  // Gray with maxval > 255 is Pillow's mode "I" (scaled to 65535).
  const double out_max = (bands == 1 && h.maxval > 255) ? 65535.0 : 255.0;

  // Refuse truncated binary data before allocating.
  if (h.kind == 4) {
    if (avail / ((w + 7) / 8) < rows) fail(name, "image file is truncated");
  } else if (!h.plain()) {
    const std::size_t sample_bytes = h.maxval > 255 ? 2 : 1;
    if (avail / sample_bytes < samples) fail(name, "image file is truncated");
  } else if (avail < (h.kind == 1 ? samples : 1)) {
    // Plain PBM takes at least a byte a pixel. Plain PGM/PPM may hold just
    // one token: Pillow repeats a final token that lacks trailing whitespace.
    fail(name, "not enough image data");
  }
  out.reset(info.width, info.height, 3);
  std::uint8_t* o = out.data();
  const auto put = [&](std::size_t i, std::uint8_t v) {  // sample i of `samples`
    if (bands == 3) o[i] = v;
    else o[3 * i] = o[3 * i + 1] = o[3 * i + 2] = v;
  };
  const int rounding = std::fegetround();
  std::fesetround(FE_TONEAREST);
  struct restore {
    int mode;
    ~restore() { std::fesetround(mode); }
  } const restore_rounding{rounding};

  const std::uint8_t* d = p + h.data_at;
  switch (h.kind) {
    case 4: {
      const std::size_t stride = (w + 7) / 8;
      for (std::size_t y = 0; y < rows; ++y)
        for (std::size_t x = 0; x < w; ++x)
          put(y * w + x, (d[y * stride + x / 8] >> (7 - x % 8)) & 1 ? 0 : 255);
      break;
    }
    case 5: case 6:
      if (h.maxval == 255) {
        for (std::size_t i = 0; i < samples; ++i) put(i, d[i]);
      } else if (h.maxval < 256) {
        for (std::size_t i = 0; i < samples; ++i) put(i, scale(d[i], h.maxval, out_max));
      } else {
        for (std::size_t i = 0; i < samples; ++i)
          put(i, scale(static_cast<std::uint32_t>(d[2 * i] << 8 | d[2 * i + 1]), h.maxval, out_max));
      }
      break;
    default: {  // plain: comments run from '#' through CR/LF and vanish
      std::size_t i = 0;
      std::size_t pos = 0;
      std::string token;
      std::uint8_t last = 0;
      const auto flush = [&]() {
        if (token.empty() || i == samples) return;
        if (token.size() > 10) fail(name, "token too long in image data");
        const std::optional<std::int64_t> v = python_int(token);
        if (!v) fail(name, "invalid token '" + escape_bytes(token) + "' in image data");
        if (*v > h.maxval) fail(name, "channel value " + std::to_string(*v) + " larger than maxval");
        last = scale_plain(*v, h.maxval, out_max, name);
        put(i++, last);
        token.clear();
      };
      while (pos < avail && i < samples) {
        const std::uint8_t c = d[pos++];
        if (c == '#') {
          while (pos < avail && d[pos] != '\r' && d[pos] != '\n') ++pos;
          if (pos < avail) ++pos;
        } else if (h.kind == 1) {
          if (is_space(c)) continue;
          if (c != '0' && c != '1') fail(name, "invalid token in image data");
          put(i++, c == '1' ? 0 : 255);
        } else if (is_space(c)) {
          flush();
        } else {
          token += static_cast<char>(c);
          if (token.size() > 10) fail(name, "token too long in image data");
        }
      }
      if (!token.empty() && i < samples) {
        // Pillow 9.4 quirk: a token cut off by the end of the file (no
        // whitespace after it) is re-read until the image is full.
        flush();
        while (i < samples) put(i++, last);
      }
      if (i < samples) fail(name, "not enough image data");
      if (h.kind == 1 && pos > 0) {
        // Pillow checks every token of the 1 MiB block (ImageFile.SAFEBLOCK)
        // in which the image data ends, used or not.
        constexpr std::size_t block = std::size_t{1} << 20;
        const std::size_t end = std::min(avail, ((pos - 1) / block + 1) * block);
        while (pos < end) {
          const std::uint8_t c = d[pos++];
          if (c == '#') {
            while (pos < end && d[pos] != '\r' && d[pos] != '\n') ++pos;
          } else if (!is_space(c) && c != '0' && c != '1') {
            fail(name, "invalid token in image data");
          }
        }
      }
      break;
    }
  }
  return info;
}

}  // namespace ringfeed::image::detail
