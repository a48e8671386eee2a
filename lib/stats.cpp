// ringfeed::loader_stats: the counters a loader gathers (loader::stats()),
// utilizations, the bottleneck verdict and the JSON every front end prints.
#include <ringfeed/stats.hpp>

#include <chrono>
#include <mutex>

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

loader_stats loader::stats() const {
  const detail::loader_core& c = *m_core;
  loader_stats s;
  s.elapsed_s = c.started == detail::clock::time_point{}
                    ? 0.0
                    : std::chrono::duration<double>(detail::clock::now() - c.started).count();
  const auto secs = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) * 1e-9;
  };
  s.read = {secs(c.read_ns), c.read_items.load(std::memory_order_relaxed), c.read_bytes.load(std::memory_order_relaxed)};
  s.decode = {secs(c.decode_ns), c.decode_items.load(std::memory_order_relaxed),
              c.decode_bytes.load(std::memory_order_relaxed)};
  s.upload = {secs(c.upload_ns), c.upload_items.load(std::memory_order_relaxed),
              c.upload_bytes.load(std::memory_order_relaxed)};
  s.consumer_wait_s = secs(c.wait_ns);
  s.batches = c.delivered_batches.load(std::memory_order_relaxed);
  s.images = c.delivered_images.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(c.skipped_mutex);
    s.skipped = c.skipped;
  }
  s.backend = c.backend_name;
  if (c.src) {
    const io::source_stats rs = c.src->stats();
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
  s.decode_threads = c.pool ? c.pool->thread_count() : thread_pool::default_thread_count(c.opt.threads);
  s.io_depth = c.opt.io_depth;
  s.prefetch_batches = c.nslabs - 1;
  s.memory_budget = c.opt.memory_budget;
  s.slab_bytes = c.slab_bytes;
  return s;
}

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
  if (cache)
    out["cache"] = {{"hits", cache_hits},     {"misses", cache_misses},       {"hit_rate", cache_hit_rate()},
                    {"stores", cache_stores}, {"evictions", cache_evictions}, {"bytes", cache_bytes},
                    {"dropped", cache_dropped}};
  return out.dump();
}

}  // namespace ringfeed
