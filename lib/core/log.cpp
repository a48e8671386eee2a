#include <ringfeed/log.hpp>

#include <cstdio>

namespace ringfeed {

void log_line(const log_sink& sink, std::string_view line) noexcept {
  try {
    if (sink) {
      sink(line);
      return;
    }
  } catch (...) {  // fall through to stderr
  }
  std::fprintf(stderr, "ringfeed: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace ringfeed
