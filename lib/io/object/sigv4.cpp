// sign_v4: AWS Signature Version 4 (see include/ringfeed/io/sigv4.hpp).
#include <ringfeed/io/sigv4.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>
#include <stdexcept>

namespace ringfeed::io {

namespace {

using digest = std::array<unsigned char, 32>;

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 0xF];
  }
  return out;
}

digest hmac(std::string_view key, std::string_view data) {
  digest out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len) == nullptr ||
      len != out.size()) {
    throw std::runtime_error("sigv4: OpenSSL's HMAC-SHA-256 failed");
  }
  return out;
}

std::string_view as_view(const digest& d) { return {reinterpret_cast<const char*>(d.data()), d.size()}; }

bool unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Leading and trailing blanks dropped, inner runs of spaces made one.
std::string trim_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

/// Each '/'-separated segment encoded; the slashes kept; no normalization
/// (S3 keys may hold "//", "." and "..").
std::string encode_path(std::string_view path) {
  if (path.empty()) return "/";
  return uri_encode(path, false);
}

}  // namespace

std::string uri_encode(std::string_view text, bool encode_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c) || (c == '/' && !encode_slash)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xF]);
    }
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  digest d{};
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return hex(d.data(), d.size());
}

std::string amz_date(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)
  auto num = [&](std::size_t at, std::size_t n, int& v) {
    if (at + n > text.size()) return false;
    v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      v = v * 10 + (text[i] - '0');
    }
    return true;
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!num(0, 4, y) || text.size() < 20 || text[4] != '-' || !num(5, 2, mo) || text[7] != '-' || !num(8, 2, d) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !num(11, 2, h) || text[13] != ':' ||
      !num(14, 2, mi) || text[16] != ':' || !num(17, 2, s)) {
    return std::nullopt;
  }
  std::size_t at = 19;
  std::chrono::nanoseconds frac{0};
  if (at < text.size() && text[at] == '.') {
    ++at;
    long long scale = 100'000'000, ns = 0;
    const std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      ns += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == start) return std::nullopt;
    frac = std::chrono::nanoseconds{ns};
  }
  std::chrono::minutes offset{0};
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z') && at + 1 == text.size()) {
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    int oh = 0, om = 0;
    if (!num(at + 1, 2, oh) || !num(at + 4, 2, om)) return std::nullopt;
    offset = std::chrono::minutes{(oh * 60 + om) * (text[at] == '-' ? -1 : 1)};
  } else {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y} / month{static_cast<unsigned>(mo)} / day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  return time_point_cast<system_clock::duration>(sys_days{ymd} + hours{h} + minutes{mi} + seconds{s} + frac - offset);
}

sigv4_result sign_v4(const sigv4_request& request, const aws_credentials& credentials, std::string_view region,
                     std::string_view service, std::chrono::system_clock::time_point now) {
  if (request.method.empty()) throw std::invalid_argument("sigv4: the request has no method");
  if (request.host.empty()) throw std::invalid_argument("sigv4: the request has no host");
  if (!request.path.empty() && request.path.front() != '/') {
    throw std::invalid_argument("sigv4: the path of a request to " + request.host + " does not start with '/'");
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    throw std::invalid_argument("sigv4: the credentials for a request to " + request.host +
                                " have no access key id or no secret access key");
  }
  if (region.empty() || service.empty()) throw std::invalid_argument("sigv4: no region or no service to sign for");

  sigv4_result out;
  const std::string date_time = amz_date(now);
  const std::string date = date_time.substr(0, 8);

  out.encoded_path = encode_path(request.path);

  std::vector<std::pair<std::string, std::string>> query;
  query.reserve(request.query.size());
  for (const auto& [k, v] : request.query) query.emplace_back(uri_encode(k, true), uri_encode(v, true));
  std::sort(query.begin(), query.end());
  for (const auto& [k, v] : query) {
    if (!out.encoded_query.empty()) out.encoded_query.push_back('&');
    out.encoded_query += k;
    out.encoded_query.push_back('=');
    out.encoded_query += v;
  }

  // Headers: the caller's, then ours; names lower-cased, values trimmed,
  // sorted by name, repeated names joined with ',' in the order given.
  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("host", request.host);
  for (const auto& [k, v] : request.headers) {
    std::string name = lower(k);
    if (name == "host" || name == "x-amz-date" || name == "authorization" ||
        (name == "x-amz-content-sha256" && request.sign_content_sha256) ||
        (name == "x-amz-security-token" && !credentials.session_token.empty())) {
      continue;  // ours win
    }
    headers.emplace_back(std::move(name), trim_value(v));
  }
  headers.emplace_back("x-amz-date", date_time);
  out.headers.emplace_back("x-amz-date", date_time);
  if (request.sign_content_sha256) {
    headers.emplace_back("x-amz-content-sha256", request.payload_hash);
    out.headers.emplace_back("x-amz-content-sha256", request.payload_hash);
  }
  if (!credentials.session_token.empty()) {
    headers.emplace_back("x-amz-security-token", credentials.session_token);
    out.headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.back() = ',';  // the '\n' of the previous line
      canonical_headers += headers[i].second;
      canonical_headers.push_back('\n');
      continue;
    }
    canonical_headers += headers[i].first;
    canonical_headers.push_back(':');
    canonical_headers += headers[i].second;
    canonical_headers.push_back('\n');
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += headers[i].first;
  }

  out.canonical_request = request.method + '\n' + out.encoded_path + '\n' + out.encoded_query + '\n' +
                          canonical_headers + '\n' + signed_headers + '\n' + request.payload_hash;

  std::string scope = date;
  scope.push_back('/');
  scope.append(region);
  scope.push_back('/');
  scope.append(service);
  scope.append("/aws4_request");
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + date_time + '\n' + scope + '\n' + sha256_hex(out.canonical_request);

  const digest k_date = hmac("AWS4" + credentials.secret_access_key, date);
  const digest k_region = hmac(as_view(k_date), region);
  const digest k_service = hmac(as_view(k_region), service);
  const digest k_signing = hmac(as_view(k_service), "aws4_request");
  const digest sig = hmac(as_view(k_signing), out.string_to_sign);
  out.signature = hex(sig.data(), sig.size());

  out.headers.insert(out.headers.begin(),
                     {"authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + '/' + scope +
                                           ",SignedHeaders=" + signed_headers + ",Signature=" + out.signature});
  return out;
}

}  // namespace ringfeed::io
