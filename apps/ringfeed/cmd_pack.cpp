// `ringfeed pack SOURCE OUT [--shard-mb N] [--seed S] [--no-shuffle]`: copies
// any dataset ringfeed opens into WebDataset tar shards,
//
//   OUT/shard-000000.tar, shard-000001.tar, …   ustar, at most --shard-mb MiB each
//   OUT/classes.txt                              class names in label order, when known
//
// Sample i of the packed order (a seeded permutation of the source, or the
// source order with --no-shuffle) becomes the members `<key>.<ext>` (its
// exact bytes, ext = its extension lowercased) and `<key>.cls` (its label as
// decimal text), key = i zero-padded to 8 digits. Headers carry no owner,
// time or host, so one (source, seed, shard size) always gives the same
// bytes. Each shard is written as `shard-NNNNNN.tar.tmp`, fsync'ed and
// renamed, so no torn shard ever has a final name (data::tar_shard_writer,
// ringfeed/data/tar.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <ringfeed/async_scope.hpp>
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/tar.hpp>
#include <ringfeed/detail/atomic_file.hpp>
#include <ringfeed/detail/unique_fd.hpp>
#include <ringfeed/random.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

#include "commands.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t samples_per_chunk = 64;  // read ahead of the writer, in samples
constexpr const char* classes_name = "classes.txt";

struct pack_options {
  std::string source;
  std::string out;
  std::uint64_t shard_mb = 256;
  std::uint64_t seed = 0;
  bool no_shuffle = false;
  std::size_t threads = 0;
  std::size_t io_depth = 0;
  std::string io = "auto";
  io::s3_options s3;
};

std::string in_quotes(const fs::path& p) { return "'" + p.string() + "'"; }

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

using ringfeed::detail::unique_fd;

// fsync of a directory makes the renames in it durable.
void sync_directory(const fs::path& dir) {
  unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) {
    throw std::runtime_error("cannot sync directory " + in_quotes(dir) + ": " + errno_text(errno));
  }
}

// --- order -----------------------------------------------------------------

// Packed position -> source index: ringfeed::shuffle over the seed's pack
// stream, the generator and shuffle the sampler uses.
std::vector<std::size_t> packed_order(std::size_t n, bool shuffle, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  sample_rng rng(sample_key{seed, 0, 0}, pack_stream);
  ringfeed::shuffle(std::span(order), rng);
  return order;
}

// --- reading samples ---------------------------------------------------------

// The member suffix sample i gets: its extension lowercased, if a tar
// dataset accepts it as an image; nullopt otherwise.
std::optional<std::string> image_suffix(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  const std::size_t dot = base.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string ext(base.substr(dot + 1));
  for (char& c : ext) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  for (const std::string_view known : data::image_extensions()) {
    if (known.substr(1) == ext) return ext;
  }
  return std::nullopt;
}

// Samples order[first, first + count) read into `slots` through the
// source (io_uring, pread threads, libnfs, LMDB), `depth` reads in flight.
// The first failure (lowest position, so the message does not depend on
// timing) is rethrown by wait().
class chunk_reader {
 public:
  chunk_reader(io::source& src, thread_pool& pool, const data::dataset& ds, const std::vector<std::size_t>& order)
      : m_src(src), m_pool(pool), m_ds(ds), m_order(order) {}

  /// Starts reading positions [first, first + count) into slots[0, count).
  void start(std::size_t first, std::size_t count, std::vector<std::vector<char>>& slots) {
    m_next.store(0, std::memory_order_relaxed);
    m_errors.assign(count, std::exception_ptr());
    m_scope = std::make_unique<async_scope>();
    const std::size_t n = std::min(std::max<std::size_t>(m_src.depth(), 1), count);
    for (std::size_t t = 0; t < n; ++t) m_scope->spawn(read_some(first, count, slots));
  }

  /// Waits for the chunk started last; rethrows its first failure.
  void wait() {
    join();
    for (const auto& e : m_errors) {
      if (e) std::rethrow_exception(e);
    }
  }

  ~chunk_reader() { join(); }
  chunk_reader(const chunk_reader&) = delete;
  chunk_reader& operator=(const chunk_reader&) = delete;

 private:
  // `next` only hands out unique positions; the scope's join publishes
  // the slots and errors to the writer.
  task<> read_some(std::size_t first, std::size_t count, std::vector<std::vector<char>>& slots) {
    co_await m_pool.schedule();
    io::read_buffer buffer;
    std::string path;
    for (std::size_t k; (k = m_next.fetch_add(1, std::memory_order_relaxed)) < count;) {
      const std::size_t i = m_order[first + k];
      try {
        const std::span<const std::byte> bytes = co_await m_src.read(m_ds.ref(i, path), buffer);
        const auto* p = reinterpret_cast<const char*>(bytes.data());
        slots[k].assign(p, p + bytes.size());
      } catch (const std::exception& e) {
        m_errors[k] = std::make_exception_ptr(std::runtime_error("cannot read " + in_quotes(m_ds.describe(i)) +
                                                                 ": " + e.what()));
      }
    }
  }

  void join() {
    if (m_scope) sync_wait(m_scope->join());
    m_scope.reset();
  }

  io::source& m_src;
  thread_pool& m_pool;
  const data::dataset& m_ds;
  const std::vector<std::size_t>& m_order;
  std::atomic<std::size_t> m_next{0};
  std::vector<std::exception_ptr> m_errors;
  std::unique_ptr<async_scope> m_scope;
};

// --- writing shards ------------------------------------------------------

// Sample `key` as its two members, `<key>.<suffix>` (its bytes) and
// `<key>.cls` (its label as decimal text), kept in one shard.
void add_sample(data::tar_shard_writer& writer, std::string_view key, std::string_view suffix,
                std::span<const char> bytes, std::int64_t label) {
  const std::string image_name = std::string(key) + "." + std::string(suffix);
  const std::string label_name = std::string(key) + ".cls";
  const std::string label_text = std::to_string(label);
  writer.add({{image_name, bytes}, {label_name, label_text}});
}

// --- the output directory ----------------------------------------------------

// What a previous `ringfeed pack` leaves in OUT: shards, their tmp files
// and ringfeed indexes, classes.txt.
bool is_pack_file(const std::string& name) {
  if (name == classes_name || name == std::string(classes_name) + ".tmp") return true;
  constexpr std::string_view prefix = "shard-";
  if (name.rfind(prefix, 0) != 0) return false;
  std::size_t k = prefix.size();
  while (k < name.size() && name[k] >= '0' && name[k] <= '9') ++k;
  if (k - prefix.size() < 6) return false;
  const std::string_view rest = std::string_view(name).substr(k);
  return rest == ".tar" || rest == ".tar.tmp" || rest.rfind(".tar.ringfeed.idx", 0) == 0;
}

// Makes OUT ready: created if missing; a previous pack's files are removed
// (so no stale shard of a larger run joins the new dataset); anything else
// in it is refused, as it would join the dataset or be lost.
void prepare_output(const fs::path& out, const data::dataset& ds) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + in_quotes(out) + ": " + ec.message());
  if (!fs::is_directory(out, ec)) throw std::runtime_error("output path " + in_quotes(out) + " is not a directory");

  // Packing a directory of shards into itself would overwrite what is read.
  const fs::path canonical_out = fs::weakly_canonical(out, ec);
  for (const auto& s : ds.shards()) {
    if (fs::weakly_canonical(fs::path(s.path).parent_path(), ec) == canonical_out) {
      throw std::runtime_error("output directory " + in_quotes(out) + " holds the source shard " + in_quotes(s.path) +
                               "; pack into another directory");
    }
  }

  std::vector<fs::path> previous;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_pack_file(name)) {
      throw std::runtime_error("output directory " + in_quotes(out) + " holds " + in_quotes(name) +
                               ", which is not from `ringfeed pack`; choose an empty or new directory");
    }
    previous.push_back(it->path());
  }
  if (ec) throw std::runtime_error("cannot list output directory " + in_quotes(out) + ": " + ec.message());
  for (const auto& p : previous) {
    if (!fs::remove(p, ec) && ec) throw std::runtime_error("cannot remove previous output " + in_quotes(p) + ": " + ec.message());
  }

  // Fail early, before reading anything, when OUT is not writable.
  if (::access(out.c_str(), W_OK | X_OK) != 0) {
    throw std::runtime_error("cannot write into output directory " + in_quotes(out) + ": " + errno_text(errno));
  }
}

// The source's class names, one a line in label order; nullopt when it has
// none (manifests, tar shards).
std::optional<std::string> class_list(const data::dataset& ds) {
  if (ds.classes().empty()) return std::nullopt;
  std::string text;
  for (const auto& c : ds.classes()) {
    if (c.find('\n') != std::string::npos) {
      throw std::runtime_error("class name " + in_quotes(c) + " holds a line break; classes.txt cannot list it");
    }
    text += c + "\n";
  }
  return text;
}

// OUT/classes.txt: the source's class names, or the classes.txt of a source
// that is itself a packed directory; none when the source has only numbers.
void write_classes(const fs::path& out, const data::dataset& ds, const std::string& source) {
  std::string text;
  std::error_code ec;
  if (const auto list = class_list(ds)) {
    text = *list;
  } else if (const fs::path carried = fs::path(source) / classes_name;
             fs::is_directory(source, ec) && fs::is_regular_file(carried, ec)) {
    std::ifstream in(carried, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read " + in_quotes(carried));
  } else {
    return;  // numbers only: nothing to keep
  }
  // Durable like the shards (synced), under the name a re-run recognizes.
  try {
    ringfeed::detail::atomic_file f(out / classes_name, {.sync = true, .temp_name = std::string(classes_name) + ".tmp"});
    f.write(text);
    f.commit();
  } catch (const std::system_error& e) {
    throw std::runtime_error(e.what());
  }
}

// --- the command -------------------------------------------------------------

int run_pack(const pack_options& opt) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  if (opt.shard_mb == 0) throw std::runtime_error("--shard-mb must be at least 1");
  // Before any thread: SIGINT/SIGTERM stop the pack between two samples,
  // and it leaves nothing, as a failure does (interrupt.hpp).
  const interrupt_watch interrupt;

  // Read through the storage interface: local files on io_uring (or pread
  // threads), nfs:// with libnfs, s3:// and https:// with libcurl, LMDB
  // from its memory map.
  thread_pool pool(opt.threads);
  io::source_options so;
  so.kind = io::parse_backend(opt.io);
  so.depth = opt.io_depth;
  so.s3 = opt.s3;
  std::unique_ptr<io::source> src;
  data::dataset ds;
  try {
    src = io::source::open(opt.source, pool, so);
    ds = data::open_dataset(*src);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // The library's messages mostly name the source already.
    throw std::runtime_error(what.find(opt.source) != std::string::npos
                                 ? what
                                 : "cannot open dataset " + in_quotes(opt.source) + ": " + what);
  }
  if (ds.empty()) throw std::runtime_error("dataset " + in_quotes(opt.source) + " holds no sample");

  // Every sample's member suffix, checked before anything is written.
  const std::vector<std::size_t> order = packed_order(ds.size(), !opt.no_shuffle, opt.seed);
  std::vector<std::string> suffixes(ds.size());
  for (std::size_t i = 0; i < ds.size(); ++i) {
    auto s = image_suffix(ds.name(i));
    if (!s) {
      throw std::runtime_error("sample " + in_quotes(ds.describe(i)) +
                               " has no image extension a tar shard can carry (jpg, jpeg, png, ppm, bmp, pgm, tif, "
                               "tiff, webp)");
    }
    suffixes[i] = std::move(*s);
  }

  const fs::path out(opt.out);
  refuse_output_inside(out, opt.source, "pack");
  if (interrupt.requested()) {  // while indexing: the previous pack stays as it was
    std::fprintf(stderr, "ringfeed pack: interrupted by %s before writing; nothing was changed\n",
                 interrupt.signal_name().c_str());
    return interrupt.exit_status();
  }
  prepare_output(out, ds);

  data::tar_shard_writer writer(out, opt.shard_mb << 20);
  std::atomic<std::size_t> done{0};  // progress only: relaxed
  std::atomic<std::uint64_t> written{0};
  progress_line bar(
      [&] {
        const std::size_t d = done.load(std::memory_order_relaxed);
        const double s = std::chrono::duration<double>(clock::now() - started).count();
        char buf[96];
        std::snprintf(buf, sizeof buf, "  %zu/%zu samples  %.0f MB/s", d, ds.size(),
                      s > 0 ? static_cast<double>(written.load(std::memory_order_relaxed)) / 1e6 / s : 0.0);
        return progress_line::bar(static_cast<double>(d) / static_cast<double>(ds.size())) + buf;
      },
      ::isatty(STDERR_FILENO) != 0);

  try {
    // Two chunks of slots: workers read one while this thread writes the other.
    std::vector<std::vector<char>> slots[2] = {std::vector<std::vector<char>>(samples_per_chunk),
                                               std::vector<std::vector<char>>(samples_per_chunk)};
    chunk_reader reader(*src, pool, ds, order);
    const std::size_t n = ds.size();
    std::size_t first = 0;
    std::size_t count = std::min(samples_per_chunk, n);
    reader.start(first, count, slots[0]);
    char key[32];
    for (int current = 0; count != 0; current ^= 1) {
      reader.wait();
      const std::size_t next_first = first + count;
      const std::size_t next_count = std::min(samples_per_chunk, n - next_first);
      if (next_count != 0) reader.start(next_first, next_count, slots[current ^ 1]);
      for (std::size_t k = 0; k < count; ++k) {
        if (interrupt.requested()) break;
        const std::size_t position = first + k, i = order[position];
        if (slots[current][k].size() > data::tar_shard_writer::max_member_size) {
          throw std::runtime_error("cannot pack " + in_quotes(ds.describe(i)) + ": it holds " +
                                   std::to_string(slots[current][k].size()) +
                                   " bytes, and a ustar member less than 8 GiB");
        }
        std::snprintf(key, sizeof key, "%08zu", position);
        add_sample(writer, key, suffixes[i], slots[current][k], ds.label(i));
        written.store(writer.bytes(), std::memory_order_relaxed);
        done.store(position + 1, std::memory_order_relaxed);
      }
      if (interrupt.requested()) break;  // (the reader's chunk in flight is waited for by its destructor)
      first = next_first;
      count = next_count;
    }
    if (interrupt.requested()) {
      bar.stop();
      writer.abandon();  // shards that are not the whole dataset would read as if they were
      std::fprintf(stderr, "ringfeed pack: interrupted by %s after %zu of %zu samples; nothing was kept\n",
                   interrupt.signal_name().c_str(), done.load(), ds.size());
      return interrupt.exit_status();
    }
    writer.finish();
    write_classes(out, ds, opt.source);
    sync_directory(out);
  } catch (...) {
    bar.stop();
    writer.abandon();
    throw;
  }
  bar.stop();

  const double seconds = std::chrono::duration<double>(clock::now() - started).count();
  std::printf("pack: %zu samples, %zu shard%s, %llu bytes, %.2f s, %.1f MB/s (%s, seed %llu) -> %s\n", ds.size(),
              writer.shards(), writer.shards() == 1 ? "" : "s", static_cast<unsigned long long>(writer.bytes()), seconds,
              seconds > 0 ? static_cast<double>(writer.bytes()) / 1e6 / seconds : 0.0,
              opt.no_shuffle ? "source order" : "shuffled", static_cast<unsigned long long>(opt.seed),
              opt.out.c_str());
  return 0;
}

}  // namespace

void register_pack(CLI::App& app) {
  auto opt = std::make_shared<pack_options>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "copy a dataset into WebDataset tar shards (<key>.<ext> + <key>.cls), shuffled by default");
  cmd->add_option("SOURCE", opt->source,
                  "dataset: directory, manifest, tar shards, nfs://server/export/path (an ImageFolder), "
                  "s3://bucket/prefix/, https:// shards or manifests, or lmdb:///path")
      ->required();
  cmd->add_option("OUT", opt->out, "directory to write shard-NNNNNN.tar and classes.txt into")->required();
  cmd->add_option("--shard-mb", opt->shard_mb, "start a new shard before one would pass this many MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--seed", opt->seed, "seed of the sample permutation")->capture_default_str();
  cmd->add_flag("--no-shuffle", opt->no_shuffle, "keep the source's sample order");
  cmd->add_option("--threads", opt->threads, "threads reads complete on (0 = one per core)");
  cmd->add_option("--io-depth", opt->io_depth, "samples read at once (0: what the storage recommends)");
  add_io_option(cmd, opt->io);
  add_s3_options(cmd, opt->s3);
  cmd->callback([opt] {
    const int rc = run_pack(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ringfeed::cli
