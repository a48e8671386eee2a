// ringfeed/text.hpp: escape_bytes() for messages and json_string() /
// detail::json_text() for JSON, on every byte value: the results are valid
// UTF-8 whatever the input, escape_bytes holds no control character, and
// json_string is Python's surrogateescape (what os.fsdecode makes).
#include <catch2/catch.hpp>

#include <ringfeed/detail/json_text.hpp>
#include <ringfeed/text.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

using ringfeed::escape_bytes;
using ringfeed::json_string;
using namespace std::string_view_literals;

namespace {

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = ringfeed::utf8_sequence_length(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool has_control(std::string_view s) {
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  return false;
}

// Inverse of escape_bytes, for the round-trip check.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
    } else if (s[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
    } else {
      REQUIRE(s[i + 1] == 'x');
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16)));
      i += 3;
    }
  }
  return out;
}

std::string all_bytes() {
  std::string s;
  for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
  return s;
}

}  // namespace

TEST_CASE("utf8_sequence_length follows Unicode's table of well-formed sequences", "[text]") {
  CHECK(ringfeed::utf8_sequence_length("a") == 1);
  CHECK(ringfeed::utf8_sequence_length("\xC3\xA9") == 2);           // é
  CHECK(ringfeed::utf8_sequence_length("\xE2\x82\xAC") == 3);       // €
  CHECK(ringfeed::utf8_sequence_length("\xF0\x9F\x98\x80") == 4);   // 😀
  CHECK(ringfeed::utf8_sequence_length("\xC0\xAF") == 0);           // overlong '/'
  CHECK(ringfeed::utf8_sequence_length("\xE0\x80\xAF") == 0);       // overlong
  CHECK(ringfeed::utf8_sequence_length("\xED\xB2\x80") == 0);       // a surrogate (U+DC80)
  CHECK(ringfeed::utf8_sequence_length("\xF4\x90\x80\x80") == 0);   // past U+10FFFF
  CHECK(ringfeed::utf8_sequence_length("\xE9") == 0);               // Latin-1 é
  CHECK(ringfeed::utf8_sequence_length("\xC3") == 0);               // truncated
  CHECK(ringfeed::utf8_sequence_length("\x80") == 0);               // a lone continuation byte
  CHECK(ringfeed::utf8_sequence_length("") == 0);
}

TEST_CASE("escape_bytes keeps text and writes every other byte as \\xNN", "[text]") {
  CHECK(escape_bytes("plain/name_1.jpg") == "plain/name_1.jpg");
  CHECK(escape_bytes("caf\xC3\xA9.jpg") == "caf\xC3\xA9.jpg");  // UTF-8 stays readable
  CHECK(escape_bytes("caf\xE9.jpg") == "caf\\xe9.jpg");         // Latin-1 does not
  CHECK(escape_bytes("1\xE0" "0") == "1\\xe00");                // the PNM token of the issue
  CHECK(escape_bytes("a\tb\nc\r\x1B[31m\x7F") == "a\\x09b\\x0ac\\x0d\\x1b[31m\\x7f");
  CHECK(escape_bytes(std::string_view("nul\0x", 5)) == "nul\\x00x");
  CHECK(escape_bytes("back\\slash") == "back\\\\slash");
  CHECK(escape_bytes("\xC2\x85") == "\\xc2\\x85");  // U+0085, a C1 control
  CHECK(escape_bytes("\xC2\xA0") == "\xC2\xA0");    // U+00A0 is text
  CHECK(escape_bytes("\xED\xB2\x80") == "\\xed\\xb2\\x80");

  const std::string every = all_bytes();
  const std::string e = escape_bytes(every);
  CHECK(valid_utf8(e));
  CHECK_FALSE(has_control(e));
  CHECK(unescape(e) == every);
  for (int b = 0x80; b <= 0xFF; ++b) {
    const std::string one(1, static_cast<char>(b));
    CHECK(escape_bytes(one).size() == 4);
  }
}

TEST_CASE("json_string is a JSON string literal, valid UTF-8, surrogateescape for other bytes", "[text]") {
  CHECK(json_string("a.jpg") == "\"a.jpg\"");
  CHECK(json_string("caf\xC3\xA9") == "\"caf\xC3\xA9\"");
  // Python: json.loads(r'"caf\udce9"') == os.fsdecode(b"caf\xe9")
  CHECK(json_string("caf\xE9") == "\"caf\\udce9\"");
  CHECK(json_string("q\"b\\t\tn\nc\x01") == "\"q\\\"b\\\\t\\tn\\nc\\u0001\"");
  CHECK(json_string("\xED\xB2\x80") == "\"\\udced\\udcb2\\udc80\"");

  const std::string every = all_bytes();
  const std::string j = json_string(every);
  CHECK(valid_utf8(j));
  CHECK_FALSE(has_control(j));
  // Bytes that are UTF-8 come back from a standard parser as they were.
  CHECK(nlohmann::json::parse(json_string("tab\there \xE2\x82\xAC \"q\"")) == "tab\there \xE2\x82\xAC \"q\"");
}

TEST_CASE("json_text writes what dump() writes, and does not throw on bytes that are not UTF-8", "[text]") {
  const nlohmann::json ok = {{"a", 1}, {"b", {true, nullptr, 2.5, "x"}}, {"c", nlohmann::json::object()},
                             {"d", nlohmann::json::array()}};
  CHECK(ringfeed::detail::json_text(ok) == ok.dump());
  CHECK(ringfeed::detail::json_text(ok, 2) == ok.dump(2));

  const nlohmann::json bad = {{"skipped", {{{"path", "/d/caf\xE9.png"}, {"reason", "PNM: \xE0"}}}}};
  CHECK_THROWS(bad.dump());  // what nlohmann alone does
  const std::string text = ringfeed::detail::json_text(bad);
  CHECK(text == R"({"skipped":[{"path":"/d/caf\udce9.png","reason":"PNM: \udce0"}]})");
  CHECK(valid_utf8(text));
}

TEST_CASE("trim drops ASCII white space, or the characters given, at both ends", "[text]") {
  using ringfeed::trim;
  CHECK(trim(" \t\n\v\f\rabc d\r\n\v\f\t ") == "abc d");
  CHECK(trim("   ") == "");
  CHECK(trim("") == "");
  CHECK(trim("\xa0x\xa0") == "\xa0x\xa0");  // bytes from 0x80 up are not space, whatever the locale
  CHECK(trim("x\0"sv) == "x\0"sv);           // nor is NUL
  // http_client's header values: blanks, and the line's CR LF.
  CHECK(trim(" \t\"etag\" \r\n", " \t\r\n") == "\"etag\"");
  // tar numbers: space, tab and newline only.
  CHECK(trim(" 0755\n\r", " \t\n") == "0755\n\r");
}

TEST_CASE("starts_with_ci and ends_with_ci compare ASCII letters in any case", "[text]") {
  using ringfeed::ends_with_ci;
  using ringfeed::starts_with_ci;
  CHECK(starts_with_ci("S3://bucket", "s3://"));
  CHECK(starts_with_ci("https://h", "HTTPS://"));
  CHECK_FALSE(starts_with_ci("s3:/", "s3://"));
  CHECK(starts_with_ci("x", ""));
  CHECK(ends_with_ci("shard.TAR", ".tar"));
  CHECK(ends_with_ci("a.Jpeg", ".jpeg"));
  CHECK_FALSE(ends_with_ci("tar", ".tar"));
  CHECK_FALSE(ends_with_ci("a.tar.gz", ".tar"));
  CHECK_FALSE(ends_with_ci("\xc3\x89", "\xc3\xa9"));  // É is not é: ASCII letters only
  CHECK_FALSE(ends_with_ci("a@", "`"));                // '@' and '`' sit beside the letters
}

TEST_CASE("hex64 is 16 lowercase hex digits", "[text]") {
  CHECK(ringfeed::hex64(0) == "0000000000000000");
  CHECK(ringfeed::hex64(0xabcdef0123456789ULL) == "abcdef0123456789");
  CHECK(ringfeed::hex64(~std::uint64_t{0}) == "ffffffffffffffff");
  CHECK(ringfeed::hex64(0x1f) == "000000000000001f");
}

TEST_CASE("parse_flag takes 1/0, true/false, yes/no, on/off and nothing else", "[text]") {
  for (const char* t : {"1", "true", "yes", "on"}) CHECK(ringfeed::parse_flag(t) == true);
  for (const char* f : {"0", "false", "no", "off"}) CHECK(ringfeed::parse_flag(f) == false);
  for (const char* x : {"", "True", "ON", "2", " 1", "yes ", "auto"}) CHECK_FALSE(ringfeed::parse_flag(x).has_value());
}

TEST_CASE("byte_size_text: exact MiB or bytes, MiB rounded down, GiB with one decimal", "[text]") {
  using ringfeed::byte_size_text;
  using ringfeed::byte_unit;
  CHECK(byte_size_text(std::uint64_t{588} << 20) == "588 MiB");
  CHECK(byte_size_text(2408448) == "2408448 bytes");
  CHECK(byte_size_text(0) == "0 MiB");
  CHECK(byte_size_text((std::uint64_t{7212} << 20) + 12345, byte_unit::mib) == "7212 MiB");
  CHECK(byte_size_text(std::uint64_t{16} << 30, byte_unit::gib) == "16.0 GiB");
  CHECK(byte_size_text(std::uint64_t{3} << 29, byte_unit::gib) == "1.5 GiB");
}
