// One operation's life on the I/O thread: submitted from any thread,
// started under its deadline, issued to libnfs (or queued for a free slot),
// its reply digested, failed or retried after backoff as io::retry_policy
// says, completed, and its waiter woken: a coroutine through the executor
// (in batches while nfs_service() drains replies) or on the I/O thread
// itself, or a blocked thread.
#include "nfs_core.hpp"

#include <fcntl.h>
#include <nfsc/libnfs-raw-nfs.h>  // NF3DIR

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ringfeed::io {

namespace asio = boost::asio;
using detail::nfs_request;
using detail::op_kind;
using detail::steady;

namespace detail {

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

}  // namespace detail

namespace {

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

}  // namespace

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

// --- the I/O thread -------------------------------------------------------------------------

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
        r.entries.push_back({e->name, e->type == NF3DIR, e->size, e->mtime.tv_sec, e->mtime_nsec});
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

}  // namespace ringfeed::io
