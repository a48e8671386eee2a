// Helpers for the image tests: where the committed data lives, reading files
// and binary PNM goldens, comparing pixels.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ringfeed/image/image.hpp>
#include <ringfeed/image/decode.hpp>

#include "files.hpp"

namespace ringfeed::test::image_data {

/// tests/data/image in the source tree (this header sits in tests/support/).
inline std::filesystem::path dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "data" / "image";
}

inline std::filesystem::path dir_of_photos() { return dir() / "photos"; }

/// An ImageFolder at `root` with two classes, each holding a copy of the
/// committed photos (photos/): 16 JPEGs of assorted sizes. Returns root.
inline std::filesystem::path photo_folder(const std::filesystem::path& root) {
  for (int c = 0; c < 2; ++c) {
    const std::filesystem::path dir = root / ("class" + std::to_string(c));
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator(dir_of_photos()))
      std::filesystem::copy_file(e.path(), dir / e.path().filename());
  }
  return root;
}

using ringfeed::test::read_file;
using ringfeed::test::write_file;

/// A binary PPM (P6, RGB) or PGM (P5, gray) with maxval 255.
struct pnm {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<std::uint8_t> pixels;

  [[nodiscard]] ringfeed::image::image_view view() const {
    return {pixels.data(), width, height, channels, static_cast<std::ptrdiff_t>(width) * channels};
  }
};

inline pnm read_pnm(const std::filesystem::path& p) {
  const std::vector<std::byte> raw = read_file(p);
  std::size_t pos = 0;
  const auto token = [&]() {
    std::string t;
    while (pos < raw.size()) {
      const char c = static_cast<char>(raw[pos]);
      if (c == '#') {
        while (pos < raw.size() && static_cast<char>(raw[pos]) != '\n') ++pos;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        if (!t.empty()) break;
        ++pos;
        continue;
      } else {
        t += c;
        ++pos;
        continue;
      }
    }
    return t;
  };
  const std::string magic = token();
  pnm img;
  if (magic == "P6") img.channels = 3;
  else if (magic == "P5") img.channels = 1;
  else throw std::runtime_error(p.string() + ": not a binary PNM");
  img.width = std::stoi(token());
  img.height = std::stoi(token());
  if (std::stoi(token()) != 255) throw std::runtime_error(p.string() + ": maxval must be 255");
  ++pos;  // the single whitespace after maxval
  const std::size_t n = static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) *
                        static_cast<std::size_t>(img.channels);
  if (raw.size() < pos + n) throw std::runtime_error(p.string() + ": short pixel data");
  img.pixels.resize(n);
  std::memcpy(img.pixels.data(), raw.data() + pos, n);
  return img;
}

/// Packed copy of a view's pixels (rows concatenated).
inline std::vector<std::uint8_t> packed(ringfeed::image::image_view v) {
  std::vector<std::uint8_t> out;
  const std::size_t row = static_cast<std::size_t>(v.width) * static_cast<std::size_t>(v.channels);
  out.reserve(row * static_cast<std::size_t>(v.height));
  for (int y = 0; y < v.height; ++y) out.insert(out.end(), v.row(y), v.row(y) + row);
  return out;
}

struct diff_stats {
  double mean_abs = 0;
  int max_abs = 0;
  std::size_t differing = 0;
};

inline diff_stats compare(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (a.size() != b.size()) throw std::runtime_error("compare: sizes differ");
  diff_stats s;
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    sum += d;
    s.max_abs = std::max(s.max_abs, d);
    if (d != 0) ++s.differing;
  }
  s.mean_abs = a.empty() ? 0 : sum / static_cast<double>(a.size());
  return s;
}

/// Peak signal-to-noise ratio in dB for 8-bit data (infinity when equal).
inline double psnr(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (a.size() != b.size() || a.empty()) throw std::runtime_error("psnr: sizes differ");
  double se = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    se += d * d;
  }
  if (se == 0) return INFINITY;
  const double mse = se / static_cast<double>(a.size());
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

inline std::span<const std::uint8_t> as_u8(std::span<const std::byte> b) {
  return {reinterpret_cast<const std::uint8_t*>(b.data()), b.size()};
}

/// The reason of the image_error that decoding `bytes` as `name` throws,
/// CHECKing that the error names the file; "" and a failed check when the
/// bytes decode.
inline std::string decode_error_reason(ringfeed::image::decoder& d, std::span<const std::byte> bytes,
                                       const std::string& name) {
  namespace img = ringfeed::image;
  img::image_buffer out;
  try {
    (void)d.decode(bytes, name, out);
  } catch (const img::image_error& e) {
    CHECK(e.name() == name);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
    return e.reason();
  }
  FAIL_CHECK(name << " decoded; an error was expected");
  return std::string();
}

/// Fuzz-style robustness check of one input: read_info and decode either
/// succeed (with a buffer of the size the header gives) or throw
/// image_error naming `name`; anything else escapes and fails the test.
/// True when the decode succeeded.
inline bool decode_or_image_error(ringfeed::image::decoder& d, std::span<const std::byte> bytes,
                                  const std::string& name) {
  namespace img = ringfeed::image;
  img::image_buffer out;
  try {
    (void)d.read_info(bytes, name);
  } catch (const img::image_error& e) {
    CHECK(e.name() == name);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
  try {
    const img::image_info info = d.decode(bytes, name, out);
    CHECK(out.width() == info.width);
    CHECK(out.height() == info.height);
    return true;
  } catch (const img::image_error& e) {
    CHECK(e.name() == name);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
    return false;
  }
}

}  // namespace ringfeed::test::image_data
