// `nfs://server/export/dir` as an io::source: one libnfs client, listings
// and reads under the directory the URL names. The listing's attributes
// (READDIRPLUS: size and mtime) are each file's version.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <system_error>
#include <unordered_map>

#include <ringfeed/io/location.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/text.hpp>

#include "io/sources.hpp"

namespace ringfeed::io::detail {
namespace {

class nfs_source final : public source {
 public:
  nfs_source(const nfs_url& url, thread_pool& resume_on, const source_options& options, storage_info storage)
      : source(url.str(), storage, depth_for(options, storage)), m_root(url.path) {
    nfs_options no;
    no.retry = options.retry.or_defaults(retry_policy::network());
    no.max_in_flight = static_cast<unsigned>(std::max<std::size_t>(64, depth()));
    no.nfs_port = url.port;
    m_client = std::make_unique<nfs_client>(url.server, url.export_path, resume_on, no);
  }

  std::string_view scheme() const noexcept override { return "nfs"; }
  std::string_view backend_name() const noexcept override { return "libnfs"; }

  std::vector<source_entry> list(const std::string& dir) override {
    std::string at = m_root;
    if (!dir.empty()) {
      at.push_back('/');
      at.append(dir);
    }
    std::vector<nfs_client::entry> entries = m_client->list(at);
    {
      std::lock_guard lock(m_versions_mutex);
      if (!m_sealed.load(std::memory_order_relaxed))
        for (const auto& e : entries)
          if (!e.is_directory && (e.mtime_sec != 0 || e.mtime_nsec != 0))
            m_versions.insert_or_assign(at + "/" + e.name, detail::size_mtime_version(e.size, e.mtime_sec, e.mtime_nsec));
    }
    std::vector<source_entry> out;
    for (auto& e : entries) out.push_back({std::move(e.name), e.is_directory, e.is_directory ? unknown_size : e.size});
    return out;
  }

  /// The size and mtime the listing gave (before seal_versions()); "" for
  /// a file not listed (or listed after).
  std::string version(const std::string& file) const override {
    std::unique_lock lock(m_versions_mutex, std::defer_lock);
    if (!m_sealed.load(std::memory_order_acquire)) lock.lock();  // sealed: nothing writes the map any more
    const auto it = m_versions.find(path_of(file));
    return it == m_versions.end() ? std::string() : it->second;
  }

  void seal_versions() noexcept override {
    std::lock_guard lock(m_versions_mutex);
    m_sealed.store(true, std::memory_order_release);
  }

  task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) override {
    std::string path = path_of(sample.file);
    if (!sample.range) {
      const std::size_t n = co_await m_client->read_file(std::move(path), buffer);
      co_return std::span<const std::byte>(buffer.data(), n);
    }
    const std::size_t n = co_await m_client->read_range(path, sample.offset, sample.size, buffer);
    if (n < sample.size)
      throw std::system_error(EIO, std::generic_category(),
                              "read '" + escape_bytes(m_client->url_of(path)) + "': the file ends at byte " +
                                  std::to_string(sample.offset + n) + ", inside bytes [" +
                                  std::to_string(sample.offset) + ", " + std::to_string(sample.offset + sample.size) +
                                  ")");
    co_return std::span<const std::byte>(buffer.data(), n);
  }

  source_stats stats() const override {
    source_stats s;
    static_cast<read_counters&>(s) = m_client->stats();
    return s;
  }

 private:
  // A sample names its file by URL (the dataset's root is this source's
  // location) or by its path under the export.
  std::string path_of(std::string_view file) const {
    const std::string& base = location();
    if (file.size() > base.size() && file.compare(0, base.size(), base) == 0 && file[base.size()] == '/')
      return m_root + std::string(file.substr(base.size()));
    if (classify_location(file) == location_kind::nfs) return nfs_url::parse(file).path;
    return std::string(file);
  }

  std::string m_root;  // the URL's path under the export ("" or "/train")
  std::unique_ptr<nfs_client> m_client;
  mutable std::mutex m_versions_mutex;
  std::unordered_map<std::string, std::string> m_versions;  // path under the export -> "size … mtime …"
  std::atomic<bool> m_sealed{false};
};

}  // namespace

std::unique_ptr<source> open_nfs_source(const std::string& location, thread_pool& resume_on,
                                        const source_options& options) {
  const nfs_url url = nfs_url::parse(location);  // std::invalid_argument naming the URL
  return std::make_unique<nfs_source>(url, resume_on, options, probe_source(location));
}

}  // namespace ringfeed::io::detail
