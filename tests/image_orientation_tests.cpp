// Orientation 1..8 in TIFF (tag 274) and JPEG (EXIF), with and without
// decode_options::apply_exif_orientation, bit for bit against Pillow 9.4's
// goldens in tests/data/image/orientation/ (make_orientation.py). What
// torchvision's ImageFolder sees is Image.open(f).convert("RGB"): Pillow
// turns a TIFF upright on open and leaves a JPEG as stored; the option is
// ImageOps.exif_transpose of that. Nothing here needs Python.
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/pipeline.hpp>

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
  static const data::golden_set set("orientation");
  return set;
}

bool is_tiff(const std::string& name) { return name.ends_with(".tif"); }

}  // namespace

TEST_CASE("orientation goldens: all eight values, TIFF and JPEG, 16x12", "[image][orientation]") {
  const auto& g = files();
  CHECK(g.inconsistencies() == std::vector<std::string>{});
  REQUIRE(g.has_oriented());
  for (int o = 1; o <= 8; ++o) {
    for (const std::string& name : {"tiff_o" + std::to_string(o) + ".tif", "jpeg_o" + std::to_string(o) + ".jpg"}) {
      INFO(name);
      const auto& names = g.names();
      CHECK(std::find(names.begin(), names.end(), name) != names.end());
    }
  }
}

TEST_CASE("by default a TIFF is upright as Pillow opens it and a JPEG is as stored", "[image][orientation]") {
  const auto& g = files();
  img::decoder d;
  img::image_buffer out;
  for (const auto& name : g.names()) {
    INFO(name);
    const auto bytes = g.input(name);
    const data::pnm expected = g.golden(name);
    const img::image_info info = data::check_decode_equals_golden(g, name, d, out);
    // The header facts describe what decode delivers.
    const img::image_info header = d.read_info(bytes, name);
    CHECK(header.width == expected.width);
    CHECK(header.height == expected.height);
    CHECK(info.width == expected.width);
    CHECK(info.height == expected.height);
    const int tagged = name[name.find("_o") + 2] - '0';
    if (is_tiff(name)) {
      // Upright: 5..8 swap the stored 16x12, and nothing is left to apply.
      CHECK(out.width() == (tagged >= 5 ? 12 : 16));
      CHECK(header.orientation == 1);
    } else {
      CHECK(out.width() == 16);
      CHECK(header.orientation == tagged);
    }
  }
}

TEST_CASE("apply_exif_orientation equals exif_transpose of convert('RGB') for every format",
          "[image][orientation]") {
  const auto& g = files();
  img::decoder d;
  img::image_buffer out;
  img::decode_options opt;
  opt.apply_exif_orientation = true;
  for (const auto& name : g.names()) {
    INFO(name);
    const auto bytes = g.input(name);
    const data::pnm expected = g.oriented_golden(name);
    const img::image_info info = d.decode(bytes, name, out, opt);
    REQUIRE(out.width() == expected.width);
    REQUIRE(out.height() == expected.height);
    CHECK(data::packed(out.view()) == expected.pixels);
    // oriented_size() is the size the option delivers, whatever the format.
    CHECK(info.oriented_size() == img::size2{expected.width, expected.height});
    CHECK(d.read_info(bytes, name).oriented_size() == img::size2{expected.width, expected.height});
  }
}

TEST_CASE("a pipeline sees the upright TIFF in fast and exact mode", "[image][orientation]") {
  const auto& g = files();
  for (const auto mode : {img::pipeline_mode::fast, img::pipeline_mode::exact}) {
    for (const char* name : {"tiff_o6.tif", "tiff_lzw_o6.tif", "tiff_o3.tif"}) {
      INFO(name << (mode == img::pipeline_mode::fast ? " fast" : " exact"));
      // Decode only: the whole image, uint8 HWC, as it comes out of decode.
      const data::pnm expected = g.golden(name);
      img::pipeline p;
      p.set_mode(mode);
      img::pipeline_workspace ws;
      std::vector<std::byte> dst(static_cast<std::size_t>(expected.width) * expected.height * 3);
      const auto result = p.apply(ws, g.input(name), name, img::sample_key{}, dst);
      CHECK(result.plan.source == img::size2{expected.width, expected.height});
      CHECK(std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(dst.data()),
                                      reinterpret_cast<const std::uint8_t*>(dst.data()) + dst.size()) ==
            expected.pixels);
    }
  }
}

TEST_CASE("the orientation goldens are the live Pillow's", "[image][orientation][pillow]") {
  data::check_goldens_against_live_pillow("orientation");
}
