// io::detail::http_client: the libcurl multi loop (http_client.hpp).
#include "io/object/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include <ringfeed/io/s3_xml.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::io::detail {
namespace {

using steady = std::chrono::steady_clock;

struct curl_global {
  curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

void init_curl_once() {
  static curl_global g;  // thread-safe once; never cleaned up (other libraries may use curl)
}

constexpr std::size_t max_error_body = 64 * 1024;

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::uint64_t parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() ? v : unknown_size;
}

bool transient_status(long status) {
  return status == 500 || status == 502 || status == 503 || status == 504 || status == 429;
}

bool transient_curl(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

// libcurl itself reads none of these (the curl tool reads CURL_CA_BUNDLE):
// the variables people set for curl, OpenSSL and the AWS tools.
http_options with_ca_from_environment(http_options o) {
  if (!o.ca_bundle.empty()) return o;
  for (const char* var : {"CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      o.ca_bundle = v;
      break;
    }
  }
  return o;
}

}  // namespace

/// One operation, from fetch() to its completion. Lives in the awaiting
/// coroutine's frame; the I/O thread owns it from submit to completion.
struct transfer {
  http_request request;
  read_buffer* body = nullptr;
  http_response response;
  work_item item;
  steady::time_point started;
  steady::time_point deadline_at;  // time_point::max() without a deadline
  std::uint64_t generation = 0;    // the client's cancel generation at submit

  // Result.
  int error = 0;
  std::string message;
  std::string s3_code;

  // I/O thread only.
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::uint64_t kept = 0;         // body bytes kept across attempts (resume point)
  std::uint64_t attempt_from = 0;  // first byte this attempt asked for (object offset)
  bool ranged_attempt = false;
  std::uint64_t response_pos = 0;  // body bytes of a 200 to a ranged attempt seen so far
  bool filled_early = false;       // the range was complete before the body's end
  long status = 0;                // of the current attempt's final response
  std::string error_body;
  std::string last_reason;        // why the last attempt failed
  std::string last_answer;        // the last HTTP error answer ("HTTP 503 SlowDown: ..."), kept across attempts
  char errbuf[CURL_ERROR_SIZE] = {};
  std::string url;                // the attempt's URL (kept alive for curl)

  [[nodiscard]] http_error make_error() const {
    return http_error(error, message, response.status, s3_code, response.request_id);
  }
};

struct http_client::core {
  core(executor& e, http_options o) : exec(e), options(with_ca_from_environment(std::move(o))) {
    init_curl_once();
    multi = curl_multi_init();
    if (multi == nullptr) throw std::runtime_error("http client: curl_multi_init failed");
    const long conns = static_cast<long>(std::max<std::size_t>(1, options.connections));
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, conns);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, conns);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    thread = std::thread([this] { run(); });
  }
  ~core() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    curl_multi_wakeup(multi);
    thread.join();
    for (CURL* e : idle) curl_easy_cleanup(e);
    curl_multi_cleanup(multi);
  }

  // --- any thread ----------------------------------------------------------
  /// Queues `t`; false (t failed with ECANCELED) once the client is stopping.
  bool submit(transfer& t) {
    {
      std::lock_guard lock(mutex);
      if (stopping || refusing) {
        t.error = ECANCELED;
        t.message = describe(t) + (stopping ? ": cancelled (the source is closing)" : ": cancelled (the reads were stopped)");
        return false;
      }
      t.generation = generation;
      incoming.push_back(&t);
    }
    curl_multi_wakeup(multi);  // thread-safe by libcurl's contract
    return true;
  }
  /// Fails every operation submitted before now with ECANCELED; with
  /// `and_later`, every later one too, at submit.
  void cancel_outstanding(bool and_later) {
    {
      std::lock_guard lock(mutex);
      cancel_below = ++generation;
      refusing = refusing || and_later;
    }
    curl_multi_wakeup(multi);
  }

  // --- I/O thread ----------------------------------------------------------
  void run();
  void start_attempt(transfer& t);
  void finish_attempt(transfer& t, CURLcode rc);
  void fail(transfer& t, int err, std::string reason, bool transient);
  void complete(transfer& t);
  /// Fails what is queued, waiting to retry or in flight and was submitted
  /// before generation `below` (all of it: ~0) with ECANCELED.
  void cancel(std::uint64_t below, const char* why);
  CURL* take_easy() {
    if (idle.empty()) return curl_easy_init();
    CURL* e = idle.back();
    idle.pop_back();
    curl_easy_reset(e);
    return e;
  }
  std::string describe(const transfer& t) const {
    std::string what = (t.request.head ? "HEAD " : "GET ") + t.request.url;
    if (t.request.range)
      what += " bytes [" + std::to_string(t.request.offset) + ", " + std::to_string(t.request.offset + t.request.size) + ")";
    return what;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user);
  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user);

  executor& exec;
  const http_options options;
  CURLM* multi = nullptr;
  std::thread thread;

  std::mutex mutex;
  std::vector<transfer*> incoming;  // guarded by mutex
  bool stopping = false;            // guarded by mutex
  std::uint64_t generation = 0;     // guarded by mutex; cancel_outstanding() moves it on
  std::uint64_t cancel_below = 0;   // guarded by mutex; operations older than it are cancelled
  bool refusing = false;            // guarded by mutex; cancel_outstanding(true): new ones fail too

  // I/O thread only.
  std::uint64_t cancelled_below = 0;  // cancel_below as last carried out
  std::vector<CURL*> idle;
  std::unordered_set<transfer*> active;
  std::multimap<steady::time_point, transfer*> backoff;  // retries waiting for their time
  std::mt19937_64 rng{std::random_device{}()};

  std::atomic<std::uint64_t> n_files{0}, n_ranges{0}, n_bytes{0}, n_retries{0}, n_timeouts{0}, n_requests{0},
      n_resumed{0};
};

std::size_t http_client::core::on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<transfer*>(user);
  const std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 or a redirect): start over
    const auto sp = line.find(' ');
    t.status = sp == std::string_view::npos ? 0 : static_cast<long>(parse_u64(line.substr(sp + 1, 3)));
    t.response.etag.clear();
    t.response.content_range.clear();
    t.error_body.clear();
    return size * n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  const std::string_view value = trim(line.substr(colon + 1), " \t\r\n");
  if (iequals_prefix(line, "etag:")) {
    t.response.etag = value;
  } else if (iequals_prefix(line, "x-amz-request-id:")) {
    t.response.request_id = value;
  } else if (iequals_prefix(line, "content-range:")) {
    t.response.content_range = value;
    const auto slash = value.rfind('/');
    if (slash != std::string_view::npos && value.substr(slash + 1) != "*")
      t.response.object_size = parse_u64(value.substr(slash + 1));
  } else if (iequals_prefix(line, "content-length:")) {
    const std::uint64_t len = parse_u64(value);
    if ((t.status == 200) && !t.ranged_attempt && len != unknown_size) {
      t.response.object_size = len;
      if (!t.request.head) t.body->reserve(static_cast<std::size_t>(len));
    } else if (t.status == 206 && len != unknown_size && !t.request.head) {
      t.body->reserve(static_cast<std::size_t>(t.kept + len));
    }
  }
  return size * n;
}

std::size_t http_client::core::on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<transfer*>(user);
  const std::size_t len = size * n;
  if (t.status < 200 || t.status >= 300) {
    if (t.error_body.size() < max_error_body) t.error_body.append(data, std::min(len, max_error_body - t.error_body.size()));
    return len;
  }
  std::size_t skip = 0;
  if (t.status == 200 && t.ranged_attempt) {
    // The server ignored Range and sends the whole object (some static
    // servers and presigning proxies do): drop the bytes before the ones
    // asked for, and stop once they are in.
    const std::uint64_t pos = t.response_pos;
    t.response_pos += len;
    if (t.response_pos <= t.attempt_from) return len;
    if (pos < t.attempt_from) skip = static_cast<std::size_t>(t.attempt_from - pos);
  }
  data += skip;
  std::size_t take = len - skip;
  if (t.request.range) {
    const std::uint64_t left = t.request.size - t.kept;
    if (take > left) take = static_cast<std::size_t>(left);
  }
  if (t.kept + take > t.body->capacity()) t.body->reserve(static_cast<std::size_t>(t.kept + take));
  std::memcpy(t.body->data() + t.kept, data, take);
  t.kept += take;
  t.body->set_size(static_cast<std::size_t>(t.kept));
  if (t.status == 200 && t.request.range && t.kept == t.request.size) {
    t.filled_early = true;  // the rest of a whole object is not wanted
    return 0;
  }
  return len;
}

void http_client::core::start_attempt(transfer& t) {
  ++t.response.attempts;
  n_requests.fetch_add(1, std::memory_order_relaxed);
  t.status = 0;
  t.response_pos = 0;
  t.filled_early = false;
  t.error_body.clear();
  t.errbuf[0] = '\0';
  CURL* e = take_easy();
  if (e == nullptr) {
    fail(t, EIO, "curl_easy_init failed", false);
    return;
  }
  t.easy = e;
  header_list hdrs;
  const std::uint64_t base = t.request.range ? t.request.offset : 0;
  t.attempt_from = base + t.kept;
  t.ranged_attempt = t.request.range || t.kept > 0;
  if (t.ranged_attempt) {
    std::string r = "bytes=" + std::to_string(t.attempt_from) + "-";
    if (t.request.range) r += std::to_string(t.request.offset + t.request.size - 1);
    hdrs.emplace_back("range", std::move(r));
  }
  if (!t.request.if_match.empty()) hdrs.emplace_back("if-match", t.request.if_match);
  const std::string method = t.request.head ? "HEAD" : "GET";
  if (t.request.sign) {
    try {
      header_list extra = t.request.sign(method, t.request.url, hdrs);
      for (auto& h : extra) hdrs.push_back(std::move(h));
    } catch (const std::exception& ex) {
      fail(t, EACCES, std::string("cannot sign the request: ") + ex.what(), false);
      return;
    }
  }
  curl_slist_free_all(t.headers);
  t.headers = nullptr;
  for (const auto& [k, v] : hdrs) t.headers = curl_slist_append(t.headers, (k + ": " + v).c_str());
  t.url = t.request.url;

  const auto now = steady::now();
  long timeout_ms = 0;
  if (t.deadline_at != steady::time_point::max())
    timeout_ms = std::max<long>(1, static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(t.deadline_at - now).count()));
  curl_easy_setopt(e, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  curl_easy_setopt(e, CURLOPT_NOBODY, t.request.head ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &core::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &core::on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count()));
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, nullptr);  // bytes as stored: ranges are of the object
  if (!options.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options.ca_bundle.c_str());
  if (t.kept > 0) n_resumed.fetch_add(1, std::memory_order_relaxed);
  if (curl_multi_add_handle(multi, e) != CURLM_OK) {
    t.easy = nullptr;
    idle.push_back(e);
    fail(t, EIO, "curl_multi_add_handle failed", false);
  }
}

void http_client::core::finish_attempt(transfer& t, CURLcode rc) {
  CURL* e = t.easy;
  t.easy = nullptr;
  curl_multi_remove_handle(multi, e);
  idle.push_back(e);
  t.response.status = t.status;
  if (rc == CURLE_WRITE_ERROR && t.filled_early) rc = CURLE_OK;
  if (rc != CURLE_OK) {
    const bool stalled = rc == CURLE_OPERATION_TIMEDOUT && steady::now() < t.deadline_at;
    std::string reason = std::string(stalled ? "stalled or timed out: " : "") + curl_easy_strerror(rc);
    if (t.errbuf[0] != '\0') reason += std::string(" (") + t.errbuf + ")";
    // A body cut short after a good status is resumed from t.kept.
    fail(t, rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO, std::move(reason), transient_curl(rc));
    return;
  }
  const long s = t.status;
  if (s == 200 || s == 206 || (t.request.head && s >= 200 && s < 300)) {
    // A server that ignores If-Match (s3rver does) still names the version
    // it sent: a pin is checked here too.
    if (!t.request.if_match.empty() && !t.response.etag.empty() && t.response.etag != t.request.if_match) {
      fail(t, ESTALE,
           "the object now has ETag " + t.response.etag + ", not " + t.request.if_match +
               ": it was replaced since it was first read",
           false);
      return;
    }
    if (t.request.range && t.kept < t.request.size && t.response.object_size != unknown_size &&
        t.request.offset + t.kept < t.response.object_size) {
      fail(t, EIO, "the body ended early, at byte " + std::to_string(t.request.offset + t.kept), true);
      return;
    }
    t.response.bytes = static_cast<std::size_t>(t.kept);
    complete(t);
    return;
  }
  if (s == 416) {  // the range starts at or past the end: nothing there
    t.response.bytes = static_cast<std::size_t>(t.kept);
    complete(t);
    return;
  }
  std::string reason = "HTTP " + std::to_string(s);
  if (const auto info = parse_s3_error(t.error_body)) {
    t.s3_code = info->code;
    if (t.response.request_id.empty()) t.response.request_id = info->request_id;
    if (!t.s3_code.empty()) reason += " " + t.s3_code;
    if (!info->message.empty()) reason += ": " + info->message;
  }
  t.last_answer = reason;
  if (s == 412) {
    fail(t, ESTALE,
         reason + " (the object no longer has ETag " + t.request.if_match +
             ": it was replaced since it was first read)",
         false);
    return;
  }
  const bool transient = transient_status(s) || t.s3_code == "SlowDown" || t.s3_code == "InternalError";
  const int err = s == 404 ? ENOENT : (s == 401 || s == 403) ? EACCES : EIO;
  fail(t, err, std::move(reason), transient);
}

void http_client::core::fail(transfer& t, int err, std::string reason, bool transient) {
  const auto now = steady::now();
  const unsigned attempt = t.response.attempts - 1;
  const auto wait = options.retry.jittered_delay(attempt, std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  if (options.retry.may_retry_after(transient, attempt, now - t.started, wait) && now + wait < t.deadline_at) {
    t.last_reason = std::move(reason);
    n_retries.fetch_add(1, std::memory_order_relaxed);
    backoff.emplace(now + wait, &t);
    return;
  }
  // A transient failure with retries left stops here only for the deadline.
  const bool past_deadline = transient && attempt < options.retry.retries;
  if (past_deadline) {
    n_timeouts.fetch_add(1, std::memory_order_relaxed);
    err = ETIMEDOUT;
  }
  t.error = err;
  std::string m = describe(t) + ": " + reason;
  // An attempt that got no answer (a timeout, a reset) after ones that did:
  // the server's last word (S3's code, a SlowDown) still says what went on.
  if (!t.last_answer.empty() && !reason.starts_with("HTTP ")) m += " (the last answer: " + t.last_answer + ")";
  if (!t.response.request_id.empty()) m += " (request id " + t.response.request_id + ")";
  m += "; " + std::to_string(t.response.attempts) + (t.response.attempts == 1 ? " attempt" : " attempts");
  if (past_deadline)
    m += ", deadline of " + std::to_string(options.retry.deadline.count()) + " ms passed";
  else if (transient)
    m += ", retries exhausted";
  t.message = std::move(m);
  complete(t);
}

void http_client::core::cancel(std::uint64_t below, const char* why) {
  for (auto it = backoff.begin(); it != backoff.end();)
    it = it->second->generation < below ? backoff.erase(it) : std::next(it);
  std::vector<transfer*> doomed;
  for (transfer* t : active)
    if (t->generation < below) doomed.push_back(t);
  for (transfer* t : doomed) {
    if (t->easy != nullptr) {
      curl_multi_remove_handle(multi, t->easy);
      idle.push_back(t->easy);
      t->easy = nullptr;
    }
    t->error = ECANCELED;
    t->message = describe(*t) + ": cancelled (" + why + ")";
    complete(*t);
  }
}

void http_client::core::complete(transfer& t) {
  active.erase(&t);
  curl_slist_free_all(t.headers);
  t.headers = nullptr;
  if (t.error == 0) {
    (t.request.range ? n_ranges : n_files).fetch_add(1, std::memory_order_relaxed);
    n_bytes.fetch_add(t.response.bytes, std::memory_order_relaxed);
  }
  exec.post(t.item);  // t may be gone from here on
}

void http_client::core::run() {
  for (;;) {
    std::vector<transfer*> fresh;
    bool stop = false;
    std::uint64_t below = 0;
    {
      std::lock_guard lock(mutex);
      fresh.swap(incoming);
      stop = stopping;
      below = cancel_below;
    }
    for (transfer* t : fresh) active.insert(t);
    if (stop) {
      cancel(~std::uint64_t{0}, "the source is closing");
      return;
    }
    if (below != cancelled_below) {
      cancelled_below = below;
      cancel(below, "the reads were stopped");
    }
    for (transfer* t : fresh)
      if (active.contains(t)) start_attempt(*t);
    const auto now = steady::now();
    while (!backoff.empty() && backoff.begin()->first <= now) {
      transfer* t = backoff.begin()->second;
      backoff.erase(backoff.begin());
      start_attempt(*t);
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      finish_attempt(*t, m->data.result);
    }
    long wait_ms = 1000;
    curl_multi_timeout(multi, &wait_ms);
    if (wait_ms < 0 || wait_ms > 1000) wait_ms = 1000;
    if (!backoff.empty()) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(backoff.begin()->first - steady::now());
      wait_ms = std::clamp<long>(static_cast<long>(until.count()), 0, wait_ms);
    }
    if (wait_ms > 0) curl_multi_poll(multi, nullptr, 0, static_cast<int>(wait_ms), nullptr);
  }
}

namespace {

// The awaitable of one fetch: the transfer lives here, in the coroutine
// frame. Not an aggregate (GCC 12 destroys aggregate awaiters twice).
class fetch_operation {
 public:
  fetch_operation(http_client::core& c, http_request r, read_buffer& body, const retry_policy& p) : m_core(&c) {
    m_t.request = std::move(r);
    m_t.body = &body;
    m_t.started = steady::now();
    m_t.deadline_at = p.deadline.count() > 0 ? m_t.started + p.deadline : steady::time_point::max();
    body.set_size(0);
  }
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    m_t.item.handle = h;
    return m_core->submit(m_t);
  }
  http_response await_resume() {
    if (m_t.error != 0) throw m_t.make_error();
    return std::move(m_t.response);
  }

 private:
  http_client::core* m_core;
  transfer m_t;
};

}  // namespace

http_client::http_client(executor& resume_on, http_options options)
    : m_core(std::make_unique<core>(resume_on, std::move(options))) {}

http_client::~http_client() = default;

task<http_response> http_client::fetch(http_request request, read_buffer& body) {
  if (request.range && request.size == 0) {
    body.set_size(0);
    co_return http_response{};
  }
  co_return co_await fetch_operation(*m_core, std::move(request), body, m_core->options.retry);
}

http_stats http_client::stats() const {
  http_stats s;
  s.files = m_core->n_files.load(std::memory_order_relaxed);
  s.ranges = m_core->n_ranges.load(std::memory_order_relaxed);
  s.bytes = m_core->n_bytes.load(std::memory_order_relaxed);
  s.retries = m_core->n_retries.load(std::memory_order_relaxed);
  s.timeouts = m_core->n_timeouts.load(std::memory_order_relaxed);
  s.requests = m_core->n_requests.load(std::memory_order_relaxed);
  s.resumed = m_core->n_resumed.load(std::memory_order_relaxed);
  return s;
}

const http_options& http_client::options() const noexcept { return m_core->options; }

void http_client::cancel_outstanding(bool and_later) noexcept { m_core->cancel_outstanding(and_later); }

void http_client::resume() noexcept {
  std::lock_guard lock(m_core->mutex);
  m_core->refusing = false;
}

}  // namespace ringfeed::io::detail
