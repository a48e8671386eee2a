// ringfeed::io AWS configuration as the AWS CLI and SDKs read it: the S3
// endpoint and region, and the credential chain.
//
// Endpoint: s3_options::endpoint, else AWS_ENDPOINT_URL_S3, else
// AWS_ENDPOINT_URL, else the profile's `endpoint_url` (its `s3 =` section
// first), else https://s3.<region>.amazonaws.com. Custom endpoints use
// path-style addressing (http://host:port/bucket/key), AWS virtual-host
// style (https://bucket.s3.<region>.amazonaws.com/key) unless forced, or
// unless the bucket name cannot be a host name label (dots, upper case).
// Region: the option, AWS_REGION, AWS_DEFAULT_REGION, the profile's
// `region`, else us-east-1.
//
// Credentials, in the SDKs' order: explicit options; AWS_ACCESS_KEY_ID +
// AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); the profile (option,
// AWS_PROFILE or "default") in AWS_SHARED_CREDENTIALS_FILE
// (~/.aws/credentials), then AWS_CONFIG_FILE (~/.aws/config), including a
// profile's role_arn + web_identity_token_file; AWS_WEB_IDENTITY_TOKEN_FILE +
// AWS_ROLE_ARN through STS AssumeRoleWithWebIdentity (AWS_ENDPOINT_URL_STS
// overrides STS's address); container credentials
// (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI, with
// AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]); EC2's IMDSv2 (1 s connect
// timeout; AWS_EC2_METADATA_DISABLED=true skips it,
// AWS_EC2_METADATA_SERVICE_ENDPOINT moves it). Anonymous (unsigned)
// requests with s3_options::anonymous or AWS_NO_SIGN_REQUEST=true. When
// nothing is found the error names every place looked and why each gave
// nothing. No message ever holds a secret key or token.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <ringfeed/io/sigv4.hpp>

namespace ringfeed::io {

struct s3_options {
  std::string endpoint;  ///< "http://127.0.0.1:9000", "https://minio.lan"; empty: from the environment
  std::string region;    ///< empty: from the environment or profile
  std::string profile;   ///< empty: AWS_PROFILE, else "default"
  std::optional<aws_credentials> credentials;  ///< explicit: first in the chain
  bool anonymous = false;                      ///< unsigned requests (public buckets)
  std::optional<bool> path_style;              ///< force path-style (true) or virtual-host (false)
  std::string ca_bundle;                       ///< CA file for TLS; empty: the system's (or CURL_CA_BUNDLE)
};

/// One key of s3_options as every front end names it: Python's
/// `s3={"endpoint": …}`, the C API's "s3_endpoint", the CLI's
/// --s3-endpoint. The table (s3_option_keys) is the only list of them.
struct s3_option_key {
  enum class kind : unsigned char {
    text,      ///< a string; "" leaves it to the environment and the AWS files
    flag,      ///< true or false
    tristate,  ///< true, false or unset ("auto"): path_style
  };
  std::string_view name;
  kind type;
  std::string_view help;
  /// A credential: never on a command line (the CLI takes it from the
  /// environment and the AWS files only).
  bool secret = false;
};

/// Every key, in the documented order.
[[nodiscard]] std::span<const s3_option_key> s3_option_keys() noexcept;

/// Sets key `name` of `o` from text: a string as given; a flag from
/// 1/0, true/false, yes/no, on/off; path_style also from "auto" (unset).
/// Throws std::invalid_argument naming the key, listing the keys for an
/// unknown one.
void set_s3_option(s3_options& o, std::string_view name, std::string_view value);

/// What no single key can check: access_key_id and secret_access_key come
/// together (session_token only with them), and anonymous signs nothing so
/// takes no keys. Empty explicit credentials are dropped (the chain
/// decides). Throws std::invalid_argument saying which rule.
void settle_s3_options(s3_options& o);

/// The variables and files the AWS tools read, captured once: a snapshot of
/// the process environment by default, or given by a test.
struct aws_environment {
  std::map<std::string, std::string, std::less<>> vars;

  /// The AWS_* variables, HOME, CURL_CA_BUNDLE and SSL_CERT_FILE of this process.
  [[nodiscard]] static aws_environment from_process();
  /// The variable's value; "" when unset.
  [[nodiscard]] std::string get(std::string_view name) const;
  /// AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials.
  [[nodiscard]] std::string credentials_file() const;
  /// AWS_CONFIG_FILE, else $HOME/.aws/config.
  [[nodiscard]] std::string config_file() const;
  /// The profile name: `explicit_name`, else AWS_PROFILE, else "default".
  [[nodiscard]] std::string profile(std::string_view explicit_name) const;
};

struct s3_endpoint {
  std::string scheme = "https";  ///< "https" or "http"
  std::string host;              ///< without the port; IPv6 without brackets
  std::uint16_t port = 0;        ///< 0: the scheme's default
  std::string base_path;         ///< a custom endpoint's path prefix ("" or "/s3"), no trailing '/'
  std::string region = "us-east-1";
  bool path_style = false;
  bool aws = true;               ///< the endpoint is AWS's own
  std::string ca_bundle;
  bool anonymous = false;        ///< sign nothing

  /// The Host header for a request to `bucket` (with ":port" when not the default).
  [[nodiscard]] std::string host_for(std::string_view bucket) const;
  /// The raw (unencoded) request path for `key` in `bucket`, starting with '/':
  /// "/bucket/key" path-style, "/key" virtual-host style; `key` "" gives the bucket's root.
  [[nodiscard]] std::string path_for(std::string_view bucket, std::string_view key) const;
  /// scheme://host_for(bucket) + path_for(bucket, key) URI-encoded as SigV4 signs it.
  [[nodiscard]] std::string object_url(std::string_view bucket, std::string_view key) const;
  /// Whether requests to `bucket` go path-style (forced, custom endpoint, or a bucket
  /// name that cannot be a DNS label under TLS).
  [[nodiscard]] bool uses_path_style(std::string_view bucket) const;
};

/// The endpoint, region and addressing for `options` in `env`. Throws
/// std::invalid_argument naming the source (option or variable) of a
/// malformed endpoint URL.
[[nodiscard]] s3_endpoint resolve_endpoint(const s3_options& options,
                                           const aws_environment& env = aws_environment::from_process());

/// Where IMDS, STS and container-credential requests go, and how long they
/// may take; tests shorten them.
struct credential_http_options {
  std::chrono::milliseconds connect_timeout{1000};  ///< IMDS's is the SDKs' 1 s
  std::chrono::milliseconds total_timeout{5000};
};

/// The credential chain, resolved lazily and refreshed before expiry.
/// current() may be called from any thread; the first call (and a refresh)
/// does the look-up under a lock while other callers wait for it.
class credential_provider {
 public:
  using clock_fn = std::function<std::chrono::system_clock::time_point()>;

  /// Credentials expiring within `refresh_margin` of now are fetched again.
  static constexpr std::chrono::minutes refresh_margin{5};

  explicit credential_provider(s3_options options, aws_environment env = aws_environment::from_process(),
                               clock_fn clock = {}, credential_http_options http = {});

  /// Whether requests go unsigned (option or AWS_NO_SIGN_REQUEST); current()
  /// then returns empty credentials without looking anything up.
  [[nodiscard]] bool anonymous() const noexcept { return m_anonymous; }

  /// Valid credentials, fetched or refreshed as needed. When a refresh
  /// fails but the held credentials have not expired yet, they are
  /// returned. Throws std::runtime_error naming every source tried and why
  /// each gave nothing (never a secret).
  [[nodiscard]] aws_credentials current();

  /// Where the held credentials came from ("environment", "profile default
  /// in /root/.aws/credentials", "web identity (STS)", "container", "IMDS",
  /// "explicit"); "" before the first current().
  [[nodiscard]] std::string source() const;

  /// How many look-ups current() has made (1 after the first, +1 per refresh).
  [[nodiscard]] unsigned resolutions() const;

 private:
  struct found {
    aws_credentials credentials;
    std::string source;
  };
  found resolve();

  s3_options m_options;
  aws_environment m_env;
  clock_fn m_clock;
  credential_http_options m_http;
  bool m_anonymous = false;
  mutable std::mutex m_mutex;
  std::optional<found> m_held;
  unsigned m_resolutions = 0;
};

}  // namespace ringfeed::io
