// ringfeed::io::retry_policy — the one retry and deadline policy of every
// reader (local files, tar ranges, libnfs, LMDB, the cache's source).
//
// An operation (open + read of a file, a read at an offset, an RPC) gets
// `deadline` from its first attempt; an attempt that fails with a transient
// errno (ESTALE, EIO, ETIMEDOUT, EAGAIN: what a network file system may
// clear up on its own) is made again after `backoff`, 2×, 4×… (capped at
// 1024×), at most `retries` times, and never when the retry could not start
// before the deadline: the last error is thrown, naming the file.
//
// HTTP(S) and S3 use the same policy with full jitter (AWS's "exponential
// back-off and jitter"): retry k waits a uniform draw in [0, backoff·2^k],
// so clients throttled together (a 503 SlowDown storm) do not come back
// together; their own transient set (5xx, resets, stalls) is classified by
// the client, which asks may_retry_after() whether the wait still fits.
//
// Defaults: local storage has no deadline and no retries (an error there is
// the answer); network storage (`nfs://`, kernel NFS and CIFS mounts) gets
// network_deadline, 3 retries and 50 ms of first back-off. That is the one
// default deadline the docs state: 30 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <system_error>

namespace ringfeed::io {

/// The deadline of every operation on network storage unless one is set.
inline constexpr std::chrono::milliseconds network_deadline{30000};

struct retry_policy {
  /// Per operation, retries and back-off included; 0: none.
  std::chrono::milliseconds deadline{0};
  /// Attempts after the first, for transient errors only.
  unsigned retries = 0;
  /// Wait before the first retry; doubles for each one after.
  std::chrono::milliseconds backoff{50};

  /// No deadline, no retries.
  [[nodiscard]] static retry_policy local() noexcept { return {}; }
  /// network_deadline, 3 retries, 50 ms first back-off.
  [[nodiscard]] static retry_policy network() noexcept { return {network_deadline, 3, std::chrono::milliseconds{50}}; }

  /// This policy with its unset fields (deadline 0, retries 0) taken from
  /// `defaults`: how a user's partial setting meets the storage's defaults.
  [[nodiscard]] retry_policy or_defaults(const retry_policy& defaults) const noexcept {
    retry_policy p = *this;
    if (p.deadline.count() == 0) p.deadline = defaults.deadline;
    if (p.retries == 0) p.retries = defaults.retries;
    return p;
  }

  /// ESTALE, EIO, ETIMEDOUT, EAGAIN.
  [[nodiscard]] static bool transient(int err) noexcept;
  /// The errno a std::system_error carries (0 for other categories).
  [[nodiscard]] static int errno_of(const std::system_error& e) noexcept;

  /// Back-off before retry number `attempt` + 1 (attempt 0 failed first).
  [[nodiscard]] std::chrono::milliseconds delay(unsigned attempt) const noexcept;
  /// Whether attempt `attempt` (0-based), which failed with `err` after
  /// `elapsed` since the operation began, is tried again.
  [[nodiscard]] bool may_retry(int err, unsigned attempt, std::chrono::steady_clock::duration elapsed) const noexcept;
  /// Full jitter: a wait for retry number `attempt` + 1 drawn uniformly in
  /// [0, delay(attempt)] from `unit` in [0, 1).
  [[nodiscard]] std::chrono::milliseconds jittered_delay(unsigned attempt, double unit) const noexcept {
    return std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(delay(attempt).count()) * unit));
  }
  /// Whether attempt `attempt` (0-based) of an operation whose error is
  /// `transient` (as its client classifies it), failed after `elapsed`, is
  /// tried again after waiting `wait`: retries left, and the retry starts
  /// before the deadline.
  [[nodiscard]] bool may_retry_after(bool transient, unsigned attempt, std::chrono::steady_clock::duration elapsed,
                                     std::chrono::milliseconds wait) const noexcept {
    if (!transient || attempt >= retries) return false;
    return deadline.count() == 0 || elapsed + wait < deadline;
  }
  /// Whether `elapsed` is past the deadline (never without one).
  [[nodiscard]] bool expired(std::chrono::steady_clock::duration elapsed) const noexcept {
    return deadline.count() > 0 && elapsed >= deadline;
  }
};

/// What every reader counts, under the same names (reader_stats,
/// nfs_stats and source_stats start with these).
struct read_counters {
  std::uint64_t files = 0;     ///< whole files read
  std::uint64_t ranges = 0;    ///< byte ranges read
  std::uint64_t bytes = 0;     ///< sample bytes delivered
  std::uint64_t retries = 0;   ///< attempts made again after a transient error
  std::uint64_t timeouts = 0;  ///< operations past their deadline
};

}  // namespace ringfeed::io
