// Private helpers of aws_config.cpp and aws_credentials.cpp: the AWS INI
// files and the blocking HTTP calls of the credential sources.
#pragma once

#include <ringfeed/io/aws_config.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ringfeed::io::detail {

/// One profile: "key" -> value; nested sub-properties ("s3 =" followed by
/// indented "endpoint_url = …") as "s3.endpoint_url".
using ini_section = std::map<std::string, std::string, std::less<>>;

struct ini_file {
  std::string path;
  bool exists = false;
  std::map<std::string, ini_section, std::less<>> sections;
};

/// Reads an AWS config or credentials file; a missing file gives
/// exists == false. Throws std::runtime_error naming the file when it
/// exists but cannot be read, or a line is neither a section, a
/// "key = value", a comment nor blank (the line number, never its value).
[[nodiscard]] ini_file read_ini(const std::string& path);

/// The profile's section in a credentials file ("[name]").
[[nodiscard]] const ini_section* credentials_profile(const ini_file& f, std::string_view name);
/// The profile's section in a config file ("[profile name]"; "[default]" also as "[profile default]").
[[nodiscard]] const ini_section* config_profile(const ini_file& f, std::string_view name);

struct http_reply {
  long status = 0;
  std::string body;
};

/// One blocking request with libcurl's easy interface (rare: credential
/// look-ups). `headers` as "Name: value". Throws std::runtime_error naming
/// the URL and curl's error (no header values: they may hold tokens).
[[nodiscard]] http_reply http_call(std::string_view method, const std::string& url,
                                   const std::vector<std::string>& headers, const credential_http_options& options);

/// Lower-case "true" / "1".
[[nodiscard]] bool truthy(std::string_view value);

}  // namespace ringfeed::io::detail
