// The connection: one libnfs context driven by the client's Asio I/O thread.
// The thread watches the context's socket for the readiness libnfs asks for
// (nfs_which_events) and runs nfs_service() when it comes; it flushes
// pipelined requests in one go, notices a failed (re)connect and spaces the
// next ones out, ticks libnfs's RPC timeouts while idle, and shuts down.
#include "nfs_core.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <nfsc/libnfs-raw-nfs.h>  // NFS_V3

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace ringfeed::io {

namespace asio = boost::asio;
using detail::host_part;
using detail::nfs_request;
using detail::steady;

namespace {

// A deadline or retry count left 0 takes the network defaults: an NFS
// operation without a deadline could wait for a dead server for ever.
nfs_options with_network_defaults(nfs_options o) noexcept {
  o.retry = o.retry.or_defaults(retry_policy::network());
  return o;
}

thread_local const void* t_io_core = nullptr;  // the core whose I/O thread this is

// How often nfs_service(0) runs while idle: libnfs checks its RPC timeouts
// there and nowhere else.
constexpr std::chrono::milliseconds tick_period{100};

}  // namespace

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

void nfs_client::core::shutdown() {
  {
    std::lock_guard lock(submit_mutex);
    if (stopping) return;
    stopping = true;
    asio::post(io, [this] { do_shutdown(); });
  }
  if (thread.joinable()) thread.join();
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

}  // namespace ringfeed::io
