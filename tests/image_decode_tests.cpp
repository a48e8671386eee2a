// Decoding: Pillow's pixels bit for bit on every JPEG/PNG flavour, header
// queries, EXIF orientation, errors that name the file, and the reduced
// (scaled / region) decodes of fast mode.
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "image_test_data.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

std::vector<std::string> decode_cases() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(data::dir() / "decode")) {
    const std::string n = e.path().filename().string();
    if (e.path().extension() != ".ppm") names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string error_of(img::decoder& d, const std::filesystem::path& p) {
  return data::decode_error_reason(d, data::read_file(p), p.string());
}

}  // namespace

TEST_CASE("decode equals Pillow's Image.open(f).convert('RGB') on every flavour", "[image][decode]") {
  img::decoder d;
  img::image_buffer out;
  const auto names = decode_cases();
  REQUIRE(names.size() >= 25);
  for (const std::string& name : names) {
    INFO(name);
    const auto bytes = data::read_file(data::dir() / "decode" / name);
    const data::pnm expected = data::read_pnm(data::dir() / "decode" / (name + ".ppm"));
    const img::image_info info = d.decode(bytes, name, out);
    REQUIRE(out.channels() == 3);
    REQUIRE(out.width() == expected.width);
    REQUIRE(out.height() == expected.height);
    CHECK(info.width == expected.width);
    const auto got = data::packed(out.view());
    const auto stats = data::compare(got, expected.pixels);
    CHECK(stats.differing == 0);
    CHECK(stats.max_abs == 0);
  }
}

TEST_CASE("header facts: format by magic bytes, subsampling, progressive, arithmetic", "[image][decode]") {
  img::decoder d;
  const auto info_of = [&](const char* name) {
    return d.read_info(data::read_file(data::dir() / "decode" / name), name);
  };
  CHECK(info_of("s420.jpg").subsampling == img::chroma_subsampling::s420);
  CHECK(info_of("s422.jpg").subsampling == img::chroma_subsampling::s422);
  CHECK(info_of("s444.jpg").subsampling == img::chroma_subsampling::s444);
  CHECK(info_of("gray.jpg").components == 1);
  CHECK(info_of("gray.jpg").subsampling == img::chroma_subsampling::none);
  CHECK(info_of("cmyk.jpg").components == 4);
  CHECK(info_of("ycck.jpg").components == 4);
  CHECK(info_of("progressive.jpg").progressive);
  CHECK_FALSE(info_of("s420.jpg").progressive);
  CHECK(info_of("arithmetic.jpg").arithmetic);
  CHECK(info_of("arithmetic_progressive.jpg").progressive);
  const img::image_info png = info_of("png_named.JPEG");
  CHECK(png.format == img::image_format::png);
  CHECK(png.width == 61);
  CHECK(png.height == 43);
  CHECK(info_of("gray16.png").bit_depth == 16);
  const img::image_info jpg = info_of("s420.jpg");
  CHECK(jpg.format == img::image_format::jpeg);
  CHECK(jpg.width == 61);
  CHECK(jpg.height == 43);
  CHECK(jpg.orientation == 1);
  CHECK(info_of("exif6.jpg").orientation == 6);
  CHECK(info_of("exif8.jpg").orientation == 8);
  CHECK(info_of("exif6.png").orientation == 6);
  CHECK(info_of("exif6.jpg").oriented_size() == img::size2{43, 61});
}

TEST_CASE("EXIF orientation: ignored by default, applied on request like exif_transpose", "[image][decode]") {
  img::decoder d;
  img::image_buffer out;
  for (const char* name : {"exif6.jpg", "exif8.jpg", "exif6.png"}) {
    INFO(name);
    const auto bytes = data::read_file(data::dir() / "decode" / name);
    const data::pnm stored = data::read_pnm(data::dir() / "decode" / (std::string(name) + ".ppm"));
    const data::pnm oriented = data::read_pnm(data::dir() / "decode" / (std::string(name) + ".oriented.ppm"));
    (void)d.decode(bytes, name, out);
    CHECK(data::packed(out.view()) == stored.pixels);
    img::decode_options opt;
    opt.apply_exif_orientation = true;
    (void)d.decode(bytes, name, out, opt);
    REQUIRE(out.width() == oriented.width);
    REQUIRE(out.height() == oriented.height);
    CHECK(data::packed(out.view()) == oriented.pixels);
  }
}

TEST_CASE("all eight orientations map pixels like Pillow's transposes", "[image][decode]") {
  // A 3x2 image with distinct pixels; expected layouts written out by hand.
  const std::uint8_t px[6] = {1, 2, 3, 4, 5, 6};  // row 0: 1 2 3, row 1: 4 5 6
  const img::image_view src{px, 3, 2, 1, 3};
  img::image_buffer out;
  const auto run = [&](int o) {
    img::apply_orientation(src, o, out);
    return data::packed(out.view());
  };
  CHECK(run(1) == std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6});
  CHECK(run(2) == std::vector<std::uint8_t>{3, 2, 1, 6, 5, 4});
  CHECK(run(3) == std::vector<std::uint8_t>{6, 5, 4, 3, 2, 1});
  CHECK(run(4) == std::vector<std::uint8_t>{4, 5, 6, 1, 2, 3});
  CHECK(run(5) == std::vector<std::uint8_t>{1, 4, 2, 5, 3, 6});  // transpose: 2 wide, 3 high
  CHECK(out.width() == 2);
  CHECK(run(6) == std::vector<std::uint8_t>{4, 1, 5, 2, 6, 3});  // 90° clockwise
  CHECK(run(7) == std::vector<std::uint8_t>{6, 3, 5, 2, 4, 1});
  CHECK(run(8) == std::vector<std::uint8_t>{3, 6, 2, 5, 1, 4});  // 90° counter-clockwise
  CHECK_THROWS_AS(img::apply_orientation(src, 9, out), std::invalid_argument);
}

TEST_CASE("broken files fail with an error naming the file and the reason", "[image][decode][errors]") {
  img::decoder d;
  const auto bad = data::dir() / "bad";
  CHECK(error_of(d, bad / "truncated.jpg").find("Premature end of JPEG file") != std::string::npos);
  CHECK(error_of(d, bad / "truncated_progressive.jpg").find("Premature end of JPEG file") != std::string::npos);
  CHECK(error_of(d, bad / "corrupt.jpg").find("Corrupt JPEG data") != std::string::npos);
  CHECK(error_of(d, bad / "empty.jpg") == "empty file");
  CHECK(error_of(d, bad / "text.jpg").find("not an image ringfeed decodes") != std::string::npos);
  CHECK(error_of(d, bad / "gif.jpg").find("GIF") != std::string::npos);
  CHECK(error_of(d, bad / "header_only.jpg").find("JPEG") != std::string::npos);
  CHECK(error_of(d, bad / "truncated.png").find("PNG") != std::string::npos);
  CHECK(error_of(d, bad / "bad_crc.png").find("PNG") != std::string::npos);
  // read_info on a truncated file still works (the header is intact)...
  const auto truncated = data::read_file(bad / "truncated.jpg");
  CHECK(d.read_info(truncated, "t.jpg").width == 61);
  // ...but on an empty or foreign one it fails, naming it.
  CHECK_THROWS_WITH(d.read_info({}, "nothing.jpg"), Catch::Contains("nothing.jpg") && Catch::Contains("empty"));
  // And the decoder is still good for the next file.
  img::image_buffer out;
  const auto good = data::read_file(data::dir() / "decode" / "s420.jpg");
  (void)d.decode(good, "s420.jpg", out);
  CHECK(data::packed(out.view()) == data::read_pnm(data::dir() / "decode" / "s420.jpg.ppm").pixels);
}

TEST_CASE("fail_on_any_warning also rejects benign warnings", "[image][decode][errors]") {
  // A valid file with junk before EOI: libjpeg warns "extraneous bytes
  // before marker" but decodes the whole image, as Pillow does.
  auto bytes = data::read_file(data::dir() / "decode" / "s420.jpg");
  REQUIRE(bytes.size() > 4);
  bytes.insert(bytes.end() - 2, {std::byte{0x00}, std::byte{0x11}, std::byte{0x22}});
  img::decoder d;
  img::image_buffer out;
  (void)d.decode(bytes, "junk.jpg", out);
  CHECK(data::packed(out.view()) == data::read_pnm(data::dir() / "decode" / "s420.jpg.ppm").pixels);
  img::decode_options strict;
  strict.fail_on_any_warning = true;
  CHECK_THROWS_WITH(d.decode(bytes, "junk.jpg", out, strict),
                    Catch::Contains("junk.jpg") && Catch::Contains("extraneous bytes"));
}

TEST_CASE("region decode at scale 1 equals the same pixels of a full decode", "[image][decode][fast]") {
  img::decoder d;
  img::image_buffer full;
  img::image_buffer part;
  for (const char* name : {"astronaut.jpg", "chelsea.jpg", "coffee.jpg", "rocket.jpg", "brick_gray.jpg",
                           "coffee_portrait.jpg"}) {
    INFO(name);
    const auto bytes = data::read_file(data::dir() / "photos" / name);
    (void)d.decode(bytes, name, full);
    const std::vector<img::crop_box> regions = {
        {0, 0, full.height(), full.width()}, {37, 51, 100, 77},  {1, 1, 1, 1},
        {full.height() - 20, full.width() - 33, 20, 33}, {100, 0, 64, full.width()}, {0, 200, full.height(), 17}};
    for (const img::crop_box& r : regions) {
      INFO("region " << r.top << "," << r.left << " " << r.height << "x" << r.width);
      img::scaled_request req;
      req.region = r;
      const img::scaled_result got = d.decode_scaled(bytes, name, req, part);
      CHECK(got.scale_denom == 1);
      CHECK(got.scaled_size == img::size2{full.width(), full.height()});
      REQUIRE(got.held.left <= r.left);
      REQUIRE(got.held.right() >= r.right());
      REQUIRE(got.held.top <= r.top);
      REQUIRE(got.held.bottom() >= r.bottom());
      const auto want = data::packed(full.view().crop(r));
      const auto have =
          data::packed(part.view().crop({r.top - got.held.top, r.left - got.held.left, r.height, r.width}));
      CHECK(data::compare(have, want).max_abs == 0);
    }
  }
}

TEST_CASE("scaled region decode equals the region of the whole scaled decode", "[image][decode][fast]") {
  img::decoder d;
  img::image_buffer whole;
  img::image_buffer part;
  for (const char* name : {"astronaut.jpg", "chelsea.jpg", "rocket.jpg", "brick_gray.jpg"}) {
    const auto bytes = data::read_file(data::dir() / "photos" / name);
    for (int denom : {2, 4, 8}) {
      INFO(name << " 1/" << denom);
      img::scaled_request all;
      all.scale_denom = denom;
      const img::scaled_result w = d.decode_scaled(bytes, name, all, whole);
      const img::image_info info = d.read_info(bytes, name);
      CHECK(w.scaled_size ==
            img::size2{img::scaled_dimension(info.width, denom), img::scaled_dimension(info.height, denom)});
      CHECK(w.held == img::crop_box{0, 0, w.scaled_size.height, w.scaled_size.width});
      img::scaled_request req = all;
      req.region = {w.scaled_size.height / 3, w.scaled_size.width / 4, w.scaled_size.height / 3,
                    w.scaled_size.width / 2};
      const img::scaled_result p = d.decode_scaled(bytes, name, req, part);
      const img::crop_box r = req.region;
      const auto want = data::packed(whole.view().crop(r));
      const auto have =
          data::packed(part.view().crop({r.top - p.held.top, r.left - p.held.left, r.height, r.width}));
      CHECK(data::compare(have, want).max_abs == 0);
    }
  }
  img::scaled_request bad;
  bad.scale_denom = 3;
  CHECK_THROWS_AS(d.decode_scaled(data::read_file(data::dir() / "photos" / "rocket.jpg"), "r", bad, part),
                  std::invalid_argument);
}

TEST_CASE("reduced decode of PNG, CMYK and grayscale files", "[image][decode][fast]") {
  img::decoder d;
  img::image_buffer full;
  img::image_buffer part;
  for (const char* name : {"png_named.JPEG", "cmyk.jpg", "ycck.jpg", "gray.jpg", "progressive.jpg", "arithmetic.jpg"}) {
    INFO(name);
    const auto bytes = data::read_file(data::dir() / "decode" / name);
    (void)d.decode(bytes, name, full);
    img::scaled_request req;
    req.region = {5, 9, 20, 30};
    const img::scaled_result got = d.decode_scaled(bytes, name, req, part);
    const auto want = data::packed(full.view().crop(req.region));
    const auto have = data::packed(part.view().crop(
        {req.region.top - got.held.top, req.region.left - got.held.left, req.region.height, req.region.width}));
    CHECK(have == want);
  }
}
