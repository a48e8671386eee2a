// perf/bench/decode_limit.cpp — the bare-decode limit: libjpeg-turbo's TurboJPEG
// API decoding JPEGs held in memory on N threads, and nothing else. A loader
// that decodes every file cannot beat this; ringfeed's train pipeline aims
// to (it decodes only what the crop needs), so perf/compare/compare_loader.py and
// perf/run report ringfeed's images/s as a ratio to it.
//
//   decode_limit DIR [--threads N] [--seconds S] [--files M] [--denom D]
//
// Loads up to M (default 2000) *.jpg / *.jpeg files under DIR, recursively, in
// sorted path order (perf/bench/jpeg_corpus.hpp), then for S seconds (default 3)
// each of N threads (default 2) takes the next file round-robin and runs
// tjDecompressHeader3 + tjDecompress2 to TJPF_RGB with flags 0 (accurate
// ISLOW DCT, fancy upsampling) at TurboJPEG's scaling factor 1/D (default 1:
// a full decode), into its own reused buffer with its own tjhandle. Prints
// one JSON line: images, seconds, images_per_s, cpu_cores (process CPU time
// over wall time), megapixels_per_image, the corpus, and load_s (reading it
// into memory, untimed: the start-up a loader would pay).
//
// Plain C++ and TurboJPEG: it links no ringfeed code.
#include <sys/resource.h>
#include <turbojpeg.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "jpeg_corpus.hpp"
#include "turbojpeg_decode.hpp"

namespace {

using ringfeed::perf::jpeg_corpus;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string dir;
  unsigned threads = 2;
  double seconds = 3.0;
  std::size_t files = 2000;
  int denom = 1;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "decode_limit: %s\nusage: decode_limit DIR [--threads N] [--seconds S] [--files M] [--denom 1|2|4|8]\n",
               why);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    } else if (a == "--seconds") {
      o.seconds = std::strtod(value().c_str(), nullptr);
    } else if (a == "--files") {
      o.files = std::strtoul(value().c_str(), nullptr, 10);
    } else if (a == "--denom") {
      o.denom = std::atoi(value().c_str());
    } else if (!a.empty() && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else if (o.dir.empty()) {
      o.dir = a;
    } else {
      usage("one directory only");
    }
  }
  if (o.dir.empty()) usage("a directory of JPEGs is required");
  if (o.threads == 0 || o.files == 0 || !(o.seconds > 0)) usage("--threads, --files and --seconds must be positive");
  if (o.denom != 1 && o.denom != 2 && o.denom != 4 && o.denom != 8) usage("--denom must be 1, 2, 4 or 8");
  return o;
}

std::string json_escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

struct worker_result {
  std::uint64_t images = 0;
  std::uint64_t pixels = 0;
  std::string error;
};

// Decodes corpus files, the next index from `next`, until `deadline`.
void work(const jpeg_corpus& corpus, int denom, std::atomic<std::uint64_t>& next, clock_type::time_point deadline,
          worker_result& r) {
  const std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  if (!tj) {
    r.error = "tjInitDecompress failed";
    return;
  }
  const tjscalingfactor factor{1, denom};
  std::vector<unsigned char> out;
  while (clock_type::now() < deadline) {
    const auto& f = corpus.file(next.fetch_add(1, std::memory_order_relaxed) % corpus.count());
    const std::uint64_t pixels = ringfeed::perf::tj_decode_rgb(tj.get(), f, factor, out, r.error);
    if (pixels == 0) return;
    r.pixels += pixels;
    ++r.images;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  try {
    const auto load_start = clock_type::now();
    const jpeg_corpus corpus(o.dir, o.files);
    const double load_s = std::chrono::duration<double>(clock_type::now() - load_start).count();
    std::vector<worker_result> results(o.threads);
    std::atomic<std::uint64_t> next{0};
    const double cpu0 = cpu_seconds();
    const auto start = clock_type::now();
    const auto deadline = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.seconds));
    {
      std::vector<std::jthread> threads;
      for (unsigned t = 0; t < o.threads; ++t)
        threads.emplace_back([&, t] { work(corpus, o.denom, next, deadline, results[t]); });
    }
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    const double cpu = cpu_seconds() - cpu0;
    std::uint64_t images = 0, pixels = 0;
    for (const auto& r : results) {
      if (!r.error.empty()) {
        std::fprintf(stderr, "decode_limit: %s\n", r.error.c_str());
        return 1;
      }
      images += r.images;
      pixels += r.pixels;
    }
    std::printf(
        "{\"images\": %llu, \"seconds\": %.4f, \"images_per_s\": %.2f, \"threads\": %u, \"denom\": %d, "
        "\"cpu_cores\": %.3f, \"megapixels_per_image\": %.4f, \"files\": %zu, \"bytes\": %zu, \"load_s\": %.4f, "
        "\"dir\": \"%s\"}\n",
        static_cast<unsigned long long>(images), seconds, static_cast<double>(images) / seconds, o.threads, o.denom,
        cpu / seconds, images ? static_cast<double>(pixels) / 1e6 / static_cast<double>(images) : 0.0, corpus.count(),
        corpus.total_bytes(), load_s, json_escaped(corpus.source()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_limit: %s\n", e.what());
    return 1;
  }
  return 0;
}
