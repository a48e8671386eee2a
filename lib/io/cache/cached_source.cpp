// A source with a read-through disk cache in front (cache.hpp): a sample
// found in the cache is read from local disk; one that is not is read from
// the source and handed to the cache's writer thread. Entries are keyed by
// the file's version (sample_cache_key), so a replaced file is read anew.
#include <sys/stat.h>

#include <string>

#include <ringfeed/io/cache.hpp>

#include "io/cache/cache_writer.hpp"
#include "io/sources.hpp"

namespace ringfeed::io {

std::string sample_cache_key(std::string_view file, bool range, std::uint64_t offset, std::string_view version) {
  std::string key(file);
  if (range) {
    key.push_back(':');
    key.append(std::to_string(offset));
  }
  if (!version.empty()) {
    key.push_back('|');
    key.append(version);
  }
  return key;
}

namespace detail {
namespace {

class cached_source final : public source {
 public:
  cached_source(std::unique_ptr<source> inner, const source_options& options)
      : source(inner->location(), inner->storage(), inner->depth()),
        m_inner(std::move(inner)),
        m_log(options.log),
        m_dir(options.cache_dir.string()) {
    cache_options co;
    co.dir = options.cache_dir;
    co.max_bytes = options.cache_bytes;
    co.log = options.log;
    m_cache = std::make_unique<cache>(std::move(co));
    m_writer = std::make_unique<cache_writer>(*m_cache, options.cache_queue_bytes);
  }

  ~cached_source() override {
    m_writer.reset();  // writes what is queued into the cache
  }

  std::string_view scheme() const noexcept override { return m_inner->scheme(); }
  std::string_view backend_name() const noexcept override { return m_inner->backend_name(); }
  std::vector<source_entry> list(const std::string& dir) override { return m_inner->list(dir); }
  std::vector<excluded_entry> excluded() override { return m_inner->excluded(); }
  void cancel_reads(bool and_later = false) noexcept override { m_inner->cancel_reads(and_later); }
  void resume_reads() noexcept override { m_inner->resume_reads(); }
  std::uint64_t file_size(const std::string& file) override { return m_inner->file_size(file); }
  std::string version(const std::string& file) const override { return m_inner->version(file); }
  void pin_versions(std::span<const std::string> files) override { m_inner->pin_versions(files); }
  void seal_versions() noexcept override { m_inner->seal_versions(); }

  task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) override {
    // The location itself, read whole, is what the data set is indexed from
    // (a manifest, a list of shard URLs), known by no version before it is
    // read: read anew each run, never from the cache.
    if (!sample.range && sample.file == location()) co_return co_await m_inner->read(sample, buffer);
    // A range is keyed by its file and offset (a tar member, an LMDB image).
    const std::string key = sample_cache_key(sample.file, sample.range, sample.offset, version_of(sample.file));
    if (m_cache->get(key, sample.size, buffer)) co_return buffer.bytes();
    const std::span<const std::byte> bytes = co_await m_inner->read(sample, buffer);
    if (!m_writer->put(key, bytes) && m_writer->dropped() == 1)
      log_line(m_log, "the cache at '" + m_dir + "' is written slower than samples arrive: some are not cached " +
                          "this time (stats().cache_dropped counts them)");
    co_return bytes;
  }

  // What the storage tells of the file's version (an object's ETag, an
  // nfs:// file's mtime, an LMDB database's); a file of a network file
  // system is stat'ed, as the pixel cache does: its size and mtime.
  std::string version_of(std::string_view file) const {
    const std::string name(file);
    std::string v = m_inner->version(name);
    if (!v.empty() || m_inner->scheme() != "file") return v;
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0) return v;  // the read names the file and the error
    return size_mtime_version(static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec,
                              static_cast<std::uint32_t>(st.st_mtim.tv_nsec));
  }

  source_stats stats() const override {
    source_stats s = m_inner->stats();
    const cache_stats c = m_cache->stats();
    s.cache = true;
    s.cache_hits = c.hits;
    s.cache_misses = c.misses;
    s.cache_stores = c.stores;
    s.cache_evictions = c.evictions;
    s.cache_bytes = c.bytes;
    s.cache_dropped = m_writer->dropped();
    return s;
  }

 private:
  std::unique_ptr<source> m_inner;
  log_sink m_log;
  std::string m_dir;
  std::unique_ptr<cache> m_cache;
  std::unique_ptr<cache_writer> m_writer;  // destroyed first: it flushes into m_cache
};

}  // namespace

std::unique_ptr<source> with_cache(std::unique_ptr<source> inner, const source_options& options) {
  return std::make_unique<cached_source>(std::move(inner), options);
}

}  // namespace detail
}  // namespace ringfeed::io
