// perf/bench/baseline_turbojpeg_bench.cpp — decode_bench's workloads with
// libjpeg-turbo's own TurboJPEG API and nothing else: the floor any
// libjpeg-turbo-based decoder (ringfeed's included) stands on.
//
//   decode/images:N                  tjDecompressHeader3 + tjDecompress2 to
//                                    TJPF_RGB, flags 0 (accurate ISLOW DCT,
//                                    fancy upsampling: what ringfeed.exact and
//                                    Pillow use), one reused tjhandle and buffer
//   decode_scaled/images:N/denom:D   the same at TurboJPEG's 1/D scaling factor
//                                    (TJSCALED: the DCT-domain scaling
//                                    ringfeed.fast uses)
// Same corpus, bytes and order as decode_bench (perf/bench/jpeg_corpus.hpp); one
// thread; an iteration is one pass; items_per_second is images per second.
#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "jpeg_corpus.hpp"
#include "turbojpeg_decode.hpp"

namespace {

using ringfeed::perf::bench_name;
using ringfeed::perf::harness;
using ringfeed::perf::jpeg_corpus;

void decode(benchmark::State& state, int denom) {
  const jpeg_corpus& corpus = ringfeed::perf::shared_jpeg_corpus();
  const std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  if (!tj) {
    state.SkipWithError("tjInitDecompress failed");
    return;
  }
  const tjscalingfactor factor{1, denom};
  std::vector<unsigned char> out;
  std::uint64_t pixels = 0;
  std::string error;
  const ringfeed::perf::cpu_meter cpu;
  for (auto _ : state) {
    for (std::size_t i = 0; i < corpus.count() && error.empty(); ++i) {
      const std::uint64_t decoded = ringfeed::perf::tj_decode_rgb(tj.get(), corpus.file(i), factor, out, error);
      if (decoded == 0) break;
      pixels += decoded;
      benchmark::DoNotOptimize(out.data());
    }
  }
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  cpu.report(state);
  const auto images = static_cast<std::int64_t>(corpus.count());
  state.SetItemsProcessed(state.iterations() * images);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(corpus.total_bytes()));
  if (state.iterations() > 0)
    state.counters["out_mpix_per_image"] =
        static_cast<double>(pixels) / 1e6 / static_cast<double>(state.iterations() * images);
  state.SetLabel(ringfeed::perf::jpeg_corpus_label());
}

void register_all() {
  const long n = static_cast<long>(ringfeed::perf::shared_jpeg_corpus().count());
  harness(benchmark::RegisterBenchmark(bench_name("turbojpeg", "decode", {{"images", n}}).c_str(), decode, 1),
          benchmark::kMillisecond);
  for (const long denom : {2L, 4L})
    harness(benchmark::RegisterBenchmark(
                bench_name("turbojpeg", "decode_scaled", {{"images", n}, {"denom", denom}}).c_str(), decode,
                static_cast<int>(denom)),
            benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
