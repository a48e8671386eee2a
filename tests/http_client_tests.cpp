// io::detail::http_client against a tiny HTTP server on 127.0.0.1 started by
// each test: transient statuses retried with back-off until they clear, 4xx
// not retried, the deadline bounding a storm, S3's error code and request id
// in the message, and the client's destruction (or cancel_outstanding())
// cancelling a request the server never answers, promptly. (Faults mid-body, TLS and s3rver: the
// end-to-end tests in tests/python/test_object_storage.py.)
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>

#include "io/object/http_client.hpp"
#include "tiny_http.hpp"

using namespace ringfeed;
using namespace ringfeed::io;
using namespace ringfeed::io::detail;
using ringfeed::test::tiny_http_server;
using steady = std::chrono::steady_clock;

namespace {

http_options quick(unsigned retries, std::chrono::milliseconds deadline) {
  http_options o;
  o.retry = {deadline, retries, std::chrono::milliseconds{5}};
  return o;
}

std::string slowdown_xml() {
  return "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate."
         "</Message><RequestId>REQ123</RequestId></Error>";
}

http_request get(std::string url) {
  http_request r;
  r.url = std::move(url);
  return r;
}

/// A server that holds every request it gets (up to 30 s, or until
/// release()), then answers `status`: a server that stalls.
class holding_server {
 public:
  explicit holding_server(int status)
      : m_server([this, status](const tiny_http_server::request&) -> tiny_http_server::response {
          arrived = true;
          std::unique_lock lock(m_mutex);
          m_cv.wait_for(lock, std::chrono::seconds{30}, [&] { return m_release; });
          answered = true;
          return {status, "late"};
        }) {}
  ~holding_server() { release(); }
  void release() {
    {
      std::lock_guard lock(m_mutex);
      m_release = true;
    }
    m_cv.notify_all();
  }
  [[nodiscard]] std::string url() const { return m_server.url(); }
  /// Busy-waits (yielding) for the first request: it is in flight then.
  void wait_for_request() const {
    while (!arrived.load()) std::this_thread::yield();
  }

  std::atomic<bool> arrived{false};   ///< a request came in
  std::atomic<bool> answered{false};  ///< the handler answered one

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_release = false;  // guarded by m_mutex
  tiny_http_server m_server;  // last: stopped first, while the members it uses live
};

}  // namespace

TEST_CASE("a 503 SlowDown storm shorter than the retries is ridden out", "[http][retry]") {
  std::atomic<int> calls{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    if (calls.fetch_add(1) < 3) return {503, slowdown_xml()};
    return {200, "hello object"};
  });
  thread_pool pool(2);
  http_client client(pool, quick(5, std::chrono::milliseconds{10000}));
  read_buffer body;
  const http_response r = sync_wait(client.fetch(get(server.url() + "/b/k"), body));
  CHECK(r.status == 200);
  CHECK(r.attempts == 4);
  CHECK(std::string(reinterpret_cast<const char*>(body.data()), body.size()) == "hello object");
  CHECK(client.stats().retries == 3);
}

TEST_CASE("404 and 403 are answers, not retried; the error names URL, status and code", "[http][retry]") {
  const int status = GENERATE(404, 403);
  std::atomic<int> calls{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    ++calls;
    return {status, "<Error><Code>" + std::string(status == 404 ? "NoSuchKey" : "AccessDenied") +
                        "</Code><Message>m</Message><RequestId>RID9</RequestId></Error>"};
  });
  thread_pool pool(2);
  http_client client(pool, quick(5, std::chrono::milliseconds{10000}));
  read_buffer body;
  try {
    (void)sync_wait(client.fetch(get(server.url() + "/b/missing.jpg"), body));
    FAIL("no error");
  } catch (const http_error& e) {
    const std::string what = e.what();
    CHECK(e.status() == status);
    CHECK(e.code().value() == (status == 404 ? ENOENT : EACCES));
    CHECK(what.find(server.url() + "/b/missing.jpg") != std::string::npos);
    CHECK(what.find("HTTP " + std::to_string(status)) != std::string::npos);
    CHECK(what.find(status == 404 ? "NoSuchKey" : "AccessDenied") != std::string::npos);
    CHECK(what.find("RID9") != std::string::npos);
    CHECK(what.find("1 attempt") != std::string::npos);
  }
  CHECK(calls.load() == 1);
}

TEST_CASE("a storm longer than the deadline fails with ETIMEDOUT inside it", "[http][retry]") {
  // Whether the last attempt got its 503 or timed out at the deadline (a
  // busy machine), the message names S3's last answer and request id.
  tiny_http_server server(
      [](const tiny_http_server::request&) -> tiny_http_server::response { return {503, slowdown_xml()}; });
  thread_pool pool(2);
  http_options o;
  o.retry = {std::chrono::milliseconds{800}, 1000, std::chrono::milliseconds{20}};
  http_client client(pool, o);
  read_buffer body;
  const auto start = steady::now();
  try {
    (void)sync_wait(client.fetch(get(server.url() + "/b/k"), body));
    FAIL("no error");
  } catch (const http_error& e) {
    const std::string what = e.what();
    CHECK(e.code().value() == ETIMEDOUT);
    CHECK(what.find("SlowDown") != std::string::npos);
    CHECK(what.find("REQ123") != std::string::npos);
    CHECK(what.find("deadline of 800 ms passed") != std::string::npos);
  }
  const auto took = steady::now() - start;
  CHECK(took < std::chrono::milliseconds{800 + 500});
  CHECK(client.stats().timeouts == 1);
}

TEST_CASE("an attempt timed out after a SlowDown names that answer", "[http][retry]") {
  // The first attempt gets 503 SlowDown; the next one no answer until the
  // deadline: the error still says what the server last said, and its id.
  std::atomic<int> calls{0};
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    if (calls++ == 0) return {503, slowdown_xml()};
    std::unique_lock lock(m);
    cv.wait_for(lock, std::chrono::seconds{30}, [&] { return done; });
    return {200, "late"};
  });
  thread_pool pool(2);
  http_client client(pool, quick(5, std::chrono::milliseconds{800}));
  read_buffer body;
  std::string what;
  int error = 0;
  try {
    (void)sync_wait(client.fetch(get(server.url() + "/b/k"), body));
  } catch (const http_error& e) {
    what = e.what();
    error = e.code().value();
  }
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  CHECK(error == ETIMEDOUT);
  CHECK(what.find("the last answer: HTTP 503 SlowDown") != std::string::npos);
  CHECK(what.find("REQ123") != std::string::npos);
}

TEST_CASE("retries are signed afresh, each attempt", "[http][retry]") {
  std::atomic<int> calls{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    if (calls.fetch_add(1) < 2) return {500, "<Error><Code>InternalError</Code></Error>"};
    return {200, "ok"};
  });
  thread_pool pool(2);
  http_client client(pool, quick(5, std::chrono::milliseconds{10000}));
  std::atomic<int> signed_{0};
  http_request r;
  r.url = server.url() + "/b/k";
  r.range = true;
  r.offset = 0;
  r.size = 2;
  r.sign = [&](const std::string& method, const std::string&, const header_list& headers) {
    CHECK(method == "GET");
    bool has_range = false;
    for (const auto& [k, v] : headers) has_range |= k == "range" && v == "bytes=0-1";
    CHECK(has_range);
    return header_list{{"x-attempt", std::to_string(signed_.fetch_add(1))}};
  };
  read_buffer body;
  (void)sync_wait(client.fetch(std::move(r), body));
  CHECK(signed_.load() == 3);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 3);
  for (std::size_t i = 0; i < reqs.size(); ++i) CHECK(reqs[i].headers.at("x-attempt") == std::to_string(i));
}

TEST_CASE("destroying the client cancels a request the server never answers", "[http][cancel]") {
  holding_server server(200);
  thread_pool pool(2);
  auto client = std::make_unique<http_client>(pool, quick(3, std::chrono::milliseconds{60000}));
  read_buffer body;
  std::atomic<int> error{0};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    try {
      (void)sync_wait(client->fetch(get(server.url() + "/b/k"), body));
    } catch (const http_error& e) {
      error = e.code().value();
    }
    done = true;
  });
  server.wait_for_request();
  const auto start = steady::now();
  client.reset();
  waiter.join();
  const auto took = steady::now() - start;
  server.release();
  CHECK(done.load());
  CHECK(error.load() == ECANCELED);
  CHECK(took < std::chrono::milliseconds{1500});
}

TEST_CASE("cancel_outstanding ends a request in flight; later requests proceed", "[http][cancel]") {
  holding_server silent(200);
  tiny_http_server answering(
      [](const tiny_http_server::request&) -> tiny_http_server::response { return {200, "on time"}; });
  thread_pool pool(2);
  http_client client(pool, quick(3, std::chrono::milliseconds{60000}));
  read_buffer stalled_body;
  std::atomic<int> error{0};
  std::string message;
  std::thread waiter([&] {
    try {
      (void)sync_wait(client.fetch(get(silent.url() + "/b/k"), stalled_body));
    } catch (const http_error& e) {
      error = e.code().value();
      message = e.what();
    }
  });
  silent.wait_for_request();
  client.cancel_outstanding();
  waiter.join();  // without the cancel: until the server's 30 s are up
  silent.release();
  CHECK(error.load() == ECANCELED);
  CHECK(message.find(silent.url() + "/b/k") != std::string::npos);
  CHECK(message.find("cancelled") != std::string::npos);
  // The client goes on: a request made after the cancel is answered.
  read_buffer body;
  const http_response resp = sync_wait(client.fetch(get(answering.url() + "/b/k"), body));
  CHECK(resp.status == 200);
  CHECK(std::string(reinterpret_cast<const char*>(body.data()), body.size()) == "on time");
}

TEST_CASE("a stop ends a loader's open stalled on its server, naming the source", "[http][cancel][loader]") {
  // The shard's first read never gets an answer (the server holds it 30 s):
  // without loader_options::stop the constructor waits out the deadline.
  holding_server silent(503);
  ringfeed::loader_options o;
  o.source = silent.url() + "/shards/shard-000000.tar";
  o.device = -1;
  std::stop_source stop;
  o.stop = stop.get_token();
  std::string message;
  int error = 0;
  std::thread opener([&] {
    try {
      ringfeed::loader l(o);
    } catch (const std::system_error& e) {
      error = e.code().value();
      message = e.what();
    }
  });
  silent.wait_for_request();  // the open waits on the server
  stop.request_stop();
  opener.join();  // at once; without the stop, not before the 30 s deadline
  CHECK_FALSE(silent.answered.load());  // the open ended while the server still held its read
  silent.release();
  CHECK(error == ECANCELED);
  CHECK(message.find("interrupted") != std::string::npos);
  CHECK(message.find(o.source) != std::string::npos);
}

TEST_CASE("a server that ignores Range still gives exactly the bytes asked for", "[http][range]") {
  tiny_http_server server(
      [](const tiny_http_server::request&) -> tiny_http_server::response { return {200, "0123456789"}; });
  thread_pool pool(2);
  http_client client(pool, quick(0, std::chrono::milliseconds{10000}));
  http_request r = get(server.url() + "/b/k");
  r.range = true;
  r.offset = 3;
  r.size = 4;
  read_buffer body;
  const http_response resp = sync_wait(client.fetch(std::move(r), body));
  CHECK(resp.bytes == 4);
  CHECK(std::string(reinterpret_cast<const char*>(body.data()), body.size()) == "3456");
}
