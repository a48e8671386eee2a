// Private: the state an nfs_client shares with its I/O thread and with the
// operations in flight, split over
//   nfs_connection.cpp  the libnfs context on the Asio I/O thread: the socket,
//                       flushing, reconnecting, the ticker, shutdown;
//   nfs_requests.cpp    one operation's life there: submit, issue, reply,
//                       deadline, retry, completion, waking its waiter;
//   nfs.cpp             the read coroutine and the public nfs_client;
//   nfs_url.cpp         nfs_url.
// libnfs is touched on the I/O thread only (its contexts are not
// thread-safe); see the member comments for what any thread may use.
#pragma once

#include <sys/stat.h>  // dev_t, ino_t
#include <sys/time.h>  // libnfs.h uses struct timeval without including it
#include <nfsc/libnfs.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <ringfeed/io/nfs.hpp>

namespace ringfeed::io::detail {

using steady = std::chrono::steady_clock;

struct context_deleter {
  void operator()(nfs_context* p) const noexcept { nfs_destroy_context(p); }
};
using context_ptr = std::unique_ptr<nfs_context, context_deleter>;

enum class op_kind : std::uint8_t { mount, open, fstat, pread, close, opendir };

/// What errors call `k`: "open", "read", "list"… (nfs_requests.cpp)
const char* verb_of(op_kind k) noexcept;

/// `server` as a URL's host: IPv6 in brackets, ":port" unless 0. (nfs_url.cpp)
std::string host_part(const std::string& server, std::uint16_t port);

/// One operation (mount, open, fstat, one pread, close, listing): the state a
/// waiting coroutine or thread shares with the I/O thread. Owned by
/// shared_ptr: the I/O thread keeps it while libnfs or a timer may still
/// report on it, the waiter while it waits. The inputs are set before it is
/// submitted; the results are written on the I/O thread before the waiter is
/// woken (the executor's queue or `mutex` orders them).
struct nfs_request {
  op_kind kind = op_kind::open;
  std::string_view url;  // what errors name; the waiter's string, read by the waiter only
  std::string path;  // open, opendir: libnfs path
  nfsfh* fh = nullptr;  // fstat, pread, close: in; open: out
  std::uint64_t offset = 0;
  std::size_t count = 0;
  std::byte* dest = nullptr;  // pread: where the bytes go (copied on the I/O thread)
  steady::time_point deadline_at;
  std::chrono::milliseconds deadline{};

  int error = 0;
  std::string reason;
  std::uint64_t size = 0;
  std::size_t bytes = 0;
  std::vector<nfs_client::entry> entries;

  // I/O thread only.
  unsigned attempts = 0;
  bool done = false;
  bool resume_here = false;  // started on the I/O thread: its coroutine resumes there too
  std::unique_ptr<boost::asio::steady_timer> deadline_timer;
  std::unique_ptr<boost::asio::steady_timer> retry_timer;

  // Completion: a coroutine (item.handle set) or a blocked thread.
  work_item item;
  std::mutex mutex;
  std::condition_variable cv;
  bool finished = false;  // guarded by mutex

  [[nodiscard]] std::system_error make_error() const {
    return std::system_error(std::error_code(error, std::system_category()),
                             std::string(url) + ": " + verb_of(kind) + " failed: " + reason);
  }
};

}  // namespace ringfeed::io::detail

namespace ringfeed::io {

struct nfs_client::core {
  using nfs_request = detail::nfs_request;
  using op_kind = detail::op_kind;
  using context_ptr = detail::context_ptr;
  using steady = detail::steady;

  core(std::string server_, std::string export_, executor& e, nfs_options opt);
  core(const core&) = delete;
  core& operator=(const core&) = delete;
  ~core();

  /// The awaitable every coroutine step goes through. Not an aggregate on
  /// purpose: GCC 12 destroys an aggregate temporary awaiter twice
  /// (`co_await operation{c, r}` dropped two references).
  struct operation {
    operation(std::shared_ptr<core> c, std::shared_ptr<nfs_request> r) noexcept
        : owner(std::move(c)), request(std::move(r)) {}
    std::shared_ptr<core> owner;  // declared first: destroyed after `request`
    std::shared_ptr<nfs_request> request;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      request->item.handle = h;
      if (owner->on_io_thread()) {
        // The next step of a chain running on the I/O thread: issued at once,
        // and resumed there when done (never from inside this call: see
        // notify()).
        request->resume_here = true;
        owner->start(request);
        return;
      }
      submit(owner, request);  // copies: this awaitable may be gone before submit returns
    }
    nfs_request& await_resume() const {
      if (request->error != 0) throw request->make_error();
      return *request;
    }
  };

  /// Moves the awaiting coroutine onto the I/O thread (or, once the client
  /// is shutting down, lets it go on where it is: its next step fails with
  /// ECANCELED).
  struct io_thread_operation {
    explicit io_thread_operation(core& c) noexcept : owner(&c) {}
    core* owner;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      std::lock_guard lock(owner->submit_mutex);
      if (owner->stopping) return false;
      boost::asio::post(owner->io, [h] { h.resume(); });  // runs before do_shutdown, posted later
      return true;
    }
    void await_resume() const noexcept {}
  };

  /// Moves the awaiting coroutine onto the executor.
  struct executor_operation {
    explicit executor_operation(executor& e) noexcept : exec(&e) {}
    executor* exec;
    work_item item;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      item.handle = h;
      exec->post(item);
    }
    void await_resume() const noexcept {}
  };

  [[nodiscard]] bool on_io_thread() const noexcept;

  // --- any thread --- (submit, wait: nfs_requests.cpp; shutdown:
  // nfs_connection.cpp; read: nfs.cpp)
  /// A request naming `url` in its errors; `url` must outlive the wait.
  std::shared_ptr<nfs_request> make(op_kind k, std::string_view url) const {
    auto r = std::make_shared<nfs_request>();
    r->kind = k;
    r->url = url;
    r->deadline = options.retry.deadline;
    r->deadline_at = steady::now() + options.retry.deadline;
    return r;
  }
  static void submit(std::shared_ptr<core> self, std::shared_ptr<nfs_request> r);
  static void wait(nfs_request& r);
  void shutdown();
  std::string url_of(std::string_view path) const {
    std::string_view p = path;
    while (!p.empty() && p.front() == '/') p.remove_prefix(1);
    if (p.empty()) return base_url;
    std::string out = base_url;
    if (out.back() != '/') out += '/';
    out += p;
    return out;
  }
  static task<std::size_t> read(std::shared_ptr<core> c, std::string path, std::uint64_t offset,
                                std::optional<std::size_t> size, read_buffer& buffer);

  // --- I/O thread ---
  struct call {  // one libnfs call: its private_data
    core* owner;
    std::shared_ptr<nfs_request> request;
    unsigned attempt;        // request->attempts when issued: a reply to an older attempt is stale
    bool abandoned = false;  // failed with the connection; libnfs still holds it (no longer in_flight)
  };
  // Requests (nfs_requests.cpp).
  static void on_reply(int status, nfs_context* nfs, void* data, void* private_data);
  static void on_ignored_reply(int, nfs_context*, void*, void*) {}
  void start(std::shared_ptr<nfs_request> r);
  void dispatch(const std::shared_ptr<nfs_request>& r);
  void issue(const std::shared_ptr<nfs_request>& r);
  void fail_or_retry(const std::shared_ptr<nfs_request>& r, int err, std::string reason);
  void complete(std::shared_ptr<nfs_request> r, int err, std::string reason);
  void notify(nfs_request& r) noexcept;
  void late_reply(nfs_request& r, int status, nfs_context* nfs, void* data);
  void release_handle(nfsfh* fh);
  void call_on_handle_done(nfsfh* fh);
  void post_pump();
  void pump();
  void resume_batch() noexcept;
  void run_ready();
  // The connection (nfs_connection.cpp).
  void arm();
  void watch_socket();
  void on_ready(unsigned gen, int direction, const boost::system::error_code& ec);
  void on_connect_failed(int err);
  void flush();
  void tick();
  void do_shutdown();

  const std::string server;
  const std::string export_path;
  const std::string base_url;
  executor& exec;
  const nfs_options options;

  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;

  std::mutex submit_mutex;
  bool stopping = false;  // guarded by submit_mutex: no request reaches the I/O thread after it

  // I/O thread only (and the constructor, before the thread starts).
  context_ptr ctx;
  boost::asio::posix::stream_descriptor socket{io};
  int watched_fd = -1;
  dev_t watched_dev = 0;
  ino_t watched_ino = 0;
  unsigned generation = 0;  // bumped whenever `socket` is re-pointed: older waits are stale
  bool read_armed = false;
  bool write_armed = false;
  bool flush_posted = false;   // flush() queued behind the handlers already queued
  unsigned queued_since_flush = 0;  // libnfs calls issued since the last flush()
  bool flush_stalled = false;  // the socket took less than was queued: wait until writable
  bool socket_may_have_changed = true;
  boost::asio::steady_timer ticker{io};
  std::unordered_map<nfs_request*, std::shared_ptr<nfs_request>> active;  // started, not finished
  std::deque<std::shared_ptr<nfs_request>> waiting;                       // for a free slot
  std::unordered_set<call*> calls;                                        // owned; libnfs holds them
  std::unordered_set<nfsfh*> open_handles;                 // opened, not yet given back to libnfs
  std::unordered_map<nfsfh*, unsigned> handle_calls;       // fstat/pread calls outstanding per handle
  std::unordered_set<nfsfh*> closing;                      // closed by their owner, calls still out
  std::size_t in_flight = 0;  // calls not abandoned
  bool pump_posted = false;
  bool stopped = false;
  // Coroutines finished while nfs_service() drains replies are resumed
  // together afterwards (one post_list: one lock, few wake-ups).
  bool batching = false;
  work_item* batch_head = nullptr;
  work_item* batch_tail = nullptr;
  std::size_t batch_count = 0;
  // Coroutines to resume on this thread (requests with resume_here), FIFO.
  // Never resumed from inside libnfs or from inside the call that started
  // their step: run_ready() runs them once the handler at hand is done.
  work_item* ready_head = nullptr;
  work_item* ready_tail = nullptr;
  bool ready_posted = false;
  bool in_ready_loop = false;
  // The server unreachable: set when a (re)connect attempt fails, cleared
  // when one succeeds. Meanwhile requests fail at once (EIO, retried as
  // configured) instead of queueing behind a connection that is not there,
  // and attempts are spaced out by `reconnect_delay`.
  bool link_down = false;
  std::string link_error;
  std::chrono::milliseconds reconnect_delay{0};
  steady::time_point next_reconnect;
  bool reconnect_wanted = false;  // a request was refused for want of a connection
  bool reconnect_timer_armed = false;
  ino_t failed_ino = 0;  // the socket whose failure was counted
  boost::asio::steady_timer reconnect_timer{io};

  std::atomic<std::uint64_t> n_requests{0};
  std::atomic<std::uint64_t> n_files{0};
  std::atomic<std::uint64_t> n_ranges{0};
  std::atomic<std::uint64_t> n_bytes{0};
  std::atomic<std::uint64_t> n_retries{0};
  std::atomic<std::uint64_t> n_timeouts{0};
  std::atomic<std::size_t> n_max_in_flight{0};
};

}  // namespace ringfeed::io
