// ringfeed::loader_stats: utilizations and the bottleneck verdict.
#include <ringfeed/stats.hpp>

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

}  // namespace ringfeed
