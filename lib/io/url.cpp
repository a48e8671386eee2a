// object_url, brace expansion and URL lists (see include/ringfeed/io/url.hpp).
#include <ringfeed/io/url.hpp>

#include <ringfeed/text.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace ringfeed::io {

namespace {

std::invalid_argument bad_url(std::string_view url, const std::string& why) {
  return std::invalid_argument("invalid URL '" + escape_bytes(url) + "': " + why);
}

/// "a/b/../c/./d" -> "a/c/d"; throws when ".." climbs above the root.
std::string normalize_relative(std::string_view path, std::string_view whole) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view seg = path.substr(start, slash - start);
    if (seg == "..") {
      if (parts.empty()) throw bad_url(whole, "'..' climbs above the bucket or host root");
      parts.pop_back();
    } else if (seg != "." && !(seg.empty() && slash != path.size())) {
      parts.push_back(seg);
    }
    start = slash + 1;
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.push_back('/');
    out.append(parts[i]);
  }
  return out;
}

}  // namespace

object_url object_url::parse(std::string_view url) {
  object_url out;
  std::string_view rest;
  if (starts_with_ci(url, "s3://")) {
    out.scheme = url_scheme::s3;
    rest = url.substr(5);
  } else if (starts_with_ci(url, "https://")) {
    out.scheme = url_scheme::https;
    rest = url.substr(8);
  } else if (starts_with_ci(url, "http://")) {
    out.scheme = url_scheme::http;
    rest = url.substr(7);
  } else {
    throw bad_url(url, "the scheme is not s3://, https:// or http://");
  }
  if (std::any_of(url.begin(), url.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    throw bad_url(url, "it holds control characters");
  }

  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, std::min(slash, rest.find_first_of("?#")));
  std::string_view tail = rest.substr(authority.size());

  if (out.scheme == url_scheme::s3) {
    // As the AWS CLI reads it: the key is everything after the bucket's
    // '/', verbatim ('?' and '#' are ordinary key characters).
    authority = rest.substr(0, slash);
    tail = rest.substr(authority.size());
    if (authority.empty()) throw bad_url(url, "no bucket name after s3://");
    if (authority.find_first_of(":@[]?# ") != std::string_view::npos) {
      throw bad_url(url, "'" + escape_bytes(authority) + "' is not a bucket name");
    }
    out.host = std::string(authority);
    out.path = std::string(tail.empty() ? tail : tail.substr(1));
    return out;
  }

  if (authority.empty()) throw bad_url(url, "no host");
  if (authority.find('@') != std::string_view::npos) throw bad_url(url, "user names and passwords in URLs are not supported");
  std::string_view host = authority, port_text;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad_url(url, "unterminated '[' in the host");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad_url(url, "unexpected text after the IPv6 address");
      port_text = after.substr(1);
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
  }
  if (host.empty()) throw bad_url(url, "no host");
  if (!port_text.empty() || authority.back() == ':') {
    unsigned port = 0;
    const auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || p != port_text.data() + port_text.size() || port == 0 || port > 65535) {
      throw bad_url(url, "bad port '" + escape_bytes(port_text) + "'");
    }
    out.port = static_cast<std::uint16_t>(port);
  }
  out.host = std::string(host);
  if (const std::size_t hash = tail.find('#'); hash != std::string_view::npos) {
    throw bad_url(url, "fragments ('#') are not sent to servers; percent-encode a '#' in a path as %23");
  }
  const std::size_t q = tail.find('?');
  out.path = std::string(tail.substr(0, q));
  if (out.path.empty()) out.path.assign(1, '/');  // not = "/": GCC 12 -Wrestrict false positive (PR 105651)
  if (q != std::string_view::npos) out.query = std::string(tail.substr(q + 1));
  return out;
}

std::string object_url::authority() const {
  std::string out;
  const bool v6 = host.find(':') != std::string::npos;
  if (v6) out.push_back('[');
  out += host;
  if (v6) out.push_back(']');
  if (port != 0) {
    out.push_back(':');
    out += std::to_string(port);
  }
  return out;
}

std::string object_url::str() const {
  switch (scheme) {
    case url_scheme::s3:
      return "s3://" + host + "/" + path;
    case url_scheme::http:
    case url_scheme::https: {
      std::string out = scheme == url_scheme::https ? "https://" : "http://";
      out += authority();
      out += path;
      if (!query.empty()) {
        out.push_back('?');
        out += query;
      }
      return out;
    }
  }
  return {};
}

object_url object_url::resolve(std::string_view ref) const {
  if (is_url(ref)) return parse(ref);
  object_url out = *this;
  out.query.clear();
  const std::string whole = str() + " + " + std::string(ref);
  if (scheme == url_scheme::s3) {
    if (!ref.empty() && ref.front() == '/') {
      out.path = normalize_relative(ref.substr(1), whole);
    } else {
      const std::size_t slash = path.rfind('/');
      const std::string dir = slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
      out.path = normalize_relative(dir + std::string(ref), whole);
    }
    return out;
  }
  std::string_view r = ref;
  std::string_view ref_query;
  if (const std::size_t q = r.find('?'); q != std::string_view::npos) {
    ref_query = r.substr(q + 1);
    r = r.substr(0, q);
  }
  std::string joined;
  if (!r.empty() && r.front() == '/') {
    joined = std::string(r.substr(1));
  } else {
    const std::size_t slash = path.rfind('/');  // path starts with '/'
    joined = path.substr(1, slash) + std::string(r);
  }
  out.path = normalize_relative(joined, whole);
  out.path.insert(out.path.begin(), '/');  // not "/" + ...: GCC 12 -Wrestrict false positive (PR 105651)
  out.query = std::string(ref_query);
  return out;
}

std::string_view object_url::file_name() const noexcept {
  const std::string_view p = path;
  const std::size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// --- brace expansion -----------------------------------------------------------

namespace {

class brace_expander {
 public:
  explicit brace_expander(std::string_view pattern) : m_pattern(pattern) {}

  std::vector<std::string> run() {
    check_balanced();
    return expand(m_pattern);
  }

 private:
  std::string_view m_pattern;

  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("bad brace pattern '" + escape_bytes(m_pattern) + "': " + why);
  }

  void check_balanced() const {
    int depth = 0;
    for (std::size_t i = 0; i < m_pattern.size(); ++i) {
      const char c = m_pattern[i];
      if (c == '\\') {
        ++i;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        if (--depth < 0) fail("'}' at offset " + std::to_string(i) + " closes no '{'");
      }
    }
    if (depth != 0) fail("a '{' is never closed");
  }

  /// Offset of the '}' closing the '{' at `open`.
  static std::size_t matching(std::string_view s, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
      } else if (s[i] == '{') {
        ++depth;
      } else if (s[i] == '}' && --depth == 0) {
        return i;
      }
    }
    return std::string_view::npos;
  }

  /// Top-level comma-separated items of a group's body; none when it has no comma.
  static std::vector<std::string_view> split_items(std::string_view body) {
    std::vector<std::string_view> items;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\\') {
        ++i;
      } else if (body[i] == '{') {
        ++depth;
      } else if (body[i] == '}') {
        --depth;
      } else if (body[i] == ',' && depth == 0) {
        items.push_back(body.substr(start, i - start));
        start = i + 1;
      }
    }
    if (items.empty()) return items;
    items.push_back(body.substr(start));
    return items;
  }

  static bool parse_int(std::string_view s, long long& v) {
    const char* b = s.data();
    const char* e = b + s.size();
    if (b != e && *b == '+') ++b;
    const auto [p, ec] = std::from_chars(b, e, v);
    return !s.empty() && ec == std::errc{} && p == e;
  }

  static bool padded(std::string_view s) {
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    return s.size() > 1 && s.front() == '0';
  }

  /// `{a..b}` / `{a..b..step}` as a list of strings; false when `body` is not a range.
  bool range(std::string_view body, std::vector<std::string>& out) const {
    const std::size_t dots = body.find("..");
    if (dots == std::string_view::npos) return false;
    std::string_view lo = body.substr(0, dots);
    std::string_view hi = body.substr(dots + 2);
    std::string_view step_text;
    if (const std::size_t d2 = hi.find(".."); d2 != std::string_view::npos) {
      step_text = hi.substr(d2 + 2);
      hi = hi.substr(0, d2);
    }
    long long step = 1;
    if (!step_text.empty() && (!parse_int(step_text, step) || step == 0)) return false;
    if (step < 0) step = -step;
    long long a = 0, b = 0;
    if (parse_int(lo, a) && parse_int(hi, b)) {
      const std::size_t width = padded(lo) || padded(hi) ? std::max(lo.size(), hi.size()) : 0;
      const long long count = (a <= b ? b - a : a - b) / step + 1;
      if (static_cast<unsigned long long>(count) > max_brace_expansion) {
        fail("the range {" + std::string(body) + "} gives more than " + std::to_string(max_brace_expansion) + " names");
      }
      for (long long i = 0; i < count; ++i) {
        const long long v = a <= b ? a + i * step : a - i * step;
        std::string digits = std::to_string(v < 0 ? -v : v);
        const std::size_t w = width > 0 && v < 0 ? width - 1 : width;
        if (digits.size() < w) digits.insert(0, w - digits.size(), '0');
        out.push_back(v < 0 ? "-" + digits : digits);
      }
      return true;
    }
    if (lo.size() == 1 && hi.size() == 1 && std::isalpha(static_cast<unsigned char>(lo[0])) &&
        std::isalpha(static_cast<unsigned char>(hi[0]))) {
      const int x = lo[0], y = hi[0];
      for (int c = x; x <= y ? c <= y : c >= y; c += x <= y ? static_cast<int>(step) : -static_cast<int>(step)) {
        out.emplace_back(1, static_cast<char>(c));
      }
      return true;
    }
    return false;
  }

  static std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out.push_back(s[i]);
    }
    return out;
  }

  std::vector<std::string> expand(std::string_view s) const {
    // The first group that expands; what comes before it is literal.
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
        continue;
      }
      if (s[i] != '{') continue;
      const std::size_t close = matching(s, i);
      if (close == std::string_view::npos) fail("a '{' is never closed");
      const std::string_view body = s.substr(i + 1, close - i - 1);
      std::vector<std::string> alternatives;
      if (!range(body, alternatives)) {
        const auto items = split_items(body);
        if (items.empty()) continue;  // "{x}", "{}": literal
        for (const auto item : items) {
          for (auto& e : expand(item)) alternatives.push_back(std::move(e));
        }
      }
      const std::string head = unescape(s.substr(0, i));
      const std::vector<std::string> tails = expand(s.substr(close + 1));
      if (alternatives.size() * tails.size() > max_brace_expansion) {
        fail("it gives more than " + std::to_string(max_brace_expansion) + " names");
      }
      std::vector<std::string> out;
      out.reserve(alternatives.size() * tails.size());
      for (const auto& a : alternatives) {
        for (const auto& t : tails) out.push_back(head + a + t);
      }
      return out;
    }
    return {unescape(s)};
  }
};

}  // namespace

std::vector<std::string> expand_braces(std::string_view pattern) { return brace_expander(pattern).run(); }

std::vector<std::string> expand_url_spec(std::string_view spec) {
  std::vector<std::string> out;
  std::size_t start = 0;
  int brackets = 0;
  auto flush = [&](std::size_t end) {
    const std::string_view part = trim(spec.substr(start, end - start));
    if (part.empty()) return;
    for (auto& u : expand_braces(part)) out.push_back(std::move(u));
  };
  for (std::size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '[') ++brackets;
    if (spec[i] == ']') --brackets;
    if (brackets == 0 && spec.compare(i, 2, "::") == 0) {
      flush(i);
      start = i + 2;
      ++i;
    }
  }
  flush(spec.size());
  return out;
}

std::vector<std::string> read_url_list(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    const int err = errno != 0 ? errno : ENOENT;
    throw std::system_error(err, std::generic_category(), "cannot read the URL list " + escape_bytes(file.string()));
  }
  std::vector<std::string> out;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    try {
      for (auto& u : expand_braces(t)) out.push_back(std::move(u));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(escape_bytes(file.string()) + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  if (in.bad()) {
    throw std::system_error(EIO, std::generic_category(), "error reading the URL list " + escape_bytes(file.string()));
  }
  return out;
}

}  // namespace ringfeed::io
