// ringfeed::executor — where suspended coroutines go to be resumed.
//
// Completions (an I/O result, a channel hand-off) never resume the waiting
// coroutine inline; they post its handle to an executor. The node that is
// posted lives inside the waiting operation, which lives in the suspended
// coroutine's frame, so posting never allocates.
#pragma once

#include <coroutine>
#include <cstddef>

namespace ringfeed {

/// An intrusive unit of work: a suspended coroutine waiting to be resumed.
/// Whoever posts it must keep it alive until the executor resumes `handle`;
/// after the resume the executor never touches the node again.
struct work_item {
  work_item* next = nullptr;
  std::coroutine_handle<> handle;
};

/// Interface of anything that resumes work items on its own threads.
class executor {
 public:
  /// Queues `item` to be resumed on one of this executor's threads.
  /// Any thread may call it. The executor does not touch `item` after
  /// resuming it, and the caller must not touch it after this call: the
  /// coroutine may already be running (and gone) when post() returns.
  virtual void post(work_item& item) noexcept = 0;

  /// Queues a null-terminated list linked through `next` (`count` items),
  /// in order, with one lock and at most `count` wake-ups. Any thread.
  virtual void post_list(work_item* first, std::size_t count) noexcept {
    (void)count;
    while (first != nullptr) {
      work_item* next = first->next;  // read before post: the item may die at once
      post(*first);
      first = next;
    }
  }

 protected:
  executor() = default;
  executor(const executor&) = default;
  executor& operator=(const executor&) = default;
  ~executor() = default;
};

}  // namespace ringfeed
