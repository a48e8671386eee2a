// io::detail::object_source: reads of objects over HTTP(S), pinned by ETag
// (object_source.hpp); and the `https://` source, which reads unsigned
// (public objects, presigned URLs) and cannot list.
#include "io/object/object_source.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <ringfeed/io/location.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/text.hpp>

#include "io/sources.hpp"

namespace ringfeed::io::detail {

http_options http_options_for(const source_options& options, std::size_t depth) {
  http_options h;
  h.retry = options.retry.or_defaults(http_retry_policy());
  h.connections = std::max<std::size_t>(4, depth);
  h.ca_bundle = options.s3.ca_bundle;
  return h;
}

storage_info object_storage_info(const std::string& location) {
  storage_info info;
  info.path = location;
  info.filesystem = filesystem_kind::other;
  info.filesystem_name = classify_location(location) == location_kind::s3 ? "s3 (libcurl)" : "http (libcurl)";
  info.device = device_class::network;
  info.transport = "network";
  info.io_depth = 64;
  info.direct_io = false;
  info.small_files_ok = true;
  info.advice =
      "object storage: latency-bound (tens of ms per request), so keep many requests in flight; tar shards "
      "read in large parts, and a local cache for repeated epochs.";
  return info;
}

std::string join_url(std::string_view dir, std::string_view rel) {
  std::string out(dir);
  while (!out.empty() && out.back() == '/') out.pop_back();
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  out.push_back('/');
  out.append(rel);
  return out;
}

object_source::object_source(std::string location, thread_pool& resume_on, const source_options& options)
    : source(location, object_storage_info(location), depth_for(options, object_storage_info(location))) {
  m_client = std::make_unique<http_client>(resume_on, http_options_for(options, depth()));
}

task<std::span<const std::byte>> object_source::read(sample_ref sample, read_buffer& buffer) {
  http_request r = request_for(sample.file);
  r.range = sample.range;
  r.offset = sample.offset;
  r.size = sample.range ? sample.size : 0;
  r.if_match = m_pins.get(r.url);
  const std::string url = r.url;
  const http_response resp = co_await m_client->fetch(std::move(r), buffer);
  m_pins.pin(url, resp.etag);
  if (sample.range && resp.bytes < sample.size)
    throw std::system_error(EIO, std::generic_category(),
                            "read '" + escape_bytes(url) + "': the object ends at byte " +
                                std::to_string(sample.offset + resp.bytes) + ", inside bytes [" +
                                std::to_string(sample.offset) + ", " + std::to_string(sample.offset + sample.size) +
                                ")");
  if (!sample.range && sample.size != unknown_size && resp.bytes != sample.size)
    throw std::system_error(EIO, std::generic_category(),
                            "read '" + escape_bytes(url) + "': " + std::to_string(resp.bytes) +
                                " bytes, but it was listed with " + std::to_string(sample.size));
  co_return std::span<const std::byte>(buffer.data(), resp.bytes);
}

std::string object_source::version(const std::string& file) const {
  std::string etag = m_pins.sealed(url_of(file));
  return etag.empty() ? etag : "etag " + etag;
}

std::uint64_t object_source::file_size(const std::string& file) {
  http_request r = request_for(file);
  // The first byte, not a HEAD: Content-Range gives the size, and an error
  // comes with S3's body (its code and message), which a HEAD's lacks.
  r.range = true;
  r.offset = 0;
  r.size = 1;
  r.if_match = m_pins.get(r.url);
  const std::string url = r.url;
  read_buffer none;
  const http_response resp = sync_wait(m_client->fetch(std::move(r), none));
  m_pins.pin(url, resp.etag);
  if (resp.object_size == unknown_size)
    throw std::system_error(EIO, std::generic_category(),
                            "GET '" + escape_bytes(url) + "': the server did not say the object's size");
  return resp.object_size;
}

source_stats object_source::stats() const {
  source_stats s;
  static_cast<read_counters&>(s) = m_client->stats();
  return s;
}

namespace {

/// `https://host/path` (and `http://`): objects read unsigned. The location
/// names one object (a shard, a manifest, a list of URLs) or a pattern of
/// them; nothing can be listed.
class https_source final : public object_source {
 public:
  https_source(const std::string& location, thread_pool& resume_on, const source_options& options)
      : object_source(location, resume_on, options), m_dir(directory_of(location)) {}

  std::string_view scheme() const noexcept override { return "https"; }

  std::vector<source_entry> list(const std::string& dir) override {
    throw std::system_error(ENOTSUP, std::generic_category(),
                            "cannot list '" + join_url(m_dir, dir) +
                                "': plain HTTP(S) has no listing; name tar shards ({000..099} patterns), a "
                                "manifest (.csv/.tsv) or a text file of URLs, or use s3:// for a tree of objects");
  }

 protected:
  std::string url_of(std::string_view file) const override {
    // A URL (any scheme: its read names it) as is, a path under the location's directory.
    return classify_location(file) != location_kind::local ? std::string(file) : join_url(m_dir, file);
  }

 private:
  // The URL's "directory": up to its last '/' before any query.
  static std::string directory_of(const std::string& url) {
    const std::string_view u = std::string_view(url).substr(0, url.find('?'));
    const auto slash = u.rfind('/');
    const auto host_end = u.find('/', u.find("://") + 3);
    if (slash == std::string_view::npos || host_end == std::string_view::npos || slash < host_end)
      return std::string(u);
    return std::string(u.substr(0, slash));
  }
  std::string m_dir;
};

}  // namespace

std::unique_ptr<source> open_https_source(const std::string& location, thread_pool& resume_on,
                                          const source_options& options) {
  return std::make_unique<https_source>(location, resume_on, options);
}

}  // namespace ringfeed::io::detail
