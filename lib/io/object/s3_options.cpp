// ringfeed::io::s3_option_keys and friends: the one list of the s3 keys
// every front end takes (Python's s3={…}, the C API's s3_*, the CLI's
// --s3-*), and the rules that tie them together.
#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::io {
namespace {

using kind = s3_option_key::kind;

bool flag_value(std::string_view name, std::string_view v) {
  if (const std::optional<bool> flag = parse_flag(v)) return *flag;
  throw std::invalid_argument("s3 " + std::string(name) + ": expected " + std::string(flag_spellings) + ", not '" +
                              std::string(v) + "'");
}

aws_credentials& credentials_of(s3_options& o) {
  if (!o.credentials) o.credentials.emplace();
  return *o.credentials;
}

// A key and how its value lands in s3_options: each key's name appears
// here once.
struct row {
  s3_option_key key;
  void (*set)(s3_options& o, std::string_view name, std::string_view value);
};

using sv = std::string_view;

constexpr row rows[] = {
    {{"endpoint", kind::text, "endpoint URL, e.g. http://127.0.0.1:9000 (MinIO)"},
     [](s3_options& o, sv, sv v) { o.endpoint = v; }},
    {{"region", kind::text, "region (signing)"}, [](s3_options& o, sv, sv v) { o.region = v; }},
    {{"profile", kind::text, "profile of ~/.aws/credentials and ~/.aws/config"},
     [](s3_options& o, sv, sv v) { o.profile = v; }},
    {{"ca_bundle", kind::text, "CA certificates for TLS (PEM file)"}, [](s3_options& o, sv, sv v) { o.ca_bundle = v; }},
    {{"anonymous", kind::flag, "unsigned requests (public buckets)"},
     [](s3_options& o, sv name, sv v) { o.anonymous = flag_value(name, v); }},
    {{"path_style", kind::tristate, "path-style addressing (endpoint/bucket/key), forced"},
     [](s3_options& o, sv name, sv v) {
       if (v == "auto")
         o.path_style.reset();
       else
         o.path_style = flag_value(name, v);
     }},
    {{"access_key_id", kind::text, "access key id (with secret_access_key)", true},
     [](s3_options& o, sv, sv v) { credentials_of(o).access_key_id = v; }},
    {{"secret_access_key", kind::text, "secret access key", true},
     [](s3_options& o, sv, sv v) { credentials_of(o).secret_access_key = v; }},
    {{"session_token", kind::text, "session token of temporary credentials", true},
     [](s3_options& o, sv, sv v) { credentials_of(o).session_token = v; }},
};

// The public table: the rows' keys, in order.
constexpr auto keys = [] {
  std::array<s3_option_key, std::size(rows)> k{};
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = rows[i].key;
  return k;
}();

}  // namespace

std::span<const s3_option_key> s3_option_keys() noexcept { return keys; }

void set_s3_option(s3_options& o, std::string_view name, std::string_view value) {
  for (const row& r : rows)
    if (r.key.name == name) return r.set(o, name, value);
  std::string known;
  for (const auto& k : keys) known.append(known.empty() ? "" : ", ").append(k.name);
  throw std::invalid_argument("s3 has no option '" + std::string(name) + "': it takes " + known);
}

void settle_s3_options(s3_options& o) {
  if (const auto& c = o.credentials;
      c && c->access_key_id.empty() && c->secret_access_key.empty() && c->session_token.empty())
    o.credentials.reset();
  if (!o.credentials) return;
  const auto& c = *o.credentials;
  if (c.access_key_id.empty() != c.secret_access_key.empty())
    throw std::invalid_argument("s3: give access_key_id and secret_access_key together");
  if (c.access_key_id.empty())
    throw std::invalid_argument("s3: session_token needs access_key_id and secret_access_key");
  if (o.anonymous)
    throw std::invalid_argument("s3: anonymous signs nothing: leave out access_key_id and secret_access_key");
}

}  // namespace ringfeed::io
