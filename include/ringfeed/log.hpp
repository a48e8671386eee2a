// ringfeed::log_sink — where the library's one-off notices go (an io_uring
// fallback, an O_DIRECT refusal, a cache that cannot keep up, a skipped
// sample). Every component that logs takes one; an empty sink writes
// "ringfeed: <line>" to stderr. A sink may be called from any thread.
#pragma once

#include <functional>
#include <string_view>

namespace ringfeed {

using log_sink = std::function<void(std::string_view)>;

/// Sends `line` to `sink`, or to stderr when it is empty. Never throws (a
/// failing sink must not fail the read that logs).
void log_line(const log_sink& sink, std::string_view line) noexcept;

}  // namespace ringfeed
