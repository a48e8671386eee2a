// perf/bench/jpeg_corpus.hpp — the in-memory JPEG corpus of the decode benchmarks.
//
// decode_bench (ringfeed) and baseline_turbojpeg_bench (libjpeg-turbo's
// TurboJPEG API alone) decode exactly the same bytes:
//  - RINGFEED_BENCH_JPEG_DIR set: the first RINGFEED_BENCH_JPEGS (default
//    200) *.jpg / *.jpeg files under it, recursively, in sorted path order
//    (perf/bench/image_bench.cpp's order). perf/run_runtime_benchmarks points it at
//    a `ringfeed gen` dataset: ImageNet's mix of sizes, qualities, chroma
//    subsampling, grayscale and progressive files.
//  - unset: RINGFEED_BENCH_JPEGS synthetic 500×375 JPEGs (4:2:0, quality 90,
//    every 8th 4:4:4, every 16th progressive), encoded here with tjCompress2
//    from a fixed seed: smooth fields, edges and noise, ~70 KB each, so
//    the entropy decoder works about as hard as on a photograph. Same seed,
//    same bytes, in both executables.
// Everything is read or made once, before any benchmark runs its timed loop.
//
// Plain C++ and TurboJPEG, no ringfeed: the baseline uses it too.
#pragma once

#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ringfeed/random.hpp>

#include "bench_support.hpp"

namespace ringfeed::perf {

class jpeg_corpus {
 public:
  /// Loads `count` JPEGs from `dir` (empty: synthesizes them).
  jpeg_corpus(const std::string& dir, std::size_t count) {
    if (dir.empty()) {
      synthesize(count);
      m_source = "synthetic 500x375 (perf/bench/jpeg_corpus.hpp)";
    } else {
      load(dir, count);
      m_source = dir;
    }
    if (m_files.empty()) throw std::runtime_error("jpeg_corpus: no JPEG files under " + dir);
    for (const auto& f : m_files) m_total += f.size();
  }

  [[nodiscard]] std::size_t count() const noexcept { return m_files.size(); }
  [[nodiscard]] const std::vector<std::byte>& file(std::size_t i) const noexcept { return m_files[i]; }
  [[nodiscard]] std::size_t total_bytes() const noexcept { return m_total; }
  [[nodiscard]] const std::string& source() const noexcept { return m_source; }

 private:
  void load(const std::string& dir, std::size_t count) {
    namespace fs = std::filesystem;
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      if (ext == ".jpeg" || ext == ".jpg") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    if (paths.size() > count) paths.resize(count);
    for (const auto& p : paths) {
      std::ifstream in(p, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
      if (!in.eof() && in.fail()) throw std::runtime_error("jpeg_corpus: cannot read " + p.string());
      const auto* b = reinterpret_cast<const std::byte*>(bytes.data());
      m_files.emplace_back(b, b + bytes.size());
    }
  }

  // A photograph-like 500×375 RGB image: a smooth two-tone field, a few
  // hard-edged discs with their own gradient, and ±32 levels of noise.
  static void render(std::uint64_t seed, int w, int h, std::vector<unsigned char>& rgb) {
    splitmix64_rng rng(seed);
    const auto uniform = [&rng] { return static_cast<float>(rng.next() >> 40) * 0x1.0p-24f; };
    float base[3], slope_x[3], slope_y[3];
    for (int c = 0; c < 3; ++c) {
      base[c] = 40.0f + 170.0f * uniform();
      slope_x[c] = (uniform() - 0.5f) * 0.4f;
      slope_y[c] = (uniform() - 0.5f) * 0.4f;
    }
    struct disc {
      float x, y, r2, color[3], grain;
    } discs[10];
    for (auto& d : discs) {
      d.x = uniform() * static_cast<float>(w);
      d.y = uniform() * static_cast<float>(h);
      const float r = 20.0f + 90.0f * uniform();
      d.r2 = r * r;
      for (float& v : d.color) v = 255.0f * uniform();
      d.grain = 0.05f + 0.3f * uniform();
    }
    rgb.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
    splitmix64_rng noise(seed ^ 0xA5A5A5A5ull);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        float px[3];
        for (int c = 0; c < 3; ++c)
          px[c] = base[c] + slope_x[c] * static_cast<float>(x) + slope_y[c] * static_cast<float>(y);
        for (const auto& d : discs) {
          const float dx = static_cast<float>(x) - d.x, dy = static_cast<float>(y) - d.y;
          if (dx * dx + dy * dy < d.r2)
            for (int c = 0; c < 3; ++c) px[c] = d.color[c] + d.grain * (dx - dy);
        }
        const std::uint64_t n = noise.next();
        for (int c = 0; c < 3; ++c) {
          const float v = px[c] + static_cast<float>(static_cast<int>((n >> (8 * c)) & 0xFF) % 65 - 32);
          rgb[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 3 +
              static_cast<std::size_t>(c)] = static_cast<unsigned char>(std::clamp(v, 0.0f, 255.0f));
        }
      }
    }
  }

  void synthesize(std::size_t count) {
    const std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
    if (!tj) throw std::runtime_error("jpeg_corpus: tjInitCompress failed");
    constexpr int w = 500, h = 375;
    std::vector<unsigned char> rgb;
    for (std::size_t i = 0; i < count; ++i) {
      render(0x6A9E6C0D'E0000000ull + i, w, h, rgb);
      unsigned char* jpeg = nullptr;
      unsigned long size = 0;
      const int subsamp = i % 8 == 7 ? TJSAMP_444 : TJSAMP_420;
      const int flags = i % 16 == 15 ? TJFLAG_PROGRESSIVE : 0;
      if (tjCompress2(tj.get(), rgb.data(), w, 0, h, TJPF_RGB, &jpeg, &size, subsamp, 90, flags) != 0) {
        const std::string why = tjGetErrorStr2(tj.get());
        tjFree(jpeg);
        throw std::runtime_error("jpeg_corpus: tjCompress2: " + why);
      }
      const auto* b = reinterpret_cast<const std::byte*>(jpeg);
      m_files.emplace_back(b, b + size);
      tjFree(jpeg);
    }
  }

  std::vector<std::vector<std::byte>> m_files;
  std::size_t m_total = 0;
  std::string m_source;
};

/// Number of images: RINGFEED_BENCH_JPEGS, default 200.
inline long jpeg_corpus_count() { return env_list("RINGFEED_BENCH_JPEGS", {200}).front(); }

/// The process's corpus (see the header comment), made on first use.
inline const jpeg_corpus& shared_jpeg_corpus() {
  static const jpeg_corpus corpus(std::getenv("RINGFEED_BENCH_JPEG_DIR") ? std::getenv("RINGFEED_BENCH_JPEG_DIR") : "",
                                  static_cast<std::size_t>(jpeg_corpus_count()));
  return corpus;
}

/// Names the corpus in every benchmark's counters-free label.
inline std::string jpeg_corpus_label() {
  const jpeg_corpus& c = shared_jpeg_corpus();
  return std::to_string(c.count()) + " JPEGs, " + std::to_string(c.total_bytes() / c.count() / 1024) +
         " KiB avg, " + c.source();
}

}  // namespace ringfeed::perf
