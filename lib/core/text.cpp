// ringfeed text helpers: escape_bytes() for messages, json_string() for JSON,
// and the ASCII helpers (trim, *_with_ci, hex64, parse_flag,
// byte_size_text).
#include <ringfeed/text.hpp>

#include <cstdint>
#include <cstdio>

namespace ringfeed {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

void append_hex(std::string& out, std::string_view prefix, unsigned value, int digits) {
  out.append(prefix);
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(hex_digits[(value >> shift) & 0xF]);
}

bool in(unsigned char c, unsigned lo, unsigned hi) noexcept { return c >= lo && c <= hi; }

char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ci(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view bytes) noexcept {
  if (bytes.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  // Table 3-7 of the Unicode Standard: the second byte's range depends on
  // the first (no overlongs, no surrogates, nothing past U+10FFFF).
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;
  if (in(c, 0xC2, 0xDF)) {
    n = 2;
  } else if (in(c, 0xE0, 0xEF)) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (in(c, 0xF0, 0xF4)) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (bytes.size() < n || !in(b(1), lo, hi)) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (!in(b(i), 0x80, 0xBF)) return 0;
  return n;
}

std::string escape_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\') {
      out.append("\\\\");
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(bytes.substr(i));
    // C2 80..C2 9F encode the C1 controls: not printable either.
    const bool control =
        c < 0x20 || c == 0x7F || (n == 2 && c == 0xC2 && static_cast<unsigned char>(bytes[i + 1]) < 0xA0);
    if (n == 0 || control) {
      const std::size_t k = n == 0 ? 1 : n;
      for (std::size_t j = 0; j < k; ++j) append_hex(out, "\\x", static_cast<unsigned char>(bytes[i + j]), 2);
      i += k;
      continue;
    }
    out.append(bytes.substr(i, n));
    i += n;
  }
  return out;
}

std::string json_string(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 2);
  out.push_back('"');
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t n = utf8_sequence_length(bytes.substr(i));
    if (n == 0) {  // not UTF-8: surrogateescape, U+DC00 + the byte
      append_hex(out, "\\u", 0xDC00u + c, 4);
      ++i;
    } else if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case '\n': out.append("\\n"); break;
        case '\t': out.append("\\t"); break;
        case '\r': out.append("\\r"); break;
        default: append_hex(out, "\\u", c, 4);
      }
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  out.push_back('"');
  return out;
}

std::string_view trim(std::string_view text, std::string_view chars) noexcept {
  const std::size_t first = text.find_first_not_of(chars);
  if (first == std::string_view::npos) return text.substr(text.size());
  return text.substr(first, text.find_last_not_of(chars) - first + 1);
}

bool starts_with_ci(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() && equal_ci(text.substr(0, prefix.size()), prefix);
}

bool ends_with_ci(std::string_view text, std::string_view suffix) noexcept {
  return text.size() >= suffix.size() && equal_ci(text.substr(text.size() - suffix.size()), suffix);
}

std::string hex64(std::uint64_t value) {
  std::string out(16, '0');
  for (std::size_t i = 16; i-- > 0; value >>= 4) out[i] = hex_digits[value & 0xF];
  return out;
}

std::optional<bool> parse_flag(std::string_view text) noexcept {
  for (const std::string_view t : {"1", "true", "yes", "on"})
    if (text == t) return true;
  for (const std::string_view f : {"0", "false", "no", "off"})
    if (text == f) return false;
  return std::nullopt;
}

std::string byte_size_text(std::uint64_t bytes, byte_unit unit) {
  constexpr std::uint64_t mib = std::uint64_t{1} << 20;
  switch (unit) {
    case byte_unit::exact:
      if (bytes % mib != 0) return std::to_string(bytes) + " bytes";
      break;
    case byte_unit::mib:
      break;
    case byte_unit::gib: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / double(1 << 30));
      return buf;
    }
  }
  return std::to_string(bytes / mib) + " MiB";
}

}  // namespace ringfeed
