// ringfeed::loader — the assembled pipeline a training loop awaits:
//
//   sampler → reader (io_uring, or pread threads) → thread_pool decode +
//   transform straight into a slot of a batch slab → batches completed in
//   order → bounded channel → uploader (CUDA stream) → consumer
//
// Prefetch is counted in batches and bounded by memory_budget: at most
// prefetch + 1 slabs exist, each batch_size × sample bytes (pinned with
// cudaHostAlloc when a device is used). The depth adapts: it grows while the
// consumer waits in next() and shrinks, freeing slabs, while finished
// batches wait for the consumer (stats().prefetch). max(io_depth, threads)
// long-lived workers, each with a reused read buffer, take samples from a
// queue, read one and decode it into its slot; reads in flight are bounded by
// io_depth, decodes by the threads.
//
// Batches come in order: batch k of epoch e holds the sampler's batch k, with
// every random choice keyed by (seed, e, sample index), so the pixels are the
// same whatever the thread count, backend or timing. state() captures the
// position; a loader built with that state continues identically.
//
// One consumer at a time: next(), start_next() (and async_next() of
// ringfeed/asio.hpp, built on it) and epoch() must not be used
// concurrently with each other. Construction and destruction happen on the
// consumer's thread; the destructor stops the pipeline, waits for the work in
// flight, and never hangs on a consumer that still holds batches.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/loader/numa.hpp>
#include <ringfeed/loader/batch.hpp>
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/sampler.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/image/pipeline.hpp>
#include <ringfeed/output_spec.hpp>
#include <ringfeed/loader/stats.hpp>
#include <ringfeed/task.hpp>

namespace ringfeed {

using image::pipeline;

/// What to do with a sample that cannot be read or decoded.
enum class error_policy : std::uint8_t {
  /// stop: next() throws an error naming the file and the reason (an
  /// ImageFolder directory that cannot be listed: the constructor, naming it)
  fail,
  /// leave it out of its batch; list it in stats().skipped and the log. An
  /// ImageFolder directory that cannot be listed (dataset_options::
  /// skip_unreadable) is left out of the index, listed and logged the same way.
  skip,
};

/// The user-facing names: "skip", "fail". Throws std::invalid_argument
/// naming `name` and listing the accepted names.
[[nodiscard]] error_policy parse_error_policy(std::string_view name);

/// Where JPEGs are decoded (loader_options::decode).
enum class decode_where : std::uint8_t {
  /// The GPU when batches go to a device, nvJPEG is found, the mode is fast
  /// (not exact) and every op of the transforms has a device kernel; else
  /// the CPU. stats() says which and why.
  automatic,
  cpu,  ///< libjpeg-turbo and the other decoders on the decode threads
  /// The GPU (nvJPEG: hardware engines, hybrid), the crop / resize / flip and
  /// the output conversion on the device; images it cannot take are decoded
  /// on the CPU into the same batch. resolve() refuses it with exact mode,
  /// without a device, or with an op that has no device kernel. Without
  /// nvJPEG or a device that supports it, the CPU decodes (stats() says why).
  gpu,
};

/// "auto", "cpu", "gpu"; parse_decode_where throws std::invalid_argument
/// naming the value and the accepted names.
[[nodiscard]] std::string_view to_string(decode_where d) noexcept;
[[nodiscard]] decode_where parse_decode_where(std::string_view name);

/// What loader_options::cache_dir keeps.
enum class cache_kind : std::uint8_t {
  /// The encoded bytes of remote samples (nfs://, network file systems):
  /// a read-through cache that saves the network, not the decode.
  bytes,
  /// The decoded pixels of every sample, from any source (loader/
  /// pixel_cache.hpp): epochs after the first read them instead of
  /// decoding. The pixels are the full decode, so batches are exact mode's
  /// (pipeline_mode::fast's reduced decode is not used).
  pixels,
};

/// The user-facing names: "bytes", "pixels". Throws std::invalid_argument
/// naming `name` and listing the accepted names.
[[nodiscard]] cache_kind parse_cache_kind(std::string_view name);

/// Which I/O path reads the files (see io/reader.hpp).
using io_backend = io::backend;

/// Where a loader is in its stream of batches: enough to continue exactly.
struct loader_state {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::size_t next_batch = 0;  ///< first batch of `epoch` not yet delivered
  std::size_t rank = 0;
  std::size_t world_size = 1;
  friend bool operator==(const loader_state&, const loader_state&) = default;
};

/// The last batches a caller will take (loader_options::end): every batch
/// of the epochs before `epoch`, then the first `batches` of `epoch`.
struct loader_end {
  std::uint64_t epoch = 0;
  std::size_t batches = ~std::size_t{0};  ///< default: the whole epoch
};

/// An in-memory dataset (torchvision's CIFAR and MNIST arrays): `count`
/// C-contiguous uint8 images of height × width × channels (3: RGB, 1: L)
/// at `data`, labelled `labels`, read in place (zero copy): `owner` keeps
/// the memory valid while the loader lives. Each image enters the
/// transforms as the PIL image torchvision makes of it
/// (pipeline::apply_pixels: an L image as its RGB replicate, every output
/// channel equal).
struct pixel_array {
  const std::uint8_t* data = nullptr;
  std::size_t count = 0;
  int height = 0;
  int width = 0;
  int channels = 0;
  std::vector<std::int64_t> labels;
  std::shared_ptr<const void> owner;
};

/// The most threads (threads, pread_threads) and reads in flight
/// (io_depth) a loader takes; more is refused naming the option. io_uring
/// queues at most 32768 entries (the kernel's IORING_MAX_ENTRIES), and a
/// thread or a read slot each holds memory: a mistyped count would
/// otherwise exhaust the machine's before any error.
inline constexpr std::size_t max_threads = 4096;
inline constexpr std::size_t max_io_depth = 32768;

struct loader_options {
  /// A directory (ImageFolder), a manifest (.csv/.tsv) or tar shards (a
  /// .tar, a glob or brace pattern, or a directory of .tar files); or an
  /// ImageFolder on an NFS export, `nfs://server[:port]/export/path` (see
  /// io::nfs_url for exports deeper than one component), listed and read
  /// through libnfs (io/nfs.hpp) without a kernel mount: io_deadline and
  /// io_retries apply to each NFS operation, io_depth files are in flight
  /// on the one connection; or an LMDB database, `lmdb:///path` or a
  /// directory holding data.mdb. Every source is read through io::source.
  std::string source;
  data::dataset_options dataset{};
  /// The samples themselves (data::listed_samples: torchvision's
  /// `dataset.samples`), read from local storage; `source` is then where
  /// they live (the dataset's root), which names them in messages and
  /// decides the read path. Unset: the samples are listed from `source`.
  std::optional<data::dataset> samples;
  /// The images themselves, in memory (`source` names them in messages);
  /// no storage is read.
  std::optional<pixel_array> pixels;
  /// The transforms. Its output size must be fixed (end with a crop or an
  /// exact resize). The loader sets its output: uint8 NHWC when batches go
  /// to a device (the device converts to `output`), else `output`.
  image::pipeline pipeline = image::pipeline::train(224);
  /// What the consumer gets: float32/float16/bfloat16, NCHW or NHWC, normalized with the
  /// pipeline's normalize() (plain v/255 without one), or uint8 NHWC
  /// (output_spec.hpp; parse_output() reads the user-facing names).
  output_spec output = output_spec::float32_nchw();

  std::size_t batch_size = 256;
  /// Drop the last batch of an epoch when it is short (DataLoader's drop_last).
  bool drop_last = false;
  /// Seed, shuffle, distributed rank/world size and the sampler's drop_last.
  data::sampler_options sampler{};

  /// Decode threads; 0: one per CPU this process may run on (its affinity
  /// mask). ringfeed::resolve (every front end) sets it first to this
  /// rank's share: the mask within the cgroup quota, divided among the
  /// local ranks (loader/node.hpp), with its reason in stats().
  std::size_t threads = 0;
  /// Samples being read at once (decodes are not bounded by it: every
  /// thread decodes, whatever the depth). 0: what the
  /// storage probe recommends for the source (io/storage.hpp, `ringfeed
  /// probe`: 64 on NVMe and network file systems, nfs:// included; 32 on SATA
  /// SSDs, virtual disks and storage it cannot identify; 8 in memory; 4 on
  /// HDDs, where tar shards are the way to read).
  std::size_t io_depth = 0;
  io_backend io = io_backend::automatic;
  /// Threads doing blocking reads with io_backend::pread; 0: min(io_depth, 16).
  std::size_t pread_threads = 0;
  /// O_DIRECT reads: bypass the page cache (a dataset larger than memory
  /// read once per epoch gains nothing from it). Buffered where the file
  /// system refuses it, with one log line; never on network file systems.
  bool direct = false;
  /// Deadline per read and retries of transient errors (io/retry.hpp).
  /// 0: the storage's defaults, retry_policy::network() on network storage
  /// (nfs://, kernel NFS and CIFS mounts) and none locally.
  std::chrono::milliseconds io_deadline{0};
  unsigned io_retries = 0;

  /// Tar shards only (for HDDs and remote storage): read each shard front to
  /// back in reads of `stream_read_size` bytes instead of one read per
  /// sample, the shards in a seeded random order, the samples mixed by a
  /// shuffle buffer of `shuffle_buffer` samples (WebDataset's recipe; see
  /// data::shard_stream_order). The order is a pure function of seed and
  /// epoch, so resume and any thread count give the same batches. Holds the
  /// encoded bytes of about shuffle_buffer + batch_size + 2·io_depth
  /// samples, and reads up to 4 windows ahead, several at once (object
  /// storage's latency), within memory_budget / 8 of window buffers. Not yet
  /// with world_size > 1.
  bool stream_shards = false;
  std::size_t shuffle_buffer = 1000;
  std::size_t stream_read_size = std::size_t{4} << 20;

  /// A read-through cache of remote samples on local disk (io/cache.hpp):
  /// used when the source is nfs:// or on a network file system (a kernel
  /// NFS mount); ignored, with one log line, for local storage. The first
  /// epoch fills it, later epochs (and later runs) read locally; an entry
  /// is checked against the size the listing gave. Entries are written by
  /// a thread of their own, off the decode threads. Empty: no cache.
  std::string cache_dir;
  /// What cache_dir keeps: cache_kind::bytes (above) or cache_kind::pixels,
  /// decoded pixels under cache_dir/pixels for any source, filled as epoch 0
  /// runs and shared by every process on the machine (loader/pixel_cache.hpp).
  cache_kind cache = cache_kind::bytes;
  /// s3:// only: endpoint, region, profile, explicit credentials, anonymous,
  /// addressing and CA file (io/aws_config.hpp). Unset fields come from the
  /// environment and the AWS files, as the AWS tools take them.
  io::s3_options s3;
  /// Bytes the cache may hold on disk. bytes: least recently used samples
  /// go first. pixels: filling stops at the budget, nothing is evicted; left
  /// at this default, the pixel cache takes the disk's free space less 5%.
  std::uint64_t cache_bytes = std::uint64_t{10} << 30;
  /// Bytes of batch slabs the loader may hold (prefetch + those lent to the
  /// consumer). Must fit at least 2 batches.
  std::size_t memory_budget = std::size_t{1} << 30;
  /// Batches prepared ahead at most (the adaptive depth's cap; it starts
  /// at 2); 0: as many as memory_budget allows, up to 7.
  std::size_t prefetch_batches = 0;

  /// Where batch slabs and decode threads go on a machine of several NUMA
  /// nodes (loader/numa.hpp): resolve() places them near the GPU it feeds;
  /// default: wherever the OS puts them.
  numa_placement numa;
  /// CUDA device for the upload stage; -1: host batches even with a device.
  /// Without a usable device the loader falls back to host batches and logs
  /// one line with the CUDA error.
  int device = 0;
  /// Device output buffers in rotation (batches the consumer may hold on the
  /// device at once, plus one being written).
  std::size_t device_buffers = 3;
  /// Where JPEGs are decoded (decode_where); resolve() checks it against
  /// the device, the mode and the transforms.
  decode_where decode = decode_where::automatic;

  error_policy on_error = error_policy::fail;

  /// true: the constructor starts the threads, the reads and prefetching.
  /// false: no thread exists and nothing is read or allocated until the
  /// first next(), start_next() or set_epoch(), so a process may fork before
  /// then (the Python binding's choice). The constructor indexes the source
  /// and checks the options either way; an nfs:// source lists through its
  /// client, whose threads start in the constructor.
  bool start_eagerly = true;

  /// Ends the constructor early: a stop requested while it opens an s3://
  /// or http(s):// source (listing, indexing shards) cancels the reads in
  /// flight and refuses later ones, and the constructor throws
  /// std::system_error(ECANCELED) naming the source, instead of waiting for
  /// a stalled server's deadline (an nfs:// open still ends by the NFS
  /// deadline). For an interruptible open (Ctrl-C in Python). No effect
  /// once the loader is made.
  std::stop_token stop;

    /// Where to continue from (from state()); unset: epoch 0, batch 0.
  std::optional<loader_state> resume;
  /// Where the caller's work ends, when it knows (an export of one epoch or
  /// of `--count N` samples, `bench --epochs N`, Python's Loader(epochs=N)):
  /// no sample past it is read, so object storage is sent no request the
  /// caller will not use (every GET is billed). next() returns the end of
  /// the epoch after the last batch, and throws std::logic_error when
  /// called again (set_epoch() to an epoch before the end starts anew).
  /// Unset: epochs follow one another for as long as next() is called, the
  /// next one prefetched while the current one ends.
  std::optional<loader_end> end;

  /// Why the options a front end left unset have their values (set by
  /// ringfeed::resolve, loader/resolve.hpp); reported by stats().
  std::vector<option_reason> reasons;

  /// Log lines (no newline). Default: "ringfeed: <line>" on stderr.
  std::function<void(std::string_view)> log;
};

/// The named presets of the CLI, the C API and the Python binding, on `o`:
/// "train" is RandomResizedCrop(size) + flip + Normalize, shuffled; "val" is
/// torchvision's recipe, Resize(size*256/224) + CenterCrop(size) +
/// Normalize, in dataset order. `exact`: torchvision-identical pixels (else
/// fast mode). `max_pixels`: images whose header declares more pixels are
/// refused before any memory is allocated (decode_options::max_pixels).
/// Throws std::invalid_argument for another name, size < 1 or max_pixels 0.
void apply_preset(loader_options& o, std::string_view name, int size, bool exact,
                  std::uint64_t max_pixels = image::default_max_pixels);

/// Sets o.pipeline to the transform list `spec` describes
/// (image/transform_spec.hpp), compiled in exact or fast mode, and o.output
/// to what the list ends with (uint8 NHWC for an image, uint8 NCHW after
/// PILToTensor, float32 NCHW after ToTensor or ConvertImageDtype), and
/// shuffles when an op of the list is random (as the train preset). Throws
/// std::invalid_argument (image::transform_spec_error) naming the op and
/// the reason.
void apply_transform(loader_options& o, std::string_view spec, bool exact,
                     std::uint64_t max_pixels = image::default_max_pixels);

namespace detail {
class loader_core;
}  // namespace detail

/// Receives the outcome of one loader::start_next() (a type-erased,
/// move-only callback: Asio handlers, for one, cannot be copied).
struct next_completion {
  virtual ~next_completion() = default;
  /// Called exactly once: `error` when next() threw, else `result` (a batch,
  /// or std::nullopt at the end of the epoch).
  virtual void complete(std::exception_ptr error, std::optional<batch> result) = 0;
};

class loader {
 public:
  /// Indexes the source, sets up reads, threads, memory and the upload
  /// stage, and starts producing the first epoch (or options.resume).
  /// Throws std::invalid_argument for bad options, data::dataset_error /
  /// std::system_error when the source cannot be indexed,
  /// io::ring_unavailable for io_backend::uring without io_uring.
  explicit loader(loader_options options);
  ~loader();
  loader(const loader&) = delete;
  loader& operator=(const loader&) = delete;

  /// `co_await loader.next()`: the next batch of the current epoch, or
  /// std::nullopt at its end, after which the following call starts the
  /// next epoch. Throws (from the co_await) the first error when on_error is
  /// fail: a std::system_error or image error naming the file.
  [[nodiscard]] task<std::optional<batch>> next();

  /// next() for callback code and adapters (ringfeed/asio.hpp's
  /// async_next): starts it and returns; `completion->complete()` gets its
  /// outcome, inline when a batch is ready, else later on a loader thread
  /// (keep it short: hand the batch to your own thread). The destructor
  /// completes calls still pending (with std::nullopt) before it returns.
  void start_next(std::unique_ptr<next_completion> completion);

  /// Blocking iteration over one epoch for plain code:
  ///   for (ringfeed::batch& b : loader.epoch(3)) { … }
  /// Moves the loader to the start of epoch `e` first unless it is already
  /// inside it (a resumed loader continues where it was).
  class epoch_range;
  [[nodiscard]] epoch_range epoch(std::uint64_t e);

  /// Drops what was prefetched and continues at batch 0 of epoch `e`, in
  /// the sampler's order (ending a set_order()).
  void set_epoch(std::uint64_t e);

  /// Drops what was prefetched and delivers epoch `e` in the caller's order
  /// (a torch sampler's indices): dataset indices, repeats allowed, batched
  /// by batch_size from batch `first_batch` (drop_last drops a short last
  /// batch), then the end of the epoch. The order is this rank's own: the
  /// sampler's rank and shuffle do not apply. Random transforms are keyed
  /// by (seed, e, position in the order), so a repeated index is augmented
  /// anew each time. Nothing is read ahead past
  /// the epoch; next() after its end throws std::logic_error until the next
  /// set_order() or set_epoch(). Throws std::out_of_range for an index not
  /// below dataset().size() or a first_batch past the end, and
  /// std::invalid_argument with stream_shards (whose order is the stream's).
  void set_order(std::uint64_t e, std::vector<std::size_t> indices, std::size_t first_batch = 0);

  /// Position of the next batch next() delivers.
  [[nodiscard]] loader_state state() const;
  /// Counters so far (a consistent snapshot when the consumer is idle).
  [[nodiscard]] loader_stats stats() const;
  [[nodiscard]] const data::dataset& dataset() const noexcept;
  /// Batches per epoch for this rank.
  [[nodiscard]] std::size_t batches_per_epoch() const noexcept;
  /// Shape, type and placement of full batches.
  [[nodiscard]] tensor_view batch_layout() const noexcept;
  /// Whether batches are on a CUDA device, and if not, why.
  [[nodiscard]] bool uses_device() const noexcept;
  [[nodiscard]] const std::string& host_reason() const noexcept;
  /// True when batches reach the device as uint8 and the device makes the
  /// float output (ToTensor, Normalize); false when the host makes it and
  /// the upload copies it as it is (uint8 output; a recipe that ends in one
  /// channel, a tensor op or RandomErasing), or on host batches.
  [[nodiscard]] bool converts_on_device() const noexcept;

 private:
  std::shared_ptr<detail::loader_core> m_core;
};

class loader::epoch_range {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = batch;
    using difference_type = std::ptrdiff_t;
    using pointer = batch*;
    using reference = batch&;

    iterator() = default;
    reference operator*() const noexcept { return *m_range->m_current; }
    pointer operator->() const noexcept { return &*m_range->m_current; }
    iterator& operator++() {
      m_range->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.at_end(); }

   private:
    friend class epoch_range;
    explicit iterator(epoch_range* r) noexcept : m_range(r) {}
    [[nodiscard]] bool at_end() const noexcept { return !m_range->m_current.has_value(); }
    epoch_range* m_range = nullptr;
  };

  /// Fetches the first batch (blocking).
  iterator begin() {
    if (!m_started) {
      m_started = true;
      advance();
    }
    return iterator{this};
  }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  friend class loader;
  explicit epoch_range(loader& l) noexcept : m_loader(&l) {}
  void advance();  // blocking next(); releases the previous batch first
  loader* m_loader;
  std::optional<batch> m_current;
  bool m_started = false;
};

}  // namespace ringfeed
