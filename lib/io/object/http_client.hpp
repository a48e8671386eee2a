// Private: io::detail::http_client — HTTP(S) GETs over one libcurl multi
// handle driven by the client's own I/O thread (style rule 17).
//
// Coroutines on any thread queue a request (fetch()); the I/O thread adds it
// to the multi handle, runs curl_multi_perform/curl_multi_poll, and when a
// transfer ends either schedules its retry (back-off with full jitter, inside
// the operation's deadline) or completes it and posts the waiting coroutine
// to the executor: no thread per request, nothing resumed inline. Queueing
// wakes the loop with curl_multi_wakeup. Connections are kept alive and
// shared by every request of the client (at most `connections` per host);
// HTTP/2 is used when a TLS server offers it (requests then multiplex).
//
// One operation: a whole object, or `size` bytes at `offset` (a Range GET),
// optionally pinned to an ETag (If-Match): a replaced object fails with
// "precondition failed" and is never retried. A body cut short (a reset,
// a stall under the low-speed limit) is resumed from the last byte received,
// with the same pin. Transient failures (500, 502, 503, 504, 429, S3's
// SlowDown and InternalError, resets, TLS and DNS failures, stalls,
// timeouts) are retried per the retry_policy; 4xx (403, 404, a bad
// signature) are not. Errors are http_error: what() names the URL, the HTTP
// status, S3's error code and request id when given, and the attempts made.
//
// Destroying the client fails every operation still queued, waiting to retry
// or in flight with ECANCELED (their coroutines resumed on the executor),
// within one poll interval: it never waits for a server.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <ringfeed/executor.hpp>
#include <ringfeed/io/buffer.hpp>
#include <ringfeed/io/retry.hpp>
#include <ringfeed/task.hpp>

namespace ringfeed::io::detail {

using header_list = std::vector<std::pair<std::string, std::string>>;

/// The default policy of HTTP(S) and S3 storage: network_deadline, 10
/// retries (a 503 storm is ordinary on S3), 100 ms first back-off.
inline retry_policy http_retry_policy() noexcept { return {network_deadline, 10, std::chrono::milliseconds{100}}; }

struct http_options {
  /// Per operation: deadline (every attempt and back-off inside it), retries
  /// of transient failures, first back-off (full jitter).
  retry_policy retry = http_retry_policy();
  /// Keep-alive connections per host (CURLMOPT_MAX_HOST_CONNECTIONS); size
  /// it by the read depth. Requests beyond it wait inside libcurl.
  std::size_t connections = 16;
  std::chrono::milliseconds connect_timeout{5000};
  /// A body slower than `low_speed_bytes` per second for `low_speed_time`
  /// is a stall: the attempt is abandoned and resumed.
  long low_speed_bytes = 1024;
  std::chrono::seconds low_speed_time{10};
  /// PEM file of trusted CAs; "": $CURL_CA_BUNDLE, else $AWS_CA_BUNDLE,
  /// else $SSL_CERT_FILE, else the system's.
  std::string ca_bundle;
};

/// What a request asks for.
struct http_request {
  std::string url;
  /// HEAD instead of GET: headers only.
  bool head = false;
  /// false: the whole object; true: `size` bytes at `offset`.
  bool range = false;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  /// The ETag the object must still have ("": none).
  std::string if_match;
  /// Called on the I/O thread before each attempt with the method, the URL
  /// and the headers of that attempt (Range, If-Match); returns headers to
  /// add (a fresh SigV4 signature). Empty: none. Throwing fails the request.
  std::function<header_list(const std::string& method, const std::string& url, const header_list& headers)> sign;
};

/// What came back.
struct http_response {
  long status = 0;
  std::string etag;        ///< ETag, quotes kept
  std::string request_id;  ///< x-amz-request-id, when given
  std::string content_range;
  /// The object's size: Content-Range's total, else a whole GET's (or
  /// HEAD's) Content-Length; unknown_size when neither says.
  std::uint64_t object_size = unknown_size;
  /// Body bytes in the buffer (fewer than a range's size only where the
  /// object ends: see object_size).
  std::size_t bytes = 0;
  unsigned attempts = 0;
};

/// A failed request. code(): ENOENT (404), EACCES (401, 403), ESTALE (an
/// ETag pin failed: the object was replaced), ETIMEDOUT (the deadline
/// passed), ECANCELED (client destroyed), else EIO.
class http_error : public std::system_error {
 public:
  http_error(int err, std::string message, long status, std::string s3_code, std::string request_id)
      : std::system_error(err, std::generic_category(), std::move(message)),
        m_status(status), m_code(std::move(s3_code)), m_request_id(std::move(request_id)) {}
  [[nodiscard]] long status() const noexcept { return m_status; }  ///< 0: no response
  [[nodiscard]] const std::string& s3_code() const noexcept { return m_code; }
  [[nodiscard]] const std::string& request_id() const noexcept { return m_request_id; }

 private:
  long m_status;
  std::string m_code;
  std::string m_request_id;
};

/// Counters, named as every reader's; a consistent snapshot only while idle.
struct http_stats : read_counters {
  std::uint64_t requests = 0;  ///< attempts sent
  std::uint64_t resumed = 0;   ///< attempts that resumed a body cut short
};

/// Thread safety: fetch() and stats() from any thread; the executor must
/// outlive the client.
class http_client {
 public:
  /// Starts the I/O thread. Throws std::runtime_error when libcurl cannot
  /// make a multi handle.
  http_client(executor& resume_on, http_options options = {});
  /// Fails what is outstanding with ECANCELED and joins the I/O thread.
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Performs `request`, the body into `body` (grown as needed; size() set
  /// to the bytes received). Throws http_error. `body` must outlive the
  /// await; the coroutine resumes on the executor.
  [[nodiscard]] task<http_response> fetch(http_request request, read_buffer& body);

  /// Fails every operation fetched before this call (queued, waiting to
  /// retry or in flight) with ECANCELED on the I/O thread, within one poll
  /// interval, without waiting for a server; later fetches proceed, unless
  /// `and_later`: then they fail at once with ECANCELED too. A loader
  /// stopping a run calls it so that it does not wait out a stalled
  /// server's timeouts.
  void cancel_outstanding(bool and_later = false) noexcept;
  /// Ends cancel_outstanding(true): fetches from now on proceed.
  void resume() noexcept;

  [[nodiscard]] http_stats stats() const;
  [[nodiscard]] const http_options& options() const noexcept;

  struct core;  // lib/io/object/http_client.cpp

 private:
  std::unique_ptr<core> m_core;
};

}  // namespace ringfeed::io::detail
