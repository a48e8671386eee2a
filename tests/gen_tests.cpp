// `ringfeed gen`'s photographs (apps/ringfeed/gen_image.hpp): the large-photo
// mix (`--photos large`) draws 1-4 megapixel camera-shaped images that
// compress like photographs, deterministically; the CLI records the mix in
// its marker and writes the same bytes twice. (tests/cli_tests.sh covers the
// default mix end to end.)
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "files.hpp"
#include "gen_image.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using ringfeed::cli::derive_seed;
using ringfeed::cli::draw_image_spec;
using ringfeed::cli::image_spec;
using ringfeed::cli::jpeg_encoder;
using ringfeed::cli::photo_mix;
using ringfeed::test::child_process;
using ringfeed::test::ringfeed_cli;

namespace {

double megapixels(int w, int h) { return static_cast<double>(w) * static_cast<double>(h) / 1e6; }

struct header {
  int width = 0;
  int height = 0;
  int subsamp = -1;
};

header read_header(const std::vector<std::byte>& jpeg) {
  const std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  REQUIRE(tj);
  header h;
  int colorspace = 0;
  REQUIRE(tjDecompressHeader3(tj.get(), reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), &h.width,
                              &h.height, &h.subsamp, &colorspace) == 0);
  return h;
}

int run_to_end(const std::vector<std::string>& argv, const std::string& log = "/dev/null") {
  child_process c(argv, log);
  const int status = c.wait();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Every regular file under `dir`, by path relative to it.
std::map<std::string, std::vector<std::byte>> tree(const fs::path& dir) {
  std::map<std::string, std::vector<std::byte>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = ringfeed::test::read_file(e.path());
  }
  return out;
}

std::string text(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

TEST_CASE("large photos: 1-4 megapixels, camera aspects, both orientations, photo encodings", "[gen]") {
  constexpr int n = 4000;
  double sum_mp = 0;
  int landscape = 0, progressive = 0, below_1600 = 0;
  int by_mp[3] = {0, 0, 0};  // [1, 2), [2, 3), [3, 4]
  std::map<int, int> subsampling, aspects;
  for (int i = 0; i < n; ++i) {
    const image_spec s = draw_image_spec(derive_seed(7, 1, static_cast<std::uint64_t>(i)), photo_mix::large);
    INFO("spec " << i << ": " << s.width << "x" << s.height);
    const double mp = megapixels(s.width, s.height);
    REQUIRE(mp >= 1.0);
    REQUIRE(mp <= 4.0);
    const int longer = std::max(s.width, s.height), shorter = std::min(s.width, s.height);
    REQUIRE(longer >= 1150);
    REQUIRE(longer <= 2592);
    REQUIRE(s.width % 2 == 0);
    REQUIRE(s.height % 2 == 0);
    // 4:3, 3:2 or 16:9, up to the rounding of the short side.
    const double aspect = static_cast<double>(longer) / shorter;
    const int which = std::abs(aspect - 4.0 / 3) < 0.005 ? 43 : (std::abs(aspect - 1.5) < 0.005 ? 32 : 169);
    if (which == 169) REQUIRE(std::abs(aspect - 16.0 / 9) < 0.005);
    ++aspects[which];
    REQUIRE(s.quality >= 85);
    REQUIRE(s.quality <= 95);
    REQUIRE_FALSE(s.gray());
    REQUIRE(s.detail_pitch >= 1.5f);
    REQUIRE(s.detail_pitch <= 2.5f);
    ++subsampling[s.subsamp];
    sum_mp += mp;
    landscape += s.width > s.height ? 1 : 0;
    progressive += s.progressive ? 1 : 0;
    below_1600 += longer < 1600 ? 1 : 0;
    ++by_mp[std::min(2, static_cast<int>(mp) - 1)];
  }
  const double mean = sum_mp / n;
  CHECK(mean > 2.4);
  CHECK(mean < 2.6);
  for (const int count : by_mp) CHECK(count > n / 4);  // spread over the whole range
  CHECK(below_1600 < n / 3);                           // most have a long side of 1600+
  CHECK(landscape > n * 6 / 10);
  CHECK(landscape < n * 8 / 10);
  CHECK(aspects[43] > n * 4 / 10);
  CHECK(aspects[32] > n * 2 / 10);
  CHECK(aspects[169] > n / 10);
  CHECK(subsampling[TJSAMP_420] > n * 8 / 10);
  CHECK(subsampling[TJSAMP_422] > n / 20);
  CHECK(subsampling[TJSAMP_444] > n / 50);
  CHECK(progressive > n / 25);
  CHECK(progressive < n * 3 / 25);
}

TEST_CASE("the imagenet mix stays ImageNet-sized and is the default", "[gen]") {
  int under_half_mp = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const image_spec a = draw_image_spec(derive_seed(7, 1, i));
    const image_spec b = draw_image_spec(derive_seed(7, 1, i), photo_mix::imagenet);
    REQUIRE((a.width == b.width && a.height == b.height && a.quality == b.quality && a.subsamp == b.subsamp &&
             a.content_seed == b.content_seed));
    REQUIRE(a.detail_pitch == 1.0f);
    under_half_mp += megapixels(a.width, a.height) < 0.5 ? 1 : 0;
  }
  CHECK(under_half_mp > 950);
}

TEST_CASE("a large photo compresses like a photograph, the same bytes every time", "[gen]") {
  jpeg_encoder encoder;
  double bytes = 0, pixels = 0;
  for (std::uint64_t i = 0; i < 6; ++i) {
    image_spec s = draw_image_spec(derive_seed(11, 1, i), photo_mix::large);
    s.quality = 90;  // the bytes per pixel of the mix's commonest encoding
    s.subsamp = TJSAMP_420;
    s.class_index = static_cast<int>(i % 3);
    const auto span = encoder.encode(s);
    const std::vector<std::byte> first(reinterpret_cast<const std::byte*>(span.data()),
                                       reinterpret_cast<const std::byte*>(span.data() + span.size()));
    const header h = read_header(first);
    REQUIRE(h.width == s.width);
    REQUIRE(h.height == s.height);
    REQUIRE(h.subsamp == TJSAMP_420);
    bytes += static_cast<double>(first.size());
    pixels += static_cast<double>(s.width) * s.height;

    // Another image, progressive, in between: the encoder carries nothing over.
    image_spec other = draw_image_spec(derive_seed(11, 2, i), photo_mix::large);
    other.progressive = true;
    (void)encoder.encode(other);
    const auto again = encoder.encode(s);
    REQUIRE(ringfeed::test::same(first, std::as_bytes(again)));
  }
  // Camera photos at quality 90: roughly 0.2-0.5 bytes per pixel.
  const double per_pixel = bytes / pixels;
  INFO("bytes per pixel " << per_pixel);
  CHECK(per_pixel > 0.2);
  CHECK(per_pixel < 0.45);
}

TEST_CASE("gen --photos large writes 1-4 MP JPEGs, deterministically, and records the mix", "[gen][cli]") {
  REQUIRE_FALSE(ringfeed_cli().empty());  // ctest sets RINGFEED_CLI
  ringfeed::test::temp_dir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b", plain = tmp.path() / "plain";
  const auto gen = [&](const fs::path& out, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {ringfeed_cli(), "gen", out.string(), "--images", "4", "--classes", "2",
                                     "--seed", "3"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_to_end(argv, (tmp.path() / "gen.log").string());
  };
  REQUIRE(gen(a, {"--photos", "large"}) == 0);
  REQUIRE(gen(b, {"--photos", "large"}) == 0);
  const auto files_a = tree(a);
  REQUIRE(files_a == tree(b));  // byte-identical, marker included

  std::size_t jpegs = 0;
  for (const auto& [name, bytes] : files_a) {
    if (name == "ringfeed-gen.json") continue;
    INFO(name);
    const header h = read_header(bytes);
    CHECK(megapixels(h.width, h.height) >= 1.0);
    CHECK(megapixels(h.width, h.height) <= 4.0);
    ++jpegs;
  }
  CHECK(jpegs == 4 + 2);  // train, and one val image per class

  const std::string marker = text(files_a.at("ringfeed-gen.json"));
  INFO(marker);
  CHECK(marker.find("\"photos\": \"large\"") != std::string::npos);
  CHECK(marker.find("\"complete\": true") != std::string::npos);
  CHECK(marker.find("\"megapixels\": {") != std::string::npos);

  // The default is ImageNet's mix, and the marker says so; the same seed
  // with another mix gives other files.
  REQUIRE(gen(plain, {}) == 0);
  const auto files_plain = tree(plain);
  CHECK(text(files_plain.at("ringfeed-gen.json")).find("\"photos\": \"imagenet\"") != std::string::npos);
  for (const auto& [name, bytes] : files_plain) {
    INFO(name);
    if (name != "ringfeed-gen.json") CHECK_FALSE(ringfeed::test::same(bytes, files_a.at(name)));
  }

  // An unknown mix is refused, naming the option.
  const fs::path log = tmp.path() / "bad.log";
  CHECK(run_to_end({ringfeed_cli(), "gen", (tmp.path() / "bad").string(), "--photos", "huge"}, log.string()) != 0);
  CHECK(text(ringfeed::test::read_file(log)).find("--photos") != std::string::npos);
}
