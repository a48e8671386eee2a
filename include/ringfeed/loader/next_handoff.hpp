// ringfeed::next_handoff — one loader::start_next() request whose result a
// thread waits for in slices, looking for Ctrl-C in between: the CLI's
// commands and the Python binding, which must not block in a wait that a
// signal cannot end. The completion runs on a pool thread, or inline when a
// batch is ready; the result waits here until taken, so a request left out
// by an interrupted wait can be taken later.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include <ringfeed/loader/loader.hpp>

namespace ringfeed {

class next_handoff {
 public:
  /// Asks `l` for its next batch (loader::start_next); the outcome lands in
  /// the returned handoff, which the request keeps alive until it does.
  [[nodiscard]] static std::shared_ptr<next_handoff> start(loader& l);

  /// Waits at most `slice`; true once the outcome is here.
  [[nodiscard]] bool wait_for(std::chrono::milliseconds slice);
  /// Once wait_for() gave true: the batch (std::nullopt at the end of the
  /// epoch); rethrows the request's error.
  [[nodiscard]] std::optional<batch> take();
  /// The same, handing the error back (null when none) instead of throwing.
  [[nodiscard]] std::exception_ptr take(std::optional<batch>& result);

  next_handoff(const next_handoff&) = delete;
  next_handoff& operator=(const next_handoff&) = delete;

 private:
  next_handoff() = default;
  struct completion;

  std::mutex m_mutex;
  std::condition_variable m_done_cv;
  bool m_done = false;           // guarded by m_mutex
  std::exception_ptr m_error;    // guarded by m_mutex
  std::optional<batch> m_result; // guarded by m_mutex
};

}  // namespace ringfeed
