// AWS endpoint and region resolution, the AWS INI files, and the blocking
// HTTP helper of the credential sources (see include/ringfeed/io/aws_config.hpp).
#include "io/object/aws_detail.hpp"

#include <ringfeed/io/url.hpp>
#include <ringfeed/text.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>

extern char** environ;

namespace ringfeed::io {

namespace detail {

bool truthy(std::string_view value) {
  std::string v(trim(value));
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v == "true" || v == "1";
}

ini_file read_ini(const std::string& path) {
  ini_file out;
  out.path = path;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return out;
    throw std::runtime_error("cannot read the AWS file " + escape_bytes(path) + ": " + std::strerror(errno));
  }
  out.exists = true;
  std::string line;
  std::size_t number = 0;
  ini_section* section = nullptr;
  std::string parent;  // a "key =" with sub-properties on the indented lines below
  while (std::getline(in, line)) {
    ++number;
    const bool indented = !line.empty() && (line.front() == ' ' || line.front() == '\t');
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#' || t.front() == ';') continue;
    if (t.front() == '[') {
      if (t.back() != ']') {
        throw std::runtime_error(escape_bytes(path) + ":" + std::to_string(number) + ": unterminated section header");
      }
      std::string name(trim(t.substr(1, t.size() - 2)));
      section = &out.sections[name];
      parent.clear();
      continue;
    }
    const std::size_t eq = t.find('=');
    if (eq == std::string_view::npos || section == nullptr) {
      throw std::runtime_error(escape_bytes(path) + ":" + std::to_string(number) +
                               (section == nullptr ? ": a setting before any [section]"
                                                   : ": not a 'key = value' line"));
    }
    std::string key(trim(t.substr(0, eq)));
    std::string value(trim(t.substr(eq + 1)));
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (indented && !parent.empty()) {
      (*section)[parent + "." + key] = value;
      continue;
    }
    parent = value.empty() ? key : std::string{};
    (*section)[key] = value;
  }
  if (in.bad()) throw std::runtime_error("error reading the AWS file " + escape_bytes(path));
  return out;
}

const ini_section* credentials_profile(const ini_file& f, std::string_view name) {
  const auto it = f.sections.find(name);
  return it == f.sections.end() ? nullptr : &it->second;
}

const ini_section* config_profile(const ini_file& f, std::string_view name) {
  auto it = f.sections.find("profile " + std::string(name));
  if (it == f.sections.end() && name == "default") it = f.sections.find("default");
  return it == f.sections.end() ? nullptr : &it->second;
}

namespace {

std::size_t collect(char* data, std::size_t size, std::size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  constexpr std::size_t limit = 1 << 20;  // credential answers are small
  if (body->size() + size * n > limit) return 0;
  body->append(data, size * n);
  return size * n;
}

struct easy_deleter {
  void operator()(CURL* c) const noexcept { curl_easy_cleanup(c); }
};
struct slist_deleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};

}  // namespace

http_reply http_call(std::string_view method, const std::string& url, const std::vector<std::string>& headers,
                     const credential_http_options& options) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, easy_deleter> curl(curl_easy_init());
  if (!curl) throw std::runtime_error(url + ": curl_easy_init failed");
  std::unique_ptr<curl_slist, slist_deleter> list;
  for (const auto& h : headers) {
    curl_slist* next = curl_slist_append(list.get(), h.c_str());
    if (next == nullptr) throw std::runtime_error(url + ": out of memory for headers");
    (void)list.release();
    list.reset(next);
  }
  http_reply reply;
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  if (method == "PUT") curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
  if (method == "PUT") curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "169.254.169.254,169.254.170.2,127.0.0.1,localhost");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.total_timeout.count()));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    throw std::runtime_error(url + ": " + (error[0] != '\0' ? std::string(error) : curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

}  // namespace detail

// --- environment ---------------------------------------------------------------

aws_environment aws_environment::from_process() {
  aws_environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv = *e;
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = kv.substr(0, eq);
    if (name.starts_with("AWS_") || name == "HOME" || name == "CURL_CA_BUNDLE" || name == "SSL_CERT_FILE") {
      env.vars.emplace(std::string(name), std::string(kv.substr(eq + 1)));
    }
  }
  return env;
}

std::string aws_environment::get(std::string_view name) const {
  const auto it = vars.find(name);
  return it == vars.end() ? std::string{} : it->second;
}

std::string aws_environment::credentials_file() const {
  if (auto f = get("AWS_SHARED_CREDENTIALS_FILE"); !f.empty()) return f;
  const std::string home = get("HOME");
  return home.empty() ? std::string{} : home + "/.aws/credentials";
}

std::string aws_environment::config_file() const {
  if (auto f = get("AWS_CONFIG_FILE"); !f.empty()) return f;
  const std::string home = get("HOME");
  return home.empty() ? std::string{} : home + "/.aws/config";
}

std::string aws_environment::profile(std::string_view explicit_name) const {
  if (!explicit_name.empty()) return std::string(explicit_name);
  if (auto p = get("AWS_PROFILE"); !p.empty()) return p;
  return "default";
}

// --- endpoint --------------------------------------------------------------------

namespace {

/// A name usable as a TLS host name label under *.s3.<region>.amazonaws.com.
bool dns_label(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
      return false;
    }
  }
  return bucket.front() != '-' && bucket.back() != '-';
}

}  // namespace

bool s3_endpoint::uses_path_style(std::string_view bucket) const { return path_style || !dns_label(bucket); }

std::string s3_endpoint::host_for(std::string_view bucket) const {
  io::object_url u;
  u.scheme = scheme == "http" ? url_scheme::http : url_scheme::https;
  u.host = uses_path_style(bucket) ? host : std::string(bucket) + "." + host;
  u.port = port;
  return u.authority();
}

std::string s3_endpoint::path_for(std::string_view bucket, std::string_view key) const {
  std::string out = base_path;
  out.push_back('/');
  if (uses_path_style(bucket)) {
    out.append(bucket);
    if (key.empty()) return out;
    out.push_back('/');
  }
  out.append(key);
  return out;
}

std::string s3_endpoint::object_url(std::string_view bucket, std::string_view key) const {
  return scheme + "://" + host_for(bucket) + uri_encode(path_for(bucket, key), false);
}

s3_endpoint resolve_endpoint(const s3_options& options, const aws_environment& env) {
  s3_endpoint out;
  const std::string profile = env.profile(options.profile);
  // The profile's settings, only read when something is left to find.
  std::optional<detail::ini_file> config;
  auto profile_value = [&](std::string_view key) -> std::string {
    if (!config) config = detail::read_ini(env.config_file());
    const detail::ini_section* s = detail::config_profile(*config, profile);
    if (s == nullptr) return {};
    const auto it = s->find(key);
    return it == s->end() ? std::string{} : it->second;
  };

  out.region = options.region;
  if (out.region.empty()) out.region = env.get("AWS_REGION");
  if (out.region.empty()) out.region = env.get("AWS_DEFAULT_REGION");
  if (out.region.empty()) out.region = profile_value("region");
  if (out.region.empty()) out.region = "us-east-1";

  std::string endpoint = options.endpoint;
  std::string from = "s3_options::endpoint";
  for (const char* var : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (!endpoint.empty()) break;
    endpoint = env.get(var);
    from = var;
  }
  if (endpoint.empty()) {
    endpoint = profile_value("s3.endpoint_url");
    from = "endpoint_url in profile " + profile + "'s s3 section of " + env.config_file();
  }
  if (endpoint.empty()) {
    endpoint = profile_value("endpoint_url");
    from = "endpoint_url in profile " + profile + " of " + env.config_file();
  }

  if (endpoint.empty()) {
    out.host = "s3." + out.region + ".amazonaws.com";
    out.aws = true;
    out.path_style = false;
  } else {
    io::object_url u;
    try {
      u = object_url::parse(endpoint);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("the S3 endpoint from " + from + " is not an http(s) URL: " + e.what());
    }
    if (u.scheme == url_scheme::s3) {
      throw std::invalid_argument("the S3 endpoint from " + from + " must be an http:// or https:// URL, not '" +
                                  escape_bytes(endpoint) + "'");
    }
    if (!u.query.empty()) throw std::invalid_argument("the S3 endpoint from " + from + " has a query");
    out.scheme = u.scheme == url_scheme::http ? "http" : "https";
    out.host = u.host;
    out.port = u.port;
    out.base_path = u.path == "/" ? std::string{} : u.path;
    while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
    out.aws = out.host.ends_with(".amazonaws.com");
    out.path_style = !out.aws;
  }
  if (!options.path_style) {
    const std::string style = profile_value("s3.addressing_style");
    if (style == "path") out.path_style = true;
    if (style == "virtual") out.path_style = false;
  } else {
    out.path_style = *options.path_style;
  }
  out.ca_bundle = options.ca_bundle;
  if (out.ca_bundle.empty()) out.ca_bundle = env.get("AWS_CA_BUNDLE");
  out.anonymous = options.anonymous || detail::truthy(env.get("AWS_NO_SIGN_REQUEST"));
  return out;
}

}  // namespace ringfeed::io
