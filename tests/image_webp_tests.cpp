// WebP: Pillow's pixels bit for bit (lossy, lossless, alpha, grayscale
// source, the first frame of an animation) on the committed files of
// tests/data/image/webp/ against their committed goldens (make_webp.py;
// Debian 12's Pillow 9.4 decodes with the same libwebp 1.2.4). Where a
// python with that Pillow is at hand it re-decodes the files to catch a
// stale golden. Truncated and bit-flipped files fail with image_error naming
// the file, never a crash; a header declaring a bomb is refused before
// anything is allocated. Nothing here needs Python.
#include <catch2/catch.hpp>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/random.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "golden_set.hpp"
#include "image_test_data.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

const data::golden_set& files() {
  static const data::golden_set set("webp");
  return set;
}

}  // namespace

TEST_CASE("WebP decode equals Pillow's Image.open(f).convert('RGB')", "[image][webp]") {
  const auto& set = files();
  CHECK(set.inconsistencies() == std::vector<std::string>{});
  for (const char* want : {"lossy.webp", "lossy_q5.webp", "lossless.webp", "rgba_lossy.webp", "rgba_lossless.webp",
                           "rgba_lossless_exact.webp", "gray_lossy.webp", "gray_lossless.webp", "animated.webp",
                           "animated_rgba_lossless.webp"}) {
    INFO(want);
    CHECK(std::find(set.names().begin(), set.names().end(), want) != set.names().end());
  }
  img::decoder d;
  img::image_buffer out;
  for (const std::string& name : set.names()) {
    INFO(name);
    const auto bytes = set.input(name);
    REQUIRE(img::detect_format(bytes) == img::image_format::webp);
    const img::image_info info = data::check_decode_equals_golden(set, name, d, out);
    CHECK(info.format == img::image_format::webp);

    const img::image_info header = d.read_info(bytes, name);
    CHECK(header.format == img::image_format::webp);
    CHECK(header.width == out.width());
    CHECK(header.height == out.height());
    CHECK(header.components == (name.find("rgba") != std::string::npos ? 4 : 3));
    CHECK(header.orientation == 1);
  }
}

TEST_CASE("the WebP goldens are the live Pillow's convert('RGB') of the committed files", "[image][webp][pillow]") {
  data::check_goldens_against_live_pillow("webp");
}

TEST_CASE("WebP: truncated and bit-flipped files fail cleanly", "[image][webp][robustness]") {
  img::decoder d;
  for (const std::string base : {"lossy", "lossless", "rgba_lossy", "animated"}) {
    const auto good = files().input(std::string(base) + ".webp");
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
  auto bytes = files().input("animated.webp");
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
