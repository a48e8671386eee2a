#include <ringfeed/io/nfs.hpp>


#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>  // libnfs.h uses struct timeval without including it
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-nfs.h>  // NF3DIR

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace ringfeed::io {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

// --- small helpers ----------------------------------------------------------------

struct context_deleter {
  void operator()(nfs_context* p) const noexcept { nfs_destroy_context(p); }
};
using context_ptr = std::unique_ptr<nfs_context, context_deleter>;

enum class op_kind : std::uint8_t { mount, open, fstat, pread, close, opendir };

const char* verb_of(op_kind k) noexcept {
  switch (k) {
    case op_kind::mount: return "mount";
    case op_kind::open: return "open";
    case op_kind::fstat: return "fstat";
    case op_kind::pread: return "read";
    case op_kind::close: return "close";
    case op_kind::opendir: return "list";
  }
  return "?";
}

// A deadline or retry count left 0 takes the network defaults: an NFS
// operation without a deadline could wait for a dead server for ever.
nfs_options with_network_defaults(nfs_options o) noexcept {
  o.retry = o.retry.or_defaults(retry_policy::network());
  return o;
}

// libnfs 4.0 reports a failed or lost connection as -EFAULT and its own RPC
// timeout (and cancellation) as -EINTR: callers see EIO and ETIMEDOUT.
int errno_of(int status) noexcept {
  const int e = -status;
  if (e == EFAULT) return EIO;
  if (e == EINTR) return ETIMEDOUT;
  return e > 0 ? e : EIO;
}

std::string error_text(nfs_context* nfs) {
  const char* e = nfs != nullptr ? nfs_get_error(nfs) : nullptr;
  return e != nullptr && *e != '\0' ? std::string(e) : std::string("no reason given by libnfs");
}

// The path libnfs wants: absolute from the export root.
std::string libnfs_path(std::string_view p) {
  std::string out = "/";
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  out += p;
  return out;
}

std::string host_part(const std::string& server, std::uint16_t port) {
  std::string out = server.find(':') != std::string::npos ? "[" + server + "]" : server;
  if (port != 0) out += ":" + std::to_string(port);
  return out;
}

thread_local const void* t_io_core = nullptr;  // the core whose I/O thread this is

// One libnfs pread at most this long: its callback reports the count as an
// int. libnfs splits each into READs of the server's maximum size, in flight
// together.
constexpr std::size_t max_pread = std::size_t{64} << 20;

// How often nfs_service(0) runs while idle: libnfs checks its RPC timeouts
// there and nowhere else.
constexpr std::chrono::milliseconds tick_period{100};

}  // namespace

// --- requests ------------------------------------------------------------------------

namespace {

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
  std::unique_ptr<asio::steady_timer> deadline_timer;
  std::unique_ptr<asio::steady_timer> retry_timer;

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

}  // namespace

// --- the core: the context, its I/O thread, and everything in flight ------------------

struct nfs_client::core {
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
      asio::post(owner->io, [h] { h.resume(); });  // runs before do_shutdown, posted later
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

  // --- any thread ---
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
  void arm();
  void watch_socket();
  void on_ready(unsigned gen, int direction, const boost::system::error_code& ec);
  void on_connect_failed(int err);
  void flush();
  void resume_batch() noexcept;
  void run_ready();
  void tick();
  void do_shutdown();

  const std::string server;
  const std::string export_path;
  const std::string base_url;
  executor& exec;
  const nfs_options options;

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;

  std::mutex submit_mutex;
  bool stopping = false;  // guarded by submit_mutex: no request reaches the I/O thread after it

  // I/O thread only (and the constructor, before the thread starts).
  context_ptr ctx;
  asio::posix::stream_descriptor socket{io};
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
  asio::steady_timer ticker{io};
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
  asio::steady_timer reconnect_timer{io};

  std::atomic<std::uint64_t> n_requests{0};
  std::atomic<std::uint64_t> n_files{0};
  std::atomic<std::uint64_t> n_ranges{0};
  std::atomic<std::uint64_t> n_bytes{0};
  std::atomic<std::uint64_t> n_retries{0};
  std::atomic<std::uint64_t> n_timeouts{0};
  std::atomic<std::size_t> n_max_in_flight{0};
};

nfs_client::core::core(std::string server_, std::string export_, executor& e, nfs_options opt)
    : server(std::move(server_)),
      export_path(std::move(export_)),
      base_url("nfs://" + host_part(server, opt.nfs_port) + export_path),
      exec(e),
      options(with_network_defaults(opt)) {
  if (server.empty()) throw std::invalid_argument("ringfeed::io::nfs_client: empty server name");
  if (export_path.empty() || export_path.front() != '/')
    throw std::invalid_argument("ringfeed::io::nfs_client: export path '" + export_path +
                                "' of nfs://" + server + " must start with '/'");
  if (options.max_in_flight == 0) throw std::invalid_argument("ringfeed::io::nfs_client: max_in_flight is 0");
  ctx.reset(nfs_init_context());
  if (!ctx)
    throw std::system_error(std::error_code(ENOMEM, std::system_category()),
                            base_url + ": nfs_init_context failed");
  // libnfs times out RPCs itself too, in whole seconds, when nfs_service()
  // runs (tick() makes sure it does).
  const auto ms = std::max<std::int64_t>(1000, (options.retry.deadline.count() + 999) / 1000 * 1000);
  nfs_set_timeout(ctx.get(), static_cast<int>(std::min<std::int64_t>(ms, std::numeric_limits<int>::max())));
  // Reconnect without limit, as kernel NFS clients do: a server that comes
  // back is used again. Reconnecting never outlives an operation's deadline,
  // and is only attempted while operations are outstanding (see arm()).
  nfs_set_autoreconnect(ctx.get(), -1);
  nfs_set_dircache(ctx.get(), 0);  // list() shows the directory as it is now
  nfs_set_version(ctx.get(), NFS_V3);
  if (options.nfs_port != 0 || options.mount_port != 0) {
    // libnfs 4.0 takes fixed ports only as URL arguments.
    std::string args = "nfs://" + host_part(server, 0) + "/?";
    if (options.nfs_port != 0) args += "nfsport=" + std::to_string(options.nfs_port) + "&";
    if (options.mount_port != 0) args += "mountport=" + std::to_string(options.mount_port);
    if (::nfs_url* parsed = nfs_parse_url_incomplete(ctx.get(), args.c_str())) nfs_destroy_url(parsed);
  }
  thread = std::thread([this] {
    t_io_core = this;
    tick();
    io.run();
    t_io_core = nullptr;
  });
}

nfs_client::core::~core() { shutdown(); }

bool nfs_client::core::on_io_thread() const noexcept { return t_io_core == this; }

// --- any thread -----------------------------------------------------------------------------

void nfs_client::core::submit(std::shared_ptr<core> self, std::shared_ptr<nfs_request> r) {
  {
    std::lock_guard lock(self->submit_mutex);
    if (!self->stopping) {
      // Posted under the lock: do_shutdown is posted after `stopping` is set,
      // so it runs after every request that got here first.
      core* c = self.get();
      asio::post(c->io, [c, r] { c->start(r); });
      return;
    }
  }
  // Not on the I/O thread: resume the waiter directly.
  r->error = ECANCELED;
  r->reason = "the client was shut down";
  r->done = true;
  if (r->item.handle) {
    self->exec.post(r->item);
  } else {
    std::lock_guard lock(r->mutex);
    r->finished = true;
    r->cv.notify_all();
  }
}

void nfs_client::core::wait(nfs_request& r) {
  std::unique_lock lock(r.mutex);
  r.cv.wait(lock, [&r] { return r.finished; });
}

void nfs_client::core::shutdown() {
  {
    std::lock_guard lock(submit_mutex);
    if (stopping) return;
    stopping = true;
    asio::post(io, [this] { do_shutdown(); });
  }
  if (thread.joinable()) thread.join();
}

// --- the I/O thread: requests ---------------------------------------------------------------

void nfs_client::core::notify(nfs_request& r) noexcept {
  if (r.item.handle && r.resume_here && !stopped) {
    r.item.next = nullptr;
    (ready_tail != nullptr ? ready_tail->next : ready_head) = &r.item;
    ready_tail = &r.item;
    if (!batching && !in_ready_loop && !ready_posted) {  // on_ready(), flush() run them when done
      ready_posted = true;
      asio::post(io, [this] {
        ready_posted = false;
        run_ready();
      });
    }
    return;
  }
  if (r.item.handle) {
    if (batching) {
      r.item.next = nullptr;
      (batch_tail != nullptr ? batch_tail->next : batch_head) = &r.item;
      batch_tail = &r.item;
      ++batch_count;
      return;
    }
    exec.post(r.item);  // last touch of `r.item`: the coroutine may run at once
    return;
  }
  std::lock_guard lock(r.mutex);  // notify under the lock: the waiter may free `r` right after
  r.finished = true;
  r.cv.notify_all();
}

void nfs_client::core::start(std::shared_ptr<nfs_request> r) {
  if (stopped) {
    complete(std::move(r), ECANCELED, "the client was shut down");
    return;
  }
  n_requests.fetch_add(1, std::memory_order_relaxed);
  active.emplace(r.get(), r);
  r->deadline_timer = std::make_unique<asio::steady_timer>(io, r->deadline_at);
  r->deadline_timer->async_wait([this, r](const boost::system::error_code& ec) {
    if (ec || r->done) return;
    n_timeouts.fetch_add(1, std::memory_order_relaxed);
    complete(r, ETIMEDOUT, "no reply within the deadline of " + std::to_string(r->deadline.count()) + " ms");
  });
  dispatch(r);
}

void nfs_client::core::dispatch(const std::shared_ptr<nfs_request>& r) {
  if (r->done) return;
  if (in_flight >= options.max_in_flight) {
    waiting.push_back(r);
    return;
  }
  issue(r);
  arm();
}

void nfs_client::core::issue(const std::shared_ptr<nfs_request>& r) {
  if (r->kind == op_kind::close) {
    // NFSv3 has no CLOSE: libnfs just frees the handle (at once, or when a
    // timed-out call on it has finally replied).
    ++r->attempts;
    release_handle(r->fh);
    complete(r, 0, {});
    return;
  }
  ++r->attempts;
  if (link_down) {  // nothing to send it on: fail now, and make sure a reconnect is tried
    reconnect_wanted = true;
    fail_or_retry(r, EIO, link_error);
    return;
  }
  auto* c = new call{this, r, r->attempts};
  calls.insert(c);
  ++queued_since_flush;
  ++in_flight;
  if (in_flight > n_max_in_flight.load(std::memory_order_relaxed))
    n_max_in_flight.store(in_flight, std::memory_order_relaxed);
  nfs_context* nfs = ctx.get();
  int rc = -1;
  switch (r->kind) {
    case op_kind::mount:
      rc = nfs_mount_async(nfs, server.c_str(), export_path.c_str(), &on_reply, c);
      socket_may_have_changed = true;
      break;
    case op_kind::open: rc = nfs_open_async(nfs, r->path.c_str(), O_RDONLY, &on_reply, c); break;
    case op_kind::fstat:
      ++handle_calls[r->fh];
      rc = nfs_fstat64_async(nfs, r->fh, &on_reply, c);
      break;
    case op_kind::pread:
      ++handle_calls[r->fh];
      rc = nfs_pread_async(nfs, r->fh, r->offset, r->count, &on_reply, c);
      break;
    case op_kind::close: break;  // above
    case op_kind::opendir: rc = nfs_opendir_async(nfs, r->path.c_str(), &on_reply, c); break;
  }
  // Refused: libnfs will not call back (unless it already did, in which case
  // on_reply has taken `c` out of `calls`).
  if (rc != 0 && calls.erase(c) != 0) {
    if (!c->abandoned) --in_flight;
    delete c;
    if (r->kind == op_kind::fstat || r->kind == op_kind::pread) call_on_handle_done(r->fh);
    fail_or_retry(r, rc < -1 ? errno_of(rc) : EIO, error_text(nfs));
  }
}

void nfs_client::core::on_reply(int status, nfs_context* nfs, void* data, void* private_data) {
  std::unique_ptr<call> c(static_cast<call*>(private_data));
  core& self = *c->owner;
  self.calls.erase(c.get());
  if (!c->abandoned) --self.in_flight;
  if (!self.waiting.empty()) self.post_pump();
  nfs_request& r = *c->request;
  if (r.kind == op_kind::fstat || r.kind == op_kind::pread) self.call_on_handle_done(r.fh);
  if (r.done || c->attempt != r.attempts) {  // timed out, cancelled or failed over: nobody waits for it
    self.late_reply(r, status, nfs, data);
    return;
  }
  if (status < 0) {
    self.fail_or_retry(c->request, errno_of(status), error_text(nfs));
    return;
  }
  switch (r.kind) {
    case op_kind::open:
      r.fh = static_cast<nfsfh*>(data);
      self.open_handles.insert(r.fh);
      break;
    case op_kind::fstat: r.size = static_cast<const nfs_stat_64*>(data)->nfs_size; break;
    case op_kind::pread: {
      // libnfs 4.0 hands us its own buffer: copy out now (the request is
      // live, so `dest` is too).
      const std::size_t n = std::min(static_cast<std::size_t>(status), r.count);
      if (n != 0) std::memcpy(r.dest, data, n);
      r.bytes = n;
      break;
    }
    case op_kind::opendir: {
      auto* dir = static_cast<nfsdir*>(data);
      while (nfsdirent* e = nfs_readdir(nfs, dir)) {
        if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
        r.entries.push_back({e->name, e->type == NF3DIR, e->size});
      }
      nfs_closedir(nfs, dir);
      break;
    }
    case op_kind::mount:
    case op_kind::close: break;
  }
  self.complete(c->request, 0, {});
}

// Gives `fh` back to libnfs, unless a call on it is still out: a READ that
// succeeds late touches its handle, so the handle outlives every call on it.
void nfs_client::core::release_handle(nfsfh* fh) {
  if (handle_calls.count(fh) != 0) {
    closing.insert(fh);
    return;
  }
  if (open_handles.erase(fh) != 0) nfs_close_async(ctx.get(), fh, &on_ignored_reply, nullptr);
}

void nfs_client::core::call_on_handle_done(nfsfh* fh) {
  const auto it = handle_calls.find(fh);
  if (it == handle_calls.end() || --it->second != 0) return;
  handle_calls.erase(it);
  if (closing.erase(fh) == 0 || stopped) return;  // at shutdown do_shutdown frees it
  // Not from within the libnfs callback that got us here.
  asio::post(io, [this, fh] {
    if (!stopped) release_handle(fh);
  });
}

void nfs_client::core::late_reply(nfs_request& r, int status, nfs_context* nfs, void* data) {
  if (status < 0) return;
  if (r.kind == op_kind::opendir) {
    nfs_closedir(nfs, static_cast<nfsdir*>(data));
  } else if (r.kind == op_kind::open) {
    // An open that came back after its deadline: close the handle, later
    // (libnfs must not be re-entered from its callback), or at shutdown.
    auto* fh = static_cast<nfsfh*>(data);
    open_handles.insert(fh);
    if (stopped) return;
    asio::post(io, [this, fh] {
      if (!stopped) release_handle(fh);
    });
  }
  // pread: the data is libnfs's and simply dropped.
}

void nfs_client::core::fail_or_retry(const std::shared_ptr<nfs_request>& r, int err, std::string reason) {
  if (r->done) return;
  // A close has already released the handle, and a failed mount leaves the
  // context in no state to repeat it: neither is retried.
  if (!stopped && retry_policy::transient(err) && r->kind != op_kind::close && r->kind != op_kind::mount &&
      r->attempts <= options.retry.retries) {
    const auto delay = options.retry.delay(r->attempts - 1);
    if (steady::now() + delay >= r->deadline_at) {
      n_timeouts.fetch_add(1, std::memory_order_relaxed);
      complete(r, ETIMEDOUT,
               "deadline of " + std::to_string(r->deadline.count()) + " ms reached before retry " +
                   std::to_string(r->attempts) + " of " + std::to_string(options.retry.retries) + "; last error: " +
                   reason + " (" + std::strerror(err) + ")");
      return;
    }
    n_retries.fetch_add(1, std::memory_order_relaxed);
    r->retry_timer = std::make_unique<asio::steady_timer>(io, delay);
    r->retry_timer->async_wait([this, r](const boost::system::error_code& ec) {
      if (ec || r->done || stopped) return;
      dispatch(r);
    });
    return;
  }
  if (r->attempts > 1) reason += " (after " + std::to_string(r->attempts - 1) + " retries)";
  complete(r, err, std::move(reason));
}

void nfs_client::core::complete(std::shared_ptr<nfs_request> r, int err, std::string reason) {
  if (r->done) return;
  r->done = true;
  r->error = err;
  r->reason = std::move(reason);
  // Destroying a timer cancels its wait; the handler still runs (aborted)
  // and drops its reference then.
  r->deadline_timer.reset();
  r->retry_timer.reset();
  active.erase(r.get());
  notify(*r);
}

void nfs_client::core::post_pump() {
  if (pump_posted || stopped) return;
  pump_posted = true;
  // Not from within a libnfs callback: libnfs must not be re-entered there.
  asio::post(io, [this] { pump(); });
}

void nfs_client::core::pump() {
  pump_posted = false;
  if (stopped) return;
  while (!waiting.empty() && in_flight < options.max_in_flight) {
    std::shared_ptr<nfs_request> r = std::move(waiting.front());
    waiting.pop_front();
    if (!r->done) issue(r);
  }
  arm();
}

// --- the I/O thread: the socket ---------------------------------------------------------------

// Points `socket` at libnfs's current descriptor. libnfs replaces its socket
// on every reconnect (and during the mount, moving from the portmapper to
// mountd to nfsd), often under the same descriptor number (it dup2()s the new
// socket over the old), which an epoll registration does not follow: the
// socket is recognised by its inode, and the old registration released (never
// closed: the descriptor is libnfs's).
void nfs_client::core::watch_socket() {
  socket_may_have_changed = false;
  const int fd = nfs_get_fd(ctx.get());
  struct stat st {};
  const bool valid = fd >= 0 && ::fstat(fd, &st) == 0;
  if (valid && fd == watched_fd && st.st_dev == watched_dev && st.st_ino == watched_ino) return;
  if (!valid && watched_fd < 0) return;
  ++generation;  // waits on the old socket are cancelled below and ignored when they report
  read_armed = write_armed = false;
  if (socket.is_open()) (void)socket.release();  // cancels its waits
  watched_fd = -1;
  if (!valid) return;
  boost::system::error_code ec;
  socket.assign(fd, ec);
  if (ec) return;  // tick() tries again
  watched_fd = fd;
  watched_dev = st.st_dev;
  watched_ino = st.st_ino;
  // libnfs 4.0 leaves Nagle's algorithm on, which holds each request queued
  // behind an unacknowledged one back until the server's (delayed) ACK:
  // pipelined requests would go out in bursts, one round trip apart. The
  // kernel's own RPC client and later libnfs set TCP_NODELAY.
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for what libnfs wants: always readable while connected (replies, or
// the server closing), writable while requests are queued or a connect is
// under way. A socket with nothing outstanding is not watched for writing:
// one that is dead reports "writable" (hung up) for ever.
void nfs_client::core::arm() {
  if (stopped || !ctx) return;
  if (socket_may_have_changed) watch_socket();
  if (watched_fd < 0) return;
  const int events = nfs_which_events(ctx.get());
  const bool connected = (events & POLLIN) != 0;
  if (connected && link_down) {  // a reconnect went through
    link_down = false;
    reconnect_delay = std::chrono::milliseconds(0);
  }
  if ((events & POLLIN) && !read_armed) {
    read_armed = true;
    socket.async_wait(asio::posix::stream_descriptor::wait_read,
                      [this, gen = generation](const boost::system::error_code& ec) { on_ready(gen, POLLIN, ec); });
  }
  if (!(events & POLLOUT) || write_armed) return;
  if (connected && !flush_stalled) {
    // Requests to send: write them after the handlers already queued (more
    // requests, most likely) have run, all in one go, without a trip
    // through epoll for a socket that is writable anyway.
    if (!flush_posted) {
      flush_posted = true;
      asio::post(io, [this] { flush(); });
    }
    return;
  }
  if (!connected) {
    // Connecting (libnfs starts the next attempt as soon as one fails):
    // worth watching only for something that needs the connection, and
    // after a failure not before `next_reconnect`.
    if (in_flight == 0 && !reconnect_wanted && nfs_queue_length(ctx.get()) == 0) return;
    if (link_down && steady::now() < next_reconnect) {
      if (!reconnect_timer_armed) {
        reconnect_timer_armed = true;
        reconnect_timer.expires_at(next_reconnect);
        reconnect_timer.async_wait([this](const boost::system::error_code& ec) {
          reconnect_timer_armed = false;
          if (!ec && !stopped) arm();
        });
      }
      return;
    }
    reconnect_wanted = false;
  }
  write_armed = true;
  socket.async_wait(asio::posix::stream_descriptor::wait_write,
                    [this, gen = generation](const boost::system::error_code& ec) { on_ready(gen, POLLOUT, ec); });
}

void nfs_client::core::flush() {
  flush_posted = false;
  if (stopped) return;
  const unsigned queued = std::exchange(queued_since_flush, 0);
  const int events = nfs_which_events(ctx.get());
  if ((events & POLLIN) && (events & POLLOUT)) {
    // Several requests queued (pipelined): libnfs send()s each on its own,
    // and with TCP_NODELAY each would be a segment of its own, a trip
    // through the (loopback) stack and a wake-up of the server apiece.
    // Corked, they leave together when uncorked.
    const bool cork = queued > 1 && watched_fd >= 0;
    const int on = 1, off = 0;
    if (cork) (void)::setsockopt(watched_fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    batching = true;
    (void)nfs_service(ctx.get(), POLLOUT);
    socket_may_have_changed = true;
    batching = false;
    if (cork && watched_fd >= 0) (void)::setsockopt(watched_fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    resume_batch();
    run_ready();
    const int after = nfs_which_events(ctx.get());
    flush_stalled = (after & POLLIN) && (after & POLLOUT);
  }
  arm();
}

void nfs_client::core::run_ready() {
  if (in_ready_loop) return;
  in_ready_loop = true;
  while (ready_head != nullptr && !stopped) {
    work_item* item = ready_head;
    ready_head = item->next;  // read before resuming: the item may die at once
    if (ready_head == nullptr) ready_tail = nullptr;
    // Runs the coroutine's next step, which may start (and finish, and
    // queue here) more operations.
    item->handle.resume();
  }
  in_ready_loop = false;
}

void nfs_client::core::resume_batch() noexcept {
  if (batch_head == nullptr) return;
  work_item* first = std::exchange(batch_head, nullptr);
  batch_tail = nullptr;
  exec.post_list(first, std::exchange(batch_count, 0));  // last touch of those items
}

// A connect attempt failed: the server is unreachable for now. Everything
// sent or queued on the connection fails (and is retried as configured) at
// once; libnfs keeps the calls until its own timeout or a reconnect, and
// their replies are dropped then.
void nfs_client::core::on_connect_failed(int err) {
  link_down = true;
  link_error = "cannot connect to " + server + ": " + (err != 0 ? std::strerror(err) : "connection failed");
  reconnect_delay = std::clamp(reconnect_delay * 2, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  next_reconnect = steady::now() + reconnect_delay;
  std::vector<call*> bound;
  for (call* c : calls)
    if (!c->abandoned) bound.push_back(c);
  for (call* c : bound) {
    c->abandoned = true;
    --in_flight;
  }
  for (call* c : bound) {
    const std::shared_ptr<nfs_request> r = c->request;  // `c` may be freed by what follows
    if (!r->done && c->attempt == r->attempts) fail_or_retry(r, EIO, link_error);
  }
  if (!waiting.empty()) post_pump();
}

void nfs_client::core::on_ready(unsigned gen, int direction, const boost::system::error_code& ec) {
  if (gen != generation) return;  // a wait on a socket libnfs has since replaced
  (direction == POLLIN ? read_armed : write_armed) = false;
  if (direction == POLLOUT) flush_stalled = false;
  if (stopped) return;
  if (!ec) {
    batching = true;
    const int events = nfs_which_events(ctx.get());
    int revents = 0;
    if (events & POLLIN) {
      // Connected: what Asio reports is what libnfs waits for. A closed or
      // reset connection shows as a read of 0 or an error, which libnfs
      // answers by reconnecting.
      revents = direction & events;
    } else {
      // Connecting: libnfs must hear of errors and hang-ups (a refused
      // connection), and must not be told "readable": ask poll().
      pollfd p{watched_fd, static_cast<short>(events), 0};
      if (::poll(&p, 1, 0) > 0) revents = p.revents;
      if ((revents & (POLLERR | POLLHUP)) && watched_ino != failed_ino) {
        // The attempt failed (refused, unreachable, reset).
        int err = 0;
        socklen_t len = sizeof err;
        (void)::getsockopt(watched_fd, SOL_SOCKET, SO_ERROR, &err, &len);
        failed_ino = watched_ino;
        on_connect_failed(err);
      }
    }
    if (revents != 0) {
      // Lets libnfs read, write, reconnect (autoreconnect) and time calls
      // out; -1 only says the connection is lost, which the above and the
      // deadlines handle.
      (void)nfs_service(ctx.get(), revents);
      socket_may_have_changed = true;
    }
    batching = false;
    resume_batch();
    run_ready();
  }
  arm();
}

void nfs_client::core::tick() {
  ticker.expires_after(std::min<std::chrono::milliseconds>(tick_period, std::max(options.retry.deadline / 4,
                                                                                  std::chrono::milliseconds(10))));
  ticker.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    if (!active.empty() || in_flight > 0) {
      batching = true;
      (void)nfs_service(ctx.get(), 0);  // libnfs's RPC timeouts
      batching = false;
      resume_batch();
      run_ready();
      socket_may_have_changed = true;
      arm();
    }
    tick();
  });
}

void nfs_client::core::do_shutdown() {
  stopped = true;
  ticker.cancel();
  reconnect_timer.cancel();
  std::vector<std::shared_ptr<nfs_request>> victims;
  victims.reserve(active.size());
  for (auto& entry : active) victims.push_back(entry.second);
  for (auto& r : victims) complete(std::move(r), ECANCELED, "the client was shut down");
  waiting.clear();
  // Coroutines still due to resume here go on on the executor instead.
  while (ready_head != nullptr) {
    work_item* item = ready_head;
    ready_head = item->next;
    exec.post(*item);
  }
  ready_tail = nullptr;
  if (ctx) {
    // Calls still out on these handles are cancelled below, and a cancelled
    // call does not touch its handle.
    for (nfsfh* fh : open_handles) nfs_close_async(ctx.get(), fh, &on_ignored_reply, nullptr);
    open_handles.clear();
    closing.clear();
    handle_calls.clear();
  }
  ++generation;
  if (socket.is_open()) (void)socket.release();  // the descriptor is libnfs's: it closes it
  ctx.reset();  // libnfs cancels what it still holds; on_reply finds those requests done
  for (call* c : calls) delete c;
  calls.clear();
  in_flight = 0;
  io.stop();
}

// --- coroutines --------------------------------------------------------------------------------

namespace {

bool is_cancelled(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& se) {
    return se.code().value() == ECANCELED;
  } catch (...) {
  }
  return false;
}

}  // namespace

task<std::size_t> nfs_client::core::read(std::shared_ptr<core> c, std::string path, std::uint64_t offset,
                                         std::optional<std::size_t> size, read_buffer& buffer) {
  const std::string url = c->url_of(path);
  const std::string nfs_path = libnfs_path(path);
  buffer.set_size(0);
  std::exception_ptr failure;
  std::size_t total = 0;

  // The steps run on the I/O thread, each issued the moment the one before
  // completes: no hand-off between threads per step (as ring's thread does
  // for chains of small I/O). Only the caller's continuation goes through
  // the executor, below. The work done here between steps is light.
  co_await io_thread_operation{*c};
  nfsfh* fh = nullptr;
  try {
    operation open(c, c->make(op_kind::open, url));
    open.request->path = nfs_path;
    fh = (co_await open).fh;
  } catch (...) {
    failure = std::current_exception();
  }
  if (fh != nullptr) {
    try {
      std::uint64_t want = 0;
      if (size) {
        want = *size;
      } else {
        operation st(c, c->make(op_kind::fstat, url));
        st.request->fh = fh;
        want = (co_await st).size;
        if (want > std::numeric_limits<std::size_t>::max() / 2)
          throw std::system_error(std::error_code(EFBIG, std::system_category()),
                                  url + ": file of " + std::to_string(want) + " bytes is too large to read whole");
      }
      buffer.reserve(static_cast<std::size_t>(want));
      while (total < want) {
        operation rd(c, c->make(op_kind::pread, url));
        nfs_request& r = *rd.request;
        r.fh = fh;
        r.offset = offset + total;
        r.count = std::min<std::size_t>(max_pread, static_cast<std::size_t>(want) - total);
        r.dest = buffer.data() + total;
        const std::size_t n = (co_await rd).bytes;
        total += n;
        if (n < r.count) break;  // end of file (libnfs continues short reads itself)
      }
      buffer.set_size(total);
    } catch (...) {
      failure = std::current_exception();
      total = 0;
      buffer.set_size(0);
    }
    // A cancelled client has released the handle already.
    if (!is_cancelled(failure)) {
      operation cl(c, c->make(op_kind::close, url));
      cl.request->fh = fh;
      try {
        co_await cl;
      } catch (const std::system_error& e) {
        // ECANCELED: shut down meanwhile, the handle is released. After a
        // failure the first error is the one to report.
        if (!failure && e.code().value() != ECANCELED) failure = std::current_exception();
      }
    }
  }
  co_await executor_operation{c->exec};  // the caller goes on on the executor
  if (failure) std::rethrow_exception(failure);
  co_return total;
}

// --- nfs_client ------------------------------------------------------------------------------

nfs_client::nfs_client(std::string server, std::string export_path, executor& resume_on, nfs_options options)
    : m_core(std::make_shared<core>(std::move(server), std::move(export_path), resume_on, options)) {
  auto r = m_core->make(op_kind::mount, m_core->base_url);
  core::submit(m_core, r);
  core::wait(*r);
  if (r->error != 0) {
    m_core->shutdown();
    throw r->make_error();
  }
}

nfs_client::~nfs_client() {
  if (m_core) m_core->shutdown();
}

task<std::size_t> nfs_client::read_file(std::string path, read_buffer& buffer) {
  // The coroutine holds the core, not `this`: it may run on after the client
  // is gone (and then fails with ECANCELED).
  std::shared_ptr<core> c = m_core;
  const std::size_t n = co_await core::read(c, std::move(path), 0, std::nullopt, buffer);
  c->n_files.fetch_add(1, std::memory_order_relaxed);
  c->n_bytes.fetch_add(n, std::memory_order_relaxed);
  co_return n;
}

task<std::size_t> nfs_client::read_range(std::string path, std::uint64_t offset, std::size_t size,
                                         read_buffer& buffer) {
  std::shared_ptr<core> c = m_core;
  const std::size_t n = co_await core::read(c, std::move(path), offset, size, buffer);
  c->n_ranges.fetch_add(1, std::memory_order_relaxed);
  c->n_bytes.fetch_add(n, std::memory_order_relaxed);
  co_return n;
}

std::vector<nfs_client::entry> nfs_client::list(const std::string& dir) {
  if (m_core->on_io_thread())
    throw std::logic_error("ringfeed::io::nfs_client::list called on the client's own I/O thread");
  const std::string url = m_core->url_of(dir);
  auto r = m_core->make(op_kind::opendir, url);
  r->path = libnfs_path(dir);
  core::submit(m_core, r);
  core::wait(*r);
  if (r->error != 0) throw r->make_error();
  std::vector<entry> out = std::move(r->entries);
  std::sort(out.begin(), out.end(), [](const entry& a, const entry& b) { return a.name < b.name; });
  return out;
}

nfs_stats nfs_client::stats() const {
  const core& c = *m_core;
  nfs_stats s;
  s.files = c.n_files.load(std::memory_order_relaxed);
  s.ranges = c.n_ranges.load(std::memory_order_relaxed);
  s.bytes = c.n_bytes.load(std::memory_order_relaxed);
  s.retries = c.n_retries.load(std::memory_order_relaxed);
  s.timeouts = c.n_timeouts.load(std::memory_order_relaxed);
  s.requests = c.n_requests.load(std::memory_order_relaxed);
  s.max_in_flight = c.n_max_in_flight.load(std::memory_order_relaxed);
  return s;
}

std::string nfs_client::url() const { return m_core->base_url; }

std::string nfs_client::url_of(std::string_view path) const { return m_core->url_of(path); }

// --- nfs_url -------------------------------------------------------------------------------------

bool nfs_url::is_nfs(std::string_view text) noexcept {
  constexpr std::string_view scheme = "nfs://";
  return text.size() >= scheme.size() &&
         std::equal(scheme.begin(), scheme.end(), text.begin(),
                    [](char a, char b) { return a == static_cast<char>(std::tolower(static_cast<unsigned char>(b))); });
}

nfs_url nfs_url::parse(std::string_view url) {
  auto fail = [url](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument("invalid NFS URL '" + std::string(url) + "': " + why);
  };
  constexpr std::string_view scheme = "nfs://";
  if (!is_nfs(url)) throw fail("it does not start with nfs://");
  std::string_view rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) throw fail("query and fragment parts are not supported");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);

  nfs_url out;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw fail("unterminated '[' in the server address");
    out.server = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw fail("unexpected text after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) throw fail("empty port");
    }
  } else {
    const std::size_t colon = authority.find(':');
    out.server = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw fail("empty port");
    }
  }
  if (out.server.empty()) throw fail("no server");
  if (!port_text.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 || value > 65535)
      throw fail("port '" + std::string(port_text) + "' is not a number from 1 to 65535");
    out.port = static_cast<std::uint16_t>(value);
  }
  if (path.size() <= 1) throw fail("no export path");
  // A `//` after the first component ends a longer export path.
  if (const std::size_t boundary = path.find("//", 1); boundary != std::string_view::npos) {
    out.export_path = std::string(path.substr(0, boundary));
    out.path = std::string(path.substr(boundary + 1));
    if (out.path == "/") out.path.clear();
  } else {
    const std::size_t next = path.find('/', 1);
    out.export_path = std::string(path.substr(0, next));
    if (next != std::string_view::npos && next + 1 < path.size()) out.path = std::string(path.substr(next));
  }
  if (out.export_path.size() <= 1 || out.export_path[1] == '/') throw fail("no export path");
  return out;
}

std::string nfs_url::str() const {
  std::string out = "nfs://" + host_part(server, port) + export_path;
  // An export deeper than one component needs the `//` to be read back.
  const bool deep = export_path.find('/', 1) != std::string::npos;
  if (path.empty() || path == "/") return deep ? out + "//" : out;
  if (deep) out += '/';
  if (path.front() != '/') out += '/';
  out += path;
  return out;
}

}  // namespace ringfeed::io
