// Private: the GPU decode stage (issue 43). Between the loader's decode
// threads and the uploader:
//
//   decode thread   reads the file, parses its header, asks route(): a GPU
//                   backend keeps the file's bytes and the sample's plan
//                   (the crop, size and flip the CPU path would draw) in
//                   the slot's gpu_sample, with the region to decode and
//                   the resize's coefficients (plan_resize), and runs the
//                   decoder's host side (prepare: the engines' support
//                   check; the hybrid backend's Huffman decode, into the
//                   slot's own host work); the CPU route decodes into the
//                   host slot as before.
//   upload thread   decode(): queues the device side of the batch's GPU
//                   images on the copy stream, each region into the
//                   stage's regions buffer (a refused batch is retried
//                   image by image; those the decoder still refuses come
//                   back for the CPU); then the uploader copies the host
//                   slab, and place() (its fill hook) joins the slots'
//                   planned resize pieces into the batch's table and
//                   queues the resize of every decoded region into its
//                   slot of the same device buffer, before the uploader's
//                   conversion to the output dtype.
//
// All of it on the uploader's copy stream, so scratch and tables are reused
// batch after batch with no host synchronization: batch k+1's decode is
// queued behind batch k's resize. The resize table lives in the slab's own
// pinned side memory, which comes back with the slab once its copy is done;
// so does a slot's host work (the pinned buffer the decoder's transfer
// reads), prepared again only after that.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/pipeline.hpp>

#include "device_resize.hpp"
#include "jpeg_decoder.hpp"
#include "pinned_pool.hpp"

namespace ringfeed::cuda {

class device_api;

/// One slot of a batch on the GPU route (written by its decode thread).
struct gpu_sample {
  jpeg_backend backend = jpeg_backend::cpu;  ///< cpu: the host slot holds the pixels
  image::image_info info;
  image::sample_plan plan;
  std::vector<std::uint8_t> encoded;  ///< the file, kept for the decoder (capacity reused)
  std::string name;                   ///< the file's name, for a CPU fallback's messages
  // Set by decode_stage::plan_resize (decode thread): which rectangle of
  // the stored image the decoder writes, and its resize, planned. By
  // decode_stage::decode: where the region lies in the regions buffer.
  image::crop_box region;
  resize_piece resize;
  std::size_t region_offset = 0;
  /// The decoder's host work for this slot (decode_stage::prepare makes it
  /// once; the stage owns it). Its pinned memory is rewritten only when the
  /// slot is prepared again, i.e. once its slab came back from the copy.
  jpeg_host_work* work = nullptr;
};

/// What the stage did so far (the loader's stats().gpu_decode).
struct decode_counters {
  std::string decoder;
  int hardware_engines = 0;
  std::uint64_t hardware = 0, hybrid = 0, cpu = 0, fallbacks = 0;
  std::int64_t gpu_ns = 0, cpu_ns = 0;
  std::vector<std::pair<std::string, std::uint64_t>> cpu_reasons;
  /// Calls the decoder refused whole (then retried image by image), by reason.
  std::vector<std::pair<std::string, std::uint64_t>> split_batches;
  /// Host memory the slots hold for the GPU route (files and resize plans).
  std::uint64_t slot_bytes = 0;
};

/// Pinned host memory of a slab for its resize table, from the stage's
/// pinned pool (pinned_pool.hpp: no cudaHostAlloc or cudaFreeHost per
/// growth), grown by the upload thread. Given back to the pool when it
/// grows (the slab came back: its copy is done) and when it goes, which
/// must be before the stage.
class pinned_side {
 public:
  pinned_side() = default;
  ~pinned_side();
  pinned_side(const pinned_side&) = delete;
  pinned_side& operator=(const pinned_side&) = delete;
  /// At least `bytes` (16-byte aligned) from `pool`, keeping none of the
  /// old contents. Throws cuda_error when the pool cannot pin more.
  std::span<std::byte> reserve(pinned_pool& pool, std::size_t bytes);

 private:
  pinned_pool* m_pool = nullptr;
  std::byte* m_data = nullptr;
  std::size_t m_bytes = 0;
};

class decode_stage {
 public:
  /// On `device` of `api` (current on the calling thread), with `decoder`,
  /// for batches of up to `max_images` samples of `sample_bytes` (height ×
  /// width × 3 uint8) in `slabs` slabs. The files kept for the decoder
  /// (keep_file) hold at most `file_bytes` in all. Pins the slabs' resize
  /// tables' reserve now.
  decode_stage(std::shared_ptr<device_api> api, int device, std::unique_ptr<jpeg_decoder> decoder,
               std::size_t sample_bytes, std::size_t file_bytes, std::size_t max_images = 1, std::size_t slabs = 1);
  ~decode_stage();
  decode_stage(const decode_stage&) = delete;
  decode_stage& operator=(const decode_stage&) = delete;

  /// Where an image goes: the CPU (with the reason) for what is not a JPEG,
  /// carries an EXIF orientation, needs padding (`plan`'s window leaves the
  /// resized image), or the decoder does not take. Any thread; counts the
  /// CPU reasons for stats().
  [[nodiscard]] jpeg_route route(const image::image_info& info, const image::sample_plan& plan);

  /// Decode threads, after route() chose a GPU backend: copies `file` into
  /// g.encoded. Every slot's buffer is counted at its capacity, and a
  /// buffer grows only while all of them stay within the stage's
  /// file_bytes (the files' share of memory_budget): when it would not,
  /// nothing is kept, g.backend becomes cpu, the image counts as a CPU one
  /// ("files over their share of memory_budget") and false comes back.
  /// Any thread, one slot each.
  [[nodiscard]] bool keep_file(gpu_sample& g, std::span<const std::byte> file);
  /// Decode threads, for a slot keep_file kept: the region the decoder
  /// will write (the resize's reads, or the whole image for a backend
  /// without regions) and the resize's piece of the launch table
  /// (plan_resize_piece), so the upload thread's place() only copies. The
  /// piece's memory counts with the files (keep_file's bound): when its
  /// growth would pass it, the piece's memory goes, g.backend becomes cpu
  /// ("resize plans over the files' share of memory_budget") and false
  /// comes back. Throws std::invalid_argument when the plan does not fit
  /// the region.
  [[nodiscard]] bool plan_resize(gpu_sample& g);
  /// Decode threads, after plan_resize: the decoder's host side of the
  /// slot's image (jpeg_decoder::prepare) into its host work, made on first
  /// use. Sets g.backend to the backend that will decode it (re-planning
  /// the region when that backend's differs). False: the decoder refused
  /// it, g.backend is cpu, the CPU decodes it (counted as a fallback).
  /// Throws cuda_error (sticky: the device is lost).
  [[nodiscard]] bool prepare(gpu_sample& g);

  /// Upload thread, the device current: queues the decode of the first `n`
  /// slots' GPU images on `s`. Returns the slots whose images the decoder
  /// refused (their backend is set to cpu): the caller decodes them on the
  /// CPU into the host slab. Throws cuda_error (sticky: the device is lost).
  [[nodiscard]] std::vector<std::size_t> decode(std::span<gpu_sample> slots, stream_t s);

  /// Upload thread, when a batch decode() queued for goes back without its
  /// copy (every image failed, an error): waits for `s`, so the slots'
  /// host works are free to prepare again. An error path: a delivered
  /// batch's slab comes back through the copy's callback, with no wait.
  void settle(stream_t s) noexcept;

  /// Upload thread, inside the uploader's enqueue after the host copy:
  /// queues the resize of the slots decode() decoded into `target` (slot k
  /// at k × sample_bytes), the table in `side` (from the stage's pinned
  /// pool: `side` goes before the stage). Throws cuda_error.
  void place(std::span<const gpu_sample> slots, pinned_side& side, std::uint8_t* target, stream_t s);

  /// The decoder's description and engine count, and the counters so far.
  [[nodiscard]] decode_counters counters() const;
  /// Counts a CPU-routed image's decode time (decode threads).
  void count_cpu(std::int64_t ns) noexcept;
  /// Counts images the GPU decoder refused that the CPU then decoded.
  void count_fallbacks(std::size_t n) noexcept;

 private:
  // A device buffer that only grows, in stream order on the copy stream
  // (allocate_async / deallocate_async): the smaller one it replaces is
  // freed once the work queued on it has run, and nothing waits.
  struct device_buffer {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  // `b`, grown on `s` to at least `bytes` (rounded up to `granularity`,
  // with room; the first time at least `initial`).
  void* reserve(device_buffer& b, std::size_t bytes, std::size_t granularity, std::size_t initial, stream_t s);
  // Claims `grow` more bytes of the slots' share (false: over it).
  bool claim(std::size_t grow) noexcept;
  // Counts an image routed to the CPU for `why`.
  void count_cpu_route(std::string_view why);
  // Counts why the decoder refused an image (a jpeg_decode_error's reason)
  // among the CPU reasons; the image counts as a fallback.
  void count_refusal(std::string_view why);
  // Queues `jobs`; a refused call is retried one image at a time. Returns
  // the jobs (indices into `jobs`) still refused.
  std::vector<std::size_t> decode_jobs(std::span<const jpeg_job> jobs, stream_t s);

  std::shared_ptr<device_api> m_api;
  int m_device;
  std::unique_ptr<jpeg_decoder> m_decoder;
  std::size_t m_sample_bytes;
  std::size_t m_max_images;
  device_buffer m_regions;        // the current batch's decoded regions
  device_buffer m_resize_scratch;  // the resize's horizontal passes
  device_buffer m_table;           // device copy of the resize table
  pinned_pool m_tables;            // the slabs' pinned_side memory
  // The slots' host works (gpu_sample::work), before m_decoder goes.
  std::mutex m_works_mutex;
  std::vector<std::unique_ptr<jpeg_host_work>> m_works;  // guarded by m_works_mutex

  const std::size_t m_file_cap;             // keep_file's and plan_resize's bound
  std::atomic<std::size_t> m_file_held{0};  // capacities of the slots' file buffers and resize plans
  std::atomic<std::uint64_t> m_hardware{0}, m_hybrid{0}, m_cpu{0}, m_fallbacks{0};
  std::atomic<std::int64_t> m_gpu_ns{0}, m_cpu_ns{0};
  mutable std::mutex m_reasons_mutex;
  std::map<std::string, std::uint64_t> m_cpu_reasons;  // guarded by m_reasons_mutex
  std::map<std::string, std::uint64_t> m_split;        // guarded by m_reasons_mutex
};

}  // namespace ringfeed::cuda
