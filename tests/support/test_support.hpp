// Shared helpers for ringfeed's tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <thread>
#include <unistd.h>

namespace ringfeed::test {

inline constexpr int skip_exit_code = 77;

using skip_check = std::string (*)();

inline skip_check& skip_check_slot() {
  static skip_check check = nullptr;
  return check;
}

/// `static ringfeed::test::skip_if_unavailable skip{[] { return reason-or-empty; }};`
struct skip_if_unavailable {
  explicit skip_if_unavailable(skip_check check) { skip_check_slot() = check; }
};

/// Aborts the process with a message if not disarmed (destroyed) within
/// `limit`: a hung concurrency test fails loudly with its name instead of
/// waiting for ctest's timeout. Not a synchronization device.
class watchdog {
 public:
  watchdog(std::string what, std::chrono::seconds limit) : m_what(std::move(what)) {
    m_thread = std::thread([this, limit] {
      std::unique_lock lock(m_mutex);
      if (!m_cv.wait_for(lock, limit, [this] { return m_done; })) {
        std::fprintf(stderr, "WATCHDOG: '%s' did not finish within %lld s: hang\n", m_what.c_str(),
                     static_cast<long long>(limit.count()));
        std::abort();
      }
    });
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_cv.notify_one();
    m_thread.join();
  }

 private:
  std::string m_what;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread;
};

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class temp_dir {
 public:
  temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/ringfeed-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    m_path = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }

 private:
  std::filesystem::path m_path;
};

/// Number of threads stress tests use: the machine's, but at least 4, so
/// that interleavings happen even on a 2-core CI machine.
inline unsigned stress_threads() { return std::max(4u, std::thread::hardware_concurrency()); }

}  // namespace ringfeed::test
