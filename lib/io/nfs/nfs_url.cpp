// nfs_url: parsing and printing `nfs://server[:port]/export[//path]`.
#include "nfs_core.hpp"

#include <ringfeed/text.hpp>

#include <charconv>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringfeed::io {

namespace detail {

std::string host_part(const std::string& server, std::uint16_t port) {
  // Appends, not "[" + server + "]": GCC 12 at -O3 warns (-Wrestrict) on
  // that concatenation, a known false positive.
  const bool ipv6 = server.find(':') != std::string::npos;
  std::string out;
  if (ipv6) out.push_back('[');
  out.append(server);
  if (ipv6) out.push_back(']');
  if (port != 0) {
    out.push_back(':');
    out.append(std::to_string(port));
  }
  return out;
}

}  // namespace detail

using detail::host_part;

nfs_url nfs_url::parse(std::string_view url) {
  auto fail = [url](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument("invalid NFS URL '" + escape_bytes(url) + "': " + why);
  };
  constexpr std::string_view scheme = "nfs://";
  if (!is_nfs(url)) throw fail("it does not start with nfs://");
  std::string_view rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) throw fail("query and fragment parts are not supported");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);

  nfs_url out;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw fail("unterminated '[' in the server address");
    out.server = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw fail("unexpected text after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) throw fail("empty port");
    }
  } else {
    const std::size_t colon = authority.find(':');
    out.server = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw fail("empty port");
    }
  }
  if (out.server.empty()) throw fail("no server");
  if (out.server.find_first_of("[]") != std::string::npos) throw fail("'[' or ']' inside the server address");
  if (!port_text.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 || value > 65535)
      throw fail("port '" + escape_bytes(port_text) + "' is not a number from 1 to 65535");
    out.port = static_cast<std::uint16_t>(value);
  }
  if (path.size() <= 1) throw fail("no export path");
  // A `//` after the first component ends a longer export path.
  if (const std::size_t boundary = path.find("//", 1); boundary != std::string_view::npos) {
    out.export_path = std::string(path.substr(0, boundary));
    out.path = std::string(path.substr(boundary + 1));
    if (out.path == "/") out.path.clear();
  } else {
    const std::size_t next = path.find('/', 1);
    out.export_path = std::string(path.substr(0, next));
    if (next != std::string_view::npos && next + 1 < path.size()) out.path = std::string(path.substr(next));
  }
  if (out.export_path.size() <= 1 || out.export_path[1] == '/') throw fail("no export path");
  return out;
}

std::string nfs_url::str() const {
  std::string out = "nfs://" + host_part(server, port) + export_path;
  // parse() ends the export at the first `//`: an export deeper than one
  // component needs one to be read back, and so does a path holding one
  // (else the export would end there).
  const bool deep = export_path.find('/', 1) != std::string::npos;
  if (path.empty() || path == "/") return deep ? out + "//" : out;
  if (deep || path.find("//") != std::string::npos) out += '/';
  if (path.front() != '/') out += '/';
  out += path;
  return out;
}

}  // namespace ringfeed::io
