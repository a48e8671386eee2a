// Shared by the libFuzzer targets in tests/fuzz: a scratch directory of the
// process for parsers that read files, and the contract every target checks.
//
// The contract: bad input is an exception of the type the entry point
// documents (image_error, dataset_error, std::system_error, ...). Any other
// exception escapes the target, and libFuzzer reports it as a crash, as it
// does a sanitizer report, a leak, a timeout or running out of memory.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ringfeed::fuzz {

/// A directory of this process only (several fuzzers may run at once), in
/// $TMPDIR, else /dev/shm, else /tmp; removed when the process exits.
inline const std::filesystem::path& scratch_dir() {
  struct holder {
    std::filesystem::path path;
    holder() {
      const char* tmp = std::getenv("TMPDIR");
      std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
      if ((tmp == nullptr || *tmp == '\0') && std::filesystem::is_directory("/dev/shm")) base = "/dev/shm";
      path = base / ("ringfeed-fuzz-" + std::to_string(::getpid()));
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
    }
    ~holder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const holder h;
  return h.path;
}

/// Writes `size` bytes to `path`, replacing it; aborts if it cannot (the
/// harness, not the code under test, failed).
inline void write_file(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size != 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

/// Stops the run with a message when an invariant the code promises fails:
/// libFuzzer saves the input as a crash.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "ringfeed fuzz: invariant failed: %s\n", what);
  std::abort();
}

}  // namespace ringfeed::fuzz
