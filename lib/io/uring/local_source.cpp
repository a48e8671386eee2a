// Local files through an io::reader (io_uring or pread threads): whole
// files, and ranges of files held open for the source's life (tar shards).
#include <algorithm>

#include <ringfeed/text.hpp>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "io/sources.hpp"

namespace ringfeed::io::detail {
namespace {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class local_source final : public source {
 public:
  local_source(const std::string& location, thread_pool& resume_on, const source_options& options,
               storage_info storage)
      : source(location, storage, depth_for(options, storage)) {
    reader_options ro;
    static_cast<read_options&>(ro) = options;
    ro.depth = depth();
    ro.network = storage.device == device_class::network;  // deadlines, retries, buffered
    m_reader = reader::create(resume_on, std::move(ro));
  }

  std::string_view scheme() const noexcept override { return "file"; }
  std::string_view backend_name() const noexcept override { return m_reader->backend_name(); }

  std::vector<source_entry> list(const std::string& dir) override {
    namespace fs = std::filesystem;
    const fs::path at = dir.empty() ? fs::path(location()) : fs::path(location()) / dir;
    std::vector<source_entry> out;
    std::error_code ec;
    for (fs::directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
      source_entry e;
      e.name = it->path().filename().string();
      e.is_directory = it->is_directory(ec);
      if (!e.is_directory) {
        const auto n = it->file_size(ec);
        e.size = ec ? unknown_size : n;
        ec.clear();
      }
      out.push_back(std::move(e));
    }
    if (ec) throw std::system_error(ec, "list '" + escape_bytes(at.native()) + "'");
    std::sort(out.begin(), out.end(), [](const source_entry& a, const source_entry& b) { return a.name < b.name; });
    return out;
  }

  task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) override {
    if (!sample.range) {
      const std::string path(sample.file);  // in this frame: the read holds it across suspensions
      co_return co_await m_reader->read_file(path, buffer);
    }
    const reader::handle h = handle_of(sample.file);
    co_return co_await m_reader->read_range(h, sample.offset, static_cast<std::size_t>(sample.size), buffer);
  }

  source_stats stats() const override {
    source_stats s;
    static_cast<read_counters&>(s) = m_reader->stats();
    s.direct = m_reader->direct();
    return s;
  }

 private:
  // The shard a range is in, opened on first use and kept open.
  reader::handle handle_of(std::string_view file) {
    std::lock_guard lock(m_handles_mutex);
    if (const auto it = m_handles.find(file); it != m_handles.end()) return it->second;
    const std::string path(file);
    const reader::handle h = m_reader->open(path);  // blocking, once per shard
    m_handles.emplace(path, h);
    return h;
  }

  std::unique_ptr<reader> m_reader;
  std::mutex m_handles_mutex;
  std::unordered_map<std::string, reader::handle, string_hash, std::equal_to<>> m_handles;
};

}  // namespace

std::unique_ptr<source> open_local_source(const std::string& location, thread_pool& resume_on,
                                          const source_options& options, storage_info storage) {
  return std::make_unique<local_source>(location, resume_on, options, std::move(storage));
}

}  // namespace ringfeed::io::detail
