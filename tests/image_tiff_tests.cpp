// TIFF decoding: Pillow's Image.open(f).convert("RGB") bit for bit on every
// variant committed in tests/data/image/tiff/ (make_tiff.py, Debian 12's
// Pillow 9.4: premultiplied alpha, min-is-white 16-bit and float, BigTIFF
// among them) against the committed goldens, re-checked against the live
// Pillow where a python with it is at hand; the first page of a multi-page
// file, refusals that name the file, a decompression bomb refused before
// allocating, and robustness against truncation and bit flips (CI runs this
// under ASan). Nothing here needs Python.
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>

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

// A one-strip-per-plane TIFF of `w`x`h` samples, classic or BigTIFF, either
// byte order: the layouts Pillow 9.4 refuses, which no generator can make a
// golden of. `data` is the samples in file byte order.
struct tiny_tiff {
  bool big_endian = false;
  bool bigtiff = false;
  std::uint32_t w = 2, h = 2;
  std::uint16_t bits = 8, samples = 1, photometric = 1, planar = 1;
  std::vector<std::uint16_t> extra;
  std::vector<std::uint8_t> data;

  [[nodiscard]] std::vector<std::byte> bytes() const {
    std::vector<std::uint8_t> out;
    const auto put_at = [&](std::size_t at, std::uint64_t v, int n) {
      if (out.size() < at + static_cast<std::size_t>(n)) out.resize(at + static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i)
        out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * (big_endian ? n - 1 - i : i)));
    };
    const auto put = [&](std::uint64_t v, int n) { put_at(out.size(), v, n); };
    const int word = bigtiff ? 8 : 4;
    out.push_back(big_endian ? 'M' : 'I');
    out.push_back(big_endian ? 'M' : 'I');
    put(bigtiff ? 43 : 42, 2);
    if (bigtiff) put(8, 2), put(0, 2);
    const std::size_t header = bigtiff ? 16 : 8;
    const std::size_t planes = planar == 2 ? samples : 1;
    const std::size_t plane_bytes = data.size() / planes;
    // (tag, type, values): SHORT 3, LONG 4, LONG8 16.
    struct entry {
      std::uint16_t tag, type;
      std::vector<std::uint64_t> v;
    };
    std::vector<std::uint64_t> offsets, counts;
    for (std::size_t i = 0; i < planes; ++i) offsets.push_back(header + i * plane_bytes), counts.push_back(plane_bytes);
    const std::uint16_t off_type = bigtiff ? 16 : 4;
    std::vector<entry> e = {{256, 4, {w}}, {257, 4, {h}}, {258, 3, std::vector<std::uint64_t>(samples, bits)},
                            {259, 3, {1}}, {262, 3, {photometric}}, {273, off_type, offsets},
                            {277, 3, {samples}}, {278, 4, {h}}, {279, off_type, counts}, {284, 3, {planar}}};
    if (!extra.empty()) e.push_back({338, 3, {extra.begin(), extra.end()}});
    out.resize(header);
    out.insert(out.end(), data.begin(), data.end());
    // Values that do not fit in an entry go after the IFD.
    const std::size_t ifd = out.size();
    const std::size_t entry_size = bigtiff ? 20 : 12;
    std::size_t spill = ifd + (bigtiff ? 8 : 2) + e.size() * entry_size + word;
    std::vector<std::uint8_t> tail;
    put_at(bigtiff ? 8 : 4, ifd, word);  // the header's first-IFD offset
    put(e.size(), bigtiff ? 8 : 2);
    for (const entry& x : e) {
      const int size = x.type == 3 ? 2 : x.type == 4 ? 4 : 8;
      put(x.tag, 2);
      put(x.type, 2);
      put(x.v.size(), word);
      if (x.v.size() * static_cast<std::size_t>(size) <= static_cast<std::size_t>(word)) {
        for (std::uint64_t v : x.v) put(v, size);
        for (std::size_t pad = x.v.size() * static_cast<std::size_t>(size); pad < static_cast<std::size_t>(word); ++pad)
          out.push_back(0);
      } else {
        put(spill + tail.size(), word);
        std::swap(out, tail);
        for (std::uint64_t v : x.v) put(v, size);
        std::swap(out, tail);
      }
    }
    put(0, word);
    out.insert(out.end(), tail.begin(), tail.end());
    std::vector<std::byte> b(out.size());
    std::transform(out.begin(), out.end(), b.begin(), [](std::uint8_t c) { return static_cast<std::byte>(c); });
    return b;
  }
};

}  // namespace

TEST_CASE("TIFF decode equals Pillow's convert('RGB') on every variant", "[image][tiff]") {
  const auto& g = files();
  CHECK(g.inconsistencies() == std::vector<std::string>{});
  const auto& names = g.names();
  // Every variant the brief names is there (Pillow read each one back).
  for (const char* want : {"rgb_raw", "rgb_tiff_lzw", "rgb_tiff_adobe_deflate", "rgb_packbits", "rgb_jpeg", "rgba",
                           "gray", "gray_jpeg", "gray16", "bilevel", "bilevel_g4", "palette", "cmyk", "la",
                           "multipage", "rgb16", "float32", "rgb_tiled", "rgb_planar", "rgb_ycbcr_jpeg",
                           "rgb16_tiled", "rgba_premultiplied", "rgba16_premultiplied", "rgba_premultiplied_lzw",
                           "rgba_premultiplied_planar_lzw", "gray16_miniswhite", "float32_miniswhite", "rgb_bigtiff",
                           "rgba_premultiplied_bigtiff", "gray12", "gray12_lzw"}) {
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
    (void)data::check_decode_equals_golden(g, name, d, out);
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
    return data::decode_error_reason(d, bytes, name);
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
  // 12-bit min-is-white: Pillow 9.4 has no unpacker for it (nor for
  // big-endian 12-bit), so neither is read.
  auto white12 = g.input("gray12.tif");
  patch16(white12, 10 + 4 * 12 + 8, 0);
  CHECK(error_of(white12, "white12.tif").find("12-bit gray other than little-endian min-is-black") !=
        std::string::npos);
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

TEST_CASE("TIFF layouts Pillow 9.4 refuses are refused naming the file", "[image][tiff][errors]") {
  img::decoder d;
  img::image_buffer out;
  const auto reason_of = [&](const tiny_tiff& t, const std::string& name) {
    return data::decode_error_reason(d, t.bytes(), name);
  };
  // The writer itself: its plain 8-bit gray reads.
  tiny_tiff gray;
  gray.data = {1, 2, 3, 4};
  (void)d.decode(gray.bytes(), "tiny.tif", out);
  CHECK(data::packed(out.view()) == std::vector<std::uint8_t>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  tiny_tiff big_gray = gray;
  big_gray.bigtiff = true;
  (void)d.decode(big_gray.bytes(), "tiny_big.tif", out);
  CHECK(data::packed(out.view()) == std::vector<std::uint8_t>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});

  // 16-bit gray + alpha: Pillow's only gray + alpha is 8-bit "LA".
  tiny_tiff la16;
  la16.bits = 16;
  la16.samples = 2;
  la16.extra = {2};
  la16.data.assign(2 * 2 * 2 * 2, 0x40);
  CHECK_THAT(reason_of(la16, "la16.tif"), Catch::Contains("gray + alpha"));
  // 8-bit gray + premultiplied alpha: no "La" entry either.
  tiny_tiff la_pm;
  la_pm.samples = 2;
  la_pm.extra = {1};
  la_pm.data.assign(2 * 2 * 2, 0x40);
  CHECK_THAT(reason_of(la_pm, "la_premultiplied.tif"), Catch::Contains("gray + alpha"));
  // Min-is-white 16-bit gray is read (not inverted) only little-endian.
  tiny_tiff white16;
  white16.big_endian = true;
  white16.bits = 16;
  white16.photometric = 0;
  white16.data.assign(2 * 2 * 2, 0x12);
  CHECK_THAT(reason_of(white16, "white16_be.tif"), Catch::Contains("big-endian inverted 16-bit gray"));
  // Big-endian BigTIFF: Pillow 9.4 looks for 43 in the third byte only.
  tiny_tiff big_be = big_gray;
  big_be.big_endian = true;
  CHECK_THAT(reason_of(big_be, "bigtiff_be.tif"), Catch::Contains("big-endian BigTIFF"));
  // RGBA whose ExtraSamples count does not match its samples.
  tiny_tiff rgba_extras;
  rgba_extras.samples = 4;
  rgba_extras.photometric = 2;
  rgba_extras.extra = {2, 0};
  rgba_extras.data.assign(2 * 2 * 4, 0x80);
  CHECK_THAT(reason_of(rgba_extras, "rgba_extras.tif"), Catch::Contains("RGB layout"));
  // Premultiplied alpha in separate uncompressed planes: Pillow's raw
  // reader has no unpacker for the "a" plane.
  tiny_tiff planar_pm = rgba_extras;
  planar_pm.extra = {1};
  planar_pm.planar = 2;
  CHECK_THAT(reason_of(planar_pm, "rgba_premultiplied_planar.tif"), Catch::Contains("separate planes"));
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

TEST_CASE("a strip libtiff reports corrupt is refused, though libtiff fills it in", "[image][tiff][errors]") {
  // bilevel_g4.tif's G4 strip is bytes 8..23; a zero at 13 is a bad code
  // word on line 7. libtiff logs an error, fills the rest of the strip and
  // returns it as read (Pillow 9.4 refuses the file): rows 7.. would be
  // libtiff's fill, not the file's pixels.
  auto bytes = files().input("bilevel_g4.tif");
  REQUIRE(bytes.size() == 138);
  bytes[13] = std::byte{0};
  img::decoder d;
  img::image_buffer out;
  CHECK(d.read_info(bytes, "g4-bad-code.tif").width == 37);
  CHECK_THROWS_WITH(d.decode(bytes, "g4-bad-code.tif", out),
                    Catch::Contains("g4-bad-code.tif") && Catch::Contains("corrupt strip data") &&
                        Catch::Contains("Bad code word at line 7"));
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
