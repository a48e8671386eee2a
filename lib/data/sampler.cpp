// The per-epoch order: DistributedSampler semantics over a Philox-driven
// Fisher–Yates permutation.
#include <ringfeed/data/sampler.hpp>
#include <ringfeed/text.hpp>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ringfeed/random.hpp>

namespace ringfeed::data {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::size_t parse_env_count(const char* name, const std::string& value) {
  std::string_view s = value;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  std::size_t n = 0;
  bool any = false;
  for (const char c : s) {
    if (c < '0' || c > '9' || n > (~std::size_t{0} - 9) / 10) {
      any = false;
      break;
    }
    n = n * 10 + static_cast<std::size_t>(c - '0');
    any = true;
  }
  if (!any)
    throw std::invalid_argument(std::string(name) + "='" + escape_bytes(value) + "' is not a non-negative integer");
  return n;
}

void validate(const distributed_env& e) {
  if (e.world_size == 0) throw std::invalid_argument("world size is 0 (from " + e.origin + ")");
  if (e.rank >= e.world_size) {
    throw std::invalid_argument("rank " + std::to_string(e.rank) + " is not below world size " +
                                std::to_string(e.world_size) + " (from " + e.origin + ")");
  }
}

}  // namespace

std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> a(n);
  std::iota(a.begin(), a.end(), std::size_t{0});
  sample_rng rng(sample_key{seed, 0, 0}, permutation_stream);
  ringfeed::shuffle(std::span(a), rng);
  return a;
}

distributed_env distributed_env_from_environment() {
  auto pair = [](const char* rank_name, const char* world_name) -> std::optional<distributed_env> {
    const auto rank = env(rank_name);
    const auto world = env(world_name);
    if (!rank && !world) return std::nullopt;
    if (!rank || !world) {
      throw std::invalid_argument(std::string(rank ? rank_name : world_name) + " is set but " +
                                  (rank ? world_name : rank_name) + " is not: set both, or neither");
    }
    distributed_env e;
    e.rank = parse_env_count(rank_name, *rank);
    e.world_size = parse_env_count(world_name, *world);
    e.origin = std::string(rank_name) + "/" + world_name;
    validate(e);
    return e;
  };
  if (auto e = pair("RANK", "WORLD_SIZE")) return *e;
  if (auto e = pair("SLURM_PROCID", "SLURM_NTASKS")) return *e;
  return distributed_env{0, 1, "default"};
}

epoch_plan::epoch_plan(std::uint64_t epoch, std::vector<std::size_t> indices, std::size_t batch_size,
                       bool drop_last_batch)
    : m_epoch(epoch), m_indices(std::move(indices)), m_batch_size(batch_size) {
  if (batch_size == 0) throw std::invalid_argument("epoch_plan: batch_size must be at least 1");
  m_num_batches = drop_last_batch ? m_indices.size() / batch_size : (m_indices.size() + batch_size - 1) / batch_size;
}

std::span<const std::size_t> epoch_plan::batch(std::size_t k) const {
  if (k >= m_num_batches) {
    throw std::out_of_range("epoch_plan: batch " + std::to_string(k) + " of an epoch with " +
                            std::to_string(m_num_batches) + " batches");
  }
  const std::size_t begin = k * m_batch_size;
  const std::size_t count = std::min(m_batch_size, m_indices.size() - begin);
  return std::span<const std::size_t>(m_indices).subspan(begin, count);
}

sampler::sampler(std::size_t dataset_size, const sampler_options& options) : m_size(dataset_size), m_options(options) {
  if (options.rank && options.world_size) {
    m_env = distributed_env{*options.rank, *options.world_size, "options"};
  } else {
    m_env = distributed_env_from_environment();
    if (options.rank) m_env.rank = *options.rank;
    if (options.world_size) m_env.world_size = *options.world_size;
    if (options.rank || options.world_size) m_env.origin = "options and " + m_env.origin;
  }
  validate(m_env);
  const std::size_t w = m_env.world_size;
  // DistributedSampler: drop_last and n % w != 0 → ceil((n - w) / w), which
  // is floor(n / w) (0 when n < w); otherwise ceil(n / w).
  m_num_samples = options.drop_last ? m_size / w : m_size / w + (m_size % w != 0 ? 1 : 0);
}

std::vector<std::size_t> sampler::global_order(std::uint64_t epoch) const {
  if (m_options.shuffle) return permutation(m_size, m_options.seed + epoch);  // torch: manual_seed(seed + epoch)
  std::vector<std::size_t> order(m_size);
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

std::vector<std::size_t> sampler::indices(std::uint64_t epoch) const {
  std::vector<std::size_t> out;
  if (m_num_samples == 0) return out;
  const std::vector<std::size_t> order = global_order(epoch);
  const std::size_t total = total_size();
  out.reserve(m_num_samples);
  // Padding repeats the order from its start (as many times as needed), so
  // padded position p holds order[p mod n]; truncation never reaches p >= n.
  for (std::size_t p = m_env.rank; p < total; p += m_env.world_size) out.push_back(order[p % m_size]);
  return out;
}

std::size_t sampler::num_batches(std::size_t batch_size, bool drop_last_batch) const {
  if (batch_size == 0) throw std::invalid_argument("sampler: batch_size must be at least 1");
  return drop_last_batch ? m_num_samples / batch_size : (m_num_samples + batch_size - 1) / batch_size;
}

stream_order shard_stream_order(std::span<const std::uint32_t> shard_of, std::span<const std::uint64_t> offset_of,
                                std::size_t num_shards, std::uint64_t seed, std::uint64_t epoch, std::size_t buffer,
                                bool shuffle) {
  if (shard_of.size() != offset_of.size())
    throw std::invalid_argument("shard_stream_order: shard_of and offset_of differ in length");
  // Members of each shard in file order (counting sort by shard, then by offset).
  std::vector<std::vector<std::size_t>> members(num_shards);
  for (std::size_t i = 0; i < shard_of.size(); ++i) {
    if (shard_of[i] >= num_shards) throw std::invalid_argument("shard_stream_order: sample " + std::to_string(i) + " is in no shard");
    members[shard_of[i]].push_back(i);
  }
  for (auto& m : members)
    std::stable_sort(m.begin(), m.end(), [&](std::size_t a, std::size_t b) { return offset_of[a] < offset_of[b]; });

  stream_order out;
  out.read.reserve(shard_of.size());
  const std::vector<std::size_t> shards =
      shuffle ? permutation(num_shards, seed + epoch) : [&] {
        std::vector<std::size_t> v(num_shards);
        std::iota(v.begin(), v.end(), std::size_t{0});
        return v;
      }();
  for (const std::size_t s : shards) out.read.insert(out.read.end(), members[s].begin(), members[s].end());
  if (!shuffle || buffer <= 1) {
    out.emit = out.read;
    return out;
  }
  // The buffer draws from its own Philox stream, next to the permutation's.
  sample_rng rng(sample_key{seed + epoch, 0, 1}, permutation_stream);
  out.emit.reserve(out.read.size());
  std::vector<std::size_t> pool;
  pool.reserve(std::min(buffer, out.read.size()));  // never holds more
  for (const std::size_t i : out.read) {
    if (pool.size() < buffer) {
      pool.push_back(i);
      continue;
    }
    const auto j = static_cast<std::size_t>(rng.below(pool.size()));
    out.emit.push_back(pool[j]);
    pool[j] = i;
  }
  while (!pool.empty()) {  // drain: a random one each time
    const auto j = static_cast<std::size_t>(rng.below(pool.size()));
    out.emit.push_back(pool[j]);
    pool[j] = pool.back();
    pool.pop_back();
  }
  return out;
}

epoch_plan sampler::plan(std::uint64_t epoch, std::size_t batch_size, bool drop_last_batch) const {
  if (batch_size == 0) throw std::invalid_argument("sampler: batch_size must be at least 1");
  return epoch_plan(epoch, indices(epoch), batch_size, drop_last_batch);
}

}  // namespace ringfeed::data
