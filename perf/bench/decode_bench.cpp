// perf/bench/decode_bench.cpp — ringfeed's JPEG decode and decode + transform, per
// core, on an in-memory corpus (perf/bench/jpeg_corpus.hpp: the same bytes
// baseline_turbojpeg_bench.cpp decodes). One thread, no I/O; an iteration is
// one pass over the whole corpus; items_per_second is images per second.
//
// Workloads (baselines with the same name: baseline_turbojpeg_bench.cpp):
//   decode/images:N           full decode to RGB (what Pillow's
//                             convert('RGB') gives):
//     ringfeed.exact            decoder::decode (ISLOW DCT, fancy upsampling)
//     ringfeed.fast             decoder::decode_scaled at scale 1, whole image:
//                               fast mode's entry point when it cannot scale
//   decode_scaled/images:N/denom:D
//     ringfeed.fast             DCT-domain scaling to 1/D (decode_scaled)
//   decode_region/images:N    the val crop's source region only: Resize(256)
//                             + CenterCrop(224) reads the central
//                             224/256 of the shorter side (what val.fast
//                             decodes when the image is too small to scale)
//     ringfeed.fast             decode_scaled, scale 1, region of interest
//   val/images:N              decode + Resize(256) + CenterCrop(224), uint8 HWC
//     ringfeed.exact, ringfeed.fast   pipeline::val(256, 224, mode).apply
//   train/images:N            decode + RandomResizedCrop(224) + flip, uint8 HWC
//     ringfeed.exact, ringfeed.fast   pipeline::train(224, mode).apply
// libjpeg-turbo has no val/train of its own: perf/compare/compare_runtime.py shows
// those rows against turbojpeg's full decode as a reference ("decode alone").
#include <ringfeed/image/image.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/pipeline.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "bench_support.hpp"
#include "jpeg_corpus.hpp"

namespace {

namespace img = ringfeed::image;
using ringfeed::perf::harness;
using ringfeed::perf::jpeg_corpus;

std::span<const std::byte> bytes_of(const jpeg_corpus& corpus, std::size_t i) {
  const auto& f = corpus.file(i);
  return {f.data(), f.size()};
}

void finish(benchmark::State& state, const jpeg_corpus& corpus, std::uint64_t pixels) {
  const auto images = static_cast<std::int64_t>(corpus.count());
  state.SetItemsProcessed(state.iterations() * images);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(corpus.total_bytes()));
  if (state.iterations() > 0)
    state.counters["out_mpix_per_image"] =
        static_cast<double>(pixels) / 1e6 / static_cast<double>(state.iterations() * images);
  state.SetLabel(ringfeed::perf::jpeg_corpus_label());
}

enum class decode_kind { full, scaled_whole, scaled, region };

// The region Resize(256) + CenterCrop(224) reads: 224/256 of each side,
// centered (the resampler's filter support adds a pixel or two: ignored).
img::crop_box val_region(img::size2 s) {
  const int h = static_cast<int>(static_cast<long>(s.height) * 224 / 256);
  const int w = static_cast<int>(static_cast<long>(s.width) * 224 / 256);
  return {(s.height - h) / 2, (s.width - w) / 2, h, w};
}

void decode(benchmark::State& state, decode_kind kind, int denom) {
  const jpeg_corpus& corpus = ringfeed::perf::shared_jpeg_corpus();
  img::decoder d;
  img::image_buffer out;
  std::vector<img::crop_box> regions;
  if (kind == decode_kind::region)
    for (std::size_t i = 0; i < corpus.count(); ++i)
      regions.push_back(val_region(d.read_info(bytes_of(corpus, i), "bench").oriented_size()));
  std::uint64_t pixels = 0;
  const ringfeed::perf::cpu_meter cpu;
  try {
    for (auto _ : state) {
      for (std::size_t i = 0; i < corpus.count(); ++i) {
        const auto bytes = bytes_of(corpus, i);
        switch (kind) {
          case decode_kind::full:
            (void)d.decode(bytes, "bench", out);
            break;
          case decode_kind::scaled_whole:
          case decode_kind::scaled:
            (void)d.decode_scaled(bytes, "bench", {.scale_denom = denom}, out);
            break;
          case decode_kind::region:
            (void)d.decode_scaled(bytes, "bench", {.scale_denom = 1, .region = regions[i]}, out);
            break;
        }
        pixels += static_cast<std::uint64_t>(out.width()) * static_cast<std::uint64_t>(out.height());
        benchmark::DoNotOptimize(out.data());
      }
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  cpu.report(state);
  finish(state, corpus, pixels);
}

void transform(benchmark::State& state, const img::pipeline* p) {
  const jpeg_corpus& corpus = ringfeed::perf::shared_jpeg_corpus();
  img::pipeline_workspace ws;
  std::vector<std::byte> out(p->fixed_shape()->bytes());
  std::uint64_t epoch = 0;
  const ringfeed::perf::cpu_meter cpu;
  try {
    for (auto _ : state) {
      ++epoch;  // train: a different crop and flip per pass, the same sequence in every run
      for (std::size_t i = 0; i < corpus.count(); ++i)
        (void)p->apply(ws, bytes_of(corpus, i), "bench", img::sample_key{1, epoch, i}, out);
      benchmark::DoNotOptimize(out.data());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  cpu.report(state);
  finish(state, corpus, state.iterations() * corpus.count() * 224 * 224);
}

void register_all() {
  const long n = static_cast<long>(ringfeed::perf::shared_jpeg_corpus().count());
  const auto add = [](const std::string& name, auto&&... args) {
    harness(benchmark::RegisterBenchmark(name.c_str(), std::forward<decltype(args)>(args)...),
            benchmark::kMillisecond);
  };
  using ringfeed::perf::bench_name;
  add(bench_name("ringfeed.exact", "decode", {{"images", n}}), decode, decode_kind::full, 1);
  add(bench_name("ringfeed.fast", "decode", {{"images", n}}), decode, decode_kind::scaled_whole, 1);
  for (const long denom : {2L, 4L})
    add(bench_name("ringfeed.fast", "decode_scaled", {{"images", n}, {"denom", denom}}), decode,
        decode_kind::scaled, static_cast<int>(denom));
  add(bench_name("ringfeed.fast", "decode_region", {{"images", n}}), decode, decode_kind::region, 1);

  // Built once, shared by the benchmark runs (apply() is const).
  static const img::pipeline val_exact = img::pipeline::val(256, 224, img::pipeline_mode::exact);
  static const img::pipeline val_fast = img::pipeline::val(256, 224, img::pipeline_mode::fast);
  static const img::pipeline train_exact = img::pipeline::train(224, img::pipeline_mode::exact);
  static const img::pipeline train_fast = img::pipeline::train(224, img::pipeline_mode::fast);
  add(bench_name("ringfeed.exact", "val", {{"images", n}}), transform, &val_exact);
  add(bench_name("ringfeed.fast", "val", {{"images", n}}), transform, &val_fast);
  add(bench_name("ringfeed.exact", "train", {{"images", n}}), transform, &train_exact);
  add(bench_name("ringfeed.fast", "train", {{"images", n}}), transform, &train_fast);
}

}  // namespace

int main(int argc, char** argv) { return ringfeed::perf::run_main(argc, argv, register_all); }
