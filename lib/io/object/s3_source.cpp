// `s3://bucket/prefix` as an io::source: objects read through the shared
// object_source (one libcurl multi client, ETag pins), every attempt signed
// afresh with SigV4 (sigv4.hpp) from the credential chain (aws_config.hpp),
// and the prefix listed with ListObjectsV2 (s3_xml.hpp) once, on the first
// list(): the whole tree in pages of 1000 keys, then every directory's
// entries answered from it, so an ImageFolder of N classes costs N/1000
// requests, not one per class. The listing's ETags pin the objects; a
// manifest's keys are pinned by one listing of their common prefix
// (pin_versions).
#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <system_error>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/io/s3_xml.hpp>
#include <ringfeed/io/sigv4.hpp>
#include <ringfeed/io/url.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/text.hpp>

#include "io/object/object_source.hpp"
#include "io/sources.hpp"

namespace ringfeed::io::detail {
namespace {

using query_list = std::vector<std::pair<std::string, std::string>>;

// The query as SigV4 canonicalizes it (sorted, every byte but the
// unreserved ones encoded): what goes on the wire, so it is what is signed.
std::string canonical_query(query_list q) {
  for (auto& [k, v] : q) {
    k = uri_encode(k, true);
    v = uri_encode(v, true);
  }
  std::sort(q.begin(), q.end());
  std::string out;
  for (const auto& [k, v] : q) {
    if (!out.empty()) out.push_back('&');
    out += k + "=" + v;
  }
  return out;
}

class s3_source final : public object_source {
 public:
  s3_source(const object_url& url, const std::string& location, thread_pool& resume_on, const source_options& options)
      : object_source(location, resume_on, options),
        m_bucket(url.host),
        m_prefix(url.path),
        m_endpoint(resolve_endpoint(options.s3)),
        m_credentials(std::make_shared<credential_provider>(options.s3)) {
    if (!m_prefix.empty() && m_prefix.back() != '/' && !looks_like_object(m_prefix)) m_prefix.push_back('/');
  }

  std::string_view scheme() const noexcept override { return "s3"; }

  std::vector<source_entry> list(const std::string& dir) override {
    std::call_once(m_listed, [this] { list_prefix(); });
    std::string at = dir;
    while (!at.empty() && at.back() == '/') at.pop_back();
    const auto it = m_tree.find(at);
    if (it == m_tree.end())
      throw std::system_error(ENOENT, std::generic_category(),
                              "list s3://" + m_bucket + "/" + m_prefix + at + ": no object under this prefix");
    std::vector<source_entry> out;
    for (const auto& [name, e] : it->second) out.push_back(e);
    return out;
  }

  // A manifest's keys: per bucket, one listing of the keys' common prefix
  // (up to its last '/'), each key pinned to the ETag listed.
  void pin_versions(std::span<const std::string> files) override {
    std::map<std::string, std::set<std::string>> wanted;  // bucket -> keys
    for (const std::string& f : files) {
      auto [bucket, key] = object_of(f);
      if (!bucket.empty()) wanted[std::move(bucket)].insert(std::move(key));  // bucket "": an https:// URL
    }
    for (auto& [bucket, keys] : wanted) {
      std::string prefix = *keys.begin();  // sorted: the common prefix of all is that of the first and last
      const std::string& last = *keys.rbegin();
      prefix.resize(std::mismatch(prefix.begin(), prefix.end(), last.begin(), last.end()).first - prefix.begin());
      const auto slash = prefix.rfind('/');
      prefix.resize(slash == std::string::npos ? 0 : slash + 1);
      list_objects(bucket, prefix, [&, &b = bucket, &k = keys](const s3_object_info& o) {
        if (k.erase(o.key) != 0) pins().pin(m_endpoint.object_url(b, o.key), o.etag);
      });
      if (!keys.empty())
        throw std::system_error(ENOENT, std::generic_category(),
                                "read s3://" + bucket + "/" + *keys.begin() + ": no such key (the listing of s3://" +
                                    bucket + "/" + prefix + " does not hold it" +
                                    (keys.size() > 1 ? ", nor " + std::to_string(keys.size() - 1) + " more keys" : "") +
                                    ")");
    }
  }

 protected:
  std::string url_of(std::string_view file) const override {
    const auto [bucket, key] = object_of(file);
    if (bucket.empty()) return std::string(file);  // an https:// URL (a manifest's entry)
    return m_endpoint.object_url(bucket, key);
  }

  http_request request_for(std::string_view file) const override {
    http_request r;
    const auto [bucket, key] = object_of(file);
    if (bucket.empty()) {
      r.url = std::string(file);
      return r;
    }
    r.url = m_endpoint.object_url(bucket, key);
    r.sign = signer(bucket, key, {});
    return r;
  }

 private:
  // The bucket and key of `file`: an s3:// URL, a path under this source's
  // location, or a key relative to its prefix. Bucket "" for another URL.
  std::pair<std::string, std::string> object_of(std::string_view file) const {
    const std::string& loc = location();
    if (file.size() > loc.size() && file.compare(0, loc.size(), loc) == 0) {
      std::string_view rel = file.substr(loc.size());
      while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
      return {m_bucket, m_prefix + std::string(rel)};
    }
    if (object_url::is_url(file)) {
      const object_url u = object_url::parse(file);
      if (u.scheme != url_scheme::s3) return {};
      return {u.host, u.path};
    }
    return {m_bucket, m_prefix + std::string(file)};
  }

  static bool looks_like_object(std::string_view key) {
    const auto slash = key.rfind('/');
    const std::string_view last = slash == std::string_view::npos ? key : key.substr(slash + 1);
    return last.find('.') != std::string_view::npos;
  }

  // Signs every attempt afresh (a new date; refreshed credentials).
  decltype(http_request::sign) signer(std::string bucket, std::string key, query_list query) const {
    if (m_endpoint.anonymous || m_credentials->anonymous()) return {};
    return [this, bucket = std::move(bucket), key = std::move(key), query = std::move(query)](
               const std::string& method, const std::string&, const header_list& headers) {
      sigv4_request req;
      req.method = method;
      req.host = m_endpoint.host_for(bucket);
      req.path = m_endpoint.path_for(bucket, key);
      req.query = query;
      req.headers = headers;
      return sign_v4(req, m_credentials->current(), m_endpoint.region, "s3", std::chrono::system_clock::now())
          .headers;
    };
  }

  // ListObjectsV2 over `prefix` of `bucket`, every page (1000 keys each):
  // `on_object` is called for each object.
  template <typename F>
  void list_objects(const std::string& bucket, const std::string& prefix, F&& on_object) {
    std::optional<std::string> token;
    std::size_t pages = 0;
    do {
      query_list q{{"list-type", "2"}, {"prefix", prefix}, {"encoding-type", "url"}};
      if (token) q.emplace_back("continuation-token", *token);
      http_request r;
      r.url = m_endpoint.object_url(bucket, "");
      const std::string query = canonical_query(q);
      r.url += "?" + query;
      r.sign = signer(bucket, "", q);
      read_buffer body;
      const http_response resp = sync_wait(client().fetch(std::move(r), body));
      s3_list_page page;
      try {
        page = parse_list_objects_v2(
            std::string_view(reinterpret_cast<const char*>(body.data()), resp.bytes));
      } catch (const std::invalid_argument& e) {
        throw std::system_error(EIO, std::generic_category(),
                                "list s3://" + bucket + "/" + prefix + ": page " + std::to_string(pages + 1) +
                                    " is not a ListObjectsV2 response: " + e.what());
      }
      ++pages;
      for (const s3_object_info& o : page.objects) on_object(o);
      token = page.truncated ? page.next_continuation_token : std::nullopt;
    } while (token);
  }

  // The whole prefix; builds m_tree.
  void list_prefix() {
    list_objects(m_bucket, m_prefix, [this](const s3_object_info& o) { add(o); });
  }

  std::vector<excluded_entry> excluded() override {
    std::call_once(m_listed, [this] { list_prefix(); });
    return m_excluded;
  }

  // Why an ImageFolder tree cannot hold `rel` (a key below the prefix), or
  // nullptr. S3 keys are any bytes: "a//b.jpg", "a/./b.jpg" and "a/" are
  // objects of their own, but a tree (and the local copy a user compares it
  // with) has no such paths, so such keys are named, never dropped silently.
  static const char* untreeable(std::string_view rel) {
    if (rel.back() == '/') return "the key ends in '/' (a folder marker)";
    for (std::size_t start = 0;;) {
      const auto slash = rel.find('/', start);
      const std::string_view segment = rel.substr(start, slash == std::string_view::npos ? rel.npos : slash - start);
      if (segment.empty()) return "the key has an empty path segment ('//')";
      if (segment == "." || segment == "..") return "the key has a '.' or '..' path segment";
      if (slash == std::string_view::npos) return nullptr;
      start = slash + 1;
    }
  }

  void add(const s3_object_info& o) {
    if (o.key.size() <= m_prefix.size() || o.key.compare(0, m_prefix.size(), m_prefix) != 0) return;
    const std::string rel = o.key.substr(m_prefix.size());
    if (const char* why = untreeable(rel)) {
      m_excluded.push_back({"s3://" + m_bucket + "/" + o.key,
                            std::string("left out of the listing: ") + why +
                                ", which a directory tree cannot hold; rename the object to read it"});
      return;
    }
    pins().pin(m_endpoint.object_url(m_bucket, o.key), o.etag);
    std::string dir;
    std::size_t start = 0;
    for (;;) {
      const auto slash = rel.find('/', start);
      if (slash == std::string::npos) break;
      const std::string name = rel.substr(start, slash - start);
      m_tree[dir].try_emplace(name, source_entry{name, true, unknown_size});
      dir = rel.substr(0, slash);
      start = slash + 1;
    }
    const std::string name = rel.substr(start);
    m_tree[dir].insert_or_assign(name, source_entry{name, false, o.size});
  }

  std::string m_bucket;
  std::string m_prefix;  // "" or ending in '/' (or one object's key)
  s3_endpoint m_endpoint;
  std::shared_ptr<credential_provider> m_credentials;
  std::once_flag m_listed;
  std::map<std::string, std::map<std::string, source_entry>> m_tree;  // dir under the prefix -> entries
  std::vector<excluded_entry> m_excluded;  // keys the tree cannot hold, in listing order
};

}  // namespace

std::unique_ptr<source> open_s3_source(const std::string& location, thread_pool& resume_on,
                                       const source_options& options) {
  const object_url url = object_url::parse(location);  // std::invalid_argument naming the URL
  return std::make_unique<s3_source>(url, location, resume_on, options);
}

}  // namespace ringfeed::io::detail
