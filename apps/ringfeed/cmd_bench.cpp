// `ringfeed bench SOURCE`: read a dataset as fast as the machine allows and
// report where the time went.
//
// `--pipeline train|val` runs the whole loader (read, decode + transform into
// batch slabs, upload or CPU normalization) with a consumer that takes
// batches as fast as they come, and reports each stage's busy time, the
// bottleneck, and the process's CPU cores in the steady state.
// `--pipeline none` measures the I/O path alone (cmd_bench_read.cpp).
//
// SIGINT and SIGTERM stop either between two batches (or reads), or while
// waiting for one (its reads cancelled: a stalled server holds nothing up),
// join the threads and exit 130 or 143 with one line on stderr and no summary.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <ringfeed/detail/json_text.hpp>
#include <ringfeed/loader/loader.hpp>

#include "bench_options.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

// CPU seconds of this process, every thread (the loader's decode, read and
// upload threads live here).
double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}


const char* explain(const std::string& bottleneck, bool exact) {
  if (bottleneck == "decode")
    return exact ? "decode + transform: the CPU; fast mode (no --exact) or more cores would help"
                 : "decode + transform: the CPU; more cores (--threads) would help";
  if (bottleneck == "storage") return "storage: reads are outstanding most of the time; more --io-depth or faster storage";
  if (bottleneck == "upload") return "upload: host-to-device copies and conversion";
  return "the consumer: batches were ready whenever it asked";
}

int run_loader_bench(const bench_options& opt) {
  if (opt.epochs < 1) throw std::runtime_error("--epochs must be at least 1");
  // Before the loader starts its threads: SIGINT/SIGTERM stop the run
  // between two batches (interrupt.hpp).
  const interrupt_watch interrupt;
  loader_request request = recipe_request(opt.recipe, opt.exact, opt.seed, opt.max_pixels);
  loader_options& base = request.base;
  base.source = opt.source;
  if (opt.recipe.transform.empty() || opt.output_option->count() > 0) request.output = opt.output;
  if (opt.memory_option->count() > 0) request.memory_budget = opt.memory_mb << 20;
  base.direct = opt.direct;
  base.batch_size = opt.batch;
  base.threads = opt.threads;
  base.io_depth = opt.io_depth;
  base.io = io::parse_backend(opt.io);
  base.s3 = opt.s3;
  base.device = opt.device;
  base.decode = parse_decode_where(opt.decode);  // settled by resolve()
  base.on_error = parse_error_policy(opt.on_error);
  base.cache_dir = opt.cache_dir;
  base.cache = parse_cache_kind(opt.cache);
  // pixels without --cache-gb: the loader's default, the disk's free space less max(5%, 1 GiB)
  if (base.cache == cache_kind::bytes || opt.cache_gb_option->count() > 0)
    base.cache_bytes = static_cast<std::uint64_t>(opt.cache_gb * 1e9);
  base.stream_shards = opt.stream;
  base.shuffle_buffer = opt.shuffle_buffer;
  base.end = loader_end{static_cast<std::uint64_t>(opt.epochs - 1)};  // nothing read past the last epoch
  resolved settled = resolve(std::move(request));
  loader_options& o = settled.options;
  if (opt.no_dct_scale) {
    if (opt.exact) throw std::runtime_error("--no-dct-scale is a fast-mode switch; --exact never scales");
    o.pipeline.set_fast_min_reduction(std::numeric_limits<double>::infinity());
  }
  if (opt.json) o.log = [](std::string_view line) { std::fprintf(stderr, "ringfeed: %.*s\n", static_cast<int>(line.size()), line.data()); };

  // Start-up a training run pays once: opening the loader (listing the
  // dataset or indexing its shards, the storage probe) and filling the
  // pipeline up to the first batch; the rest is its steady state.
  const auto opened_at = std::chrono::steady_clock::now();
  std::optional<loader> held;
  if (!open_unless_interrupted(held, o, interrupt, "bench")) return interrupt.exit_status();
  loader& l = *held;
  const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_at).count();
  const std::size_t per_epoch = l.dataset().size();
  const std::size_t total = per_epoch * static_cast<std::size_t>(opt.epochs);
  progress_line bar(
      [&] {
        const auto st = l.stats();
        char buf[160];
        std::snprintf(buf, sizeof buf, "  %llu/%zu images  %.0f images/s  limited by %s",
                      static_cast<unsigned long long>(st.images), total,
                      st.elapsed_s > 0 ? static_cast<double>(st.images) / st.elapsed_s : 0.0,
                      st.bottleneck().c_str());
        return progress_line::bar(total ? static_cast<double>(st.images) / static_cast<double>(total) : 1.0) + buf;
      },
      !opt.json && ::isatty(STDERR_FILENO));
  std::size_t images = 0;
  const auto step = std::chrono::duration<double, std::milli>(opt.step_ms);
  // Per epoch, as the consumer saw it (the first one includes filling the
  // pipeline, and with --cache-dir filling the cache).
  std::vector<double> epoch_rates;
  // Warm-up: the batches until every batch buffer has been filled once
  // (the first touch of their pages is a one-time cost), at most half the
  // run's batches, at least the first; the steady state is measured after it.
  const std::size_t run_batches = (per_epoch + opt.batch - 1) / opt.batch * static_cast<std::size_t>(opt.epochs);
  const std::size_t warmup = std::max<std::size_t>(
      1, std::min(opt.warmup_batches >= 0 ? static_cast<std::size_t>(opt.warmup_batches)
                                          : l.stats().prefetch_batches + 1,
                  run_batches / 2));
  std::optional<std::chrono::steady_clock::time_point> first_at, warm_at;
  double warm_cpu_s = 0.0;  // the process's CPU seconds at warm_at
  std::size_t batches_seen = 0, warmup_images = 0;
  const auto began = std::chrono::steady_clock::now();
  bool stopped = false;  // by a signal, before the end
  for (int e = 0; e < opt.epochs && !stopped; ++e) {
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t in_epoch = 0;
    if (l.state().epoch != static_cast<std::uint64_t>(e)) l.set_epoch(static_cast<std::uint64_t>(e));
    // A signal ends the wait for a batch at once (a read stalled on a server).
    while (std::optional<batch> got = next_unless_interrupted(l, interrupt)) {
      const batch& b = *got;
      if (batches_seen < warmup) {
        const auto now = std::chrono::steady_clock::now();
        if (!first_at) first_at = now;
        warm_at = now;
        warm_cpu_s = process_cpu_seconds();
        warmup_images += b.size();
      }
      ++batches_seen;
      in_epoch += b.size();
      // A stand-in for the training step: the consumer is busy, not waiting.
      if (opt.step_ms > 0) std::this_thread::sleep_for(step);
    }
    stopped = interrupt.requested();
    images += in_epoch;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    epoch_rates.push_back(secs > 0 ? static_cast<double>(in_epoch) / secs : 0.0);
  }
  const auto ended = std::chrono::steady_clock::now();
  const double ended_cpu_s = process_cpu_seconds();
  const auto st = l.stats();
  bar.stop();
  if (stopped) {
    held.reset();  // stops the pipeline and joins its threads
    std::fprintf(stderr, "ringfeed bench: interrupted by %s after %zu images in %.3f s\n",
                 interrupt.signal_name().c_str(), images, st.elapsed_s);
    return interrupt.exit_status();
  }

  const double seconds = st.elapsed_s;
  const double images_per_s = static_cast<double>(images) / seconds;
  // Steady state: the images after the warm-up (at least the first batch)
  // over the time after it, the rule perf/compare/compare_loader.py applies to the
  // DataLoader too; null when nothing came after it.
  const double first_batch_s = first_at ? std::chrono::duration<double>(*first_at - began).count() : 0.0;
  const double steady_s = warm_at ? std::chrono::duration<double>(ended - *warm_at).count() : 0.0;
  const std::size_t steady_images = images - warmup_images;
  const nlohmann::json steady_rate =
      steady_images > 0 && steady_s > 0 ? nlohmann::json(static_cast<double>(steady_images) / steady_s) : nlohmann::json();
  // The cores the steady state kept busy: CPU seconds over its wall time.
  const nlohmann::json steady_cores = steady_rate.is_number() ? nlohmann::json((ended_cpu_s - warm_cpu_s) / steady_s)
                                                              : nlohmann::json();
  const double mb_per_s = static_cast<double>(st.read.bytes) / 1e6 / seconds;
  const std::string bottleneck = st.bottleneck();
  const tensor_view layout = l.batch_layout();
  const std::string output_text = to_string(output_spec{layout.dtype, layout.layout});
  if (opt.json) {
    // The loader's own counters, under the names every binding uses, plus
    // what only the command knows.
    // File names are bytes: the skipped list goes in as bytes, and
    // json_text writes them as stats.json() does (surrogateescape), where
    // parsing that text back would refuse its lone-surrogate escapes.
    loader_stats counters = st;
    counters.skipped.clear();
    nlohmann::json out = nlohmann::json::parse(counters.json());
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& k : st.skipped) skipped.push_back({{"path", k.path}, {"reason", k.reason}});
    out["skipped"] = std::move(skipped);
    out.update({
        {"source", opt.source},
        {"pipeline", opt.recipe.transform.empty() ? opt.recipe.pipeline : "transform"},
        {"transform", opt.recipe.transform},
        {"mode", opt.exact ? "exact" : "fast"},
        {"dct_scaling", !opt.exact && !opt.no_dct_scale},
        {"images", images},
        {"seconds", seconds},
        {"images_per_s", images_per_s},
        {"mb_per_s", mb_per_s},
        {"device", l.uses_device() ? "cuda:" + std::to_string(opt.device) : "host"},
        {"host_reason", l.host_reason()},
        {"output_made_on", l.converts_on_device() ? "device" : "host"},
        {"output", output_text},
        {"batch", opt.batch},
        {"epochs", opt.epochs},
        {"step_ms", opt.step_ms},
        {"epoch_images_per_s", epoch_rates},
        {"stream_shards", opt.stream},
        {"open_s", open_s},
        {"first_batch_s", first_batch_s},
        {"warmup_batches", std::min(warmup, batches_seen)},
        {"steady_images", steady_images},
        {"steady_seconds", steady_s},
        {"steady_images_per_s", steady_rate},
        {"steady_cpu_cores", steady_cores},
    });
    if (st.cache) out["cache"]["dir"] = opt.cache_dir;
    if (st.pixel_cache) out["pixel_cache"]["dir"] = opt.cache_dir + "/pixels";
    std::printf("%s\n", detail::json_text(out).c_str());
  } else {
    std::printf("ringfeed bench: %s (--pipeline %s, %s mode, %zu images/batch, %s on %s)\n", opt.source.c_str(),
                (opt.recipe.transform.empty() ? opt.recipe.pipeline : opt.recipe.transform).c_str(), opt.exact ? "exact" : "fast", opt.batch, output_text.c_str(),
                l.uses_device() ? ("cuda:" + std::to_string(opt.device)).c_str() : "host");
    std::printf("  %zu images in %.3f s: %.0f images/s; read %.1f MB (%.1f MB/s)\n", images, seconds, images_per_s,
                static_cast<double>(st.read.bytes) / 1e6, mb_per_s);
    if (steady_rate.is_number())
      std::printf("  start-up: opening %.3f s, first batch after %.3f s; after %zu warm-up batches %.0f images/s "
                  "on %.1f CPU cores\n", open_s, first_batch_s, std::min(warmup, batches_seen),
                  steady_rate.get<double>(), steady_cores.get<double>());
    std::printf("  where the time went (busy seconds, share of capacity):\n");
    std::printf("    read     %8.3f s  %5.1f%% of %zu reads in flight (%s)\n", st.read.busy_s,
                100 * st.read_utilization(), st.io_depth, st.backend.c_str());
    std::printf("    decode   %8.3f s  %5.1f%% of %zu threads\n", st.decode.busy_s, 100 * st.decode_utilization(),
                st.decode_threads);
    const gpu_decode_stats& g = st.gpu_decode;  // its reason: resolve()'s, or why the GPU could not decode
    std::printf("    decoded on the %s: %s\n", g.where == "gpu" ? "GPU" : "CPU", g.reason.c_str());
    if (g.where == "gpu") {
      std::printf("      %" PRIu64 " by %d hardware engines, %" PRIu64 " hybrid, %" PRIu64 " on the CPU (%" PRIu64
                  " fallbacks); %s\n", g.hardware, g.hardware_engines, g.hybrid, g.cpu, g.fallbacks, g.decoder.c_str());
      for (const auto& [why, count] : g.cpu_reasons)
        std::printf("      to the CPU: %" PRIu64 " %s\n", count, why.c_str());
      for (const auto& [why, count] : g.split_batches)
        std::printf("      %" PRIu64 " batches refused whole, retried image by image: %s\n", count, why.c_str());
    }
    if (l.uses_device())
      std::printf("    upload   %8.3f s  %5.1f%% (%s made on the %s)\n", st.upload.busy_s,
                  100 * st.upload_utilization(), output_text.c_str(), l.converts_on_device() ? "device" : "host");
    else
      std::printf("    upload   none: %s\n", l.host_reason().c_str());
    std::printf("    consumer waited %.3f s (%.1f%% of the run)\n", st.consumer_wait_s,
                seconds > 0 ? 100 * st.consumer_wait_s / seconds : 0.0);
    std::printf("  limited by: %s\n", explain(bottleneck, opt.exact));
    if (opt.epochs > 1) {
      std::printf("  per epoch:");
      for (const double r : epoch_rates) std::printf(" %.0f", r);
      std::printf(" images/s\n");
    }
    if (st.cache)
      std::printf("  cache %s: %llu hits, %llu misses (hit rate %.1f%%), %llu stored, %llu evicted, %.1f MB held\n",
                  opt.cache_dir.c_str(), static_cast<unsigned long long>(st.cache_hits),
                  static_cast<unsigned long long>(st.cache_misses), 100 * st.cache_hit_rate(),
                  static_cast<unsigned long long>(st.cache_stores), static_cast<unsigned long long>(st.cache_evictions),
                  static_cast<double>(st.cache_bytes) / 1e6);
    if (st.pixel_cache) {
      const pixel_cache_stats& p = st.pixels;
      std::printf("  pixel cache %s/pixels: %llu hits, %llu misses (hit rate %.1f%%), %llu stored, %llu entries, "
                  "%.1f MB held, read at %.0f MB/s, %.2f ms per read%s\n",
                  opt.cache_dir.c_str(), static_cast<unsigned long long>(p.hits),
                  static_cast<unsigned long long>(p.misses), 100 * p.hit_rate(),
                  static_cast<unsigned long long>(p.stores), static_cast<unsigned long long>(p.entries),
                  static_cast<double>(p.bytes) / 1e6, p.read_mb_per_s(), p.read_ms(),
                  p.direct ? " (O_DIRECT)" : "");
      if (!p.filling) std::printf("    not filling: %s\n", p.reason.c_str());
    }
    if (!st.skipped.empty()) {
      std::printf("  skipped %zu (files, or directories that cannot be listed):\n", st.skipped.size());
      for (const auto& k : st.skipped) std::printf("    %s: %s\n", escape_bytes(k.path).c_str(), k.reason.c_str());
    }
  }
  return 0;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto opt = std::make_shared<bench_options>();
  CLI::App* cmd = app.add_subcommand("bench", "read a dataset as fast as possible and say what limits it");
  cmd->add_option("SOURCE", opt->source,
                  "dataset: directory, manifest, tar shards, nfs://server/export/path (an ImageFolder), s3://bucket/prefix/ "
                  "(an ImageFolder, shards or a manifest) or https:// shards and manifests")
      ->required();
  add_recipe_options(cmd, opt->recipe,
                     "train (RandomResizedCrop + flip), val (Resize + CenterCrop) or none (read bytes only)")
      ->check(CLI::IsMember({"train", "val", "none"}));
  cmd->add_option("--batch", opt->batch, "images per batch")->check(CLI::PositiveNumber);
  cmd->add_flag("--exact", opt->exact, "decode full size and resample like Pillow (default: fast mode)");
  cmd->add_flag("--no-dct-scale", opt->no_dct_scale,
                "fast mode without DCT-domain scaling (region decode only): to measure what scaling contributes");
  add_max_pixels_option(cmd, opt->max_pixels);
  opt->output_option = cmd->add_option("--output", opt->output, "what batches hold: float32, float16 or bfloat16 (normalized NCHW), the same "
                                       "with _nhwc (float16_nhwc: NHWC) or uint8 (NHWC)")
      ->check(accepted_by(parse_output));
  cmd->add_option("--device", opt->device, "CUDA device for the upload stage; -1: host batches")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--decode", opt->decode,
                  "where JPEGs are decoded: auto (the GPU for device batches in fast mode when every op has a "
                  "device kernel and nvJPEG is found, else the CPU), cpu (libjpeg-turbo), gpu (nvJPEG, then "
                  "crop/resize/flip and the output on the device; refused with --exact or --device -1)")
      ->check(accepted_by(parse_decode_where))->capture_default_str();
  opt->memory_option = cmd->add_option("--memory-mb", opt->memory_mb,
                                       "budget for batch slabs, MiB (default: max(1 GiB, 4 batches))")
                            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));  // (<< 20 stays in 64 bits)
  cmd->add_option("--seed", opt->seed, "sampler and augmentation seed");
  cmd->add_option("--step-ms", opt->step_ms, "simulate a training step of this many ms per batch (a slow consumer)")
      ->check(CLI::Range(0.0, 3.6e6));
  cmd->add_option("--warmup-batches", opt->warmup_batches,
                  "batches left out of steady_images_per_s (default: one per batch buffer, at most half the run)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", opt->threads, "worker threads (0 = one per core)");
  cmd->add_option("--io-depth", opt->io_depth, "files in flight at once (0: what `ringfeed probe` recommends)");
  cmd->add_option("--epochs", opt->epochs, "passes over the dataset");
  add_io_option(cmd, opt->io);
  add_s3_options(cmd, opt->s3);
  cmd->add_flag("--direct", opt->direct,
                "O_DIRECT reads: bypass the page cache (buffered where the file system refuses it)");
  cmd->add_option("--on-error", opt->on_error, "skip: report bad files and go on; fail: stop")
      ->check(accepted_by(parse_error_policy));
  cmd->add_option("--cache-dir", opt->cache_dir,
                  "local read-through cache of remote samples (nfs://, s3://, https:// or a network file system)");
  cmd->add_option("--cache", opt->cache,
                  "what --cache-dir keeps: bytes (remote samples' encoded bytes) or pixels (every sample's decoded "
                  "pixels: epochs after the first skip the decode; batches are --exact's)")
      ->check(accepted_by(parse_cache_kind));
  opt->cache_gb_option = cmd->add_option("--cache-gb", opt->cache_gb,
                                         "size bound of --cache-dir, GB (pixels: default the disk's free space less max(5%, 1 GiB))")
                             ->check(CLI::Range(1e-9, 1e9)  /* (GB, as bytes in 64 bits) */);
  cmd->add_flag("--stream", opt->stream,
                "tar shards: read each shard sequentially in large reads, shards in seeded random order, "
                "samples mixed by a shuffle buffer (for HDDs and remote storage)");
  cmd->add_option("--shuffle-buffer", opt->shuffle_buffer, "samples in the --stream shuffle buffer")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opt->json, "print one JSON object as the last line of stdout");
  cmd->callback([opt] {
    const int rc = opt->recipe.pipeline == "none" && opt->recipe.transform.empty() ? run_read_bench(*opt) : run_loader_bench(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ringfeed::cli
