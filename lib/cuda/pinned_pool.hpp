// Private: page-locked host memory handed out in pieces with no CUDA call
// per piece, for nvJPEG's pinned allocator (nvjpeg_decoder.cpp) and the
// decode stage's resize tables (decode_stage.hpp).
//
// Why: cudaHostAlloc and cudaFreeHost block the host (cudaFreeHost waits
// for the whole device), and nvJPEG frees and allocates its pinned buffers
// whenever an image needs more than a buffer holds, i.e. again and again in
// the first epoch. The pool pins its reserve once, when the loader is made,
// and serves every allocation from it: a piece freed goes back to the pool,
// at once (release) or once a stream has passed the work queued on it so
// far (release_after: a host callback on the stream, no wait), so memory a
// queued copy still reads is never handed out again early. Only when the
// reserve is used up does it pin more (a chunk at a time, within its
// limit); nothing is unpinned before the pool goes.
//
// All through device_api, so the simulated device tests it (pinned_pool_tests).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <ringfeed/cuda/stream.hpp>

namespace ringfeed::cuda {

class device_api;

class pinned_pool {
 public:
  /// Pins `reserve` bytes now (none when 0); grows while its pinned total
  /// stays within `limit` (0: no limit). `api` outlives the pool.
  pinned_pool(device_api& api, std::size_t reserve, std::size_t limit);
  /// Unpins everything. Nothing may use its memory any more: the owner
  /// waits for the streams release_after was given first.
  ~pinned_pool();
  pinned_pool(const pinned_pool&) = delete;
  pinned_pool& operator=(const pinned_pool&) = delete;

  /// `bytes` (at least 1) of pinned memory, 256-byte aligned, or null when
  /// neither the free pieces nor the limit leave room. Throws cuda_error
  /// when pinning more fails. Any thread.
  [[nodiscard]] void* allocate(std::size_t bytes);
  /// Gives `p` (allocate's) back now: nothing reads or writes it any more.
  void release(void* p) noexcept;
  /// Gives `p` back once the work queued on `s` so far is done (a host
  /// function on `s`): the work that may still read it is queued there.
  /// When queueing fails (a lost device: nothing runs any more), at once.
  void release_after(void* p, stream_t s) noexcept;

  struct counters {
    std::size_t pinned = 0;  ///< bytes pinned (the reserve and every growth)
    std::size_t in_use = 0;  ///< bytes handed out and not yet given back
    std::size_t peak = 0;    ///< the most in use at once
    std::size_t growths = 0; ///< times it pinned more than its reserve
    std::size_t refused = 0; ///< allocations refused at the limit
  };
  [[nodiscard]] counters stats() const;

 private:
  void add_chunk(std::size_t bytes);  // m_mutex held
  void give_back(std::byte* p);       // m_mutex held

  device_api& m_api;
  const std::size_t m_limit;
  const std::size_t m_grow;  // the least a growth pins
  mutable std::mutex m_mutex;
  std::vector<std::byte*> m_chunks;                 // guarded: what allocate_pinned gave
  std::map<std::byte*, std::size_t> m_chunk_ends;   // guarded: chunk start -> end offset (no merge across)
  std::map<std::byte*, std::size_t> m_free;         // guarded: free pieces by address
  std::unordered_map<std::byte*, std::size_t> m_used;  // guarded: pieces handed out
  counters m_counters;                               // guarded
};

}  // namespace ringfeed::cuda
