// libFuzzer target: io::nfs_url::parse, the parser of every nfs:// location a
// user types. Malformed text must be std::invalid_argument; a URL that parses
// must print (str()) as a URL that parses to the same parts.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include <ringfeed/io/nfs.hpp>

#include "fuzz_support.hpp"

using ringfeed::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ringfeed::io::nfs_url::is_nfs(text);
  ringfeed::io::nfs_url url;
  try {
    url = ringfeed::io::nfs_url::parse(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  require(!url.server.empty() && url.export_path.size() > 1 && url.export_path[0] == '/',
          "a parsed URL has a server and an absolute export path");
  const std::string again = url.str();
  ringfeed::io::nfs_url round;
  try {
    round = ringfeed::io::nfs_url::parse(again);
  } catch (const std::invalid_argument&) {
    require(false, "str() of a parsed URL parses");
  }
  require(round.server == url.server && round.port == url.port && round.export_path == url.export_path &&
              round.path == url.path,
          "parse(str()) gives the same parts");
  return 0;
}
