// perf/bench/image_bench.cpp — ringfeed's image layer, images per second per core,
// on files already in memory (no I/O), in the same cases as
// perf/compare/image_baseline.py measures for Pillow + torchvision:
//   decode       full decode to RGB (Pillow: Image.open(b).convert('RGB'))
//   val.exact    Resize(256) + CenterCrop(224), Pillow-exact resampling
//   val.fast     the same with DCT-domain scaling / region decode
//   train.exact  RandomResizedCrop(224) + RandomHorizontalFlip, exact
//   train.fast   the same, fast
// Output: uint8 HWC (what Pillow + np.asarray gives). One thread; --threads T
// runs T threads each with its own workspace, to show scaling.
//   image_bench DIR [--count N] [--repeats R] [--threads T] [--case NAME]
// Prints one JSON object: {"cases": {name: {"median", "min", "max", "runs"}}, ...}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/pipeline.hpp>

namespace fs = std::filesystem;
namespace img = ringfeed::image;

namespace {

std::vector<std::vector<std::byte>> load(const std::string& dir, std::size_t count) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext == ".jpeg" || ext == ".jpg") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  if (count && paths.size() > count) paths.resize(count);
  std::vector<std::vector<std::byte>> files;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(in)), {});
    files.emplace_back(reinterpret_cast<const std::byte*>(c.data()), reinterpret_cast<const std::byte*>(c.data()) + c.size());
  }
  return files;
}

// Runs `p` over every file once (`threads` threads splitting the files);
// returns images per second. A default pipeline means "decode only": the
// decoder alone, to RGB.
double run_once(const img::pipeline* p, const std::vector<std::vector<std::byte>>& files, unsigned threads,
                std::uint64_t epoch) {
  const auto worker = [&](std::size_t begin, std::size_t step) {
    if (p == nullptr) {
      img::decoder d;
      img::image_buffer out;
      for (std::size_t i = begin; i < files.size(); i += step) (void)d.decode(files[i], "bench", out);
      return;
    }
    img::pipeline_workspace ws;
    std::vector<std::byte> out(p->fixed_shape()->bytes());
    for (std::size_t i = begin; i < files.size(); i += step)
      p->apply(ws, files[i], "bench", img::sample_key{1, epoch, i}, out);
  };
  const auto t0 = std::chrono::steady_clock::now();
  if (threads <= 1) {
    worker(0, 1);
  } else {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t) ts.emplace_back(worker, t, threads);
    for (auto& t : ts) t.join();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(files.size()) / s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--count N] [--repeats R] [--threads T] [--case NAME]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1], only;
  std::size_t count = 500;
  int repeats = 5;
  unsigned threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--count") count = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--case") only = argv[i + 1];
  }
  const auto files = load(dir, count);
  if (files.empty()) {
    std::fprintf(stderr, "image_bench: no JPEG files under %s\n", dir.c_str());
    return 1;
  }
  const img::pipeline none;
  const std::pair<const char*, img::pipeline> cases[] = {
      {"decode", none},
      {"val.exact", img::pipeline::val(256, 224, img::pipeline_mode::exact)},
      {"val.fast", img::pipeline::val(256, 224, img::pipeline_mode::fast)},
      {"train.exact", img::pipeline::train(224, img::pipeline_mode::exact)},
      {"train.fast", img::pipeline::train(224, img::pipeline_mode::fast)},
  };
  std::printf("{\"images\": %zu, \"threads\": %u, \"cases\": {", files.size(), threads);
  bool first = true;
  for (const auto& [name, p] : cases) {
    if (!only.empty() && only != name) continue;
    const img::pipeline* pp = std::string(name) == "decode" ? nullptr : &p;
    (void)run_once(pp, files, threads, 0);  // warm-up: workspaces, caches
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) runs.push_back(run_once(pp, files, threads, static_cast<std::uint64_t>(r + 1)));
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    std::printf("%s\"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, \"runs\": [", first ? "" : ", ", name,
                sorted[sorted.size() / 2], sorted.front(), sorted.back());
    for (std::size_t i = 0; i < runs.size(); ++i) std::printf("%s%.1f", i ? ", " : "", runs[i]);
    std::printf("]}");
    first = false;
  }
  std::printf("}}\n");
  return 0;
}
