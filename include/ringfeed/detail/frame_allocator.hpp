// Per-thread recycling of coroutine frames.
//
// Every task, when_all child and async_scope spawn allocates a frame; in a
// fork-join of many tiny tasks glibc's malloc/free took about half of all
// cycles (perf profile, perf/thread_pool_bench), worst when frames are freed
// on another worker than the one that allocated them. Frames up to 1 KiB are
// rounded to 64-byte classes and kept on small per-thread free lists, so
// after warm-up a frame costs a few pointer moves. A block freed on another
// thread simply joins that thread's list: all blocks come from the same
// ::operator new, so any thread may reuse any block.
//
// Under AddressSanitizer frames go straight to new/delete, so that a
// use-after-free of a frame is still reported.
#pragma once

#include <array>
#include <cstddef>
#include <new>

namespace ringfeed::detail {

class frame_cache {
 public:
  static constexpr std::size_t granule = 64;
  static constexpr std::size_t classes = 16;       // frames up to 1 KiB are cached
  static constexpr std::size_t max_per_class = 256;  // per thread: bounds what one thread hoards

  frame_cache() noexcept { alive() = true; }
  frame_cache(const frame_cache&) = delete;
  frame_cache& operator=(const frame_cache&) = delete;
  ~frame_cache() {
    alive() = false;  // frames freed later during thread exit bypass the cache
    for (auto& list : m_lists) {
      while (list.head != nullptr) {
        block* b = list.head;
        list.head = b->next;
        ::operator delete(b);
      }
    }
  }

  /// The calling thread's cache, or nullptr while it is being destroyed.
  static frame_cache* local() noexcept {
    if (!alive() && constructed()) return nullptr;
    thread_local frame_cache cache;
    constructed() = true;
    return &cache;
  }

  void* allocate(std::size_t n) {
    const std::size_t c = (n + granule - 1) / granule;
    if (c == 0 || c > classes) return ::operator new(n);
    free_list& list = m_lists[c - 1];
    if (block* b = list.head) {
      list.head = b->next;
      --list.count;
      return b;
    }
    return ::operator new(c * granule);
  }

  void deallocate(void* p, std::size_t n) noexcept {
    const std::size_t c = (n + granule - 1) / granule;
    if (c == 0 || c > classes) {
      ::operator delete(p);
      return;
    }
    free_list& list = m_lists[c - 1];
    if (list.count >= max_per_class) {
      ::operator delete(p);
      return;
    }
    list.head = ::new (p) block{list.head};
    ++list.count;
  }

 private:
  struct block {
    block* next;
  };
  struct free_list {
    block* head = nullptr;
    std::size_t count = 0;
  };

  static bool& alive() noexcept {
    thread_local bool flag = false;  // trivially destructible: valid during thread exit
    return flag;
  }
  static bool& constructed() noexcept {
    thread_local bool flag = false;
    return flag;
  }

  std::array<free_list, classes> m_lists{};
};

/// Promise types inherit this to take their frames from frame_cache.
struct cached_frame {
  static void* operator new(std::size_t n) {
#if defined(__SANITIZE_ADDRESS__)
    return ::operator new(n);
#else
    if (frame_cache* cache = frame_cache::local()) return cache->allocate(n);
    return ::operator new(((n + frame_cache::granule - 1) / frame_cache::granule) * frame_cache::granule);
#endif
  }
  static void operator delete(void* p, std::size_t n) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    (void)n;
    ::operator delete(p);
#else
    if (frame_cache* cache = frame_cache::local())
      cache->deallocate(p, n);
    else
      ::operator delete(p);
#endif
  }
};

}  // namespace ringfeed::detail
