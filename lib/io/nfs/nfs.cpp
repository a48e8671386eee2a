// nfs_client: the read coroutine (open, fstat, pread, close on the I/O
// thread, the caller resumed on the executor) and the public methods. The
// rest of the client is split as nfs_core.hpp says.
#include <ringfeed/io/nfs.hpp>

#include "nfs_core.hpp"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace ringfeed::io {

using detail::nfs_request;
using detail::op_kind;

namespace {

// The path libnfs wants: absolute from the export root.
std::string libnfs_path(std::string_view p) {
  std::string out = "/";
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  out += p;
  return out;
}

// One libnfs pread at most this long: its callback reports the count as an
// int. libnfs splits each into READs of the server's maximum size, in flight
// together.
constexpr std::size_t max_pread = std::size_t{64} << 20;

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

// --- coroutines --------------------------------------------------------------------------------

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

}  // namespace ringfeed::io
