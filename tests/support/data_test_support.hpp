// Helpers shared by the data layer's tests (dataset_tests, tar_tests,
// tar_writer_tests).
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ringfeed/data/dataset.hpp>

#include "files.hpp"

namespace ringfeed::test::data_support {

namespace fs = std::filesystem;
using ringfeed::data::dataset;

/// `n` pseudo-random bytes (std::mt19937 from `seed`), as a string.
inline std::string random_string(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

/// Debian's interpreter (the `python3` on PATH may be another one).
inline const char* const python = "/usr/bin/python3";

using ringfeed::test::pread_exact;
using ringfeed::test::read_text;
using ringfeed::test::write_file;

inline std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

inline int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

inline bool python_has(const char* module) {
  static std::map<std::string, bool> known;
  auto it = known.find(module);
  if (it == known.end()) {
    const std::string cmd = std::string(python) + " -c 'import " + module + "' >/dev/null 2>&1";
    it = known.emplace(module, run(cmd) == 0).first;
  }
  return it->second;
}

// Sets every mtime under `root` (not following symlinks) an hour back, so
// indexes made now are not "racy" and get cached.
inline void backdate(const fs::path& root) {
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  std::vector<fs::path> paths{root};
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_symlink()) paths.push_back(it->path());
  }
  for (const auto& p : paths) fs::last_write_time(p, old);
}

inline std::vector<std::pair<std::string, std::int64_t>> samples_of(const dataset& ds) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (std::size_t i = 0; i < ds.size(); ++i) out.emplace_back(std::string(ds.name(i)), ds.label(i));
  return out;
}


using sample_list = std::vector<std::pair<std::string, std::int64_t>>;

}  // namespace ringfeed::test::data_support
