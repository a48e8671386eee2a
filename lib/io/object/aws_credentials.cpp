// credential_provider: the AWS credential chain (see include/ringfeed/io/aws_config.hpp).
#include "io/object/aws_detail.hpp"

#include <ringfeed/io/s3_xml.hpp>
#include <ringfeed/text.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ringfeed::io {

namespace {

using detail::http_call;
using detail::http_reply;

/// One source's answer: credentials, or why it had none (nullopt and a note).
struct attempt {
  std::optional<aws_credentials> credentials;
  std::string source;  ///< where they came from
  std::string note;    ///< why there were none (for the error that lists every source)
};

attempt none(std::string note) { return {std::nullopt, {}, std::move(note)}; }

std::string read_small_file(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + std::string(what) + " " + escape_bytes(path));
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string form_encode(std::string_view s) { return uri_encode(s, true); }

/// STS AssumeRoleWithWebIdentity: an unsigned call with the token as proof.
aws_credentials assume_role_with_web_identity(const aws_environment& env, const std::string& role_arn,
                                              const std::string& token_file, std::string session_name,
                                              const std::string& region, const credential_http_options& http) {
  const std::string token = read_small_file(token_file, "the web identity token file");
  if (token.empty()) throw std::runtime_error("the web identity token file " + escape_bytes(token_file) + " is empty");
  if (session_name.empty()) session_name = "ringfeed-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::string endpoint = env.get("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = env.get("AWS_ENDPOINT_URL");
  if (endpoint.empty()) endpoint = "https://sts." + (region.empty() ? std::string("us-east-1") : region) + ".amazonaws.com";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const std::string url = endpoint + "/?Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" +
                          form_encode(role_arn) + "&RoleSessionName=" + form_encode(session_name) +
                          "&WebIdentityToken=" + form_encode(token);
  // The token is in the query: errors name the endpoint, never this URL.
  http_reply reply;
  try {
    reply = http_call("POST", url, {"Accept: application/xml"}, http);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    throw std::runtime_error("STS at " + endpoint + ": " + what.substr(std::min(what.size(), url.size() + 2)));
  }
  if (reply.status != 200) {
    std::string detail = "HTTP " + std::to_string(reply.status);
    if (auto err = parse_s3_error(reply.body)) detail += " " + err->code + ": " + err->message + " (request id " + err->request_id + ")";
    throw std::runtime_error("STS at " + endpoint + " refused AssumeRoleWithWebIdentity for " + role_arn + ": " + detail);
  }
  try {
    return parse_assume_role_with_web_identity(reply.body);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("STS at " + endpoint + ": " + e.what());
  }
}

/// The JSON container credentials and IMDS answer with.
aws_credentials credentials_from_json(const std::string& body, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + " answered something that is not JSON");
  }
  auto field = [&](const char* name) -> std::string {
    const auto it = j.find(name);
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
      throw std::runtime_error(where + " answered without " + name);
    }
    return it->get<std::string>();
  };
  if (j.contains("Code") && j["Code"].is_string() && j["Code"] != "Success") {
    throw std::runtime_error(where + " answered Code " + j["Code"].get<std::string>());
  }
  aws_credentials c{field("AccessKeyId"), field("SecretAccessKey"), {}, std::nullopt};
  if (j.contains("Token") && j["Token"].is_string()) c.session_token = j["Token"].get<std::string>();
  if (j.contains("Expiration") && j["Expiration"].is_string()) {
    c.expiration = parse_iso8601(j["Expiration"].get<std::string>());
    if (!c.expiration) throw std::runtime_error(where + " answered an Expiration that is not an ISO 8601 time");
  }
  return c;
}

attempt from_environment(const aws_environment& env) {
  const std::string id = env.get("AWS_ACCESS_KEY_ID"), secret = env.get("AWS_SECRET_ACCESS_KEY");
  if (id.empty() && secret.empty()) return none("environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set");
  if (id.empty()) throw std::runtime_error("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  if (secret.empty()) throw std::runtime_error("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return {aws_credentials{id, secret, env.get("AWS_SESSION_TOKEN"), std::nullopt}, "environment", {}};
}

attempt from_section(const detail::ini_section& s, const std::string& where) {
  auto get = [&](const char* k) {
    const auto it = s.find(k);
    return it == s.end() ? std::string{} : it->second;
  };
  const std::string id = get("aws_access_key_id"), secret = get("aws_secret_access_key");
  if (id.empty() && secret.empty()) return none(where + " has no aws_access_key_id");
  if (id.empty() || secret.empty()) {
    throw std::runtime_error(where + " has " + (id.empty() ? "aws_secret_access_key but no aws_access_key_id"
                                                          : "aws_access_key_id but no aws_secret_access_key"));
  }
  return {aws_credentials{id, secret, get("aws_session_token"), std::nullopt}, where, {}};
}

attempt from_profile(const aws_environment& env, const std::string& profile, bool named, const std::string& region,
                     const credential_http_options& http) {
  const detail::ini_file creds = detail::read_ini(env.credentials_file());
  const detail::ini_file config = detail::read_ini(env.config_file());
  const detail::ini_section* cs = detail::credentials_profile(creds, profile);
  const detail::ini_section* fs = detail::config_profile(config, profile);
  const std::string creds_name = creds.path.empty() ? "(no HOME, no AWS_SHARED_CREDENTIALS_FILE)" : escape_bytes(creds.path);
  const std::string config_name = config.path.empty() ? "(no HOME, no AWS_CONFIG_FILE)" : escape_bytes(config.path);
  if (cs == nullptr && fs == nullptr) {
    const std::string note = "profile " + profile + ": not in " + creds_name + (creds.exists ? "" : " (no such file)") +
                             " nor in " + config_name + (config.exists ? "" : " (no such file)");
    if (named) throw std::runtime_error("the AWS profile '" + profile + "' was asked for but is " + note.substr(note.find(':') + 2));
    return none(note);
  }
  if (cs != nullptr) {
    attempt a = from_section(*cs, "profile " + profile + " in " + creds_name);
    if (a.credentials) return a;
  }
  if (fs != nullptr) {
    attempt a = from_section(*fs, "profile " + profile + " in " + config_name);
    if (a.credentials) return a;
    const auto role = fs->find("role_arn");
    const auto token = fs->find("web_identity_token_file");
    if (role != fs->end() && token != fs->end()) {
      const auto session = fs->find("role_session_name");
      return {assume_role_with_web_identity(env, role->second, token->second,
                                            session == fs->end() ? std::string{} : session->second, region, http),
              "web identity (STS) for profile " + profile, {}};
    }
    for (const char* unsupported : {"credential_process", "sso_start_url", "sso_session", "source_profile"}) {
      if (fs->count(unsupported) != 0) {
        return none("profile " + profile + " in " + config_name + " uses " + unsupported +
                    ", which ringfeed does not support (export the credentials to the environment instead)");
      }
    }
  }
  return none("profile " + profile + ": no aws_access_key_id in " + creds_name + " or " + config_name);
}

attempt from_web_identity(const aws_environment& env, const std::string& region, const credential_http_options& http) {
  const std::string token_file = env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), role = env.get("AWS_ROLE_ARN");
  if (token_file.empty() || role.empty()) return none("web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set");
  return {assume_role_with_web_identity(env, role, token_file, env.get("AWS_ROLE_SESSION_NAME"), region, http),
          "web identity (STS)", {}};
}

attempt from_container(const aws_environment& env, const credential_http_options& http) {
  std::string url;
  if (auto rel = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); !rel.empty()) {
    url = "http://169.254.170.2" + rel;
  } else {
    url = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  }
  if (url.empty()) return none("container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set");
  std::vector<std::string> headers;
  std::string token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (auto file = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); !file.empty()) {
    token = read_small_file(file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  }
  if (!token.empty()) headers.push_back("Authorization: " + token);
  const std::string where = "the container credentials endpoint " + url;
  const http_reply reply = http_call("GET", url, headers, http);
  if (reply.status != 200) throw std::runtime_error(where + " answered HTTP " + std::to_string(reply.status));
  return {credentials_from_json(reply.body, where), "container", {}};
}

attempt from_imds(const aws_environment& env, const credential_http_options& http) {
  if (detail::truthy(env.get("AWS_EC2_METADATA_DISABLED"))) return none("IMDS: AWS_EC2_METADATA_DISABLED is true");
  std::string base = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (base.empty()) base = "http://169.254.169.254";
  while (!base.empty() && base.back() == '/') base.pop_back();
  http_reply token;
  try {
    token = http_call("PUT", base + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}, http);
  } catch (const std::runtime_error& e) {
    return none("IMDS: " + base + " is unreachable, not on EC2? (" + e.what() + ")");
  }
  if (token.status != 200) return none("IMDS: " + base + " answered HTTP " + std::to_string(token.status) + " for a token");
  const std::string auth = "X-aws-ec2-metadata-token: " + token.body;
  const std::string list_url = base + "/latest/meta-data/iam/security-credentials/";
  const http_reply roles = http_call("GET", list_url, {auth}, http);
  if (roles.status == 404) return none("IMDS: this instance has no IAM role");
  if (roles.status != 200) throw std::runtime_error(list_url + " answered HTTP " + std::to_string(roles.status));
  const std::string role = roles.body.substr(0, roles.body.find('\n'));
  if (role.empty()) return none("IMDS: this instance has no IAM role");
  const std::string url = list_url + role;
  const http_reply c = http_call("GET", url, {auth}, http);
  if (c.status != 200) throw std::runtime_error(url + " answered HTTP " + std::to_string(c.status));
  return {credentials_from_json(c.body, url), "IMDS role " + role, {}};
}

}  // namespace

credential_provider::credential_provider(s3_options options, aws_environment env, clock_fn clock,
                                         credential_http_options http)
    : m_options(std::move(options)),
      m_env(std::move(env)),
      m_clock(clock ? std::move(clock) : clock_fn([] { return std::chrono::system_clock::now(); })),
      m_http(http),
      m_anonymous(m_options.anonymous || detail::truthy(m_env.get("AWS_NO_SIGN_REQUEST"))) {}

credential_provider::found credential_provider::resolve() {
  if (m_options.credentials) {
    if (m_options.credentials->access_key_id.empty() || m_options.credentials->secret_access_key.empty()) {
      throw std::runtime_error("the explicit S3 credentials have no access key id or no secret access key");
    }
    return {*m_options.credentials, "explicit"};
  }
  std::string region = m_options.region;
  if (region.empty()) region = m_env.get("AWS_REGION");
  if (region.empty()) region = m_env.get("AWS_DEFAULT_REGION");
  const std::string profile = m_env.profile(m_options.profile);
  const bool named = !m_options.profile.empty() || !m_env.get("AWS_PROFILE").empty();

  std::vector<std::string> notes;
  auto take = [&](attempt a) -> std::optional<found> {
    if (a.credentials) return found{std::move(*a.credentials), std::move(a.source)};
    notes.push_back(std::move(a.note));
    return std::nullopt;
  };
  if (auto f = take(from_environment(m_env))) return *f;
  if (auto f = take(from_profile(m_env, profile, named, region, m_http))) return *f;
  if (auto f = take(from_web_identity(m_env, region, m_http))) return *f;
  if (auto f = take(from_container(m_env, m_http))) return *f;
  if (auto f = take(from_imds(m_env, m_http))) return *f;
  std::string message = "no AWS credentials found (set AWS_NO_SIGN_REQUEST=true for public buckets); looked in:";
  for (const auto& n : notes) message += "\n  - " + n;
  throw std::runtime_error(message);
}

aws_credentials credential_provider::current() {
  if (m_anonymous) return {};
  std::lock_guard lock(m_mutex);
  const auto now = m_clock();
  if (m_held && (!m_held->credentials.expiration || now + refresh_margin < *m_held->credentials.expiration)) {
    return m_held->credentials;
  }
  try {
    ++m_resolutions;
    found f = resolve();
    if (f.credentials.expiration && *f.credentials.expiration <= now) {
      throw std::runtime_error("the credentials from " + f.source + " (access key " + f.credentials.access_key_id +
                               ") expired at " + amz_date(*f.credentials.expiration));
    }
    m_held = std::move(f);
  } catch (const std::exception&) {
    // A failed refresh keeps credentials that still work.
    if (m_held && m_held->credentials.expiration && now < *m_held->credentials.expiration) return m_held->credentials;
    throw;
  }
  return m_held->credentials;
}

std::string credential_provider::source() const {
  std::lock_guard lock(m_mutex);
  return m_held ? m_held->source : std::string{};
}

unsigned credential_provider::resolutions() const {
  std::lock_guard lock(m_mutex);
  return m_resolutions;
}

}  // namespace ringfeed::io
