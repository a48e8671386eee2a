// A Chase–Lev work-stealing deque.
//
//   D. Chase, Y. Lev, "Dynamic Circular Work-Stealing Deque", SPAA 2005.
//   N. M. Lê, A. Pop, A. Cohen, F. Zappa Nardelli, "Correct and Efficient
//   Work-Stealing for Weak Memory Models", PPoPP 2013.
//
// The owner pushes and pops at the bottom (LIFO); any thread steals from the
// top (FIFO). Lê et al. give a version with relaxed accesses and two seq_cst
// fences. Here the accesses those fences order are themselves seq_cst:
// equivalent on x86 (a seq_cst store is the same xchg as store + mfence,
// seq_cst loads are plain loads), correct by the same argument, and
// understood by ThreadSanitizer, which does not model fences. The seq_cst
// store of `bottom` in push() is also what lets thread_pool's sleep protocol
// (a Dekker handshake on its sleeper count) see a freshly pushed item.
//
// Arrays grow by doubling; retired arrays are kept until the deque dies,
// because a thief may still be reading a slot of one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <vector>

namespace ringfeed::detail {

inline constexpr std::size_t cache_line_size = 64;

template <typename T>
  requires std::is_trivially_copyable_v<T>
class work_stealing_deque {
 public:
  explicit work_stealing_deque(std::int64_t initial_capacity = 256)
      : m_array(new ring_array(round_up_pow2(initial_capacity))) {
    m_retired.emplace_back(m_array.load(std::memory_order_relaxed));
  }
  work_stealing_deque(const work_stealing_deque&) = delete;
  work_stealing_deque& operator=(const work_stealing_deque&) = delete;
  ~work_stealing_deque() = default;  // m_retired owns every array, current included

  /// Owner only. Never fails; grows the array when full.
  void push(T value) {
    const std::int64_t b = m_bottom.load(std::memory_order_relaxed);
    // acquire: pairs with a thief's CAS on top, so the slot it vacated is free.
    const std::int64_t t = m_top.load(std::memory_order_acquire);
    ring_array* a = m_array.load(std::memory_order_relaxed);
    if (b - t > a->capacity() - 1) {
      a = a->grow(b, t);
      m_retired.emplace_back(a);
      // release: a thief that loads the new array sees its copied slots.
      m_array.store(a, std::memory_order_release);
    }
    a->put(b, value);
    // seq_cst (release at least): publishes the slot to thieves that read
    // bottom; seq_cst also orders it before the pool's sleeper-count load.
    m_bottom.store(b + 1, std::memory_order_seq_cst);
  }

  /// Owner only. Takes the most recently pushed item, if any.
  std::optional<T> pop() {
    const std::int64_t b = m_bottom.load(std::memory_order_relaxed) - 1;
    ring_array* a = m_array.load(std::memory_order_relaxed);
    // seq_cst store then seq_cst load: the StoreLoad order that the paper's
    // fence provides. A thief either sees the smaller bottom or we see its
    // larger top.
    m_bottom.store(b, std::memory_order_seq_cst);
    std::int64_t t = m_top.load(std::memory_order_seq_cst);
    if (t > b) {  // empty
      m_bottom.store(b + 1, std::memory_order_relaxed);
      return std::nullopt;
    }
    T value = a->get(b);
    if (t == b) {
      // Last item: race thieves for it through top.
      const bool won = m_top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                     std::memory_order_relaxed);
      m_bottom.store(b + 1, std::memory_order_relaxed);
      if (!won) return std::nullopt;
    }
    return value;
  }

  /// Any thread. Takes the oldest item, or nothing when the deque is empty
  /// or another thread won the race for it (callers just try elsewhere).
  std::optional<T> steal() {
    std::int64_t t = m_top.load(std::memory_order_seq_cst);
    // seq_cst load after the seq_cst load of top: the paper's fence.
    const std::int64_t b = m_bottom.load(std::memory_order_seq_cst);
    if (t >= b) return std::nullopt;
    // acquire: pairs with the release store of a grown array.
    ring_array* a = m_array.load(std::memory_order_acquire);
    T value = a->get(t);
    // The CAS validates the read: if top moved, the slot may have been reused.
    if (!m_top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed))
      return std::nullopt;
    return value;
  }

  /// Any thread. A snapshot; exact only when no one else touches the deque.
  [[nodiscard]] bool empty() const noexcept {
    const std::int64_t b = m_bottom.load(std::memory_order_seq_cst);
    const std::int64_t t = m_top.load(std::memory_order_seq_cst);
    return b <= t;
  }

  /// Any thread. A snapshot, as empty().
  [[nodiscard]] std::int64_t size() const noexcept {
    const std::int64_t b = m_bottom.load(std::memory_order_seq_cst);
    const std::int64_t t = m_top.load(std::memory_order_seq_cst);
    return b > t ? b - t : 0;
  }

  /// Owner only (reads the array the owner alone replaces).
  [[nodiscard]] std::int64_t capacity() const noexcept {
    return m_array.load(std::memory_order_relaxed)->capacity();
  }

 private:
  class ring_array {
   public:
    explicit ring_array(std::int64_t capacity)
        : m_capacity(capacity), m_mask(capacity - 1), m_slots(new std::atomic<T>[capacity]) {}

    std::int64_t capacity() const noexcept { return m_capacity; }
    // Slots are atomics only so that a thief's speculative read of a slot
    // the owner is rewriting is not a data race; the CAS on top decides.
    T get(std::int64_t i) const noexcept { return m_slots[i & m_mask].load(std::memory_order_relaxed); }
    void put(std::int64_t i, T v) noexcept { m_slots[i & m_mask].store(v, std::memory_order_relaxed); }

    ring_array* grow(std::int64_t bottom, std::int64_t top) const {
      auto* bigger = new ring_array(m_capacity * 2);
      for (std::int64_t i = top; i != bottom; ++i) bigger->put(i, get(i));
      return bigger;
    }

   private:
    std::int64_t m_capacity;
    std::int64_t m_mask;
    std::unique_ptr<std::atomic<T>[]> m_slots;
  };

  static std::int64_t round_up_pow2(std::int64_t n) {
    std::int64_t c = 2;
    while (c < n) c *= 2;
    return c;
  }

  // top and bottom on separate cache lines: thieves hammer top, the owner bottom.
  alignas(cache_line_size) std::atomic<std::int64_t> m_top{0};
  alignas(cache_line_size) std::atomic<std::int64_t> m_bottom{0};
  alignas(cache_line_size) std::atomic<ring_array*> m_array;
  std::vector<std::unique_ptr<ring_array>> m_retired;  // owner only
};

}  // namespace ringfeed::detail
