#include <ringfeed/io/ring.hpp>
#include <ringfeed/text.hpp>

#include <ringfeed/detail/intrusive_fifo.hpp>

#include <fcntl.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace ringfeed::io {
namespace {

// user_data of the ring's own read of its wake-up eventfd. Operations are
// pointers to aligned objects, so they can never be 1.
constexpr std::uint64_t wake_token = 1;
// user_data of the linked timeouts that enforce ring_options::deadline.
constexpr std::uint64_t deadline_token = 2;

// Low bits of a read_file chain's user_data say which step completed (an
// operation is 8-byte aligned, and the tokens above are compared first).
constexpr std::uint64_t step_mask = 7;
constexpr std::uint64_t open_step = 1;
constexpr std::uint64_t close_step = 2;

// One SQE reads at most this much; longer reads continue as short reads.
constexpr std::size_t max_read_chunk = std::size_t{1} << 30;

int read_io_uring_disabled_sysctl() {
  std::ifstream in("/proc/sys/kernel/io_uring_disabled");
  int v = -1;
  if (in) in >> v;
  return v;
}

std::string describe_setup_error(int err) {
  std::string why = "io_uring is unavailable: ";
  switch (err) {
    case EPERM: {
      const int disabled = read_io_uring_disabled_sysctl();
      if (disabled == 2)
        why += "it is disabled system-wide (sysctl kernel.io_uring_disabled=2); "
               "set kernel.io_uring_disabled=0 to enable it";
      else if (disabled == 1)
        why += "it is limited to the group in kernel.io_uring_group (sysctl kernel.io_uring_disabled=1); "
               "add this user to that group or set kernel.io_uring_disabled=0";
      else
        why += "io_uring_setup was refused with EPERM, most likely by a seccomp profile "
               "(Docker's default profile blocks io_uring since Docker 25); run the container "
               "with a profile that allows io_uring_setup, io_uring_enter and io_uring_register "
               "(or --security-opt seccomp=unconfined)";
      break;
    }
    case ENOSYS:
      why += "this kernel has no io_uring (io_uring_setup: ENOSYS); it needs Linux 5.6 or newer "
             "built with CONFIG_IO_URING";
      break;
    case ENOMEM:
      why += "io_uring_setup could not allocate its rings (ENOMEM); before Linux 5.12 the rings "
             "count against RLIMIT_MEMLOCK: raise it (ulimit -l)";
      break;
    default:
      why += std::string("io_uring_setup failed: ") + std::strerror(err);
      break;
  }
  return why;
}

// Returns the name of the first operation ringfeed needs that the kernel
// lacks, or nullptr.
const char* missing_opcode(io_uring* uring) {
  io_uring_probe* probe = io_uring_get_probe_ring(uring);
  if (probe == nullptr) return "IORING_REGISTER_PROBE (kernel older than 5.6)";
  const char* missing = nullptr;
  if (!io_uring_opcode_supported(probe, IORING_OP_OPENAT))
    missing = "IORING_OP_OPENAT";
  else if (!io_uring_opcode_supported(probe, IORING_OP_STATX))
    missing = "IORING_OP_STATX";
  else if (!io_uring_opcode_supported(probe, IORING_OP_READ))
    missing = "IORING_OP_READ";
  else if (!io_uring_opcode_supported(probe, IORING_OP_CLOSE))
    missing = "IORING_OP_CLOSE";
  io_uring_free_probe(probe);
  return missing;
}

bool retryable(int res) noexcept { return res == -EINTR || res == -EAGAIN; }

thread_local const ring* t_ring = nullptr;  // the ring whose thread this is

}  // namespace

static_assert(sizeof(struct statx) <= 256, "ring::statx_operation::m_statx is too small");
static_assert(alignof(ring::operation) > step_mask, "a read_file chain's step goes in the low bits of user_data");

// --- ring state ----------------------------------------------------------------

struct ring::state {
  explicit state(executor& e) : exec(e) {}
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state() {
    if (uring_ready) io_uring_queue_exit(&uring);
  }  // then event_fd closes

  executor& exec;
  io_uring uring{};
  bool uring_ready = false;
  detail::unique_fd event_fd;
  unsigned max_in_flight = 0;
  // read_file: a registered sparse file table, and its free slots (ring
  // thread only). Empty when linked reads are off.
  bool linked = false;
  std::vector<unsigned> free_slots;

  // Submission list: a lock-free LIFO stack any thread pushes onto; the ring
  // thread takes it whole and reverses it.
  std::atomic<operation*> incoming{nullptr};
  // True while the ring thread is (about to be) blocked in the kernel.
  std::atomic<bool> sleeping{false};
  std::atomic<bool> stopping{false};
  // Threads inside submit(). Once an operation is published it may complete,
  // its coroutine finish, and its owner destroy the ring, while the submitter
  // is still waking the ring thread: ~ring waits for this to drop to zero.
  std::atomic<unsigned> active_submitters{0};

  std::atomic<std::uint64_t> submitted{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> enter_calls{0};
  std::atomic<std::uint64_t> timeouts{0};

  // Linked timeouts: the kernel reads the timespec when it takes the SQE.
  bool has_deadline = false;
  __kernel_timespec deadline{};

  // Ring thread only.
  detail::intrusive_fifo<operation, &operation::m_next> pending;  // waiting for an SQE
  detail::intrusive_fifo<operation, &operation::m_next> ready;    // finished, to resume here
  // Completions still to come from the kernel, the wake-up read's and the
  // linked timeouts' excluded (a read_file chain counts its three).
  unsigned in_flight = 0;
  bool wake_armed = false;
  std::uint64_t event_buffer = 0;
  std::vector<std::pair<std::uint64_t, int>> reaped;

  void wake_thread() noexcept {
    const std::uint64_t one = 1;
    // A failed write can only mean the counter is saturated: already awake.
    [[maybe_unused]] ssize_t n = ::write(event_fd.get(), &one, sizeof one);
  }

  // A round of the ring thread, step by step (ring::run).
  void take_incoming() noexcept;
  void arm_wake() noexcept;
  void start_pending() noexcept;
  [[nodiscard]] bool drained() const noexcept;
  void enter() noexcept;
  void reap() noexcept;
  void resume_ready() noexcept;

  // For the operations (ring thread only).
  /// Queues an operation taken from a coroutine: to the kernel, or straight
  /// to the ready list when it needs none (schedule).
  void queue(operation& op) noexcept { (op.m_cqes == 0 ? ready : pending).push_back(&op); }
  /// The next free SQE, submitting what is queued first if the SQ is full.
  [[nodiscard]] io_uring_sqe* get_sqe() noexcept;
  /// SQEs an operation takes: one per completion, plus its linked timeout.
  [[nodiscard]] unsigned sqes_of(const operation& op) const noexcept {
    return op.m_cqes + (has_deadline && op.m_deadline_bound ? 1u : 0u);
  }
  /// Tags `sqe` as `op`'s and, for a deadline-bound operation under a
  /// deadline, links a timeout after it (in the next SQE, which the caller
  /// made room for: the link never spans submissions).
  void tag(io_uring_sqe* sqe, operation& op) noexcept;
  /// Records a failed completion (-errno) as op's error.
  void fail(operation& op, int res) noexcept;
};

// --- setup and teardown --------------------------------------------------------

ring::ring(executor& resume_on, ring_options options) : m_state(std::make_unique<state>(resume_on)) {
  state& s = *m_state;
  io_uring_params params{};
  params.flags = IORING_SETUP_CQSIZE;
  params.cq_entries = std::max(4u, options.entries) * 2;
  if (options.sqpoll) {
    params.flags |= IORING_SETUP_SQPOLL;
    params.sq_thread_idle = options.sqpoll_idle_ms;
  }
  // At least 4 SQEs: the wake-up read plus one read_file chain of three.
  const int rc = io_uring_queue_init_params(std::max(4u, options.entries), &s.uring, &params);
  if (rc < 0) throw ring_unavailable(std::error_code(-rc, std::system_category()), describe_setup_error(-rc));
  s.uring_ready = true;
  if (const char* missing = missing_opcode(&s.uring))
    throw ring_unavailable(std::error_code(ENOSYS, std::system_category()),
                           std::string("io_uring is unavailable: the kernel lacks ") + missing +
                               ", which ringfeed needs (Linux 5.6 or newer)");
  // A linked timeout posts its own completion too: half the CQ for each.
  s.has_deadline = options.deadline.count() > 0;
  if (s.has_deadline) {
    s.deadline.tv_sec = options.deadline.count() / 1'000'000'000;
    s.deadline.tv_nsec = options.deadline.count() % 1'000'000'000;
  }
  s.max_in_flight = s.has_deadline ? params.cq_entries / 2 : params.cq_entries;
  s.reaped.reserve(params.cq_entries);
  if (options.linked_reads && !s.has_deadline) {
    // One slot per chain the CQ bound lets into the kernel at once.
    const unsigned slots = s.max_in_flight / 3 + 1;
    if (io_uring_register_files_sparse(&s.uring, slots) == 0) {
      s.linked = true;
      s.free_slots.reserve(slots);
      for (unsigned i = slots; i-- > 0;) s.free_slots.push_back(i);
    }  // else (before Linux 5.19): callers use openat/read/close
  }
  s.event_fd.reset(::eventfd(0, EFD_CLOEXEC));
  if (!s.event_fd) throw std::system_error(errno, std::system_category(), "ringfeed::io::ring: eventfd");
  m_thread = std::thread([this] { run(); });
}

ring::~ring() {
  m_state->stopping.store(true, std::memory_order_release);
  m_state->wake_thread();
  m_thread.join();
  // acquire: pairs with the submitters' release decrement; their increment
  // happens-before this load (it precedes the publication that led here).
  while (m_state->active_submitters.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

std::string ring::unavailable_reason() {
  io_uring probe_ring{};
  const int rc = io_uring_queue_init(2, &probe_ring, 0);
  if (rc < 0) return describe_setup_error(-rc);
  const char* missing = missing_opcode(&probe_ring);
  io_uring_queue_exit(&probe_ring);
  if (missing != nullptr) return std::string("io_uring is unavailable: the kernel lacks ") + missing;
  return {};
}

ring_stats ring::stats() const noexcept {
  const state& s = *m_state;
  return {s.submitted.load(std::memory_order_relaxed), s.completed.load(std::memory_order_relaxed),
          s.retries.load(std::memory_order_relaxed), s.enter_calls.load(std::memory_order_relaxed),
          s.timeouts.load(std::memory_order_relaxed)};
}

// --- submission (any thread) --------------------------------------------------------

void ring::operation::await_suspend(std::coroutine_handle<> h) noexcept {
  m_item.handle = h;
  m_ring->submit(*this);  // `this` may complete and be gone once submitted
}

bool ring::on_ring_thread() const noexcept { return t_ring == this; }

bool ring::linked_reads() const noexcept { return m_state->linked; }

void ring::submit(operation& op) noexcept {
  state& s = *m_state;
  if (t_ring == this) {
    // Started by a coroutine running on the ring thread: no hand-off, and it
    // resumes here. schedule() from here is a plain yield.
    op.m_resume_on_ring = true;
    s.queue(op);
    return;
  }
  op.m_resume_on_ring = op.m_cqes == 0;  // schedule() moves the coroutine to the ring thread
  s.active_submitters.fetch_add(1, std::memory_order_relaxed);
  operation* head = s.incoming.load(std::memory_order_relaxed);
  do {
    op.m_next = head;
    // seq_cst: release publishes the operation to the ring thread's acquire
    // exchange; seq_cst orders it before the load of `sleeping` below
    // (Dekker's handshake with the ring thread, which stores `sleeping` and
    // then loads `incoming`, both seq_cst).
  } while (!s.incoming.compare_exchange_weak(head, &op, std::memory_order_seq_cst,
                                             std::memory_order_relaxed));
  if (s.sleeping.load(std::memory_order_seq_cst) &&
      s.sleeping.exchange(false, std::memory_order_acq_rel))
    s.wake_thread();  // only the first submitter after it slept pays the syscall
  s.active_submitters.fetch_sub(1, std::memory_order_release);  // last touch of the ring
}

ring::statx_operation ring::statx(const file& f) {
  return statx_operation{*this, f.fd(), std::string(), AT_EMPTY_PATH, f.path()};
}

// --- completion results (the awaiting thread) --------------------------------------

void ring::operation::throw_if_failed(std::string_view verb, std::string_view path) const {
  if (m_error == 0) return;
  std::string what(verb);
  what += " '";
  what += escape_bytes(path);  // a file name: bytes, not text
  what += '\'';
  throw std::system_error(std::error_code(m_error, std::system_category()), what);
}

file ring::openat_operation::await_resume() {
  throw_if_failed("open", m_path);
  return file{m_fd, std::move(m_path)};
}

file_info ring::statx_operation::await_resume() {
  throw_if_failed("statx", m_error_path.empty() ? std::string_view(m_path) : m_error_path);
  const auto* stx = reinterpret_cast<const struct statx*>(m_statx);
  file_info info;
  info.size = stx->stx_size;
  info.mode = stx->stx_mode;
  info.block_size = stx->stx_blksize;
  info.mtime_ns = static_cast<std::int64_t>(stx->stx_mtime.tv_sec) * 1'000'000'000 + stx->stx_mtime.tv_nsec;
  return info;
}

std::size_t ring::read_operation::await_resume() {
  if (m_error != 0) {
    std::string where = m_error_path.empty() ? "fd " + std::to_string(m_fd)
                                             : escape_bytes(m_error_path);
    where += m_offset == stream_position ? "' after " + std::to_string(m_done) + " bytes"
                                         : "' at offset " + std::to_string(m_offset + m_done);
    std::string what = "read '" + where;
    throw std::system_error(std::error_code(m_error, std::system_category()), what);
  }
  return m_done;
}

void ring::close_operation::await_resume() { throw_if_failed("close", m_path); }

bool ring::read_file_operation::await_ready() noexcept {
  if (m_ring->linked_reads()) return false;
  m_open_res = -EOPNOTSUPP;
  m_error = EOPNOTSUPP;
  return true;
}

std::size_t ring::read_file_operation::await_resume() {
  if (m_open_res < 0) throw_if_failed("open", *m_path);
  if (m_error != 0) {
    throw std::system_error(std::error_code(m_error, std::system_category()),
                            "read '" + escape_bytes(*m_path) + "' at offset 0");
  }
  return static_cast<std::size_t>(m_read_res);
}

// --- each operation prepares and completes itself (the ring thread) ------------------

ring::operation::outcome ring::operation::complete(state& s, std::uint64_t /*step*/, int res) noexcept {
  if (retryable(res)) return outcome::again;
  if (res < 0) s.fail(*this, res);
  return outcome::done;
}

void ring::openat_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_openat(sqe, m_dirfd, m_path.c_str(), m_flags | O_CLOEXEC, m_mode);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::openat_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res >= 0) {
    m_fd = res;
    return outcome::done;
  }
  return operation::complete(s, step, res);
}

void ring::statx_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_statx(sqe, m_dirfd, m_path.c_str(), m_at_flags, STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME,
                      reinterpret_cast<struct statx*>(m_statx));
  s.tag(sqe, *this);
}

void ring::read_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  const std::size_t len = std::min(m_buffer.size() - m_done, max_read_chunk);
  const std::uint64_t offset = m_offset == stream_position ? stream_position : m_offset + m_done;  // -1: current position
  io_uring_prep_read(sqe, m_fd, m_buffer.data() + m_done, static_cast<unsigned>(len), offset);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::read_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res <= 0) return operation::complete(s, step, res);  // a retry, an error, or 0: end of file
  m_done += static_cast<std::size_t>(res);
  // A short read continues from where it stopped.
  return m_once || m_done >= m_buffer.size() ? outcome::done : outcome::again;
}

void ring::close_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  io_uring_prep_close(sqe, m_fd);
  s.tag(sqe, *this);
}

void ring::sleep_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  auto* ts = reinterpret_cast<__kernel_timespec*>(m_timespec);
  ts->tv_sec = m_duration.count() / 1'000'000'000;
  ts->tv_nsec = m_duration.count() % 1'000'000'000;
  io_uring_prep_timeout(sqe, ts, 0, 0);
  s.tag(sqe, *this);
}

ring::operation::outcome ring::sleep_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (res == -ETIME) return outcome::done;  // the timeout expired: done
  return operation::complete(s, step, res);
}

// A chain must end (and free its slot) before another can start.
bool ring::read_file_operation::can_prepare(const state& s) const noexcept { return !s.free_slots.empty(); }

void ring::read_file_operation::prepare(state& s, io_uring_sqe* sqe) noexcept {
  const auto self = reinterpret_cast<std::uint64_t>(static_cast<operation*>(this));
  m_slot = s.free_slots.back();
  s.free_slots.pop_back();
  m_pending_cqes = 3;
  m_open_res = m_read_res = 0;
  // No O_CLOEXEC: a direct descriptor is no descriptor, and the kernel
  // refuses the flag with a slot (EINVAL).
  io_uring_prep_openat_direct(sqe, AT_FDCWD, m_path->c_str(), m_flags & ~O_CLOEXEC, 0, m_slot);
  sqe->flags |= IOSQE_IO_LINK;  // a failed open cancels the read and the close
  io_uring_sqe_set_data64(sqe, self | open_step);
  io_uring_sqe* rd = io_uring_get_sqe(&s.uring);
  const auto len = static_cast<unsigned>(std::min(m_buffer.size(), max_read_chunk));
  io_uring_prep_read(rd, static_cast<int>(m_slot), m_buffer.data(), len, 0);
  rd->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;  // the close runs whatever the read gave
  io_uring_sqe_set_data64(rd, self);
  io_uring_sqe* cl = io_uring_get_sqe(&s.uring);
  io_uring_prep_close_direct(cl, m_slot);
  io_uring_sqe_set_data64(cl, self | close_step);
}

// Done once all three steps have completed, with the outcome set; the whole
// chain goes again on EINTR/EAGAIN (it is closed by then).
ring::operation::outcome ring::read_file_operation::complete(state& s, std::uint64_t step, int res) noexcept {
  if (step == open_step)
    m_open_res = res;
  else if (step == close_step)
    s.free_slots.push_back(m_slot);  // the chain is done with it (closed, or never filled)
  else
    m_read_res = res;
  if (--m_pending_cqes != 0) return outcome::waiting;
  if (retryable(m_open_res) || retryable(m_read_res)) return outcome::again;
  if (m_open_res < 0)
    m_error = -m_open_res;
  else if (m_read_res < 0)
    m_error = -m_read_res;
  return outcome::done;
}

// --- the ring thread's round --------------------------------------------------------

io_uring_sqe* ring::state::get_sqe() noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(&uring);
  if (sqe == nullptr) {  // SQ full: hand what we have to the kernel first
    io_uring_submit(&uring);
    enter_calls.fetch_add(1, std::memory_order_relaxed);
    sqe = io_uring_get_sqe(&uring);
  }
  return sqe;
}

void ring::state::tag(io_uring_sqe* sqe, operation& op) noexcept {
  io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uint64_t>(&op));
  if (has_deadline && op.m_deadline_bound) {
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe* t = io_uring_get_sqe(&uring);
    io_uring_prep_link_timeout(t, &deadline, 0);
    io_uring_sqe_set_data64(t, deadline_token);
  }
}

void ring::state::fail(operation& op, int res) noexcept {
  // With a deadline, ECANCELED means the linked timeout fired first.
  op.m_error = res == -ECANCELED && has_deadline ? ETIMEDOUT : -res;
  if (op.m_error == ETIMEDOUT && res == -ECANCELED) timeouts.fetch_add(1, std::memory_order_relaxed);
}

// 1. Take everything submitted since the last round, oldest first.
void ring::state::take_incoming() noexcept {
  // acquire: pairs with the submitters' release CAS.
  operation* list = incoming.exchange(nullptr, std::memory_order_acquire);
  operation* reversed = nullptr;
  while (list != nullptr) {
    operation* next = list->m_next;
    list->m_next = reversed;
    reversed = list;
    list = next;
  }
  while (reversed != nullptr) {
    operation* next = reversed->m_next;
    queue(*reversed);
    reversed = next;
  }
}

// 2a. Keep a read of the eventfd in the kernel: submitters wake us with it.
void ring::state::arm_wake() noexcept {
  if (wake_armed) return;
  if (io_uring_sqe* sqe = get_sqe()) {
    io_uring_prep_read(sqe, event_fd.get(), &event_buffer, sizeof event_buffer, 0);
    io_uring_sqe_set_data64(sqe, wake_token);
    wake_armed = true;
  }
}

// 2b. Turn pending operations into SQEs, up to the in-flight bound.
void ring::state::start_pending() noexcept {
  unsigned queued = 0;
  while (!pending.empty() && in_flight + pending.front()->m_cqes <= max_in_flight) {
    operation& front = *pending.front();
    if (!front.can_prepare(*this)) break;
    const unsigned need = sqes_of(front);
    if (io_uring_sq_space_left(&uring) < need) {  // a chain, or an op and its timeout, never spans submissions
      io_uring_submit(&uring);
      enter_calls.fetch_add(1, std::memory_order_relaxed);
      if (io_uring_sq_space_left(&uring) < need) break;
    }
    io_uring_sqe* sqe = get_sqe();
    if (sqe == nullptr) break;
    operation* op = pending.pop_front();
    op->prepare(*this, sqe);
    in_flight += op->m_cqes;
    queued += op->m_cqes;  // SQEs, linked timeouts not counted
  }
  submitted.fetch_add(queued, std::memory_order_relaxed);
}

// Stopping, and nothing left anywhere: the thread may end.
bool ring::state::drained() const noexcept {
  return stopping.load(std::memory_order_acquire) && in_flight == 0 && pending.empty() && ready.empty() &&
         incoming.load(std::memory_order_acquire) == nullptr;
}

// 3. Submit; block for a completion only when there is nothing else to do.
// Pending operations left over are held back by a bound (completions in
// flight, file slots, SQ space) that only a completion lifts.
void ring::state::enter() noexcept {
  bool block = io_uring_cq_ready(&uring) == 0 && ready.empty();
  if (block) {
    // seq_cst store then seq_cst load: our half of the handshake in submit().
    sleeping.store(true, std::memory_order_seq_cst);
    if (incoming.load(std::memory_order_seq_cst) != nullptr || stopping.load(std::memory_order_seq_cst))
      block = false;
  }
  int rc;
  do {
    rc = block ? io_uring_submit_and_wait(&uring, 1) : io_uring_submit(&uring);
    enter_calls.fetch_add(1, std::memory_order_relaxed);
  } while (rc == -EINTR);
  sleeping.store(false, std::memory_order_relaxed);
  if (rc < 0 && rc != -EAGAIN && rc != -EBUSY) {
    std::fprintf(stderr, "ringfeed::io::ring: io_uring_enter failed: %s\n", std::strerror(-rc));
    std::abort();  // the kernel refused a ring it accepted before: nothing sane to fall back to
  }
}

// 4. Reap a batch: collect, advance the CQ, and only then act. Finished
// operations started elsewhere go to the executor in one list; those
// started here wait in `ready`.
void ring::state::reap() noexcept {
  reaped.clear();
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&uring, head, cqe) {
    reaped.emplace_back(cqe->user_data, cqe->res);
    ++seen;
  }
  io_uring_cq_advance(&uring, seen);

  work_item* first = nullptr;
  work_item* last = nullptr;
  std::size_t finished = 0;
  for (const auto& [user_data, res] : reaped) {
    if (user_data == wake_token) {
      wake_armed = false;  // re-armed at the top of the next round
      continue;
    }
    if (user_data == deadline_token) continue;  // its operation reports the outcome
    auto* op = reinterpret_cast<operation*>(user_data & ~step_mask);
    --in_flight;
    switch (op->complete(*this, user_data & step_mask, res)) {
      case operation::outcome::waiting:
        continue;
      case operation::outcome::again:
        retries.fetch_add(1, std::memory_order_relaxed);
        pending.push_back(op);
        continue;
      case operation::outcome::done:
        break;
    }
    if (op->m_resume_on_ring) {
      ready.push_back(op);
      continue;
    }
    op->m_item.next = nullptr;
    if (last != nullptr)
      last->next = &op->m_item;
    else
      first = &op->m_item;
    last = &op->m_item;
    ++finished;
  }
  if (finished > 0) {
    completed.fetch_add(finished, std::memory_order_relaxed);
    exec.post_list(first, finished);  // the operations may be gone after this
  }
}

// 5. Resume the coroutines that live on this thread. What they start lands
// in the pending list and is submitted together next round.
void ring::state::resume_ready() noexcept {
  operation* op = ready.take_all();
  std::size_t resumed = 0;
  while (op != nullptr) {
    operation* next = op->m_next;  // read first: resuming may end the operation
    op->m_item.handle.resume();
    op = next;
    ++resumed;
  }
  completed.fetch_add(resumed, std::memory_order_relaxed);
}

void ring::run() {
  state& s = *m_state;
  t_ring = this;
  for (;;) {
    s.take_incoming();
    s.arm_wake();
    s.start_pending();
    if (s.drained()) break;
    s.enter();
    s.reap();
    s.resume_ready();
  }
  t_ring = nullptr;
}

}  // namespace ringfeed::io
