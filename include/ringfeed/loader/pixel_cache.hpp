// ringfeed::pixel_cache — decoded pixels on a local disk, so that epochs
// after the first skip the decode (issue 40). The loader uses it with
// loader_options::cache = cache_kind::pixels; `ringfeed cache info` reads it.
//
// What is kept per sample: the image as the decoder gives it to the
// transforms (RGB, EXIF orientation applied when the pipeline asks), the
// input of every transform list. A hit feeds the transforms exactly the
// pixels a decode would have: batches are byte-identical to exact mode
// without the cache, any epoch, any thread count.
//
// On disk, under `dir` (the loader's cache_dir + "/pixels"):
//   pack-<writer>.data   pixels, each entry at a 4096-byte boundary (O_DIRECT)
//   pack-<writer>.index  a 64-byte record per entry: key (XXH3-128 of the
//                        sample's identity and the decode settings), offset,
//                        size, width, height, channels, stripe rows, a
//                        checksum and the record's own XXH3-64; then, for an
//                        entry of over 64 KiB, a 32-bit XXH3 of each stripe
//                        of rows (about 64 KiB each), which the checksum
//                        covers. A hit reads only the stripes holding the
//                        rows its transforms read (pipeline::rows_read) and
//                        checks each; a smaller entry is one stripe, checked
//                        whole.
// Each writer (a loader in one process) appends to a pack of its own,
// created with O_EXCL, so several ranks or processes share one directory
// with one writer per entry; the first entry of a key found wins. A record
// is appended only after its pixels are written, so a reader never sees a
// partial entry; kill -9 leaves at worst pixels no record names. At open,
// a record whose own checksum fails (torn) or that points past its pack's
// end is dropped; at read, pixels whose checksum fails are dropped (counted
// as corrupt) and the sample is decoded from its source again.
//
//   runs.log             a line per run that used the cache, appended when
//                        it closes: "run <unix time> hits <n> misses <n>"
//
// Budget: max_bytes of pack data in the directory; when the next entry
// would pass it, filling stops (one log line) and nothing is evicted. A
// write error (ENOSPC, EIO) also stops filling, never the loader.
//
// Thread safety: read(), store() and counters() from any number of threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ringfeed/detail/busy_clock.hpp>
#include <ringfeed/image/image.hpp>
#include <ringfeed/io/buffer.hpp>
#include <ringfeed/loader/stats.hpp>
#include <ringfeed/log.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>

namespace ringfeed {

namespace io {
class reader;
}

struct pixel_cache_options {
  /// The directory; created (with its parents) when missing.
  std::filesystem::path dir;
  /// Bytes of pack data the directory may hold; 0: the file system's free
  /// space at open plus what the cache holds, less a margin of 5% of the
  /// file system (at least 1 GiB).
  std::uint64_t max_bytes = 0;
  /// Reads with O_DIRECT always (loader_options::direct); false: only when
  /// the entries are more than the memory available.
  bool direct = false;
  /// Where the one-off notices go (full, write errors, corrupt entries).
  log_sink log;
};

/// The counters are loader_stats::pixels (loader/stats.hpp).
using pixel_cache_counters = pixel_cache_stats;


/// What a cache directory holds, for `ringfeed cache info` (no loader).
struct pixel_cache_info {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;        ///< pack bytes of the entries
  std::uint64_t pixel_bytes = 0;  ///< their pixels alone
  std::uint64_t packs = 0;
  std::uint64_t torn = 0;         ///< records that would be dropped at open
  std::uint64_t duplicates = 0;   ///< records of a key already seen (two writers filled one sample)
  /// The runs that used the directory (runs.log: a line per pixel_cache
  /// object that read from it, written when it closes): their count, the
  /// last one's hits and misses, and all runs' together.
  std::uint64_t runs = 0;
  std::uint64_t last_hits = 0, last_misses = 0;
  std::uint64_t hits = 0, misses = 0;
};

class pixel_cache {
 public:
  struct key {
    std::uint64_t hi = 0, lo = 0;
    friend bool operator==(const key&, const key&) = default;
  };

  /// Opens `options.dir` and reads every pack's index. A directory that
  /// cannot be created or listed throws std::system_error naming it; one
  /// that cannot be written is read only (filling is off, with the reason).
  explicit pixel_cache(pixel_cache_options options);
  /// Appends this object's hits and misses to the directory's runs.log
  /// (for `ringfeed cache info`), where it looked anything up and the
  /// directory is writable.
  ~pixel_cache();
  pixel_cache(const pixel_cache&) = delete;
  pixel_cache& operator=(const pixel_cache&) = delete;

  /// The key of a sample: `identity` names the bytes (path, size, mtime or
  /// ETag, range), `decode` the settings the pixels depend on.
  [[nodiscard]] static key key_of(std::string_view decode, std::string_view identity);

  /// Reads resume on `pool` (which must outlive this object), through
  /// io_uring where the kernel has it; O_DIRECT when the entries are more
  /// than the memory available. Buffered, a hit whose bytes the page cache
  /// holds is copied on read()'s own thread instead (no I/O to wait for;
  /// counted as resident_reads). Call once, before read().
  void start_reads(thread_pool& pool);
  /// Ends reading (before the pool the reads resume on goes); the counters stay.
  void stop_reads() noexcept;

  /// The entry's pixels (valid until `buffer` is reused), or nullopt: no
  /// entry, or a corrupt one (dropped, so the caller's store() replaces it).
  [[nodiscard]] task<std::optional<image::image_view>> read(key k, io::read_buffer& buffer);
  /// Given the image's size, the rows [first, second) that will be used.
  using row_picker = std::function<std::pair<int, int>(image::size2)>;
  /// read() of the stripes that hold the rows `rows` picks (all when it is
  /// empty): at least those rows, each stripe read checked on its own.
  /// `rows` is called under the cache's lock: keep it short and pure.
  [[nodiscard]] task<std::optional<image::image_rows>> read(key k, io::read_buffer& buffer, const row_picker& rows);
  /// Adds `pixels` under `k` unless it is there; false when not stored.
  bool store(key k, image::image_view pixels);

  [[nodiscard]] pixel_cache_counters counters() const;

  /// Reads a directory's indexes without opening it for use.
  [[nodiscard]] static pixel_cache_info inspect(const std::filesystem::path& dir);

 private:
  struct entry {
    std::uint32_t pack = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;  // pixel bytes
    std::uint32_t width = 0, height = 0, channels = 0;
    std::uint32_t stripe_rows = 0;  // 0: one stripe, `checksum` covers the pixels
    std::uint64_t checksum = 0;
    std::uint64_t sums = 0;  // else: its stripe sums start at m_sums[sums]
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept { return static_cast<std::size_t>(k.lo); }
  };
  struct pack;

  void load_indexes();
  bool open_writer();  // under m_mutex
  bool read_resident(int fd, std::uint64_t offset, std::size_t size, io::read_buffer& buffer,
                     std::span<const std::byte>& got);
  void stop_filling(std::string reason);  // under m_mutex

  pixel_cache_options m_opt;
  mutable std::mutex m_mutex;
  std::unordered_map<key, entry, key_hash> m_entries;  // guarded by m_mutex
  std::vector<std::uint32_t> m_sums;                   // guarded: the entries' stripe sums
  std::vector<std::unique_ptr<pack>> m_packs;          // guarded by m_mutex; only grows
  std::uint64_t m_bytes = 0;                           // guarded: pack bytes of m_entries
  int m_writer = -1;                                   // guarded: index into m_packs, -1 none yet
  std::uint64_t m_write_end = 0;                       // guarded: the writer pack's next offset
  bool m_filling = true;                               // guarded
  std::string m_reason;                                // guarded
  std::unique_ptr<io::reader> m_reader;
  std::atomic<std::uint64_t> m_hits{0}, m_misses{0}, m_stores{0}, m_not_stored{0}, m_corrupt{0}, m_torn{0},
      m_bytes_read{0};
  std::atomic<std::uint64_t> m_resident_hits{0}, m_resident_refused{0};  // read_resident's reads and refusals
  std::atomic<bool> m_resident_reads{true};                               // off once it proves useless
  std::atomic<std::int64_t> m_read_ns{0};
  detail::busy_clock m_read_busy;  // wall time with a hit's read in flight
  bool m_direct = false;
};

}  // namespace ringfeed
