// TIFF decoding: Pillow's Image.open(f).convert("RGB") bit for bit on every
// variant committed in tests/data/image/tiff/ (make_tiff.py, Debian 12's
// Pillow 9.4) against the committed goldens, re-checked against the live
// Pillow where a python with it is at hand; the first page of a multi-page
// file, refusals that name the file, a decompression bomb refused before
// allocating, and robustness against truncation and bit flips (CI runs this
// under ASan). Nothing here needs Python.
#include <catch2/catch.hpp>

#include <ringfeed/image/jpeg.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "golden_set.hpp"
#include "image_test_data.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

const data::golden_set& files() {
  static const data::golden_set set("tiff");
  return set;
}

}  // namespace

TEST_CASE("TIFF decode equals Pillow's convert('RGB') on every variant", "[image][tiff]") {
  const auto& g = files();
  CHECK(g.inconsistencies() == std::vector<std::string>{});
  const auto& names = g.names();
  // Every variant the brief names is there (Pillow read each one back).
  for (const char* want : {"rgb_raw", "rgb_tiff_lzw", "rgb_tiff_adobe_deflate", "rgb_packbits", "rgb_jpeg", "rgba",
                           "gray", "gray_jpeg", "gray16", "bilevel", "bilevel_g4", "palette", "cmyk", "la",
                           "multipage", "rgb16", "float32", "rgb_tiled", "rgb_planar", "rgb_ycbcr_jpeg",
                           "rgb16_tiled"}) {
    INFO(want);
    CHECK(std::find(names.begin(), names.end(), std::string(want) + ".tif") != names.end());
  }
  img::decoder d;
  img::image_buffer out;
  for (const auto& name : names) {
    INFO(name);
    const auto bytes = g.input(name);
    const data::pnm expected = g.golden(name);
    REQUIRE(img::detect_format(bytes) == img::image_format::tiff);
    const img::image_info info = d.read_info(bytes, name);
    CHECK(info.format == img::image_format::tiff);
    CHECK(info.width == expected.width);
    CHECK(info.height == expected.height);
    (void)d.decode(bytes, name, out);
    REQUIRE(out.channels() == 3);
    REQUIRE(out.width() == expected.width);
    REQUIRE(out.height() == expected.height);
    const auto stats = data::compare(data::packed(out.view()), expected.pixels);
    CHECK(stats.differing == 0);
    CHECK(stats.max_abs == 0);
  }
}

TEST_CASE("the TIFF goldens are the live Pillow's convert('RGB') of the committed files", "[image][tiff][pillow]") {
  data::check_goldens_against_live_pillow("tiff");
}

TEST_CASE("TIFF header facts and refusals name the file", "[image][tiff][errors]") {
  const auto& g = files();
  img::decoder d;
  CHECK(d.read_info(g.input("gray16.tif"), "g").bit_depth == 16);
  CHECK(d.read_info(g.input("rgba.tif"), "r").components == 4);
  CHECK(d.read_info(g.input("cmyk.tif"), "c").components == 4);

  img::image_buffer out;
  const auto error_of = [&](const std::vector<std::byte>& bytes, const std::string& name) {
    try {
      (void)d.decode(bytes, name, out);
    } catch (const img::image_error& e) {
      CHECK(e.name() == name);
      CHECK(std::string(e.what()).find(name) != std::string::npos);
      return e.reason();
    }
    return std::string();
  };
  // Only the header: libtiff's reason, not a crash or stderr noise.
  auto rgb = g.input("rgb_raw.tif");
  const std::vector<std::byte> header(rgb.begin(), rgb.begin() + 8);
  CHECK(error_of(header, "header.tif").find("TIFF") != std::string::npos);
  // 64-bit float samples: Pillow has no mode for them; neither do we.
  auto f64 = g.input("float32.tif");
  const auto patch16 = [](std::vector<std::byte>& b, std::size_t at, std::uint16_t v) {
    b[at] = static_cast<std::byte>(v & 0xff);
    b[at + 1] = static_cast<std::byte>(v >> 8);
  };
  // make_tiff.py writes the IFD entries of the hand-made float32.tif and
  // rgb16.tif from offset 10 in a fixed order: BitsPerSample is the third
  // (offset 10 + 2*12 + 8 for its value).
  patch16(f64, 10 + 2 * 12 + 8, 64);
  CHECK(error_of(f64, "f64.tif").find("unsupported") != std::string::npos);
  // A photometric interpretation Pillow does not open (CIELab = 8).
  auto lab = g.input("rgb16.tif");
  patch16(lab, 10 + 4 * 12 + 8, 8);
  CHECK(error_of(lab, "lab.tif").find("unsupported") != std::string::npos);
  // The decoder is still good for the next file; fast mode decodes TIFF
  // whole at scale 1.
  (void)d.decode(rgb, "rgb.tif", out);
  const auto expected = g.golden("rgb_raw.tif").pixels;
  CHECK(data::compare(data::packed(out.view()), expected).differing == 0);
  img::scaled_request request;
  request.scale_denom = 4;
  request.region = {0, 0, 23, 37};
  const img::scaled_result scaled = d.decode_scaled(rgb, "rgb.tif", request, out);
  CHECK(scaled.scale_denom == 1);
  CHECK(data::compare(data::packed(out.view()), expected).differing == 0);
}

TEST_CASE("a TIFF declaring 30000x30000 is refused before allocating", "[image][tiff][errors]") {
  const auto& g = files();
  auto bytes = g.input("float32.tif");
  // ImageWidth and ImageLength (LONG) are the first two IFD entries.
  const auto patch32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
  };
  patch32(10 + 8, 30000);
  patch32(10 + 12 + 8, 30000);
  img::decoder d;
  CHECK(d.read_info(bytes, "bomb.tif").width == 30000);
  img::image_buffer out;
  CHECK_THROWS_WITH(d.decode(bytes, "bomb.tif", out),
                    Catch::Contains("bomb.tif") && Catch::Contains("decompression bomb"));
  // Nothing was allocated for it.
  CHECK(out.width() == 0);
}

TEST_CASE("truncated and bit-flipped TIFFs decode or throw image_error, never crash", "[image][tiff][errors]") {
  const auto& g = files();
  img::decoder d;
  img::image_buffer out;
  std::size_t failures = 0;
  std::size_t attempts = 0;
  const auto try_decode = [&](const std::vector<std::byte>& bytes, const std::string& name) {
    ++attempts;
    try {
      (void)d.read_info(bytes, name);
      (void)d.decode(bytes, name, out);
    } catch (const img::image_error& e) {
      ++failures;
      CHECK(e.name() == name);
    }
  };
  for (const char* variant : {"rgb_tiff_lzw", "palette"}) {
    INFO(variant);
    const auto good = g.input(std::string(variant) + ".tif");
    for (std::size_t i = 0; i < 40; ++i) {
      const std::size_t len = good.size() * i / 40;
      try_decode(std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len)),
                 std::string(variant) + "-cut" + std::to_string(len) + ".tif");
    }
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::uint64_t bit = (state >> 17) % (good.size() * 8);
      auto bad = good;
      bad[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
      try_decode(bad, std::string(variant) + "-flip" + std::to_string(bit) + ".tif");
    }
  }
  CHECK(attempts == 2 * 240);
  CHECK(failures > 0);
}
