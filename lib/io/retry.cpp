#include <ringfeed/io/retry.hpp>

#include <algorithm>
#include <cerrno>

namespace ringfeed::io {

bool retry_policy::transient(int err) noexcept {
  return err == ESTALE || err == EIO || err == ETIMEDOUT || err == EAGAIN;
}

int retry_policy::errno_of(const std::system_error& e) noexcept {
  const auto& cat = e.code().category();
  return cat == std::system_category() || cat == std::generic_category() ? e.code().value() : 0;
}

std::chrono::milliseconds retry_policy::delay(unsigned attempt) const noexcept {
  return backoff * (1u << std::min(attempt, 10u));
}

bool retry_policy::may_retry(int err, unsigned attempt, std::chrono::steady_clock::duration elapsed) const noexcept {
  if (!transient(err) || attempt >= retries) return false;
  return deadline.count() == 0 || elapsed + delay(attempt) < deadline;
}

}  // namespace ringfeed::io
