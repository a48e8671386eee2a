// SIGINT and SIGTERM for the long-running subcommands (bench, export): they
// stop cleanly, with the shell's status for the signal, instead of dying
// mid-write with the loader's threads still running.
//
// The mechanism: the constructor blocks both signals in the calling thread
// before any other thread exists, so every thread started later (the
// loader's, the progress line's) inherits the mask and no signal handler
// ever runs; a thread of its own reads them from a signalfd. Nothing runs in
// signal context, so nothing needs to be async-signal-safe. The command polls
// requested() between units of work (a batch, an image, a read) and winds
// down through the normal destructors: threads joined, files complete.
//
// A signal the process was started with ignored (a background job of a
// script, nohup) stays ignored. Nothing hangs: a second signal, or the first one unanswered for `grace`,
// ends the process at once with _exit(128 + signal) and one line saying so.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <optional>
#include <stop_token>

#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/loader/loader.hpp>

namespace ringfeed::cli {

class interrupt_watch {
 public:
  /// Blocks SIGINT and SIGTERM and starts the watching thread. Call on the
  /// main thread before any other thread is started. Throws
  /// std::system_error when the signalfd or the thread cannot be made.
  explicit interrupt_watch(std::chrono::seconds grace = std::chrono::seconds(10));
  interrupt_watch(const interrupt_watch&) = delete;
  interrupt_watch& operator=(const interrupt_watch&) = delete;
  /// Stops the watching thread and restores the signal mask (a signal that
  /// came after the last requested() check then acts as it would have).
  ~interrupt_watch();

  /// The first signal received (SIGINT or SIGTERM), 0 while none came. Any thread.
  [[nodiscard]] int signal() const noexcept {
    // relaxed: a flag polled between units of work; it orders nothing else.
    return m_signal.load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool requested() const noexcept { return signal() != 0; }
  /// 128 + signal(): 130 for SIGINT, 143 for SIGTERM (the shell's convention).
  [[nodiscard]] int exit_status() const noexcept { return 128 + signal(); }
  /// "SIGINT" or "SIGTERM".
  [[nodiscard]] std::string signal_name() const;
  /// Stopped by the first signal: for loader_options::stop, so that a
  /// loader still opening a network source gives up at once.
  [[nodiscard]] std::stop_token stop_token() const noexcept { return m_stop.get_token(); }

 private:
  void watch();

  std::chrono::seconds m_grace;
  detail::unique_fd m_signals;  // signalfd for SIGINT and SIGTERM
  detail::unique_fd m_wake;     // eventfd: the destructor ends watch()
  std::atomic<int> m_signal{0};
  std::stop_source m_stop;
  sigset_t m_old_mask{};  // the caller's, restored by the destructor
  std::thread m_thread;
};

/// Opens the loader into `out` with `interrupt`'s stop token, so that a
/// signal ends an open still listing or indexing a network source. False
/// (after one line on stderr, "ringfeed COMMAND: interrupted by SIGINT while
/// opening SOURCE") when a signal ended it; throws what the loader throws.
[[nodiscard]] bool open_unless_interrupted(std::optional<loader>& out, loader_options o,
                                           const interrupt_watch& interrupt, const char* command);

/// The next batch of `l`'s current epoch; std::nullopt at its end, or as
/// soon as `interrupt` is requested, even while the batch is still being
/// read or decoded (a stalled server, a huge image). An interrupted next()
/// is left pending: destroying the loader completes it, cancelling its
/// reads, so the command winds down at once instead of after the grace.
/// Throws what next() throws.
[[nodiscard]] std::optional<batch> next_unless_interrupted(loader& l, const interrupt_watch& interrupt);

}  // namespace ringfeed::cli
