// ringfeed::loader_stats: the counters a loader gathers (loader::stats()),
// utilizations, the bottleneck verdict and the JSON every front end prints.
#include <ringfeed/loader/stats.hpp>

#include <chrono>
#include <mutex>

#include <ringfeed/detail/json_text.hpp>

#include "loader_core.hpp"

#include <nlohmann/json.hpp>

namespace ringfeed {
namespace {
double ratio(double busy, double capacity) { return capacity > 0.0 ? busy / capacity : 0.0; }
}  // namespace

// A read holds one of io_depth slots while outstanding: storage is the limit
// when those slots are busy most of the time.
double loader_stats::read_utilization() const noexcept {
  return ratio(read.busy_s, elapsed_s * static_cast<double>(io_depth));
}

double loader_stats::decode_utilization() const noexcept {
  return ratio(decode.busy_s, elapsed_s * static_cast<double>(decode_threads));
}

double loader_stats::upload_utilization() const noexcept { return ratio(upload.busy_s, elapsed_s); }

std::string loader_stats::bottleneck() const {
  // The consumer is the limit when it hardly waited: batches were ready.
  if (elapsed_s <= 0.0 || consumer_wait_s < 0.05 * elapsed_s) return "consumer";
  // A CPU stage that is busy most of the time is the limit. Read time counts
  // until the read's coroutine resumes, which includes waiting for a busy
  // decode thread, so the storage verdict is the one left when neither
  // decode nor upload is saturated.
  if (decode_utilization() >= 0.75 && decode_utilization() >= upload_utilization()) return "decode";
  if (upload_utilization() >= 0.75) return "upload";
  return "storage";
}

double loader_stats::cache_hit_rate() const noexcept {
  const std::uint64_t lookups = cache_hits + cache_misses;
  return lookups == 0 ? 0.0 : static_cast<double>(cache_hits) / static_cast<double>(lookups);
}

loader_stats loader::stats() const { return m_core->stats(); }

namespace detail {

loader_stats loader_core::stats() const {
  const loader_core& c = *this;
  loader_stats s;
  s.elapsed_s = c.m_started == clock::time_point{}
                    ? 0.0
                    : std::chrono::duration<double>(clock::now() - c.m_started).count();
  const auto secs = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) * 1e-9;
  };
  s.read = {secs(c.m_read_ns), c.m_read_items.load(std::memory_order_relaxed), c.m_read_bytes.load(std::memory_order_relaxed)};
  s.decode = {secs(c.m_decode_ns), c.m_decode_items.load(std::memory_order_relaxed),
              c.m_decode_bytes.load(std::memory_order_relaxed)};
  s.upload = {secs(c.m_upload_ns), c.m_upload_items.load(std::memory_order_relaxed),
              c.m_upload_bytes.load(std::memory_order_relaxed)};
  s.consumer_wait_s = secs(c.m_wait_ns);
  s.batches = c.m_delivered_batches.load(std::memory_order_relaxed);
  s.images = c.m_delivered_images.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(c.m_skipped_mutex);
    s.skipped = c.m_skipped;
  }
  s.backend = c.m_backend_name;
  if (c.m_src) {
    const io::source_stats rs = c.m_src->stats();
    s.direct = rs.direct;
    s.read_retries = rs.retries;
    s.read_timeouts = rs.timeouts;
    s.cache = rs.cache;
    s.cache_hits = rs.cache_hits;
    s.cache_misses = rs.cache_misses;
    s.cache_stores = rs.cache_stores;
    s.cache_evictions = rs.cache_evictions;
    s.cache_bytes = rs.cache_bytes;
    s.cache_dropped = rs.cache_dropped;
  }
  s.gpu_decode = c.gpu_stats();
  if (c.m_pixels) {
    s.pixel_cache = true;
    s.pixels = c.m_pixels->counters();
  }
  s.decode_threads = c.m_pool ? c.m_pool->thread_count() : thread_pool::default_thread_count(c.m_opt.threads);
  s.io_depth = c.m_opt.io_depth;
  s.prefetch = c.m_memory->prefetch();
  s.prefetch_batches = s.prefetch.cap;
  if (const std::shared_ptr<run> r = c.m_memory->current()) s.prefetch.ready = r->consumer_channel().size();
  s.memory_budget = c.m_opt.memory_budget;
  s.slab_bytes = c.m_plan.slab_bytes;
  s.reasons = c.m_opt.reasons;
  return s;
}

}  // namespace detail

std::string loader_stats::json() const {
  nlohmann::json skips = nlohmann::json::array();
  for (const auto& k : skipped) skips.push_back({{"path", k.path}, {"reason", k.reason}});
  nlohmann::json out = {
      {"seconds", elapsed_s},
      {"images", images},
      {"batches", batches},
      {"bytes", read.bytes},
      {"images_per_s", elapsed_s > 0 ? static_cast<double>(images) / elapsed_s : 0.0},
      {"mb_per_s", elapsed_s > 0 ? static_cast<double>(read.bytes) / 1e6 / elapsed_s : 0.0},
      {"backend", backend},
      {"direct", direct},
      {"threads", decode_threads},
      {"io_depth", io_depth},
      {"prefetch_batches", prefetch_batches},
      {"memory_budget", memory_budget},
      {"slab_bytes", slab_bytes},
      {"stages",
       {{"read_s", read.busy_s},
        {"decode_s", decode.busy_s},
        {"upload_s", upload.busy_s},
        {"consumer_wait_s", consumer_wait_s},
        {"read_utilization", read_utilization()},
        {"decode_utilization", decode_utilization()},
        {"upload_utilization", upload_utilization()}}},
      {"bottleneck", bottleneck()},
      {"reads", {{"retries", read_retries}, {"timeouts", read_timeouts}}},
      {"skipped", skips},
  };
  nlohmann::json history = nlohmann::json::array();
  for (const auto& h : prefetch.history) history.push_back({h.batch, h.depth});
  out["prefetch"] = {{"depth", prefetch.depth},
                     {"low", prefetch.low},
                     {"high", prefetch.high},
                     {"floor", prefetch.floor},
                     {"cap", prefetch.cap},
                     {"ready", prefetch.ready},
                     {"slabs", prefetch.slabs},
                     {"consumer_waits", prefetch.consumer_waits},
                     {"spare_deliveries", prefetch.spare_deliveries},
                     {"changes", prefetch.changes},
                     {"history", history}};
  for (const auto& r : reasons) out[r.option + "_reason"] = r.reason;
  const gpu_decode_stats& g = gpu_decode;
  nlohmann::json cpu_reasons = nlohmann::json::object();
  for (const auto& [why, count] : g.cpu_reasons) cpu_reasons[why] = cpu_reasons.value(why, std::uint64_t{0}) + count;
  nlohmann::json split = nlohmann::json::object();
  for (const auto& [why, count] : g.split_batches) split[why] = split.value(why, std::uint64_t{0}) + count;
  out["gpu_decode"] = {{"where", g.where},
                       {"reason", g.reason},
                       {"decoder", g.decoder},
                       {"hardware_engines", g.hardware_engines},
                       {"images", {{"hardware", g.hardware}, {"hybrid", g.hybrid}, {"cpu", g.cpu}}},
                       {"gpu_s", static_cast<double>(g.gpu_ns) * 1e-9},
                       {"cpu_s", static_cast<double>(g.cpu_ns) * 1e-9},
                       {"fallbacks", g.fallbacks},
                       {"slot_bytes", g.slot_bytes},
                       {"cpu_reasons", std::move(cpu_reasons)},
                       {"split_batches", std::move(split)}};
  if (cache)
    out["cache"] = {{"hits", cache_hits},     {"misses", cache_misses},       {"hit_rate", cache_hit_rate()},
                    {"stores", cache_stores}, {"evictions", cache_evictions}, {"bytes", cache_bytes},
                    {"dropped", cache_dropped}};
  if (pixel_cache) {
    const pixel_cache_stats& p = pixels;
    const std::uint64_t held = p.entries == 0 ? 0 : p.bytes / p.entries;
    out["pixel_cache"] = {{"hits", p.hits},
                          {"misses", p.misses},
                          {"hit_rate", p.hit_rate()},
                          {"stores", p.stores},
                          {"not_stored", p.not_stored},
                          {"corrupt", p.corrupt},
                          {"torn", p.torn},
                          {"entries", p.entries},
                          {"bytes", p.bytes},
                          {"bytes_per_image", held},
                          {"max_bytes", p.max_bytes},
                          {"bytes_read", p.bytes_read},
                          {"resident_reads", p.resident_reads},
                          {"read_mb_per_s", p.read_mb_per_s()},
                          {"read_ms", p.read_ms()},
                          {"filling", p.filling},
                          {"direct", p.direct},
                          {"reason", p.reason}};
  }
  // File names are bytes: json_text keeps the text valid UTF-8 whatever
  // they hold (surrogateescape), where dump() would throw.
  return detail::json_text(out);
}

}  // namespace ringfeed
