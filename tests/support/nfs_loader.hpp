// The loader over the test NFS server (nfs_server.hpp): options, and an
// epoch's delivered bytes to compare runs by; and the small helpers of the
// test cases against that server. For nfs_tests, nfs_loader_tests and
// cache_crash_tests.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <ringfeed/io/cache.hpp>
#include <ringfeed/loader/loader.hpp>

#include "loader_fixtures.hpp"
#include "nfs_server.hpp"

namespace ringfeed::test::nfs {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// A fresh server for the test case (a previous one may have killed it).
inline void require_server() {
  if (const std::string why = server().restart(); !why.empty()) FAIL("cannot restart the NFS server: " << why);
}

/// What `f` throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

/// Small fast-mode train batches of uint8 on the host, failing on any error.
inline ringfeed::loader_options loader_options_for(const std::string& source) {
  ringfeed::loader_options o = ringfeed::test::base_options(source);
  o.sampler.seed = 11;
  o.on_error = ringfeed::error_policy::fail;
  return o;
}

struct epoch_bytes {
  std::vector<std::size_t> indices;
  std::vector<std::int64_t> labels;
  std::vector<std::uint8_t> pixels;
  friend bool operator==(const epoch_bytes&, const epoch_bytes&) = default;
};

inline epoch_bytes drain(ringfeed::loader& l, std::uint64_t epoch) {
  epoch_bytes out;
  for (ringfeed::batch& b : l.epoch(epoch)) {
    out.indices.insert(out.indices.end(), b.indices().begin(), b.indices().end());
    out.labels.insert(out.labels.end(), b.labels().begin(), b.labels().end());
    const auto* p = static_cast<const std::uint8_t*>(b.images().data);
    out.pixels.insert(out.pixels.end(), p, p + b.images().bytes());
  }
  return out;
}

inline ringfeed::io::cache_options cache_at(const std::filesystem::path& dir) {
  ringfeed::io::cache_options co;
  co.dir = dir;
  return co;
}

/// The export's ImageFolder of photos (14 samples in 2 classes).
inline const std::string imgs_url = std::string("nfs://") + host + export_name + "/imgs";

}  // namespace ringfeed::test::nfs
