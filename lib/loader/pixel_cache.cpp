// ringfeed::pixel_cache: see loader/pixel_cache.hpp.
#include <ringfeed/loader/pixel_cache.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <system_error>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
// libxxhash's entry points that pick SSE2, AVX2 or AVX-512 at run time: a
// hit checks 0.5 MB of pixels, and the SSE2 build's hash cost 16% of it.
#include <xxh_x86dispatch.h>
#define RF_XXH3_64 XXH3_64bits_dispatch
#else
#define RF_XXH3_64 XXH3_64bits
#endif

#include <ringfeed/io/reader.hpp>
#include <ringfeed/text.hpp>

#include "proc_text.hpp"

namespace ringfeed {

namespace {

constexpr std::uint64_t align = 4096;
constexpr std::uint64_t round_up(std::uint64_t n) { return (n + align - 1) / align * align; }

// One index record: 64 bytes, little-endian as the machine (the cache is
// local to one machine). An entry of more than one stripe (stripe_rows > 0)
// has its stripe sums after the record: ceil(height / stripe_rows) uint32
// (the low half of each stripe's XXH3-64), padded to 8 bytes, and
// `checksum` is the XXH3-64 of those sums. An entry of one stripe has no
// sums and stripe_rows 0, and `checksum` is the XXH3-64 of its pixels (the
// only kind the first version wrote: its caches still read).
struct record {
  std::uint64_t key_hi, key_lo;
  std::uint64_t offset, size;
  std::uint32_t width, height, channels, stripe_rows;
  std::uint64_t checksum;
  std::uint64_t self;  // XXH3-64 of the 56 bytes above
};
static_assert(sizeof(record) == 64);

std::uint64_t self_sum(const record& r) { return RF_XXH3_64(&r, offsetof(record, self)); }

// A hit reads the stripes that hold the rows its transforms read (a
// RandomResizedCrop reads about 3/4 of an image's rows), each checked on
// its own. 64 KiB stripes: 28 bytes of sums per ImageNet image in memory.
constexpr std::uint64_t stripe_target = 64 * 1024;

std::uint32_t stripe_rows_for(std::uint64_t row_bytes, std::uint32_t height) {
  const std::uint64_t rows = std::max<std::uint64_t>(1, stripe_target / std::max<std::uint64_t>(row_bytes, 1));
  return rows >= height ? 0 : static_cast<std::uint32_t>(rows);  // 0: one stripe
}
std::uint32_t stripe_count(std::uint32_t height, std::uint32_t stripe_rows) {
  return stripe_rows == 0 ? 1 : (height + stripe_rows - 1) / stripe_rows;
}
std::uint32_t stripe_sum(const void* p, std::size_t n) { return static_cast<std::uint32_t>(RF_XXH3_64(p, n)); }
// Bytes of sums after a record of `stripes` stripes (none for one).
std::size_t tail_bytes(std::uint32_t stripe_rows, std::uint32_t stripes) {
  return stripe_rows == 0 ? 0 : (static_cast<std::size_t>(stripes) * 4 + 7) / 8 * 8;
}

std::string errno_text(int err) { return std::system_category().message(err); }

// Every pack's index file under `dir`, sorted (a stable first-wins order).
std::vector<std::filesystem::path> index_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw std::system_error(ec, "pixel cache: cannot list '" + escape_bytes(dir.string()) + "'");
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("pack-") && name.ends_with(".index")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct loaded_record {
  record r;
  std::uint64_t sums;  // where its stripe sums start in the caller's `sums`
};

// The records of one index whose checksums hold and whose pixels lie
// within the pack's data file, their stripe sums appended to `sums` (when
// given); `torn` counts the others. A record whose own checksum fails ends
// the index (where its sums end is not known).
std::vector<loaded_record> read_index(const std::filesystem::path& index, std::uint64_t& torn,
                                      std::vector<std::uint32_t>* sums) {
  std::vector<loaded_record> out;
  std::ifstream in(index, std::ios::binary);
  if (!in) return out;
  std::filesystem::path data = index;
  data.replace_extension(".data");
  std::error_code ec;
  const std::uint64_t data_size = std::filesystem::file_size(data, ec);
  record r{};
  std::vector<std::uint32_t> tail;
  while (in.read(reinterpret_cast<char*>(&r), sizeof r)) {
    if (r.self != self_sum(r)) {
      ++torn;
      return out;
    }
    const std::uint32_t stripes = stripe_count(r.height, r.stripe_rows);
    tail.resize(tail_bytes(r.stripe_rows, stripes) / 4);
    if (!tail.empty() && !in.read(reinterpret_cast<char*>(tail.data()), static_cast<std::streamsize>(tail.size() * 4))) {
      ++torn;  // its sums cut short: the writer died while appending them
      return out;
    }
    const std::uint64_t pixels = static_cast<std::uint64_t>(r.width) * r.height * r.channels;
    const bool sums_hold = r.stripe_rows == 0 || RF_XXH3_64(tail.data(), std::size_t{stripes} * 4) == r.checksum;
    if (!sums_hold || ec || r.offset % align != 0 || r.size != pixels || r.offset + r.size > data_size) {
      ++torn;
      continue;
    }
    out.push_back({r, sums ? sums->size() : 0});
    if (sums && r.stripe_rows != 0) sums->insert(sums->end(), tail.begin(), tail.begin() + stripes);
  }
  if (in.gcount() != 0) ++torn;  // a record cut short: the writer died while appending it
  return out;
}

}  // namespace

struct pixel_cache::pack {
  std::filesystem::path data;
  int data_fd = -1;   // this object's writer pack only
  int index_fd = -1;  // this object's writer pack only
  std::optional<std::size_t> handle;  // the reader's, opened on first read
  int resident_fd = -1;  // read_resident's: -1 not opened yet, -2 could not be
  ~pack() {
    if (resident_fd >= 0) ::close(resident_fd);
    if (data_fd >= 0) ::close(data_fd);
    if (index_fd >= 0) ::close(index_fd);
  }
};

pixel_cache::pixel_cache(pixel_cache_options options) : m_opt(std::move(options)) {
  const std::string dir = escape_bytes(m_opt.dir.string());
  std::error_code ec;
  std::filesystem::create_directories(m_opt.dir, ec);
  if (ec) throw std::system_error(ec, "pixel cache: cannot create '" + dir + "'");
  load_indexes();
  if (::access(m_opt.dir.c_str(), W_OK) != 0) {
    const int err = errno;
    stop_filling("'" + dir + "' is not writable (" + errno_text(err) + "): reading its entries, adding none");
  }
  struct statvfs fs {};
  if (m_opt.max_bytes == 0) {
    if (::statvfs(m_opt.dir.c_str(), &fs) == 0) {
      const std::uint64_t total = static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize;
      const std::uint64_t free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
      const std::uint64_t margin = std::max<std::uint64_t>(total / 20, std::uint64_t{1} << 30);
      m_opt.max_bytes = m_bytes + (free > margin ? free - margin : 0);
      if (m_filling)
        m_reason = "budget " + byte_size_text(m_opt.max_bytes, byte_unit::gib) +
                   ": the entries held and the disk's free space (" + byte_size_text(free, byte_unit::gib) +
                   "), less max(5% of the disk, 1 GiB)";
      if (m_filling && free <= margin)
        stop_filling("full: the disk has " + byte_size_text(free, byte_unit::gib) +
                     " free, within the margin of max(5% of the disk, 1 GiB) kept free; give cache_bytes "
                     "(--cache-gb) to use it anyway");
    } else {
      m_opt.max_bytes = m_bytes;
      stop_filling("cannot read the free space of '" + dir + "': adding no entries");
    }
  } else if (m_filling) {
    m_reason = "budget " + byte_size_text(m_opt.max_bytes, byte_unit::gib) + " (cache_bytes)";
  }
  if (m_filling && m_bytes >= m_opt.max_bytes) stop_filling("full: the entries held fill the budget");
}

pixel_cache::~pixel_cache() {
  const std::uint64_t hits = m_hits.load(std::memory_order_relaxed);
  const std::uint64_t misses = m_misses.load(std::memory_order_relaxed);
  if (hits + misses == 0) return;
  // One short write with O_APPEND: lines of runs closing at once never mix.
  char line[128];
  const int n = std::snprintf(line, sizeof line, "run %lld hits %llu misses %llu\n",
                              static_cast<long long>(std::time(nullptr)), static_cast<unsigned long long>(hits),
                              static_cast<unsigned long long>(misses));
  const int fd = ::open((m_opt.dir / "runs.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // a read-only cache: its runs are not recorded
  (void)!::write(fd, line, static_cast<std::size_t>(n));
  ::close(fd);
}

void pixel_cache::load_indexes() {
  std::uint64_t torn = 0;
  for (const auto& index : index_files(m_opt.dir)) {
    const auto records = read_index(index, torn, &m_sums);
    auto p = std::make_unique<pack>();
    p->data = index;
    p->data.replace_extension(".data");
    const auto pack_no = static_cast<std::uint32_t>(m_packs.size());
    m_packs.push_back(std::move(p));
    for (const auto& [r, sums] : records) {
      const entry e{pack_no, r.offset, r.size, r.width, r.height, r.channels, r.stripe_rows, r.checksum, sums};
      if (m_entries.emplace(key{r.key_hi, r.key_lo}, e).second) m_bytes += round_up(r.size);
    }
  }
  m_torn.store(torn, std::memory_order_relaxed);
}

pixel_cache::key pixel_cache::key_of(std::string_view decode, std::string_view identity) {
  // Called for every sample, every epoch: the state on the stack, no allocation.
  XXH3_state_t s;
  XXH3_INITSTATE(&s);
  XXH3_128bits_reset(&s);
  const std::uint64_t sizes[2] = {decode.size(), identity.size()};
  XXH3_128bits_update(&s, sizes, sizeof sizes);
  XXH3_128bits_update(&s, decode.data(), decode.size());
  XXH3_128bits_update(&s, identity.data(), identity.size());
  const XXH128_hash_t h = XXH3_128bits_digest(&s);
  return {h.high64, h.low64};
}

void pixel_cache::start_reads(thread_pool& pool) {
  // O_DIRECT when the entries do not fit in the memory there is: buffered
  // reads would only churn the page cache; buffered when they fit.
  std::uint64_t available = 0;
  if (const auto meminfo = detail::read_text("/proc/meminfo"))
    if (const auto kb = detail::field(*meminfo, "MemAvailable")) available = std::strtoull(kb->c_str(), nullptr, 10) * 1024;
  io::reader_options ro;
  ro.direct = m_opt.direct || (available != 0 && m_bytes > available);
  ro.log = m_opt.log;
  m_reader = io::reader::create(pool, ro);
  m_direct = m_reader->direct();
}

void pixel_cache::stop_reads() noexcept {
  std::lock_guard lock(m_mutex);
  for (auto& p : m_packs) p->handle.reset();
  m_reader.reset();
}

// The page cache holds every byte: read them here, on the thread that
// checks and resamples them next (preadv2 with RWF_NOWAIT fails instead of
// waiting for the disk). Through the ring, its thread would copy them and
// this one fetch them from that core's cache: two transfers of ~0.5 MB per
// hit, measured at 8% of a hit's CPU time and most of the checksum's.
// A file system that refuses RWF_NOWAIT, or that never answers from its
// cache, turns this off for the object: the ring alone, as before.
bool pixel_cache::read_resident(int fd, std::uint64_t offset, std::size_t size, io::read_buffer& buffer,
                                std::span<const std::byte>& got) {
  buffer.reserve(size);
  iovec iov{buffer.data(), size};
  const ssize_t n = ::preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
  if (n == static_cast<ssize_t>(size)) {
    buffer.set_size(size);
    got = buffer.bytes();
    m_resident_hits.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  const std::uint64_t refused = m_resident_refused.fetch_add(1, std::memory_order_relaxed) + 1;
  if ((n < 0 && errno != EAGAIN) || (refused >= 256 && m_resident_hits.load(std::memory_order_relaxed) == 0))
    m_resident_reads.store(false, std::memory_order_relaxed);
  return false;
}

task<std::optional<image::image_view>> pixel_cache::read(key k, io::read_buffer& buffer) {
  const std::optional<image::image_rows> got = co_await read(k, buffer, {});
  if (!got) co_return std::nullopt;
  co_return got->rows;
}

task<std::optional<image::image_rows>> pixel_cache::read(key k, io::read_buffer& buffer, const row_picker& rows) {
  entry e;
  std::uint32_t first = 0, last = 1;  // the stripes read: [first, last)
  std::vector<std::uint32_t> sums;    // theirs, copied under the lock
  std::span<const std::byte> got;
  std::string failure;  // a pack that cannot be opened or read: the sample is decoded instead
  const auto t0 = std::chrono::steady_clock::now();
  try {
    std::size_t handle = 0;
    int resident_fd = -1;
    {
      std::lock_guard lock(m_mutex);
      const auto it = m_entries.find(k);
      if (it == m_entries.end()) {
        m_misses.fetch_add(1, std::memory_order_relaxed);
        co_return std::nullopt;
      }
      e = it->second;
      if (e.stripe_rows != 0) {
        const int h = static_cast<int>(e.height);
        auto [top, bottom] = rows ? rows({static_cast<int>(e.width), h}) : std::pair<int, int>{0, h};
        top = std::clamp(top, 0, h);
        bottom = std::clamp(bottom, top, h);
        if (top == bottom) bottom = std::min(top + 1, h);  // none needed: one row read all the same
        first = static_cast<std::uint32_t>(top) / e.stripe_rows;
        last = (static_cast<std::uint32_t>(bottom) + e.stripe_rows - 1) / e.stripe_rows;
        sums.assign(m_sums.begin() + static_cast<std::ptrdiff_t>(e.sums + first),
                    m_sums.begin() + static_cast<std::ptrdiff_t>(e.sums + last));
      }
      pack& p = *m_packs[e.pack];
      if (!p.handle) p.handle = m_reader->open(p.data.string());
      handle = *p.handle;
      if (!m_direct && m_resident_reads.load(std::memory_order_relaxed)) {
        if (p.resident_fd == -1) {
          p.resident_fd = ::open(p.data.c_str(), O_RDONLY | O_CLOEXEC);
          if (p.resident_fd < 0) p.resident_fd = -2;  // the ring's read says why
        }
        resident_fd = p.resident_fd;
      }
    }
    const std::uint64_t row = std::uint64_t{e.width} * e.channels;
    const std::uint64_t begin = std::uint64_t{first} * e.stripe_rows * row;
    const std::uint64_t end = e.stripe_rows == 0 ? e.size : std::min(e.size, std::uint64_t{last} * e.stripe_rows * row);
    const detail::busy_clock::scope reading(m_read_busy);
    if (resident_fd < 0 || !read_resident(resident_fd, e.offset + begin, end - begin, buffer, got))
      got = co_await m_reader->read_range(handle, e.offset + begin, end - begin, buffer);
    if (got.size() != end - begin) failure = "cut short";
  } catch (const std::system_error& err) {
    failure = err.what();
  }
  m_read_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count(),
                      std::memory_order_relaxed);
  bool holds = failure.empty();
  if (holds && e.stripe_rows == 0) {
    holds = RF_XXH3_64(got.data(), got.size()) == e.checksum;
  } else if (holds) {
    const std::size_t stripe = std::size_t{e.stripe_rows} * e.width * e.channels;
    for (std::size_t i = 0; holds && i < sums.size(); ++i)
      holds = stripe_sum(got.data() + i * stripe, std::min(stripe, got.size() - i * stripe)) == sums[i];
  }
  if (holds) {
    m_hits.fetch_add(1, std::memory_order_relaxed);
    m_bytes_read.fetch_add(got.size(), std::memory_order_relaxed);
    const auto row = static_cast<std::ptrdiff_t>(e.width) * e.channels;
    const auto top = static_cast<int>(first * e.stripe_rows);
    co_return image::image_rows{{reinterpret_cast<const std::uint8_t*>(got.data()), static_cast<int>(e.width),
                                 static_cast<int>(got.size() / static_cast<std::size_t>(row)),
                                 static_cast<int>(e.channels), row},
                                top,
                                {static_cast<int>(e.width), static_cast<int>(e.height)}};
  }
  // Corrupt, cut short or unreadable: dropped (a store replaces it), never served.
  std::lock_guard lock(m_mutex);
  if (m_corrupt.fetch_add(1, std::memory_order_relaxed) == 0)
    log_line(m_opt.log, "pixel cache: an entry of '" + escape_bytes(m_packs[e.pack]->data.string()) + "' " +
                            (failure.empty() ? std::string("fails its checksum") : "cannot be read (" + failure + ")") +
                            ": dropped, the sample decoded from its source (reported once)");
  const auto it = m_entries.find(k);
  if (it != m_entries.end() && it->second.pack == e.pack && it->second.offset == e.offset) {
    m_bytes -= round_up(e.size);
    m_entries.erase(it);
  }
  m_misses.fetch_add(1, std::memory_order_relaxed);
  co_return std::nullopt;
}

bool pixel_cache::open_writer() {
  // pack-<pid>-<random>: O_EXCL makes it this object's alone.
  std::random_device rd;
  for (int attempt = 0; attempt < 8; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof name, "pack-%08x-%08x", static_cast<unsigned>(::getpid()), static_cast<unsigned>(rd()));
    auto p = std::make_unique<pack>();
    p->data = m_opt.dir / (std::string(name) + ".data");
    p->data_fd = ::open(p->data.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (p->data_fd < 0 && errno == EEXIST) continue;
    if (p->data_fd < 0) {
      const int err = errno;
      stop_filling("cannot create '" + escape_bytes(p->data.string()) + "' (" + errno_text(err) + ")");
      return false;
    }
    const std::filesystem::path index = m_opt.dir / (std::string(name) + ".index");
    p->index_fd = ::open(index.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (p->index_fd < 0) {
      const int err = errno;
      ::unlink(p->data.c_str());
      stop_filling("cannot create '" + escape_bytes(index.string()) + "' (" + errno_text(err) + ")");
      return false;
    }
    m_writer = static_cast<int>(m_packs.size());
    m_packs.push_back(std::move(p));
    m_write_end = 0;
    return true;
  }
  stop_filling("no unused pack name in '" + escape_bytes(m_opt.dir.string()) + "'");
  return false;
}

void pixel_cache::stop_filling(std::string reason) {
  if (!m_filling) return;
  m_filling = false;
  m_reason = std::move(reason);
  log_line(m_opt.log, "pixel cache: not adding entries from now on: " + m_reason);
}

bool pixel_cache::store(key k, image::image_view pixels) {
  const auto row = static_cast<std::size_t>(pixels.width) * static_cast<std::size_t>(pixels.channels);
  const std::uint64_t size = row * static_cast<std::size_t>(pixels.height);
  const auto height = static_cast<std::uint32_t>(pixels.height);
  const std::uint32_t stripe_rows = stripe_rows_for(row, height);
  record r{k.hi, k.lo, 0, size, static_cast<std::uint32_t>(pixels.width), height,
           static_cast<std::uint32_t>(pixels.channels), stripe_rows, 0, 0};
  // The record and its stripe sums, appended by one write().
  std::vector<std::uint64_t> out((sizeof r + tail_bytes(stripe_rows, stripe_count(height, stripe_rows))) / 8, 0);
  auto* sums = reinterpret_cast<std::uint32_t*>(out.data() + sizeof r / 8);
  int data_fd = -1, index_fd = -1;
  std::uint32_t pack_no = 0;
  {
    std::lock_guard lock(m_mutex);
    if (!m_filling || m_entries.contains(k) || (m_writer < 0 && !open_writer())) {
      m_not_stored.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (m_bytes + round_up(size) > m_opt.max_bytes) {
      stop_filling("full: " + byte_size_text(m_bytes, byte_unit::gib) + " held, the budget is " +
                   byte_size_text(m_opt.max_bytes, byte_unit::gib));
      m_not_stored.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    r.offset = m_write_end;
    m_write_end += round_up(size);
    m_bytes += round_up(size);  // reserved now; given back if the write fails
    pack_no = static_cast<std::uint32_t>(m_writer);
    data_fd = m_packs[pack_no]->data_fd;
    index_fd = m_packs[pack_no]->index_fd;
  }
  // The pixels, rows packed, then the record: a reader finds the record
  // only once the pixels it names are written.
  std::uint64_t sum = 0;
  int err = 0;
  {
    std::vector<std::uint8_t> packed;
    const std::uint8_t* src = pixels.data;
    if (static_cast<std::size_t>(pixels.stride) != row) {
      packed.resize(size);
      for (int y = 0; y < pixels.height; ++y) std::memcpy(packed.data() + y * row, pixels.row(y), row);
      src = packed.data();
    }
    if (stripe_rows == 0) {
      sum = RF_XXH3_64(src, size);
    } else {
      const std::uint32_t stripes = stripe_count(height, stripe_rows);
      const std::size_t stripe = std::size_t{stripe_rows} * row;
      for (std::uint32_t i = 0; i < stripes; ++i)
        sums[i] = stripe_sum(src + i * stripe, std::min<std::size_t>(stripe, size - i * stripe));
      sum = RF_XXH3_64(sums, std::size_t{stripes} * 4);
    }
    for (std::uint64_t done = 0; done < size && err == 0;) {
      const ssize_t n = ::pwrite(data_fd, src + done, size - done, static_cast<off_t>(r.offset + done));
      if (n > 0)
        done += static_cast<std::uint64_t>(n);
      else if (n < 0 && errno != EINTR)
        err = errno;
      else if (n == 0)
        err = EIO;
    }
  }
  if (err == 0) {
    r.checksum = sum;
    r.self = self_sum(r);
    std::memcpy(out.data(), &r, sizeof r);
    const std::size_t bytes = out.size() * 8;
    const ssize_t n = ::write(index_fd, out.data(), bytes);
    if (n != static_cast<ssize_t>(bytes)) err = n < 0 ? errno : EIO;
  }
  std::lock_guard lock(m_mutex);
  if (err != 0) {
    m_bytes -= round_up(size);
    stop_filling("writing '" + escape_bytes(m_packs[pack_no]->data.string()) + "' failed (" + errno_text(err) + ")");
    m_not_stored.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const std::uint64_t sums_at = m_sums.size();
  if (!m_entries.emplace(k, entry{pack_no, r.offset, size, r.width, r.height, r.channels, stripe_rows, sum, sums_at})
           .second) {
    m_bytes -= round_up(size);  // another thread stored it meanwhile; ours is an unused duplicate
    return false;
  }
  if (stripe_rows != 0) m_sums.insert(m_sums.end(), sums, sums + stripe_count(height, stripe_rows));
  m_stores.fetch_add(1, std::memory_order_relaxed);
  return true;
}

pixel_cache_counters pixel_cache::counters() const {
  pixel_cache_counters c;
  c.hits = m_hits.load(std::memory_order_relaxed);
  c.misses = m_misses.load(std::memory_order_relaxed);
  c.stores = m_stores.load(std::memory_order_relaxed);
  c.not_stored = m_not_stored.load(std::memory_order_relaxed);
  c.corrupt = m_corrupt.load(std::memory_order_relaxed);
  c.torn = m_torn.load(std::memory_order_relaxed);
  c.bytes_read = m_bytes_read.load(std::memory_order_relaxed);
  c.read_ns = m_read_ns.load(std::memory_order_relaxed);
  c.read_busy_ns = m_read_busy.busy_ns();
  c.resident_reads = m_resident_hits.load(std::memory_order_relaxed);
  c.direct = m_direct;
  std::lock_guard lock(m_mutex);
  c.entries = m_entries.size();
  c.bytes = m_bytes;
  c.max_bytes = m_opt.max_bytes;
  c.filling = m_filling;
  c.reason = m_reason;
  return c;
}

pixel_cache_info pixel_cache::inspect(const std::filesystem::path& dir) {
  pixel_cache_info info;
  std::unordered_map<key, bool, key_hash> seen;
  for (const auto& index : index_files(dir)) {
    ++info.packs;
    for (const auto& loaded : read_index(index, info.torn, nullptr)) {
      const record& r = loaded.r;
      if (!seen.emplace(key{r.key_hi, r.key_lo}, true).second) {
        ++info.duplicates;
        continue;
      }
      ++info.entries;
      info.bytes += round_up(r.size);
      info.pixel_bytes += r.size;
    }
  }
  std::ifstream runs(dir / "runs.log");
  std::string line;
  while (std::getline(runs, line)) {
    long long when = 0;
    unsigned long long hits = 0, misses = 0;
    if (std::sscanf(line.c_str(), "run %lld hits %llu misses %llu", &when, &hits, &misses) != 3) continue;
    ++info.runs;
    info.last_hits = hits;
    info.last_misses = misses;
    info.hits += hits;
    info.misses += misses;
  }
  return info;
}

}  // namespace ringfeed
