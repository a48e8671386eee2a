// The ring thread's round (ring::run): take what was submitted, turn it
// into SQEs within the in-flight bound, enter the kernel, reap a batch of
// CQEs and only then hand the finished operations on.
#include "ring_state.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringfeed::io {

using namespace uring_detail;

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

}  // namespace ringfeed::io
