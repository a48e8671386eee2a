// ringfeed::io S3 and STS XML responses: ListObjectsV2 pages, error bodies
// (S3's <Error> and STS's <ErrorResponse>), AssumeRoleWithWebIdentity.
//
// Parsed with libexpat; documents with a DTD are refused (S3 never sends
// one, and entity expansion is how XML parsers are attacked). Pure
// functions: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/io/sigv4.hpp>

namespace ringfeed::io {

struct s3_object_info {
  std::string key;         ///< decoded (EncodingType url is undone)
  std::uint64_t size = 0;  ///< bytes
  std::string etag;        ///< as S3 sends it, quotes included: what If-Match wants
};

struct s3_list_page {
  std::vector<s3_object_info> objects;
  /// <CommonPrefixes><Prefix> when the listing used a delimiter, decoded.
  std::vector<std::string> common_prefixes;
  /// Present when the listing goes on: pass it as continuation-token.
  std::optional<std::string> next_continuation_token;
  bool truncated = false;
};

/// One ListObjectsV2 response body. Keys are percent-decoded when the
/// response says <EncodingType>url</EncodingType> (ask for it: keys may hold
/// bytes XML cannot carry). Throws std::invalid_argument naming what is
/// wrong: not XML (expat's message, line), another root element, a Size
/// that is not a number, a Contents without a Key, a truncated page without
/// a NextContinuationToken, a DTD.
[[nodiscard]] s3_list_page parse_list_objects_v2(std::string_view xml);

struct s3_error_info {
  std::string code;        ///< "SlowDown", "NoSuchKey", "SignatureDoesNotMatch", …
  std::string message;
  std::string request_id;  ///< <RequestId>; x-amz-request-id carries it too
  std::string host_id;     ///< <HostId> (S3's x-amz-id-2), may be empty
};

/// The error an S3 (<Error>…</Error>) or STS (<ErrorResponse><Error>…
/// </Error><RequestId>…</RequestId></ErrorResponse>) body describes;
/// nullopt when the body is empty, not XML (a proxy's HTML page) or
/// another document. Never throws for bad input.
[[nodiscard]] std::optional<s3_error_info> parse_s3_error(std::string_view xml) noexcept;

/// The credentials in an STS AssumeRoleWithWebIdentity (or AssumeRole)
/// response: AccessKeyId, SecretAccessKey, SessionToken, Expiration.
/// Throws std::invalid_argument when the body is not such a response or
/// lacks one of the four (the message never holds a secret).
[[nodiscard]] aws_credentials parse_assume_role_with_web_identity(std::string_view xml);

}  // namespace ringfeed::io
