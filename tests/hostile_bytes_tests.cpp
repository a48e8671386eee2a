// Error messages from every decoder and parser fed hostile bytes (0x80-0xFF,
// control characters, file names in Latin-1): each still throws its error,
// and the message is valid UTF-8 without control characters, the bytes
// quoted as \xNN (ringfeed::escape_bytes). A raw byte in a message breaks
// every JSON report that carries it (nlohmann refuses invalid UTF-8) and
// every Python exception built from it.
#include <catch2/catch.hpp>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/text.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace fs = std::filesystem;
namespace img = ringfeed::image;
using namespace ringfeed::data;
using ringfeed::test::temp_dir;

namespace {

// Every byte a damaged file or a foreign file name may hold that is not
// printable ASCII.
std::string hostile() {
  std::string s;
  for (int b = 0x80; b <= 0xFF; ++b) s.push_back(static_cast<char>(b));
  for (int b = 0x00; b < 0x20; ++b) s.push_back(static_cast<char>(b));
  s.push_back('\x7F');
  return s;
}

// A file name in Latin-1 with a tab and a newline in it.
const std::string latin1_name = "caf\xE9\t\n\x1B.img";

bool clean(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = ringfeed::utf8_sequence_length(s.substr(i));
    if (n == 0) return false;
    if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7F) return false;
    i += n;
  }
  return true;
}

std::vector<std::byte> bytes_of(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

// The message of what decoding `file` throws (it must throw image_error).
std::string decode_error(const std::string& file, const std::string& name = "hostile.img") {
  img::decoder d;
  img::image_buffer out;
  const auto b = bytes_of(file);
  try {
    (void)d.decode(b, name, out);
  } catch (const img::image_error& e) {
    return e.what();
  }
  FAIL("decoding did not throw image_error: " << ringfeed::escape_bytes(file.substr(0, 16)));
  return {};
}

void write(const fs::path& p, std::string_view s) {
  std::ofstream f(p, std::ios::binary);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

std::string dataset_error_of(const std::string& source) {
  try {
    (void)open_dataset(source, dataset_options{});
  } catch (const std::exception& e) {
    return e.what();
  }
  FAIL("open_dataset did not throw on " << ringfeed::escape_bytes(source));
  return {};
}

// One ustar member: a 512-byte header (name, octal size, checksum) and the
// content padded to 512 bytes. `claimed` overrides the size field.
std::string tar_member(const std::string& name, const std::string& content, std::size_t claimed = 0) {
  std::string h(512, '\0');
  h.replace(0, std::min<std::size_t>(name.size(), 100), name.substr(0, 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011lo", static_cast<unsigned long>(claimed != 0 ? claimed : content.size()));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = '0';
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(&h[148], 8, "%06o", sum);
  h[155] = ' ';
  std::string padded = content;
  padded.resize((content.size() + 511) / 512 * 512, '\0');
  return h + padded;
}

}  // namespace

TEST_CASE("PNM's messages quote hostile tokens escaped", "[hostile][pnm]") {
  // The token of the issue: '1\xE00' in the image data of a plain PPM.
  const std::string data_token = decode_error("P3\n2 1\n255\n1\xE0" "0 0 0 0 0 0\n");
  CHECK(clean(data_token));
  CHECK_THAT(data_token, Catch::Contains("invalid token '1\\xe00' in image data"));

  const std::string header_token = decode_error("P3\n2\x01\xFF" "1 1\n255\n0 0 0\n");
  CHECK(clean(header_token));
  CHECK_THAT(header_token, Catch::Contains("header token '2\\x01\\xff1' is not a number"));

  for (const char b : hostile()) {  // each byte alone inside a token, in the header and in the data
    if (std::string_view(" \t\n\v\f\r").find(b) != std::string_view::npos) continue;  // PNM whitespace
    const std::string t = std::string("7") + b + "7";
    INFO("byte " << ringfeed::escape_bytes(std::string(1, b)));
    CHECK(clean(decode_error("P2\n" + t + " 1\n255\n0\n")));
    CHECK(clean(decode_error("P2\n1 1\n255\n" + t + "\n")));
  }
}

TEST_CASE("every decoder's error on hostile bytes is clean text", "[hostile][decode]") {
  const std::string h = hostile();
  const std::vector<std::pair<const char*, std::string>> files = {
      {"JPEG", std::string("\xFF\xD8\xFF") + h + h},
      {"JPEG bad marker", std::string("\xFF\xD8\xFF\xE0\x00\x04\x01\x02\xFF\x9A") + h},
      {"PNG", std::string("\x89PNG\r\n\x1A\n", 8) + h},
      {"WebP", std::string("RIFF\x40\x00\x00\x00WEBP", 12) + h},
      {"BMP", "BM" + h},
      {"PNM", "P6\n" + h},
      {"TIFF", std::string("II*\0", 4) + h},
      {"TIFF big-endian", std::string("MM\0*", 4) + h},
      {"unknown", h},
      {"foreign", "GIF89a" + h},
  };
  for (const auto& [kind, file] : files) {
    INFO(kind);
    const std::string what = decode_error(file);
    INFO(ringfeed::escape_bytes(what));
    CHECK(clean(what));
  }
}

TEST_CASE("a decoder's message names a Latin-1 file name escaped", "[hostile][decode]") {
  const std::string what = decode_error("P3\n1 1\n255\nx\n", "/data/" + latin1_name);
  CHECK(clean(what));
  CHECK_THAT(what, Catch::StartsWith("/data/caf\\xe9\\x09\\x0a\\x1b.img: PNM:"));
}

TEST_CASE("the manifest parser quotes hostile fields escaped", "[hostile][manifest]") {
  temp_dir dir;
  const fs::path m = dir.path() / "m.csv";
  const std::string h = hostile();
  const std::string no_delims = [&] {
    std::string s;
    for (const char c : h)
      if (c != '\n' && c != '\r' && c != ',' && c != '\0') s.push_back(c);
    return s;
  }();

  write(m, "ok.jpg,1\n" + no_delims + ".jpg," + no_delims + "\n");
  std::string what = dataset_error_of(m.native());
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("label '\\x80\\x81"));

  write(m, "ok.jpg,1\n" + no_delims + "\n");
  what = dataset_error_of(m.native());
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("found one field '\\x80\\x81"));

  write(m, "\"a\"\xE9,1\n");
  what = dataset_error_of(m.native());
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("unexpected character '\\xe9' after a closing quote"));
}

TEST_CASE("the tar parser quotes hostile member names and labels escaped", "[hostile][tar]") {
  temp_dir dir;
  const std::string name = "s\xE9\x01\x9B\xFF";  // Latin-1, a control, a C1 byte, 0xFF

  const fs::path labels = dir.path() / "labels.tar";
  write(labels, tar_member(name + ".jpg", "\xFF\xD8\xFF") + tar_member(name + ".cls", "\xE0\x01x") +
                    std::string(1024, '\0'));
  std::string what = dataset_error_of(labels.native());
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("label member 's\\xe9\\x01\\x9b\\xff.cls' holds '\\xe0\\x01x', not an integer"));

  const fs::path truncated = dir.path() / "truncated.tar";
  write(truncated, tar_member(name + ".jpg", "abc", 1 << 20));
  what = dataset_error_of(truncated.native());
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("member 's\\xe9\\x01\\x9b\\xff.jpg'"));
}

TEST_CASE("dataset and I/O errors name a Latin-1 path escaped", "[hostile][data]") {
  temp_dir dir;
  const std::string missing = (dir.path() / latin1_name).native() + "/";
  const std::string what = dataset_error_of(missing);
  CHECK(clean(what));
  CHECK_THAT(what, Catch::Contains("caf\\xe9\\x09\\x0a\\x1b.img"));

  const std::string shard = (dir.path() / ("x\xE9" ".tar")).native();
  write(shard, std::string(100, 'x'));  // not a tar file
  const std::string bad_shard = dataset_error_of(shard);
  CHECK(clean(bad_shard));
  CHECK_THAT(bad_shard, Catch::Contains("x\\xe9.tar"));
}
