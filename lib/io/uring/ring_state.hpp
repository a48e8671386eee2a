// Private to lib/io/uring/ring*.cpp: ring::state, what the ring thread
// owns (the io_uring, the submission and completion lists, the counters),
// and the user_data encoding its completions share with the operations.
// ring.cpp sets the ring up and takes submissions, ring_thread.cpp runs the
// ring thread's round, ring_operations.cpp prepares and completes each kind
// of operation.
#pragma once

#include <ringfeed/io/ring.hpp>

#include <ringfeed/detail/intrusive_fifo.hpp>

#include <liburing.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ringfeed::io {
namespace uring_detail {

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

/// EINTR and EAGAIN: the operation goes again.
inline bool retryable(int res) noexcept { return res == -EINTR || res == -EAGAIN; }

}  // namespace uring_detail

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

}  // namespace ringfeed::io
