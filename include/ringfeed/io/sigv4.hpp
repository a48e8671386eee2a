// ringfeed::io::sign_v4 — AWS Signature Version 4 for S3 requests.
//
// Ours, not curl's CURLOPT_AWS_SIGV4 (curl 7.88 neither sorts nor encodes the
// query). One call builds the canonical request (method, each path segment
// URI-encoded as S3 wants it — once, never normalized —, the query encoded and
// sorted, the signed headers lower-cased, trimmed and sorted, the payload
// hash), the string to sign and the signature, with HMAC-SHA-256 from
// OpenSSL. The request is signed afresh on every attempt (x-amz-date moves).
//
// Tested against AWS's published vectors (aws-sig-v4-test-suite and the S3
// API reference's header-based examples): tests/sigv4_tests.cpp.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringfeed::io {

/// One set of credentials. The secret and token are never printed: errors
/// and logs name the access key id at most.
struct aws_credentials {
  std::string access_key_id, secret_access_key, session_token;
  /// When temporary credentials stop working; none: they do not expire.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

struct sigv4_request {
  std::string method;  ///< "GET", "HEAD", …
  /// The Host header exactly as it goes on the wire ("bucket.s3.us-east-1.amazonaws.com",
  /// "127.0.0.1:4568": with the port when it is not the scheme's default).
  std::string host;
  /// Raw, unencoded path starting with '/' ("/bucket/a b.jpg"); empty means "/".
  std::string path;
  /// Raw, unencoded query parameters, in any order; a parameter without a
  /// value ("?lifecycle") has an empty value.
  std::vector<std::pair<std::string, std::string>> query;
  /// Extra headers to sign and send (range, if-match, …), any case; host,
  /// x-amz-date, x-amz-content-sha256 and x-amz-security-token are added by the signer.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" (S3 reads).
  std::string payload_hash = "UNSIGNED-PAYLOAD";
  /// Send and sign `x-amz-content-sha256: payload_hash` (S3 requires it;
  /// other services, and the generic test suite, do not use it).
  bool sign_content_sha256 = true;
};

struct sigv4_result {
  /// To add to the request: authorization, x-amz-date, x-amz-content-sha256
  /// (unless turned off), x-amz-security-token when the credentials have one.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string canonical_request, string_to_sign, signature;
  /// What to put on the wire: the path as signed, and the query as signed
  /// (no leading '?', empty when there is none).
  std::string encoded_path, encoded_query;
};

/// Signs `request` for `region` and `service` ("s3") at `now`. Pure: no I/O,
/// any thread. Throws std::invalid_argument when the method or host is
/// empty, the path does not start with '/', or the access key or secret is
/// empty (the message never contains the secret).
[[nodiscard]] sigv4_result sign_v4(const sigv4_request& request, const aws_credentials& credentials,
                                   std::string_view region, std::string_view service,
                                   std::chrono::system_clock::time_point now);

/// SigV4's URI encoding: every byte but A-Z a-z 0-9 - . _ ~ as %XX
/// (upper-case hex); '/' is kept unless `encode_slash`.
[[nodiscard]] std::string uri_encode(std::string_view text, bool encode_slash);

/// Lower-case hex SHA-256 of `bytes` (for payload_hash).
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// `YYYYMMDDTHHMMSSZ` (UTC), as x-amz-date carries it.
[[nodiscard]] std::string amz_date(std::chrono::system_clock::time_point t);

/// An ISO 8601 UTC time as AWS writes expirations: `2024-05-01T12:00:00Z`,
/// with optional fractional seconds, or a `+HH:MM` / `-HH:MM` offset
/// instead of Z; nullopt for anything else.
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text);

}  // namespace ringfeed::io
