// TIFF decoding: Pillow's Image.open(f).convert("RGB") bit for bit on every
// variant make_tiff.py writes (run at test time by Debian's python3 with
// Pillow 9.4), the first page of a multi-page file, refusals that name the
// file, a decompression bomb refused before allocating, and robustness
// against truncation and bit flips (CI runs this under ASan).
#include <catch2/catch.hpp>

#include <ringfeed/image/jpeg.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data_test_support.hpp"
#include "image_test_data.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;
using ringfeed::test::data_support::python;
using ringfeed::test::data_support::quoted;
using ringfeed::test::data_support::run;

namespace {

ringfeed::test::skip_if_unavailable skip{[]() -> std::string {
  if (run(std::string(python) + " -c 'import PIL, numpy' >/dev/null 2>&1") == 0) return "";
  return std::string(python) +
         " cannot import PIL and numpy (apt-get install python3-pil python3-numpy): the TIFF files and their "
         "expected pixels are written with them";
}};

struct case_t {
  std::string name;
  int width = 0;
  int height = 0;
};

// The files of make_tiff.py, written once per process.
struct generated {
  ringfeed::test::temp_dir dir;
  std::vector<case_t> cases;

  generated() {
    const fs::path script = RINGFEED_TEST_MAKE_TIFF;
    if (run(std::string(python) + " " + quoted(script) + " " + quoted(dir.path()) + " 2>/dev/null") != 0)
      throw std::runtime_error("make_tiff.py failed");
    std::ifstream manifest(dir.path() / "manifest");
    case_t c;
    while (manifest >> c.name >> c.width >> c.height) cases.push_back(c);
  }
  [[nodiscard]] fs::path file(const std::string& name) const { return dir.path() / (name + ".tif"); }
};

const generated& files() {
  static const generated g;
  return g;
}

}  // namespace

TEST_CASE("TIFF decode equals Pillow's convert('RGB') on every variant", "[image][tiff]") {
  const auto& g = files();
  std::vector<std::string> names;
  for (const auto& c : g.cases) names.push_back(c.name);
  // Every variant the brief names is there (Pillow read each one back).
  for (const char* want : {"rgb_raw", "rgb_tiff_lzw", "rgb_tiff_adobe_deflate", "rgb_packbits", "rgb_jpeg", "rgba",
                           "gray", "gray_jpeg", "gray16", "bilevel", "bilevel_g4", "palette", "cmyk", "la",
                           "multipage", "rgb16", "float32", "rgb_tiled", "rgb_planar", "rgb_ycbcr_jpeg",
                           "rgb16_tiled"}) {
    INFO(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  img::decoder d;
  img::image_buffer out;
  for (const auto& c : g.cases) {
    INFO(c.name);
    const auto bytes = data::read_file(g.file(c.name));
    REQUIRE(img::detect_format(bytes) == img::image_format::tiff);
    const img::image_info info = d.read_info(bytes, c.name);
    CHECK(info.format == img::image_format::tiff);
    CHECK(info.width == c.width);
    CHECK(info.height == c.height);
    (void)d.decode(bytes, c.name, out);
    REQUIRE(out.channels() == 3);
    REQUIRE(out.width() == c.width);
    REQUIRE(out.height() == c.height);
    const auto expected = data::read_file(g.dir.path() / (c.name + ".rgb"));
    const auto got = data::packed(out.view());
    const auto stats = data::compare(got, data::as_u8(expected));
    CHECK(stats.differing == 0);
    CHECK(stats.max_abs == 0);
  }
}

TEST_CASE("TIFF header facts and refusals name the file", "[image][tiff][errors]") {
  const auto& g = files();
  img::decoder d;
  CHECK(d.read_info(data::read_file(g.file("gray16")), "g").bit_depth == 16);
  CHECK(d.read_info(data::read_file(g.file("rgba")), "r").components == 4);
  CHECK(d.read_info(data::read_file(g.file("cmyk")), "c").components == 4);

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
  auto rgb = data::read_file(g.file("rgb_raw"));
  const std::vector<std::byte> header(rgb.begin(), rgb.begin() + 8);
  CHECK(error_of(header, "header.tif").find("TIFF") != std::string::npos);
  // 64-bit float samples: Pillow has no mode for them; neither do we.
  auto f64 = data::read_file(g.file("float32"));
  const auto patch16 = [](std::vector<std::byte>& b, std::size_t at, std::uint16_t v) {
    b[at] = static_cast<std::byte>(v & 0xff);
    b[at + 1] = static_cast<std::byte>(v >> 8);
  };
  // make_tiff.py writes IFD entries from offset 10 in a fixed order:
  // BitsPerSample is the third (offset 10 + 2*12 + 8 for its value).
  patch16(f64, 10 + 2 * 12 + 8, 64);
  CHECK(error_of(f64, "f64.tif").find("unsupported") != std::string::npos);
  // A photometric interpretation Pillow does not open (CIELab = 8).
  auto lab = data::read_file(g.file("rgb16"));
  patch16(lab, 10 + 4 * 12 + 8, 8);
  CHECK(error_of(lab, "lab.tif").find("unsupported") != std::string::npos);
  // The decoder is still good for the next file; fast mode decodes TIFF
  // whole at scale 1.
  (void)d.decode(rgb, "rgb.tif", out);
  const auto expected = data::read_file(g.dir.path() / "rgb_raw.rgb");
  CHECK(data::compare(data::packed(out.view()), data::as_u8(expected)).differing == 0);
  img::scaled_request request;
  request.scale_denom = 4;
  request.region = {0, 0, 23, 37};
  const img::scaled_result scaled = d.decode_scaled(rgb, "rgb.tif", request, out);
  CHECK(scaled.scale_denom == 1);
  CHECK(data::compare(data::packed(out.view()), data::as_u8(expected)).differing == 0);
}

TEST_CASE("a TIFF declaring 30000x30000 is refused before allocating", "[image][tiff][errors]") {
  const auto& g = files();
  auto bytes = data::read_file(g.file("float32"));
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
    const auto good = data::read_file(g.file(variant));
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
