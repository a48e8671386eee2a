// Runs a program as a child process, for tests that kill it part-way
// (crash consistency) or check how it exits.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

extern char** environ;

namespace ringfeed::test {

/// The `ringfeed` CLI the tests run: $RINGFEED_CLI, which ctest sets where
/// the CLI is built; empty where it is not.
inline std::string ringfeed_cli() {
  const char* c = std::getenv("RINGFEED_CLI");
  return c != nullptr ? c : "";
}

/// A child running `argv` with stdin, stdout and stderr on /dev/null (or
/// its output appended to `log`); killed (SIGKILL) and reaped by the
/// destructor if still running.
class child_process {
 public:
  explicit child_process(const std::vector<std::string>& argv, const std::string& log = "/dev/null") {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int err = posix_spawn(&m_pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) throw std::system_error(err, std::generic_category(), "cannot start " + argv.at(0));
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      (void)wait();
    }
  }

  [[nodiscard]] pid_t pid() const noexcept { return m_pid; }

  /// Sends `sig`; false when the child has already exited (and been reaped).
  bool signal(int sig) noexcept { return m_pid > 0 && ::kill(m_pid, sig) == 0; }

  /// Waits for the child to end; its wait status (see WIFEXITED etc.).
  int wait() {
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0) {
      if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
    }
    m_pid = -1;
    m_status = status;
    return status;
  }

  /// True when the child has ended (reaping it); its status is then status().
  bool exited() {
    if (m_pid <= 0) return true;
    int status = 0;
    const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == 0) return false;
    if (r < 0) throw std::system_error(errno, std::generic_category(), "waitpid");
    m_pid = -1;
    m_status = status;
    return true;
  }
  [[nodiscard]] int status() const noexcept { return m_status; }

 private:
  pid_t m_pid = -1;
  int m_status = 0;
};

}  // namespace ringfeed::test
