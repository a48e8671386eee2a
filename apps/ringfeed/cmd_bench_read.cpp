// `ringfeed bench SOURCE --pipeline none`: the I/O path alone, through the
// loader's storage interface (io/source.hpp): every sample of SOURCE (a
// dataset, or every image file under a plain directory) is read,
// `--io-depth` in flight, on io_uring or pread threads, buffered or with
// `--direct`, from libnfs for nfs://, from the memory map for LMDB.
// SIGINT/SIGTERM stop the readers; the command exits 130 or 143.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/detail/json_text.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/text.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "bench_options.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

int run_read_bench(bench_options opt) {
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

}  // namespace ringfeed::cli
