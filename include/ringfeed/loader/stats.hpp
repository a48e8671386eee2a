// ringfeed::loader_stats — where a loader's time went.
//
// Each stage counts its busy time, items and bytes; the consumer's time
// waiting in next() is measured. bottleneck() names the stage that limits
// throughput from those numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ringfeed {

struct stage_stats {
  /// Seconds of work summed over the stage's workers (for reads: seconds
  /// that each read was outstanding, summed over reads in flight).
  double busy_s = 0.0;
  std::uint64_t items = 0;
  std::uint64_t bytes = 0;
};

/// A sample that on_error = skip left out, and why.
struct skipped_sample {
  std::string path;    ///< the file's name as bytes (not necessarily UTF-8)
  std::string reason;  ///< the error message: outside bytes quoted by escape_bytes()
};

/// An option a front end left unset, and why it has the value it has
/// (ringfeed::resolve); in the JSON as "<option>_reason".
struct option_reason {
  std::string option;  ///< its name in every front end ("memory_budget")
  std::string reason;  ///< e.g. "1 GiB: room for 4 batch slabs of 38535168 bytes"
};

/// The prefetch depth took value `depth` after `batch` batches had been
/// delivered (the loader's count, as loader_stats::batches).
struct prefetch_change {
  std::uint64_t batch = 0;
  std::size_t depth = 0;
};

/// Adaptive prefetch (issue 39): batches prepared ahead grow while the
/// consumer waits in next() and shrink, handing their batch memory back,
/// while finished batches wait for the consumer; always within [floor, cap].
struct prefetch_stats {
  std::size_t depth = 0;  ///< batches prepared ahead now
  std::size_t low = 0;    ///< lowest depth so far
  std::size_t high = 0;   ///< highest depth so far
  std::size_t floor = 0;  ///< the least it goes to (1)
  std::size_t cap = 0;    ///< the most: prefetch_batches, or what memory_budget holds
  std::size_t ready = 0;  ///< batches finished and waiting for the consumer now
  /// Batch slabs holding memory now: depth + those the consumer holds (at
  /// least one), and more for a moment after a shrink, until the loader
  /// takes the extra back.
  std::size_t slabs = 0;
  std::uint64_t consumer_waits = 0;    ///< next() calls that found no batch ready
  std::uint64_t spare_deliveries = 0;  ///< batches delivered with another ready behind them
  std::uint64_t changes = 0;           ///< times the depth moved
  /// The latest changes (at most 64), oldest first; the first entry is the
  /// starting depth at batch 0 until 64 changes push it out.
  std::vector<prefetch_change> history;
};

/// The local cache of decoded pixels (cache=pixels, issue 40;
/// loader/pixel_cache.hpp).
struct pixel_cache_stats {
  std::uint64_t hits = 0;        ///< samples read from the cache instead of decoded
  std::uint64_t misses = 0;      ///< samples decoded (and offered to the cache)
  std::uint64_t stores = 0;      ///< entries this loader added
  std::uint64_t not_stored = 0;  ///< stores refused: full, filling stopped, read-only
  std::uint64_t corrupt = 0;     ///< entries dropped at read (checksum), decoded again
  std::uint64_t torn = 0;        ///< index records dropped at open (torn, past the pack's end)
  std::uint64_t bytes_read = 0;  ///< pixel bytes the hits read
  std::int64_t read_ns = 0;      ///< the hits' reads, summed over reads in flight (latency)
  std::int64_t read_busy_ns = 0;  ///< wall time with at least one hit's read in flight (bandwidth)
  std::uint64_t resident_reads = 0;  ///< hits the page cache held, read on the decode thread (no ring)
  std::uint64_t entries = 0;     ///< entries in the cache now
  std::uint64_t bytes = 0;       ///< their bytes on disk (4 KiB aligned)
  std::uint64_t max_bytes = 0;   ///< the budget
  bool filling = true;           ///< false once full, after a write error, or read-only
  bool direct = false;           ///< reads bypass the page cache (O_DIRECT)
  std::string reason;            ///< why filling stopped, or where the budget came from
  /// hits / (hits + misses); 0 before any lookup.
  [[nodiscard]] double hit_rate() const noexcept {
    return hits + misses == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(hits + misses);
  }
  /// The cache's read bandwidth: bytes_read over read_busy_ns, in MB/s; 0 before a read.
  [[nodiscard]] double read_mb_per_s() const noexcept {
    return read_busy_ns > 0 ? static_cast<double>(bytes_read) / 1e6 / (static_cast<double>(read_busy_ns) / 1e9) : 0.0;
  }
  /// One hit's read, mean, in ms; 0 before a hit.
  [[nodiscard]] double read_ms() const noexcept {
    return hits > 0 ? static_cast<double>(read_ns) / 1e6 / static_cast<double>(hits) : 0.0;
  }
};

/// Where images were decoded (loader_options::decode) and, with the GPU,
/// by which backend.
struct gpu_decode_stats {
  std::string where = "cpu";  ///< "cpu" or "gpu": where this loader decodes
  /// Why: decode="auto"'s choice, or why a GPU decode was not possible
  /// (exact mode, an op without a device kernel, no device, nvJPEG not
  /// found, the device lacks what it needs).
  std::string reason;
  std::string decoder;       ///< the GPU decoder in use ("nvJPEG 13.0 (path)"), "" for none
  int hardware_engines = 0;  ///< hardware JPEG engines the device reports (0: none or unknown)
  std::uint64_t hardware = 0;  ///< images the hardware engines decoded
  std::uint64_t hybrid = 0;    ///< images nvJPEG's hybrid backends decoded
  std::uint64_t cpu = 0;       ///< images of a GPU-decoding loader decoded on the CPU
  std::int64_t gpu_ns = 0;     ///< host time spent queueing GPU decodes and resizes
  std::int64_t cpu_ns = 0;     ///< decode-thread time of the CPU-routed images
  /// Images the GPU decoder refused mid-batch and the CPU decoded instead.
  std::uint64_t fallbacks = 0;
  /// Why images went to the CPU ("progressive", "not a JPEG", ...), with counts.
  std::vector<std::pair<std::string, std::uint64_t>> cpu_reasons;
  /// Batches the GPU decoder refused whole (then retried image by image:
  /// slow), by the decoder's reason ("nvjpegDecodeBatchedEx:
  /// NVJPEG_STATUS_ALLOCATOR_FAILURE ..."), with counts.
  std::vector<std::pair<std::string, std::uint64_t>> split_batches;
  /// Host memory the batch slots hold for the GPU route, within
  /// memory_budget: the files kept for the decoder and the resize plans.
  std::uint64_t slot_bytes = 0;
};

struct loader_stats {
  double elapsed_s = 0.0;      ///< since the loader started producing
  stage_stats read;            ///< storage: bytes read from files
  stage_stats decode;          ///< decode + transform into batch slots
  stage_stats upload;          ///< host → device copy + conversion (host: none)
  double consumer_wait_s = 0.0;  ///< time next() waited for a batch
  std::uint64_t batches = 0;   ///< batches delivered
  std::uint64_t images = 0;    ///< images delivered
  std::vector<skipped_sample> skipped;

  std::string backend;       ///< "io_uring" or "pread"
  bool direct = false;       ///< reads bypass the page cache (O_DIRECT in use)
  std::uint64_t read_retries = 0;   ///< reads retried after a transient error (network)
  std::uint64_t read_timeouts = 0;  ///< reads past their deadline
  /// The local cache of remote samples (loader_options::cache_dir): whether
  /// one is in use, and its counters (hits are samples read from local disk).
  bool cache = false;
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;
  std::uint64_t cache_stores = 0;
  std::uint64_t cache_evictions = 0;
  std::uint64_t cache_bytes = 0;  ///< bytes the cache holds on disk now
  /// Stores dropped because the cache's writer thread fell 64 MiB behind.
  std::uint64_t cache_dropped = 0;
  /// cache_hits / (cache_hits + cache_misses); 0 before any lookup.
  [[nodiscard]] double cache_hit_rate() const noexcept;
  /// cache=pixels: whether the pixel cache is in use, and its counters.
  bool pixel_cache = false;
  pixel_cache_stats pixels;
  std::size_t decode_threads = 0;
  std::size_t io_depth = 0;
  std::size_t prefetch_batches = 0;  ///< the most batches prepared ahead (prefetch.cap)
  prefetch_stats prefetch;
  std::size_t memory_budget = 0;  ///< bytes
  std::size_t slab_bytes = 0;     ///< bytes of one batch slab
  /// Why each option left unset has its value (loader_options::reasons).
  std::vector<option_reason> reasons;
  /// decode="auto"|"cpu"|"gpu": where images were decoded, and the GPU's backends.
  gpu_decode_stats gpu_decode;

  /// Share of its capacity each stage used over elapsed_s (0..1).
  [[nodiscard]] double read_utilization() const noexcept;
  [[nodiscard]] double decode_utilization() const noexcept;
  [[nodiscard]] double upload_utilization() const noexcept;

  /// The stage limiting throughput: "consumer" when next() waited under 5%
  /// of the time (the pipeline is ahead); else "decode" or "upload" when
  /// that stage used at least 75% of its capacity; else "storage" (data
  /// did not arrive fast enough for stages that had room).
  [[nodiscard]] std::string bottleneck() const;

  /// One JSON object with every field above under the names `ringfeed bench
  /// --json` prints (seconds, images, batches, bytes, images_per_s,
  /// mb_per_s, backend, direct, threads, io_depth, prefetch_batches,
  /// prefetch{depth, low, high, floor, cap, ready, slabs, consumer_waits,
  /// spare_deliveries, changes, history[[batch, depth]…]},
  /// memory_budget, slab_bytes, stages{read_s, decode_s, upload_s,
  /// consumer_wait_s, *_utilization}, bottleneck, reads{retries, timeouts},
  /// skipped[{path, reason}], cache{hits, …} when a cache is in use,
  /// pixel_cache{hits, misses, hit_rate, …, read_mb_per_s, read_ms} with cache=pixels). What
  /// the CLI, the C API and the Python binding report. Valid UTF-8 whatever
  /// bytes a path holds: strings go through json_string() (ringfeed/text.hpp),
  /// so a path that is not UTF-8 is written as Python's surrogateescape
  /// (`\udcNN` per stray byte) and json.loads gives the str os.fsdecode gives.
  [[nodiscard]] std::string json() const;
};

}  // namespace ringfeed
