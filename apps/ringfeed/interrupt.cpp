#include "interrupt.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <system_error>

#include <ringfeed/loader/next_handoff.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::cli {
namespace {

// SIGINT and SIGTERM, except one the process was started with ignored
// (`cmd &` in a script without job control, nohup): that stays ignored.
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&set, sig);
  }
  return set;
}

const char* name_of(int sig) noexcept { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

// Ends the process now, from the watching thread, while other threads may
// still run: write(2) and _exit(2), no destructors, no stdio locks.
[[noreturn]] void exit_now(int sig, const char* line, int length) {
  // Nothing to do if the write fails: the process ends either way. (A
  // cast to void does not quiet -Wunused-result on newer GCCs.)
  if (length > 0 && ::write(STDERR_FILENO, line, static_cast<std::size_t>(length)) < 0) {
  }
  ::_exit(128 + sig);
}

}  // namespace

interrupt_watch::interrupt_watch(std::chrono::seconds grace) : m_grace(grace) {
  const sigset_t set = watched_signals();
  // Threads started from here on inherit the mask: the signals stay pending
  // for the signalfd instead of being delivered to whichever thread.
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, &m_old_mask); err != 0)
    throw std::system_error(err, std::generic_category(), "cannot block SIGINT and SIGTERM");
  try {
    m_signals.reset(::signalfd(-1, &set, SFD_CLOEXEC));
    if (!m_signals) throw std::system_error(errno, std::generic_category(), "signalfd");
    m_wake.reset(::eventfd(0, EFD_CLOEXEC));
    if (!m_wake) throw std::system_error(errno, std::generic_category(), "eventfd");
    m_thread = std::thread([this] { watch(); });
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
    throw;
  }
}

interrupt_watch::~interrupt_watch() {
  const std::uint64_t one = 1;
  if (::write(m_wake.get(), &one, sizeof one) < 0) {
    // An eventfd write fails only on overflow: the watcher is woken already.
  }
  m_thread.join();
  ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
}

std::string interrupt_watch::signal_name() const { return name_of(signal()); }

void interrupt_watch::watch() {
  pollfd fds[2] = {{m_signals.get(), POLLIN, 0}, {m_wake.get(), POLLIN, 0}};
  std::chrono::steady_clock::time_point deadline{};  // set by the first signal
  for (;;) {
    // Until the first signal: wait for ever; after it, until the grace period ends.
    const int first = signal();
    int timeout_ms = -1;
    if (first != 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
    }
    const int n = ::poll(fds, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // cannot happen with valid descriptors; the signals stay blocked
    }
    char line[160];
    if (n == 0) {
      const int length = std::snprintf(line, sizeof line, "ringfeed: not stopped %lld s after %s: exiting now\n",
                                       static_cast<long long>(m_grace.count()), name_of(first));
      exit_now(first, line, length);
    }
    if (fds[1].revents != 0) return;  // the destructor: the command is done
    signalfd_siginfo info{};
    if (::read(m_signals.get(), &info, sizeof info) != static_cast<ssize_t>(sizeof info)) continue;
    const int sig = static_cast<int>(info.ssi_signo);
    if (first != 0) {
      const int length = std::snprintf(line, sizeof line, "ringfeed: %s again: exiting now\n", name_of(sig));
      exit_now(sig, line, length);
    }
    deadline = std::chrono::steady_clock::now() + m_grace;
    m_signal.store(sig, std::memory_order_relaxed);
    m_stop.request_stop();
  }
}

bool open_unless_interrupted(std::optional<loader>& out, loader_options o, const interrupt_watch& interrupt,
                             const char* command) {
  o.stop = interrupt.stop_token();
  const std::string source = o.source;
  try {
    out.emplace(std::move(o));
    return true;
  } catch (const std::exception&) {
    if (!interrupt.requested()) throw;
  }
  std::fprintf(stderr, "ringfeed %s: interrupted by %s while opening %s\n", command, interrupt.signal_name().c_str(),
               escape_bytes(source).c_str());
  return false;
}

std::optional<batch> next_unless_interrupted(loader& l, const interrupt_watch& interrupt) {
  if (interrupt.requested()) return std::nullopt;
  const auto p = next_handoff::start(l);
  // The signal arrives on the watcher's thread, which does not know this
  // wait: the flag is looked at every 50 ms, a delay no one at a terminal sees.
  while (!p->wait_for(std::chrono::milliseconds(50)))
    if (interrupt.requested()) return std::nullopt;
  return p->take();
}

}  // namespace ringfeed::cli
