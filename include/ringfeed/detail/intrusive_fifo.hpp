// A FIFO queue threaded through a pointer member of its elements. Not
// thread-safe: its owner guards it (a mutex, or one thread's exclusive use).
// Elements are not owned; the queue never allocates.
#pragma once

namespace ringfeed::detail {

template <typename T, T* T::*Next>
class intrusive_fifo {
 public:
  [[nodiscard]] bool empty() const noexcept { return m_head == nullptr; }
  [[nodiscard]] T* front() const noexcept { return m_head; }

  void push_back(T* item) noexcept { push_back_list(item, item); }

  /// Appends the chain first → … → last (already linked through Next).
  void push_back_list(T* first, T* last) noexcept {
    last->*Next = nullptr;
    if (m_tail != nullptr)
      m_tail->*Next = first;
    else
      m_head = first;
    m_tail = last;
  }

  /// The oldest element, or nullptr when empty.
  T* pop_front() noexcept {
    T* item = m_head;
    if (item != nullptr) {
      m_head = item->*Next;
      if (m_head == nullptr) m_tail = nullptr;
    }
    return item;
  }

  /// Empties the queue; returns its chain, oldest first, linked through Next.
  T* take_all() noexcept {
    T* chain = m_head;
    m_head = m_tail = nullptr;
    return chain;
  }

 private:
  T* m_head = nullptr;
  T* m_tail = nullptr;
};

}  // namespace ringfeed::detail
