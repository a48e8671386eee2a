// BMP and PNM (PBM/PGM/PPM) decoding: Pillow 9.4's convert("RGB") pixels bit
// for bit on every variant committed in tests/data/image/bmp_pnm/ against
// the committed goldens (make_bmp_pnm.py: files from Pillow's writers, or by
// hand where Pillow cannot write them: 4/16-bit, bit fields, top-down, OS/2,
// RLE, gray-ramp and black-and-white palettes at any depth, plain and 16-bit
// PNM, signed and underscored numbers), re-checked against the live Pillow where a
// python with it is at hand; header facts, and robustness: truncated and
// bit-flipped files either decode or throw image_error naming the file, and
// a header declaring 30000x30000 is refused before any allocation. Nothing
// here needs Python.
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "golden_set.hpp"
#include "image_test_data.hpp"
#include "test_support.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;
namespace fs = std::filesystem;

namespace {

const data::golden_set& files() {
  static const data::golden_set set("bmp_pnm");
  return set;
}

std::vector<std::byte> input(const std::string& name) { return files().input(name); }

}  // namespace

TEST_CASE("BMP and PNM decode equals Pillow's convert('RGB') on every variant", "[image][decode][bmp][pnm]") {
  const auto& set = files();
  CHECK(set.inconsistencies() == std::vector<std::string>{});
  img::decoder d;
  img::image_buffer out;
  const auto& names = set.names();
  REQUIRE(names.size() >= 64);
  int bmp = 0;
  int pnm = 0;
  for (const std::string& name : names) {
    INFO(name);
    const auto bytes = set.input(name);
    const img::image_info info = data::check_decode_equals_golden(set, name, d, out);
    const img::image_info header = d.read_info(bytes, name);
    CHECK(header.width == info.width);
    CHECK(header.height == info.height);
    CHECK(header.format == info.format);
    CHECK(img::detect_format(bytes) == info.format);
    (info.format == img::image_format::bmp ? bmp : pnm) += 1;
  }
  CHECK(bmp >= 36);
  CHECK(pnm >= 28);
}

TEST_CASE("the BMP and PNM goldens are the live Pillow's convert('RGB') of the committed files",
          "[image][decode][bmp][pnm][pillow]") {
  data::check_goldens_against_live_pillow("bmp_pnm");
}

TEST_CASE("a golden folder that drifts from its manifest or from Pillow is caught", "[image][decode][pillow]") {
  const ringfeed::test::temp_dir tmp;
  const fs::path copy = tmp.path() / "bmp_pnm";
  fs::copy(files().path(), copy);
  // A stray file and a missing golden: the manifest no longer describes the folder.
  data::write_file(copy / "stray.bmp", std::string_view("BM"));
  fs::rename(copy / "gray.pgm.ppm", tmp.path() / "gray.pgm.ppm");
  CHECK(data::golden_set(copy).inconsistencies() == std::vector<std::string>{"stray.bmp", "missing gray.pgm.ppm"});
  fs::remove(copy / "stray.bmp");
  fs::rename(tmp.path() / "gray.pgm.ppm", copy / "gray.pgm.ppm");
  // One sample of one golden changed: the live Pillow check names that file.
  auto golden = data::read_file(copy / "rgb24.bmp.ppm");
  golden.back() ^= std::byte{1};
  data::write_file(copy / "rgb24.bmp.ppm", golden);
  const data::golden_set stale(copy);
  CHECK(stale.inconsistencies().empty());
  const data::live_pillow_result r = data::live_pillow_mismatches(stale);
  if (!r.ran) {
    WARN("live Pillow part not run: " << r.why_not);
    return;
  }
  REQUIRE(r.mismatches.size() == 1);
  CHECK(r.mismatches[0].rfind("rgb24.bmp.ppm: 1 samples differ", 0) == 0);  // names the golden file
}

TEST_CASE("BMP and PNM header facts", "[image][decode][bmp][pnm]") {
  img::decoder d;
  const auto info = [&](const char* name) { return d.read_info(input(name), name); };
  CHECK(info("pal4_odd.bmp").width == 13);
  CHECK(info("pal4_odd.bmp").height == 7);
  CHECK(info("pal4_odd.bmp").components == 1);
  CHECK(info("pal4_odd.bmp").bit_depth == 4);
  CHECK(info("rgb24_topdown.bmp").height == 6);
  CHECK(info("rgb24.bmp").components == 3);
  CHECK(info("gray16_max1000.pgm").bit_depth == 16);
  CHECK(info("gray16_max1000.pgm").components == 1);
  CHECK(info("plain_rgb.ppm").components == 3);
  CHECK(info("plain_rgb.ppm").format == img::image_format::pnm);
  CHECK(info("bilevel_odd.pbm").bit_depth == 1);
  CHECK(info("bilevel_odd.pbm").width == 13);
}

TEST_CASE("BMP and PNM variants Pillow 9.4 refuses are refused naming the file", "[image][decode][errors]") {
  img::decoder d;
  const auto reason_of = [&](const std::vector<std::byte>& bytes, const std::string& name) {
    return data::decode_error_reason(d, bytes, name);
  };
  const auto patched = [&](const char* seed, std::size_t at, std::uint8_t v) {
    auto b = input(seed);
    b[at] = static_cast<std::byte>(v);
    return b;
  };
  // A gray-ramp palette is Pillow's "L", 8 bits a pixel: an 8-pixel row of a
  // 4-bit file (4 bytes) cannot hold it (its "codec configuration error").
  CHECK_THAT(reason_of(patched("pal4_gray16_narrow.bmp", 18, 8), "wide_gray4.bmp"), Catch::Contains("rows too short"));
  // RLE on a black-and-white palette: Pillow's "1" has no unpacker for it.
  CHECK_THAT(reason_of(patched("pal8_bw.bmp", 30, 1), "rle_bw.bmp"), Catch::Contains("black-and-white"));
  // More than 256 colours that are not a gray ramp.
  CHECK_THAT(reason_of(patched("pal8_gray300.bmp", 54, 7), "colour300.bmp"), Catch::Contains("palette size"));
  const auto bytes_of = [](std::string_view s) {
    std::vector<std::byte> b(s.size());
    std::transform(s.begin(), s.end(), b.begin(), [](char c) { return static_cast<std::byte>(c); });
    return b;
  };
  const std::pair<const char*, const char*> pnm[] = {
      // A negative sample where Pillow builds mode "I" (gray, maxval > 255):
      // its unsigned 32-bit packing raises.
      {"P2\n2 1\n1000\n-1 5\n", "negative value -1"},
      // What Python's int() does not take.
      {"P5\n1__0 1\n255\n0123456789", "'1__0' is not a number"},
      {"P2\n2 1\n255\n+-1 5\n", "invalid token '+-1'"},
      {"P2\n2 1\n255\n7_ 5\n", "invalid token '7_'"},
      // Plain PBM takes only 0 and 1, without a sign.
      {"P1\n2 1\n+1 0\n", "invalid token"},
      // A size that is not positive: Pillow does not identify the file.
      {"P5\n-3 2\n255\n012345", "-3x2"},
      {"P5\n3 +0\n255\n012", "3x0"},
  };
  int i = 0;
  for (const auto& [text, why] : pnm) {
    const std::string name = "refused" + std::to_string(i++) + ".pgm";
    INFO(name << ": " << text);
    CHECK_THAT(reason_of(bytes_of(text), name), Catch::Contains(why));
  }
}

TEST_CASE("truncated and bit-flipped BMP/PNM files decode or fail naming the file", "[image][decode][errors]") {
  img::decoder d;
  const char* const seeds[] = {"rgb24.bmp",          "palette8.bmp",        "pal4_odd.bmp",     "bilevel.bmp",
                               "rgb565_bitfields.bmp", "bgra32_v4.bmp",     "os2_pal8.bmp",     "rgb.ppm",
                               "gray.pgm",           "bilevel.pbm",         "gray16_max1000.pgm", "rgb16_max65535.ppm",
                               "plain_gray.pgm",     "plain_rgb16.ppm",     "plain_bilevel.pbm", "rgb_max100.ppm",
                               "rle8.bmp",           "rle4.bmp",            "rle8_delta.bmp",   "pal8_bw.bmp",
                               "pal4_gray16_narrow.bmp", "plain_signs.pgm"};
  std::uint64_t state = 0x9E3779B97F4A7C15u;
  const auto next = [&] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return state >> 33;
  };
  for (const char* seed : seeds) {
    INFO(seed);
    const auto good = input(seed);
    const std::string name = std::string("mangled/") + seed;
    REQUIRE(data::decode_or_image_error(d, good, name));
    // Every length through the headers and a spread over the rest.
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n < std::min<std::size_t>(good.size(), 80); n += 3) lengths.push_back(n);
    for (std::size_t k = 1; k < 20; ++k) lengths.push_back(good.size() * k / 20);
    lengths.push_back(good.size() - 1);
    int truncated_ok = 0;
    for (std::size_t n : lengths) {
      INFO("truncated to " << n);
      const std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
      truncated_ok += data::decode_or_image_error(d, cut, name) ? 1 : 0;
    }
    // Binary data cut short is an error (plain PBM may lose only its
    // trailing newline, RLE its end-of-bitmap escape). Plain PGM/PPM cut inside a token decode: Pillow 9.4
    // repeats a final unterminated token to fill the image, and so do we.
    const std::string s = seed;
    // pal8_bw.bmp is read one bit a pixel: its last row needs 5 of its 40
    // bytes, so cuts inside that row still decode (in Pillow too).
    if (s == "pal8_bw.bmp") CHECK(truncated_ok <= 3);
    else if (s != "plain_gray.pgm" && s != "plain_rgb16.ppm" && s != "plain_signs.pgm") CHECK(truncated_ok <= 1);
    // ~200 single-bit flips, concentrated in the first 128 bytes (the
    // headers) and spread over the rest.
    for (int i = 0; i < 200; ++i) {
      const std::size_t limit = i % 2 == 0 ? std::min<std::size_t>(good.size(), 128) : good.size();
      const std::size_t at = next() % limit;
      const int bit = static_cast<int>(next() % 8);
      INFO("bit " << bit << " of byte " << at);
      auto flipped = good;
      flipped[at] ^= static_cast<std::byte>(1u << bit);
      (void)data::decode_or_image_error(d, flipped, name);
    }
  }
  // The decoder still decodes a good file afterwards.
  img::image_buffer out;
  const auto bytes = input("rgb24.bmp");
  (void)d.decode(bytes, "rgb24.bmp", out);
  CHECK(data::packed(out.view()) == files().golden("rgb24.bmp").pixels);
}

TEST_CASE("a BMP or PNM header declaring 30000x30000 is refused as a decompression bomb",
          "[image][decode][errors]") {
  img::decoder d;
  img::image_buffer out;
  // BITMAPINFOHEADER, 24-bit, no pixel data at all.
  std::vector<std::uint8_t> bmp = {'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0};
  const auto le32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bmp.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le32(30000);
  le32(30000);
  bmp.insert(bmp.end(), {1, 0, 24, 0});
  for (int i = 0; i < 6; ++i) le32(0);
  const auto as_bytes = [](const auto& v) {
    std::vector<std::byte> b(v.size());
    std::transform(v.begin(), v.end(), b.begin(), [](auto c) { return static_cast<std::byte>(c); });
    return b;
  };
  const std::string ppm = "P6\n30000 30000\n255\n";
  for (const auto& [name, bytes] :
       {std::pair{std::string("bomb.bmp"), as_bytes(bmp)}, std::pair{std::string("bomb.ppm"), as_bytes(ppm)}}) {
    INFO(name);
    CHECK(d.read_info(bytes, name).width == 30000);
    CHECK_THROWS_WITH(d.decode(bytes, name, out),
                      Catch::Contains(name) && Catch::Contains("decompression bomb") && Catch::Contains("30000x30000"));
    // Allowed through, the missing pixel data is found before allocating.
    img::decode_options opt;
    opt.max_pixels = std::uint64_t{1} << 40;
    CHECK_THROWS_WITH(d.decode(bytes, name, out, opt), Catch::Contains(name) && Catch::Contains("truncated"));
    CHECK(out.width() == 0);
  }
}

TEST_CASE("reduced decode of BMP and PNM crops the full decode", "[image][decode][fast]") {
  img::decoder d;
  img::image_buffer full;
  img::image_buffer part;
  for (const char* name : {"rgb24.bmp", "rle4.bmp", "rgb.ppm", "plain_gray16.pgm"}) {
    INFO(name);
    const auto bytes = input(name);
    (void)d.decode(bytes, name, full);
    img::scaled_request req;
    req.region = {2, 3, 5, 7};
    const img::scaled_result got = d.decode_scaled(bytes, name, req, part);
    const auto want = data::packed(full.view().crop(req.region));
    const auto have = data::packed(part.view().crop(
        {req.region.top - got.held.top, req.region.left - got.held.left, req.region.height, req.region.width}));
    CHECK(have == want);
  }
}
