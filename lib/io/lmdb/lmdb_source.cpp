// io::source over an LMDB database, read-only and memory-mapped (see
// lmdb_source.hpp for how that behaves on each kind of storage).
#include "io/lmdb/lmdb_source.hpp"

#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <system_error>

#include <ringfeed/io/location.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::io {
namespace {

constexpr std::string_view lmdb_scheme = "lmdb://";

}  // namespace

namespace detail {
namespace {

struct env_closer {
  void operator()(MDB_env* env) const noexcept { mdb_env_close(env); }
};
using unique_env = std::unique_ptr<MDB_env, env_closer>;

// A read-only transaction, aborted on every way out (a read-only
// transaction has nothing to commit).
class read_txn {
 public:
  read_txn(MDB_env* env, const std::string& location) {
    const int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &m_txn);
    if (rc != 0) throw lmdb_error(rc, location, "begin a read transaction");
  }
  ~read_txn() { mdb_txn_abort(m_txn); }
  read_txn(const read_txn&) = delete;
  read_txn& operator=(const read_txn&) = delete;
  [[nodiscard]] MDB_txn* get() const noexcept { return m_txn; }

  // LMDB returns errno values, or its own negative codes (MDB_CORRUPTED,
  // MDB_INVALID, …) that have no errno: those become EIO with its message.
  static std::system_error lmdb_error(int rc, const std::string& location, std::string_view what) {
    std::string message = "lmdb '" + escape_bytes(location) + "': ";
    message.append(what);
    if (rc > 0) return std::system_error(rc, std::system_category(), message);
    message += " (";
    message += mdb_strerror(rc);
    message += ')';
    return std::system_error(EIO, std::system_category(), message);
  }

 private:
  MDB_txn* m_txn = nullptr;
};

struct cursor_closer {
  void operator()(MDB_cursor* c) const noexcept { mdb_cursor_close(c); }
};

// The database's path and whether it is a directory holding data.mdb
// (false: the data file itself, MDB_NOSUBDIR).
struct database_path {
  std::string path;
  bool subdir = true;
  [[nodiscard]] std::string data_file() const { return subdir ? path + "/data.mdb" : path; }
};

database_path resolve(const std::string& location) {
  database_path db;
  if (classify_location(location) == location_kind::lmdb) {  // lmdb://…, the scheme in any case
    db.path = location.substr(lmdb_scheme.size());
    if (db.path.empty()) throw std::invalid_argument("lmdb: no path in '" + location + "'");
  } else {
    if (!is_lmdb_location(location)) {
      throw std::invalid_argument("lmdb: '" + location + "' is neither lmdb://… nor a directory holding data.mdb");
    }
    db.path = location;
  }
  struct stat st {};
  if (::stat(db.path.c_str(), &st) != 0) {
    throw std::system_error(errno, std::system_category(),
                            "lmdb '" + escape_bytes(location) + "': stat '" + escape_bytes(db.path) + "'");
  }
  db.subdir = S_ISDIR(st.st_mode);
  return db;
}

class lmdb_source final : public source {
 public:
  lmdb_source(const std::string& location, storage_info storage, std::size_t depth, unique_env env, MDB_dbi dbi,
              thread_pool& resume_on, std::size_t io_threads, std::string version)
      : source(location, std::move(storage), depth),
        m_version(std::move(version)),
        m_env(std::move(env)),
        m_dbi(dbi),
        m_resume_on(resume_on),
        m_io(io_threads) {}

  std::string_view scheme() const noexcept override { return "lmdb"; }
  std::string_view backend_name() const noexcept override { return "lmdb"; }
  /// The database file's size and mtime when opened: a record has no
  /// version of its own, so a write anywhere is a new version of every key.
  std::string version(const std::string&) const override { return m_version; }

  std::vector<source_entry> list(const std::string& dir) override {
    if (!dir.empty()) {
      throw std::system_error(ENOTDIR, std::system_category(),
                              "lmdb '" + escape_bytes(location()) + "': list '" + escape_bytes(dir) +
                                  "' (a database has keys, not directories)");
    }
    const read_txn txn(m_env.get(), location());
    MDB_cursor* raw = nullptr;
    int rc = mdb_cursor_open(txn.get(), m_dbi, &raw);
    if (rc != 0) throw read_txn::lmdb_error(rc, location(), "open a cursor");
    const std::unique_ptr<MDB_cursor, cursor_closer> cursor(raw);
    std::vector<source_entry> entries;
    MDB_val key{}, value{};
    // The value's size comes from its node: an overflow page (a large
    // record) is located, never touched, so listing reads B-tree pages only.
    for (rc = mdb_cursor_get(raw, &key, &value, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(raw, &key, &value, MDB_NEXT)) {
      entries.push_back({std::string(static_cast<const char*>(key.mv_data), key.mv_size), false, value.mv_size});
    }
    if (rc != MDB_NOTFOUND) throw read_txn::lmdb_error(rc, location(), "list the keys");
    return entries;
  }

  task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) override {
    const std::string key(sample.file);
    co_await m_io.schedule();  // the copy below takes the page faults: an I/O thread's job
    std::exception_ptr error;
    std::span<const std::byte> out;
    try {
      out = read_blocking(key, sample, buffer);
    } catch (...) {
      error = std::current_exception();
    }
    co_await m_resume_on.schedule();
    if (error) std::rethrow_exception(error);
    co_return out;
  }

  source_stats stats() const override {
    source_stats s;
    s.files = m_files.load(std::memory_order_relaxed);
    s.ranges = m_ranges.load(std::memory_order_relaxed);
    s.bytes = m_bytes.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::system_error key_error(int err, const std::string& key, const std::string& what) const {
    return std::system_error(err, std::system_category(),
                             "lmdb '" + escape_bytes(location()) + "': key '" + escape_bytes(key) + "': " + what);
  }

  std::span<const std::byte> read_blocking(const std::string& key, const sample_ref& sample, read_buffer& buffer) {
    const read_txn txn(m_env.get(), location());
    MDB_val k{key.size(), const_cast<char*>(key.data())};  // LMDB's API is not const-correct; it only reads
    MDB_val v{};
    const int rc = mdb_get(txn.get(), m_dbi, &k, &v);
    if (rc == MDB_NOTFOUND) throw key_error(ENOENT, key, "no such key");
    if (rc != 0) throw read_txn::lmdb_error(rc, location(), "get key '" + escape_bytes(key) + "'");
    const std::uint64_t value_size = v.mv_size;
    std::uint64_t offset = 0;
    std::uint64_t size = value_size;
    if (sample.range) {
      if (sample.offset > value_size || sample.size > value_size - sample.offset) {
        const std::string end = sample.size == unknown_size ? "end" : std::to_string(sample.offset + sample.size);
        throw key_error(EIO, key,
                        "the value ends at byte " + std::to_string(value_size) + ", inside the range [" +
                            std::to_string(sample.offset) + ", " + end + ")");
      }
      offset = sample.offset;
      size = sample.size;
    } else if (sample.size != unknown_size && sample.size != value_size) {
      throw key_error(EIO, key,
                      "the value is " + std::to_string(value_size) + " bytes, not the " + std::to_string(sample.size) +
                          " the index expects");
    }
    const auto n = static_cast<std::size_t>(size);
    buffer.reserve(n);
    // The page faults happen here, on this I/O thread.
    if (n != 0) std::memcpy(buffer.data(), static_cast<const std::byte*>(v.mv_data) + offset, n);
    buffer.set_size(n);
    (sample.range ? m_ranges : m_files).fetch_add(1, std::memory_order_relaxed);
    m_bytes.fetch_add(n, std::memory_order_relaxed);
    return {buffer.data(), n};
  }

  std::string m_version;
  unique_env m_env;
  MDB_dbi m_dbi;
  thread_pool& m_resume_on;
  // Counters only: relaxed, nothing is published through them.
  std::atomic<std::uint64_t> m_files{0}, m_ranges{0}, m_bytes{0};
  // Last: joined before the environment is closed.
  thread_pool m_io;
};

void log_line(const source_options& options, std::string_view line) {
  if (options.log)
    options.log(line);
  else
    std::fprintf(stderr, "ringfeed: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace

std::unique_ptr<source> open_lmdb_source(const std::string& location, thread_pool& resume_on,
                                         const source_options& options) {
  const database_path db = resolve(location);
  const std::string shown = escape_bytes(location);

  struct stat st {};
  if (::stat(db.data_file().c_str(), &st) != 0) {
    throw std::system_error(errno, std::system_category(),
                            "lmdb '" + shown + "': stat '" + escape_bytes(db.data_file()) + "'");
  }
  // The map covers the file as it is (the writer's map_size may be far
  // larger: address space, not memory, but no use to a reader).
  const auto page = static_cast<std::uint64_t>(std::max(::sysconf(_SC_PAGESIZE), 4096L));
  const std::uint64_t map_size = std::max<std::uint64_t>(page, (static_cast<std::uint64_t>(st.st_size) + page - 1) / page * page);

  MDB_env* raw = nullptr;
  int rc = mdb_env_create(&raw);
  if (rc != 0) throw read_txn::lmdb_error(rc, location, "create an environment");
  unique_env env(raw);
  if ((rc = mdb_env_set_mapsize(raw, static_cast<std::size_t>(map_size))) != 0) {
    throw read_txn::lmdb_error(rc, location, "set the map size");
  }
  // Unused without a lock table (MDB_NOLOCK); set in case a build ever
  // drops that flag, so readers from many threads never run out.
  if ((rc = mdb_env_set_maxreaders(raw, 4096)) != 0) throw read_txn::lmdb_error(rc, location, "set max readers");
  const unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS | (db.subdir ? 0u : unsigned{MDB_NOSUBDIR});
  if ((rc = mdb_env_open(raw, db.path.c_str(), flags, 0444)) != 0) throw read_txn::lmdb_error(rc, location, "open");

  MDB_dbi dbi = 0;
  {
    MDB_txn* txn = nullptr;
    if ((rc = mdb_txn_begin(raw, nullptr, MDB_RDONLY, &txn)) != 0) {
      throw read_txn::lmdb_error(rc, location, "begin a read transaction");
    }
    rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    if (rc != 0) {
      mdb_txn_abort(txn);
      throw read_txn::lmdb_error(rc, location, "open the main database");
    }
    if ((rc = mdb_txn_commit(txn)) != 0) throw read_txn::lmdb_error(rc, location, "open the main database");
  }

  storage_info storage;
  try {
    storage = probe_storage(db.path);
  } catch (const std::system_error&) {
    storage = probe_source(db.path);
  }
  const std::size_t depth = std::max<std::size_t>(1, options.depth != 0 ? options.depth : storage.io_depth);
  const std::size_t threads =
      std::max<std::size_t>(1, options.pread_threads != 0 ? options.pread_threads : std::min<std::size_t>(depth, 16));
  if (options.direct) log_line(options, "'" + shown + "' is an LMDB database, read through its memory map: O_DIRECT does not apply");
  const std::string version = "lmdb " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                              std::to_string(st.st_mtim.tv_nsec);
  return std::make_unique<lmdb_source>(location, std::move(storage), depth, std::move(env), dbi, resume_on, threads,
                                       version);
}

}  // namespace detail
}  // namespace ringfeed::io
