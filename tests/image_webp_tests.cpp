// WebP: Pillow's pixels bit for bit (lossy, lossless, alpha, grayscale
// source, the first frame of an animation) on files Debian's python3 writes
// at test time (Pillow 9.4 decodes with the same libwebp); truncated and
// bit-flipped files fail with image_error naming the file, never a crash;
// a header declaring a bomb is refused before anything is allocated.
// Skipped (exit 77, with the reason) where that Pillow lacks WebP.
#include <catch2/catch.hpp>

#include <ringfeed/image/jpeg.hpp>
#include <ringfeed/random.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

std::string python() {
  const char* p = std::getenv("RINGFEED_TEST_PYTHON");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

std::string missing_webp() {
  const std::string cmd = python() +
                          " -c 'import sys, numpy; from PIL import features; "
                          "sys.exit(0 if features.check(\"webp\") and features.check(\"webp_anim\") else 1)'"
                          " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) == 0) return "";
  return python() + " lacks numpy or Pillow with WebP (and WebP animation) support (apt-get install -y "
                    "python3-pil python3-numpy, or set RINGFEED_TEST_PYTHON); the WebP tests need it to "
                    "write their files and Pillow's decode of them";
}

ringfeed::test::skip_if_unavailable skip{missing_webp};

// The reference files, written once per process.
const std::filesystem::path& reference_dir() {
  static ringfeed::test::temp_dir tmp;
  static const bool made = [] {
    const std::string cmd =
        python() + " " + (data::dir() / "webp_reference.py").string() + " " + tmp.path().string();
    return std::system(cmd.c_str()) == 0;
  }();
  if (!made) throw std::runtime_error("webp_reference.py failed");
  return tmp.path();
}

std::vector<std::string> reference_names() {
  std::ifstream manifest(reference_dir() / "manifest.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(manifest, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

std::vector<std::byte> reference_file(const std::string& name) {
  return data::read_file(reference_dir() / (name + ".webp"));
}

// Decodes (and reads the header of) `bytes`: either succeeds or throws
// image_error naming `name`; anything else fails the test. Returns whether
// the decode succeeded.

}  // namespace

TEST_CASE("WebP decode equals Pillow's Image.open(f).convert('RGB')", "[image][webp]") {
  img::decoder d;
  img::image_buffer out;
  const auto names = reference_names();
  REQUIRE(names.size() >= 10);
  for (const std::string& name : names) {
    INFO(name);
    const auto bytes = reference_file(name);
    REQUIRE(img::detect_format(bytes) == img::image_format::webp);
    const data::pnm expected = data::read_pnm(reference_dir() / (name + ".webp.ppm"));
    const img::image_info info = d.decode(bytes, name, out);
    CHECK(info.format == img::image_format::webp);
    REQUIRE(out.channels() == 3);
    REQUIRE(out.width() == expected.width);
    REQUIRE(out.height() == expected.height);
    const auto stats = data::compare(data::packed(out.view()), expected.pixels);
    CHECK(stats.differing == 0);
    CHECK(stats.max_abs == 0);

    const img::image_info header = d.read_info(bytes, name);
    CHECK(header.format == img::image_format::webp);
    CHECK(header.width == expected.width);
    CHECK(header.height == expected.height);
    CHECK(header.components == (name.find("rgba") != std::string::npos ? 4 : 3));
    CHECK(header.orientation == 1);
  }
}

TEST_CASE("WebP: truncated and bit-flipped files fail cleanly", "[image][webp][robustness]") {
  img::decoder d;
  for (const std::string base : {"lossy", "lossless", "rgba_lossy", "animated"}) {
    const auto good = reference_file(base);
    const std::string name = "/data/" + base + "-damaged.webp";
    INFO(base);
    REQUIRE(data::decode_or_image_error(d, good, name));

    // Every truncation at ~40 lengths: the headers' edges and spread through.
    std::vector<std::size_t> lengths = {0, 1, 4, 8, 11, 12, 15, 16, 20, 24, 29, 30, 32, 40};
    for (std::size_t i = 1; i < 28; ++i) lengths.push_back(good.size() * i / 28);
    lengths.push_back(good.size() - 1);
    int failed = 0;
    for (const std::size_t n : lengths) {
      INFO("length " << n);
      if (!data::decode_or_image_error(d, std::span(good).first(n), name)) ++failed;
    }
    CHECK(failed >= static_cast<int>(lengths.size()) - 2);  // a truncated WebP never decodes

    // ~200 deterministic single-bit flips anywhere in the file.
    ringfeed::splitmix64_rng rng(0x5eb0'0000 + good.size());
    for (int i = 0; i < 200; ++i) {
      auto bad = good;
      const std::uint64_t r = rng.next();
      const std::size_t at = static_cast<std::size_t>(r % bad.size());
      bad[at] ^= static_cast<std::byte>(1u << ((r >> 32) % 8));
      INFO("bit " << ((r >> 32) % 8) << " of byte " << at);
      (void)data::decode_or_image_error(d, bad, name);
    }
  }
}

TEST_CASE("WebP: a header declaring 20000x20000 is refused as a decompression bomb", "[image][webp]") {
  // An animation's VP8X chunk carries the canvas size (24-bit width-1 at
  // byte 24, height-1 at 27); the frames stay small.
  auto bytes = reference_file("animated");
  REQUIRE(bytes.size() > 30);
  REQUIRE(std::string(reinterpret_cast<const char*>(bytes.data()) + 12, 4) == "VP8X");
  const std::uint32_t side = 20000 - 1;
  for (int k = 0; k < 3; ++k) {
    bytes[24 + k] = static_cast<std::byte>((side >> (8 * k)) & 0xFF);
    bytes[27 + k] = static_cast<std::byte>((side >> (8 * k)) & 0xFF);
  }
  img::decoder d;
  const img::image_info header = d.read_info(bytes, "bomb.webp");
  CHECK(header.width == 20000);
  CHECK(header.height == 20000);
  img::image_buffer out;
  try {
    (void)d.decode(bytes, "bomb.webp", out);
    FAIL("a 20000x20000 WebP decoded under the default max_pixels");
  } catch (const img::image_error& e) {
    CHECK(e.name() == "bomb.webp");
    CHECK(e.reason().find("decompression bomb") != std::string::npos);
    CHECK(e.reason().find("20000x20000") != std::string::npos);
  }
  CHECK(out.width() == 0);  // nothing was allocated for it
}
