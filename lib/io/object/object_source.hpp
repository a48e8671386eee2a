// Private: the part of the `https://` and `s3://` sources they share: one
// http_client, objects pinned by ETag, reads of whole objects and ranges.
// lib/io/object/object_source.cpp; s3:// adds signing and listing (s3_source.cpp).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <ringfeed/io/source.hpp>

#include "io/object/http_client.hpp"

namespace ringfeed::io::detail {

/// The ETag each object had when first seen (listed or read): every later
/// read sends it as If-Match, so an object replaced mid-epoch fails loudly
/// (ESTALE) instead of mixing bytes of two versions. Any thread.
class etag_pins {
 public:
  /// The pinned ETag of `url` ("" when none yet).
  [[nodiscard]] std::string get(const std::string& url) const {
    std::lock_guard lock(m_mutex);
    const auto it = m_pins.find(url);
    return it == m_pins.end() ? std::string() : it->second.etag;
  }
  /// The ETag of `url` if it was pinned before seal() (by the listing or
  /// the index), else "".
  [[nodiscard]] std::string sealed(const std::string& url) const {
    std::lock_guard lock(m_mutex);
    const auto it = m_pins.find(url);
    return it == m_pins.end() || !it->second.before_seal ? std::string() : it->second.etag;
  }
  /// Pins `url` to `etag` unless it is pinned already ("" is ignored).
  void pin(const std::string& url, const std::string& etag) {
    if (etag.empty()) return;
    std::lock_guard lock(m_mutex);
    m_pins.emplace(url, pinned{etag, !m_sealed});
  }
  /// Pins from now on are not versions (sealed() ignores them).
  void seal() noexcept {
    std::lock_guard lock(m_mutex);
    m_sealed = true;
  }

 private:
  struct pinned {
    std::string etag;
    bool before_seal = false;
  };
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, pinned> m_pins;
  bool m_sealed = false;
};

/// An object store read over HTTP(S). Subclasses say how a sample's file
/// becomes a URL and how a request is signed.
class object_source : public source {
 public:
  object_source(std::string location, thread_pool& resume_on, const source_options& options);

  std::string_view backend_name() const noexcept override { return "libcurl"; }
  task<std::span<const std::byte>> read(sample_ref sample, read_buffer& buffer) override;
  source_stats stats() const override;
  void cancel_reads(bool and_later = false) noexcept override { m_client->cancel_outstanding(and_later); }
  void resume_reads() noexcept override { m_client->resume(); }
  /// A GET of its first byte (signed as reads are): the size from
  /// Content-Range; pins the object's ETag.
  std::uint64_t file_size(const std::string& file) override;
  /// "etag " and the ETag pinned by the listing or the index (before
  /// seal_versions()); "" for an object first seen by a read.
  std::string version(const std::string& file) const override;
  void seal_versions() noexcept override { m_pins.seal(); }

 protected:
  /// The URL of `file`: a URL as it is, else a key relative to the location.
  [[nodiscard]] virtual std::string url_of(std::string_view file) const = 0;
  /// The request for `file` (a whole object: the caller sets the range
  /// and pin): url_of(file), unsigned, by default; s3:// signs it.
  [[nodiscard]] virtual http_request request_for(std::string_view file) const {
    http_request r;
    r.url = url_of(file);
    return r;
  }

  http_client& client() const noexcept { return *m_client; }
  etag_pins& pins() noexcept { return m_pins; }

 private:
  etag_pins m_pins;
  std::unique_ptr<http_client> m_client;
};

/// The http_options a source's options ask for: its retry policy over the
/// HTTP defaults, connections sized by the depth.
[[nodiscard]] http_options http_options_for(const source_options& options, std::size_t depth);

/// The storage_info of an object store at `location`: network, depth 64
/// unless the options set one.
[[nodiscard]] storage_info object_storage_info(const std::string& location);

/// `dir` joined to `rel` with one '/' (rel a key or a relative path).
[[nodiscard]] std::string join_url(std::string_view dir, std::string_view rel);

}  // namespace ringfeed::io::detail
