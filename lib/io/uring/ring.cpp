// ringfeed::io::ring: setting the io_uring up (and saying why it cannot
// be), taking operations from any thread, and the ring thread's loop. The
// round itself is ring_thread.cpp's, each operation's part
// ring_operations.cpp's; the state they share is ring_state.hpp.
#include "ring_state.hpp"

#include <sys/eventfd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

namespace ringfeed::io {
namespace {

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

thread_local const ring* t_ring = nullptr;  // the ring whose thread this is

}  // namespace

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
