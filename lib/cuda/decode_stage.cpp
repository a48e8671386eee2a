// The GPU decode stage: see decode_stage.hpp.
#include <algorithm>
#include <chrono>
#include <utility>

#include <ringfeed/cuda/uploader.hpp>

#include "decode_stage.hpp"
#include "device_api.hpp"

namespace ringfeed::cuda {
namespace {

constexpr std::size_t align_up(std::size_t n, std::size_t a) noexcept { return (n + a - 1) / a * a; }

// Pinned (and device) memory for resize tables reserved per batch image at
// first: an image's entry and coefficients (plan_resize_piece) take about
// 12 KiB for a 224 output of an ImageNet-sized crop (bilinear), some 40 KiB
// for crops of multi-megapixel photos (those grow it).
constexpr std::size_t table_reserve_per_image = 16 * 1024;

// What the CPU path's full-size render asks the resampler for (pipeline.cpp:
// the crop as the logical image, resized, the window cut out): the GPU
// path resizes the same request from the same pixels, so the bytes match.
image::resample_request request_of(const image::sample_plan& plan) {
  image::resample_request rq;
  rq.input = {plan.crop.width, plan.crop.height};
  rq.output = plan.resized;
  rq.window = plan.window;
  rq.filter = plan.filter;
  return rq;
}

// The rectangle of the stored image a sample's resize reads.
image::crop_box region_of(const image::sample_plan& plan) {
  const image::crop_box need = image::resampler::source_region(request_of(plan));
  return {need.top + plan.crop.top, need.left + plan.crop.left, need.height, need.width};
}

// The resize of a decoded region: what of it lies in the crop (all of it
// for a region decode, the crop for a whole-image one), as the source.
resize_image resize_of(const gpu_sample& g, std::size_t dst_offset) {
  const image::crop_box& crop = g.plan.crop;
  const image::crop_box& got = g.region;
  const image::crop_box use = image::intersect(got, crop);
  const std::size_t pitch = static_cast<std::size_t>(got.width) * 3;
  resize_image r;
  r.request = request_of(g.plan);
  r.request.src_left = use.left - crop.left;
  r.request.src_top = use.top - crop.top;
  r.src_width = use.width;
  r.src_height = use.height;
  r.src_pitch = pitch;
  r.src_offset = g.region_offset + static_cast<std::size_t>(use.top - got.top) * pitch +
                 static_cast<std::size_t>(use.left - got.left) * 3;
  r.dst_offset = dst_offset;
  r.flip = g.plan.flip;
  return r;
}

std::int64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// --- pinned_side ------------------------------------------------------------------

pinned_side::~pinned_side() {
  if (m_data != nullptr) m_pool->release(m_data);
}

std::span<std::byte> pinned_side::reserve(pinned_pool& pool, std::size_t bytes) {
  if (bytes > m_bytes || m_pool != &pool) {
    // The slab came back: the copy out of the old table is done.
    if (m_data != nullptr) m_pool->release(m_data);
    m_data = nullptr;
    m_bytes = 0;
    const std::size_t want = align_up(bytes + bytes / 2, 4096);  // room to grow
    m_data = static_cast<std::byte*>(pool.allocate(want));
    if (m_data == nullptr) throw cuda_error(2, "decode stage: no pinned memory for a resize table", false);
    m_pool = &pool;
    m_bytes = want;
  }
  return {m_data, bytes};
}

// --- decode_stage -------------------------------------------------------------------

decode_stage::decode_stage(std::shared_ptr<device_api> api, int device, std::unique_ptr<jpeg_decoder> decoder,
                           std::size_t sample_bytes, std::size_t file_bytes, std::size_t max_images,
                           std::size_t slabs)
    : m_api(std::move(api)),
      m_device(device),
      m_decoder(std::move(decoder)),
      m_sample_bytes(sample_bytes),
      m_max_images(std::max<std::size_t>(max_images, 1)),
      // A batch's table is a few KiB per image (its coefficients): the
      // slabs' tables fit in the reserve, so none pins memory in a run.
      m_tables(*m_api, std::max<std::size_t>(slabs, 1) * m_max_images * table_reserve_per_image, 0),
      m_file_cap(file_bytes) {}

decode_stage::~decode_stage() {
  // The uploader's destructor has waited for the copy stream (the loader
  // destroys it first): nothing queued reads these any more.
  // The copy stream may be gone: the decoder frees the works' memory at once.
  m_decoder->stream_done();
  try {
    const device_guard on(*m_api, m_device);
    m_works.clear();
    for (const device_buffer* b : {&m_regions, &m_resize_scratch, &m_table}) m_api->deallocate(b->data);
  } catch (...) {
    // A lost context: the memory went with it.
  }
}

jpeg_route decode_stage::route(const image::image_info& info, const image::sample_plan& plan) {
  jpeg_route r;
  const image::crop_box& w = plan.window;
  if (info.format != image::image_format::jpeg) {
    r.why_cpu = "not a JPEG";
  } else if (info.orientation != 1) {
    r.why_cpu = "EXIF orientation";
  } else if (plan.crop.empty() || image::intersect(w, {0, 0, plan.resized.height, plan.resized.width}) != w) {
    r.why_cpu = "padding";
  } else {
    r = m_decoder->route(info);
    if (r.backend != jpeg_backend::cpu) return r;
    if (r.why_cpu.empty()) r.why_cpu = "the decoder does not take it";
  }
  count_cpu_route(r.why_cpu);
  return r;
}

void decode_stage::count_refusal(std::string_view why) {
  std::lock_guard lock(m_reasons_mutex);
  ++m_cpu_reasons["the GPU decoder refused it: " + std::string(why)];
}

void decode_stage::count_cpu_route(std::string_view why) {
  m_cpu.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(m_reasons_mutex);
  ++m_cpu_reasons[std::string(why)];
}

bool decode_stage::claim(std::size_t grow) noexcept {
  // Relaxed: the count guards no other memory, only the total (a CAS loop
  // so it never passes the cap, even for a moment another thread could see).
  std::size_t held = m_file_held.load(std::memory_order_relaxed);
  do {
    if (held + grow > m_file_cap) return false;
  } while (!m_file_held.compare_exchange_weak(held, held + grow, std::memory_order_relaxed));
  return true;
}

bool decode_stage::keep_file(gpu_sample& g, std::span<const std::byte> file) {
  const std::size_t had = g.encoded.capacity();
  if (file.size() > had) {
    // Claim the growth before allocating.
    const std::size_t grow = file.size() - had;
    if (!claim(grow)) {
      g.backend = jpeg_backend::cpu;
      count_cpu_route("files over their share of memory_budget");
      return false;
    }
    try {
      g.encoded.reserve(file.size());
    } catch (...) {
      m_file_held.fetch_sub(grow, std::memory_order_relaxed);
      throw;
    }
    // reserve() may round up: what it holds is what counts.
    if (g.encoded.capacity() > file.size())
      m_file_held.fetch_add(g.encoded.capacity() - file.size(), std::memory_order_relaxed);
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(file.data());
  g.encoded.assign(p, p + file.size());
  return true;
}

bool decode_stage::plan_resize(gpu_sample& g) {
  g.region = m_decoder->decodes_region(g.backend) ? region_of(g.plan)
                                                   : image::crop_box{0, 0, g.info.height, g.info.width};
  // Relative to the region's start: join_resize_table adds where decode()
  // puts it.
  g.region_offset = 0;
  // The piece's size is known once planned: its growth is claimed after.
  const std::size_t had = g.resize.bytes.capacity();
  auto grown = [&] { return g.resize.bytes.capacity() - had; };
  try {
    plan_resize_piece(resize_of(g, 0), g.resize);
  } catch (...) {
    m_file_held.fetch_add(grown(), std::memory_order_relaxed);  // held all the same
    throw;
  }
  if (grown() == 0 || claim(grown())) return true;
  m_file_held.fetch_sub(had, std::memory_order_relaxed);
  std::vector<std::byte>().swap(g.resize.bytes);
  g.backend = jpeg_backend::cpu;
  count_cpu_route("resize plans over the files' share of memory_budget");
  return false;
}

bool decode_stage::prepare(gpu_sample& g) {
  const auto t0 = std::chrono::steady_clock::now();
  if (g.work == nullptr) {
    std::unique_ptr<jpeg_host_work> w = m_decoder->make_host_work();
    g.work = w.get();
    std::lock_guard lock(m_works_mutex);
    m_works.push_back(std::move(w));
  }
  jpeg_job j;
  j.data = g.encoded.data();
  j.size = g.encoded.size();
  j.info = g.info;
  j.work = g.work;
  j.name = g.name;
  try {
    for (int tries = 0;; ++tries) {
      j.region = g.region;
      j.backend = g.backend;
      const jpeg_backend b = m_decoder->prepare(j);
      const bool replan = b != g.backend && m_decoder->decodes_region(b) != m_decoder->decodes_region(g.backend);
      g.backend = b;
      if (!replan || tries > 0) break;
      if (!plan_resize(g)) return false;  // then its host side again, for that region
    }
  } catch (const jpeg_decode_error& e) {
    g.backend = jpeg_backend::cpu;
    count_fallbacks(1);
    count_refusal(e.reason());
    m_gpu_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
    return false;
  }
  m_gpu_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
  return true;
}

void* decode_stage::reserve(device_buffer& b, std::size_t bytes, std::size_t granularity, std::size_t initial,
                            stream_t s) {
  if (bytes > b.bytes) {
    // Work already queued on `s` may still read the old one: freed in
    // stream order, after it.
    if (b.data != nullptr) m_api->deallocate_async(b.data, s);
    b = {};
    const std::size_t want = align_up(std::max(bytes + bytes / 4, initial), granularity);
    b.data = m_api->allocate_async(want, s);
    b.bytes = want;
  }
  return b.data;
}

std::vector<std::size_t> decode_stage::decode_jobs(std::span<const jpeg_job> jobs, stream_t s) {
  std::vector<std::size_t> refused;
  if (jobs.empty()) return refused;
  try {
    m_decoder->decode(jobs, s);
    return refused;
  } catch (const jpeg_decode_error& e) {
    // A batched call fails whole: find the images it refuses, one by one.
    if (jobs.size() == 1) {
      count_refusal(e.reason());
      return {0};
    }
    std::lock_guard lock(m_reasons_mutex);
    ++m_split[e.reason()];
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    try {
      m_decoder->decode(jobs.subspan(i, 1), s);
    } catch (const jpeg_decode_error& e) {
      refused.push_back(i);
      count_refusal(e.reason());
    }
  }
  return refused;
}

std::vector<std::size_t> decode_stage::decode(std::span<gpu_sample> slots, stream_t s) {
  const auto t0 = std::chrono::steady_clock::now();
  const device_guard on(*m_api, m_device);
  // Where each region goes in the regions buffer.
  std::vector<std::size_t> on_gpu;
  std::size_t offset = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    gpu_sample& g = slots[k];
    if (g.backend == jpeg_backend::cpu) continue;
    g.region_offset = offset;  // g.region: plan_resize's
    offset += align_up(static_cast<std::size_t>(g.region.width) * 3 * static_cast<std::size_t>(g.region.height), 256);
    on_gpu.push_back(k);
  }
  if (on_gpu.empty()) return {};
  // At first room for regions of 4 samples' size each (a crop a little
  // larger than the output, on average): larger ones grow it in stream
  // order.
  auto* base = static_cast<std::uint8_t*>(reserve(m_regions, offset, 1 << 20, 4 * m_max_images * m_sample_bytes, s));

  std::vector<jpeg_job> jobs;
  jobs.reserve(on_gpu.size());
  for (std::size_t k : on_gpu) {
    const gpu_sample& g = slots[k];
    jpeg_job j;
    j.data = g.encoded.data();
    j.size = g.encoded.size();
    j.info = g.info;
    j.region = g.region;
    j.out = base + g.region_offset;
    j.pitch = static_cast<std::size_t>(g.region.width) * 3;
    j.backend = g.backend;
    j.work = g.work;
    j.name = g.name;
    jobs.push_back(j);
  }
  std::vector<std::size_t> refused_slots;
  for (std::size_t i : decode_jobs(jobs, s)) {
    refused_slots.push_back(on_gpu[i]);
    slots[on_gpu[i]].backend = jpeg_backend::cpu;
  }
  for (std::size_t k : on_gpu) {
    if (slots[k].backend == jpeg_backend::hardware) m_hardware.fetch_add(1, std::memory_order_relaxed);
    if (slots[k].backend == jpeg_backend::hybrid) m_hybrid.fetch_add(1, std::memory_order_relaxed);
  }
  m_gpu_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
  return refused_slots;
}

void decode_stage::place(std::span<const gpu_sample> slots, pinned_side& side, std::uint8_t* target, stream_t s) {
  const auto t0 = std::chrono::steady_clock::now();
  // The decode threads planned each resize (plan_resize): this only
  // places the pieces at their region's and slot's offsets.
  std::vector<placed_piece> pieces;
  for (std::size_t k = 0; k < slots.size(); ++k)
    if (slots[k].backend != jpeg_backend::cpu)
      pieces.push_back({&slots[k].resize, slots[k].region_offset, k * m_sample_bytes});
  if (pieces.empty()) return;
  const resize_sizes sizes = measure_pieces(pieces);
  const std::span<std::byte> table = side.reserve(m_tables, sizes.table_bytes);
  join_resize_table(pieces, table);
  void* device_table = reserve(m_table, sizes.table_bytes, 1 << 16, m_max_images * table_reserve_per_image, s);
  m_api->copy_to_device_async(device_table, table.data(), sizes.table_bytes, s);
  resize_launch k;
  k.table = static_cast<const std::byte*>(device_table);
  k.images = pieces.size();
  k.source = static_cast<const std::uint8_t*>(m_regions.data);
  k.target = target;
  k.scratch = static_cast<std::uint8_t*>(
      reserve(m_resize_scratch, sizes.scratch_bytes, 1 << 20, 2 * m_max_images * m_sample_bytes, s));
  m_api->launch_resize(k, s);
  m_gpu_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
}

void decode_stage::settle(stream_t s) noexcept {
  try {
    const device_guard on(*m_api, m_device);
    m_api->synchronize(s);
  } catch (...) {
    // A lost device: nothing it queued runs any more.
  }
}

void decode_stage::count_cpu(std::int64_t ns) noexcept { m_cpu_ns.fetch_add(ns, std::memory_order_relaxed); }

void decode_stage::count_fallbacks(std::size_t n) noexcept {
  m_fallbacks.fetch_add(n, std::memory_order_relaxed);
}

decode_counters decode_stage::counters() const {
  decode_counters c;
  c.decoder = m_decoder->describe();
  c.hardware_engines = m_decoder->hardware_engines();
  c.hardware = m_hardware.load(std::memory_order_relaxed);
  c.hybrid = m_hybrid.load(std::memory_order_relaxed);
  c.cpu = m_cpu.load(std::memory_order_relaxed) + m_fallbacks.load(std::memory_order_relaxed);
  c.fallbacks = m_fallbacks.load(std::memory_order_relaxed);
  c.gpu_ns = m_gpu_ns.load(std::memory_order_relaxed);
  c.cpu_ns = m_cpu_ns.load(std::memory_order_relaxed);
  c.slot_bytes = m_file_held.load(std::memory_order_relaxed);
  std::lock_guard lock(m_reasons_mutex);
  c.cpu_reasons.assign(m_cpu_reasons.begin(), m_cpu_reasons.end());
  c.split_batches.assign(m_split.begin(), m_split.end());
  return c;
}

}  // namespace ringfeed::cuda
