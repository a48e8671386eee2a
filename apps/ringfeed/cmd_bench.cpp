// `ringfeed bench SOURCE`: read a dataset as fast as the machine allows and
// report where the time went.
//
// `--pipeline train|val` runs the whole loader (read, decode + transform into
// batch slabs, upload or CPU normalization) with a consumer that takes
// batches as fast as they come, and reports each stage's busy time and the
// bottleneck. `--pipeline none` measures the I/O path alone through the
// loader's storage interface (io/source.hpp): every sample of SOURCE (a
// dataset, or every image file under a plain directory) is read, `--io-depth`
// in flight, on io_uring or pread threads, buffered or with `--direct`, from
// libnfs for nfs://, from the memory map for LMDB.
//
// SIGINT and SIGTERM stop either between two batches (or reads), or while
// waiting for one (its reads cancelled: a stalled server holds nothing up),
// join the threads and exit 130 or 143 with one line on stderr and no summary.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/detail/json_text.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "commands.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

namespace fs = std::filesystem;

struct bench_options {
  std::string source;
  recipe_options recipe = recipe_with("train");
  std::size_t batch = 64;
  bool exact = false;
  bool no_dct_scale = false;
  std::uint64_t max_pixels = image::default_max_pixels;
  std::string output = "float32";
  CLI::Option* output_option = nullptr;
  int device = 0;
  std::string decode = "auto";  // where JPEGs are decoded: auto | cpu | gpu
  std::size_t threads = 0;
  std::size_t io_depth = 0;  // 0: the storage probe's recommendation
  int epochs = 1;
  std::string io = "auto";
  io::s3_options s3;
  std::size_t memory_mb = 1024;
  CLI::Option* memory_option = nullptr;
  std::uint64_t seed = 0;
  std::string on_error = "skip";
  double step_ms = 0.0;  // simulated training step per batch (the consumer's own time)
  int warmup_batches = -1;  // batches before the steady state; -1: one per batch buffer
  bool direct = false;
  bool json = false;
  // Remote sources: the local read-through cache.
  std::string cache_dir;
  std::string cache = "bytes";  // what --cache-dir keeps: bytes | pixels
  double cache_gb = 10.0;
  CLI::Option* cache_gb_option = nullptr;
  // Tar shards: stream them (sequential reads + shuffle buffer).
  bool stream = false;
  std::size_t shuffle_buffer = 1000;
};

struct skipped_file {
  std::string path;
  std::string reason;
};

// What `--pipeline none` reads: a dataset (ImageFolder, manifest, tar
// shards, nfs://, LMDB) when SOURCE is one, else every image file under
// SOURCE; through the loader's storage interface either way. `skipped`:
// the directories left out (--on-error skip) because they cannot be listed.
struct read_set {
  std::optional<data::dataset> ds;
  std::vector<std::string> files;
  std::vector<skipped_file> skipped;
  [[nodiscard]] std::size_t size() const { return ds ? ds->size() : files.size(); }
};

// Every image file under a plain directory (no class folders), sorted. A
// sub-directory that cannot be listed stops the listing, naming it, or with
// `skip` is left out and named in `skipped`.
std::vector<std::string> image_files_under(const std::string& root, bool skip, std::vector<skipped_file>& skipped) {
  std::vector<std::string> out;
  std::vector<fs::path> pending{fs::path(root)};
  while (!pending.empty()) {
    const fs::path dir = std::move(pending.back());
    pending.pop_back();
    std::vector<std::string> files;
    std::vector<fs::path> subdirs;
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') continue;  // hidden files and folders are not samples
      std::error_code type_ec;
      if (it->is_directory(type_ec)) {
        subdirs.push_back(it->path());
      } else if (it->is_regular_file(type_ec) && data::has_image_extension(name)) {
        files.push_back(it->path().string());
      }
    }
    if (ec) {  // a listing cut short is left out whole
      if (!skip || dir == fs::path(root))
        throw std::runtime_error("cannot list '" + dir.string() + "': " + ec.message());
      skipped.push_back({dir.string(), "cannot list directory: " + ec.message()});
      continue;
    }
    out.insert(out.end(), files.begin(), files.end());
    pending.insert(pending.end(), subdirs.begin(), subdirs.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

read_set list_samples(io::source& src, bool skip) {
  read_set out;
  const std::string& source = src.location();
  const bool local = src.scheme() == "file";
  std::error_code ec;
  const auto status = local ? fs::status(source, ec) : fs::file_status{};
  const bool pattern = source.find_first_of("*?[{") != std::string::npos;
  if (local && !pattern && (ec || !fs::exists(status)))
    throw std::runtime_error("cannot read dataset '" + source + "': " +
                             (ec ? ec.message() : std::string("no such file or directory")));
  try {
    data::dataset_options options;
    options.skip_unreadable = skip;
    out.ds = data::open_dataset(src, options);
    for (const auto& d : out.ds->report().skipped) out.skipped.push_back({d.path, d.reason});
    return out;
  } catch (const data::dataset_error&) {
    if (!local || !fs::is_directory(status)) throw;  // a bad manifest, shard or record: say so
  }
  out.files = image_files_under(source, skip, out.skipped);
  return out;
}

struct shared_state {
  const read_set* samples = nullptr;
  std::size_t total = 0;           // samples × epochs
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::atomic<std::uint64_t> bytes{0};
  bool fail_fast = false;
  std::atomic<bool> stop{false};  // set on the first error with --on-error fail
  const interrupt_watch* interrupt = nullptr;  // SIGINT/SIGTERM: stop taking samples
  std::mutex skipped_mutex;
  std::vector<skipped_file> skipped;
};

// One of `io_depth` readers: takes the next sample until none are left,
// through the source (io_uring or pread, buffered or O_DIRECT; libnfs;
// LMDB). The buffer is reused: after warm-up nothing is allocated per file.
task<> read_samples(thread_pool& pool, io::source& src, shared_state& s) {
  co_await pool.schedule();
  io::read_buffer buffer;
  std::string path;
  const read_set& set = *s.samples;
  for (;;) {
    const std::size_t i = s.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= s.total || s.stop.load(std::memory_order_relaxed) || s.interrupt->requested()) break;
    const std::size_t k = i % set.size();
    try {
      io::sample_ref ref;
      if (set.ds) {
        ref = set.ds->ref(k, path);
      } else {
        ref.file = set.files[k];
      }
      const std::span<const std::byte> bytes = co_await src.read(ref, buffer);
      s.bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
    } catch (const std::exception& e) {
      if (s.fail_fast) {
        s.stop.store(true, std::memory_order_relaxed);
        throw;
      }
      std::lock_guard lock(s.skipped_mutex);
      s.skipped.push_back({set.ds ? set.ds->describe(k) : set.files[k], e.what()});
    }
    s.done.fetch_add(1, std::memory_order_relaxed);
  }
}

int run_bench(bench_options opt) {
  if (opt.epochs < 1) throw std::runtime_error("--epochs must be at least 1");
  if (opt.stream) throw std::runtime_error("--stream is a loader option: use it with --pipeline val or train");
  if (!opt.cache_dir.empty())
    throw std::runtime_error("--cache-dir is a loader option: use it with --pipeline val or train");

  // Before any thread starts: SIGINT/SIGTERM stop the readers (interrupt.hpp).
  const interrupt_watch interrupt;
  thread_pool pool(opt.threads);
  // The loader's storage interface and its defaults: the storage decides
  // the depth and whether reads get network deadlines and retries.
  io::source_options so;
  so.kind = io::parse_backend(opt.io);
  so.depth = opt.io_depth;
  so.direct = opt.direct;
  so.s3 = opt.s3;
  const std::unique_ptr<io::source> src = io::source::open(opt.source, pool, so);
  opt.io_depth = src->depth();
  const bool skip = parse_error_policy(opt.on_error) == error_policy::skip;
  const read_set samples = list_samples(*src, skip);
  if (samples.size() == 0) throw std::runtime_error("no image files found under '" + opt.source + "'");

  shared_state s;
  s.samples = &samples;
  s.total = samples.size() * static_cast<std::size_t>(opt.epochs);
  s.fail_fast = !skip;
  s.skipped = samples.skipped;  // directories first, then files as they fail
  s.interrupt = &interrupt;

  const auto start = std::chrono::steady_clock::now();
  progress_line bar(
      [&] {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::size_t done = s.done.load(std::memory_order_relaxed);
        char buf[160];
        std::snprintf(buf, sizeof buf, "  %zu/%zu files  %.0f files/s  %.1f MB/s", done, s.total,
                      secs > 0 ? static_cast<double>(done) / secs : 0.0,
                      secs > 0 ? static_cast<double>(s.bytes.load(std::memory_order_relaxed)) / 1e6 / secs : 0.0);
        return progress_line::bar(s.total ? static_cast<double>(done) / static_cast<double>(s.total) : 1.0) + buf;
      },
      !opt.json && ::isatty(STDERR_FILENO));

  std::vector<task<>> readers;
  for (std::size_t i = 0; i < std::min(opt.io_depth, s.total); ++i) readers.push_back(read_samples(pool, *src, s));
  sync_wait(when_all(std::move(readers)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bar.stop();
  if (interrupt.requested() && s.done.load() < s.total) {
    std::fprintf(stderr, "ringfeed bench: interrupted by %s after %zu of %zu files in %.3f s\n",
                 interrupt.signal_name().c_str(), s.done.load(), s.total, seconds);
    return interrupt.exit_status();
  }

  const std::size_t images = s.done.load() - (s.skipped.size() - samples.skipped.size());
  const std::uint64_t bytes = s.bytes.load();
  const io::source_stats st = src->stats();
  const double images_per_s = static_cast<double>(images) / seconds;
  const double mb_per_s = static_cast<double>(bytes) / 1e6 / seconds;
  const std::string backend(src->backend_name());
  const bool direct = st.direct;

  if (opt.json) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& k : s.skipped) skipped.push_back({{"path", k.path}, {"reason", k.reason}});
    nlohmann::json out = {
        {"source", opt.source},
        {"pipeline", opt.recipe.transform.empty() ? opt.recipe.pipeline : "transform"},
        {"transform", opt.recipe.transform},
        {"images", images},
        {"seconds", seconds},
        {"images_per_s", images_per_s},
        {"bytes", bytes},
        {"mb_per_s", mb_per_s},
        {"backend", backend},
        {"direct", direct},
        {"threads", pool.thread_count()},
        {"io_depth", opt.io_depth},
        {"epochs", opt.epochs},
        // Only the storage stage runs with --pipeline none: it is the whole time.
        {"stages", {{"read_s", seconds}, {"consumer_wait_s", 0.0}}},
        {"bottleneck", "storage"},
        {"reads", {{"retries", st.retries}, {"timeouts", st.timeouts}}},
        {"skipped", skipped},
    };
    std::printf("%s\n", detail::json_text(out).c_str());  // valid UTF-8 whatever the file names hold
  } else {
    std::printf("ringfeed bench: %s (--pipeline none: read only)\n", opt.source.c_str());
    std::printf("  %zu images, %.1f MB in %.3f s: %.0f images/s, %.1f MB/s\n", images,
                static_cast<double>(bytes) / 1e6, seconds, images_per_s, mb_per_s);
    std::printf("  backend %s%s, %zu files in flight, %zu worker threads\n", backend.c_str(),
                direct ? " with O_DIRECT" : ", buffered", opt.io_depth, pool.thread_count());
    std::printf("  limited by: storage (only the read stage runs with --pipeline none)\n");
    if (!s.skipped.empty()) {
      std::printf("  skipped %zu (files, or directories that cannot be listed):\n", s.skipped.size());
      for (const auto& k : s.skipped) std::printf("    %s: %s\n", escape_bytes(k.path).c_str(), k.reason.c_str());
    }
  }
  return 0;
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
  // pixels without --cache-gb: the loader's default, the disk's free space less 5%
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
      std::printf("  start-up: opening %.3f s, first batch after %.3f s; after %zu warm-up batches %.0f images/s\n",
                  open_s, first_batch_s, std::min(warmup, batches_seen),
                  steady_rate.get<double>());
    std::printf("  where the time went (busy seconds, share of capacity):\n");
    std::printf("    read     %8.3f s  %5.1f%% of %zu reads in flight (%s)\n", st.read.busy_s,
                100 * st.read_utilization(), st.io_depth, st.backend.c_str());
    std::printf("    decode   %8.3f s  %5.1f%% of %zu threads\n", st.decode.busy_s, 100 * st.decode_utilization(),
                st.decode_threads);
    const gpu_decode_stats& g = st.gpu_decode;  // its reason: resolve()'s, or why the GPU could not decode
    std::printf("    decoded on the %s: %s\n", g.where == "gpu" ? "GPU" : "CPU", g.reason.c_str());
    if (g.where == "gpu")
      std::printf("      %" PRIu64 " by %d hardware engines, %" PRIu64 " hybrid, %" PRIu64 " on the CPU (%" PRIu64
                  " fallbacks); %s\n", g.hardware, g.hardware_engines, g.hybrid, g.cpu, g.fallbacks, g.decoder.c_str());
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
  cmd->add_option("--device", opt->device, "CUDA device for the upload stage; -1: host batches");
  cmd->add_option("--decode", opt->decode,
                  "where JPEGs are decoded: auto (the GPU for device batches in fast mode when every op has a "
                  "device kernel and nvJPEG is found, else the CPU), cpu (libjpeg-turbo), gpu (nvJPEG, then "
                  "crop/resize/flip and the output on the device; refused with --exact or --device -1)")
      ->check(accepted_by(parse_decode_where))->capture_default_str();
  opt->memory_option = cmd->add_option("--memory-mb", opt->memory_mb,
                                       "budget for batch slabs, MiB (default: max(1 GiB, 4 batches))")
                            ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", opt->seed, "sampler and augmentation seed");
  cmd->add_option("--step-ms", opt->step_ms, "simulate a training step of this many ms per batch (a slow consumer)");
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
                                         "size bound of --cache-dir, GB (pixels: default the disk's free space less 5%)")
                             ->check(CLI::PositiveNumber);
  cmd->add_flag("--stream", opt->stream,
                "tar shards: read each shard sequentially in large reads, shards in seeded random order, "
                "samples mixed by a shuffle buffer (for HDDs and remote storage)");
  cmd->add_option("--shuffle-buffer", opt->shuffle_buffer, "samples in the --stream shuffle buffer")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opt->json, "print one JSON object as the last line of stdout");
  cmd->callback([opt] {
    const int rc = opt->recipe.pipeline == "none" && opt->recipe.transform.empty() ? run_bench(*opt) : run_loader_bench(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ringfeed::cli
