// ringfeed::data::sampler — the order of samples in each epoch, per rank.
//
// Semantics of torch.utils.data.DistributedSampler, step for step:
//   indices = shuffle ? permutation(n, seed + epoch) : 0..n-1
//   drop_last = false: pad to total_size = ceil(n / world) · world by
//                      repeating indices from the start (several times when
//                      n < padding);
//   drop_last = true:  truncate to total_size = floor(n / world) · world;
//   rank r takes indices[r : total_size : world] (num_samples each).
// As in torch, the permutation depends on seed + epoch only (seed 1 epoch 0
// equals seed 0 epoch 1). The permutation itself is ringfeed's own, not
// torch.randperm's: ringfeed::shuffle (Fisher–Yates, from the top, with
// Lemire's nearly-divisionless bounded draws) over Philox4x32-10
// (ringfeed::sample_rng, keyed by seed + epoch, on the reserved stream
// permutation_stream; see ringfeed/random.hpp). It is integer-only and
// identical on every platform and compiler.
//
// Batching (the DataLoader's batch_size and drop_last, distinct from the
// sampler's drop_last): batch k of an epoch holds this rank's indices
// [k·batch_size, (k+1)·batch_size); so a loader restored at (epoch, batch)
// continues with exactly the samples it would have had.
//
// rank and world size come from the options, else from the environment:
// RANK/WORLD_SIZE (torchrun) or SLURM_PROCID/SLURM_NTASKS, else 0 and 1.
//
// sampler and epoch_plan are immutable after construction: every const
// member is safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <ringfeed/random.hpp>

namespace ringfeed::data {

/// The Philox stream the permutation draws from (reserved in random.hpp:
/// the per-sample augmentation streams must not use it).
using ringfeed::permutation_stream;

/// A uniformly random permutation of 0..n-1, a pure function of (n, seed):
/// ringfeed::shuffle over sample_rng(sample_key{seed, 0, 0}, permutation_stream).
[[nodiscard]] std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed);

/// Shard streaming (WebDataset's recipe): the order in which samples stored
/// in tar shards are read, and the order they come out in.
///   read: the shards in a random order (seed + epoch; file order without
///         shuffle), each shard's members in file order, so a reader walks
///         each shard front to back in large sequential reads;
///   emit: `read` passed through a shuffle buffer of `buffer` samples: once
///         it is full, each new sample replaces a uniformly chosen one, which
///         goes out; at the end the rest go out in random order. A pure
///         function of (shards, seed, epoch, buffer), whatever the threads.
/// Without shuffle, emit == read. `shard_of[i]` and `offset_of[i]` are
/// sample i's shard and byte offset; every sample must be in a shard.
struct stream_order {
  std::vector<std::size_t> read;
  std::vector<std::size_t> emit;
};
[[nodiscard]] stream_order shard_stream_order(std::span<const std::uint32_t> shard_of,
                                              std::span<const std::uint64_t> offset_of, std::size_t num_shards,
                                              std::uint64_t seed, std::uint64_t epoch, std::size_t buffer,
                                              bool shuffle);

/// Rank and world size of this process.
struct distributed_env {
  std::size_t rank = 0;
  std::size_t world_size = 1;
  std::string origin;  ///< "options", "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS" or "default"
};

/// Reads RANK/WORLD_SIZE, else SLURM_PROCID/SLURM_NTASKS, else {0, 1}.
/// Throws std::invalid_argument when only one of a pair is set, a value is
/// not a non-negative integer, world_size is 0 or rank >= world_size (the
/// message names the variables and values).
[[nodiscard]] distributed_env distributed_env_from_environment();

struct sampler_options {
  std::uint64_t seed = 0;
  bool shuffle = true;     ///< false: 0..n-1 every epoch (validation)
  bool drop_last = false;  ///< DistributedSampler's: truncate instead of pad
  std::optional<std::size_t> rank;        ///< unset: from the environment
  std::optional<std::size_t> world_size;  ///< unset: from the environment
};

/// This rank's samples of one epoch, cut into batches.
class epoch_plan {
 public:
  epoch_plan(std::uint64_t epoch, std::vector<std::size_t> indices, std::size_t batch_size, bool drop_last_batch);

  [[nodiscard]] std::uint64_t epoch() const noexcept { return m_epoch; }
  [[nodiscard]] std::size_t batch_size() const noexcept { return m_batch_size; }
  /// ceil(n / batch_size), or floor when drop_last_batch.
  [[nodiscard]] std::size_t num_batches() const noexcept { return m_num_batches; }
  /// Every index of this rank's epoch, in order (before dropping a short
  /// last batch); a view into this plan.
  [[nodiscard]] std::span<const std::size_t> indices() const noexcept { return m_indices; }
  /// Dataset indices of batch k, in slot order: a view into this plan,
  /// valid while it lives. Throws std::out_of_range when k >= num_batches().
  [[nodiscard]] std::span<const std::size_t> batch(std::size_t k) const;

 private:
  std::uint64_t m_epoch;
  std::vector<std::size_t> m_indices;
  std::size_t m_batch_size;
  std::size_t m_num_batches;
};

class sampler {
 public:
  /// Resolves rank and world size (options, else the environment) and
  /// validates them: throws std::invalid_argument for world_size 0 or
  /// rank >= world_size.
  explicit sampler(std::size_t dataset_size, const sampler_options& options = {});

  [[nodiscard]] std::size_t dataset_size() const noexcept { return m_size; }
  [[nodiscard]] std::size_t rank() const noexcept { return m_env.rank; }
  [[nodiscard]] std::size_t world_size() const noexcept { return m_env.world_size; }
  /// Where rank and world size came from.
  [[nodiscard]] const distributed_env& env() const noexcept { return m_env; }
  [[nodiscard]] const sampler_options& options() const noexcept { return m_options; }

  /// Samples per rank per epoch (DistributedSampler.num_samples).
  [[nodiscard]] std::size_t num_samples() const noexcept { return m_num_samples; }
  /// num_samples() · world_size() (DistributedSampler.total_size).
  [[nodiscard]] std::size_t total_size() const noexcept { return m_num_samples * m_env.world_size; }

  /// The whole epoch's order before padding and sharding: the permutation
  /// for seed + epoch, or 0..n-1 without shuffle.
  [[nodiscard]] std::vector<std::size_t> global_order(std::uint64_t epoch) const;
  /// This rank's indices for `epoch` (what iter(DistributedSampler) yields
  /// after set_epoch(epoch)).
  [[nodiscard]] std::vector<std::size_t> indices(std::uint64_t epoch) const;

  /// Batches of this rank per epoch. Throws std::invalid_argument for batch_size 0.
  [[nodiscard]] std::size_t num_batches(std::size_t batch_size, bool drop_last_batch) const;
  /// This rank's epoch cut into batches. Throws std::invalid_argument for batch_size 0.
  [[nodiscard]] epoch_plan plan(std::uint64_t epoch, std::size_t batch_size, bool drop_last_batch) const;

 private:
  std::size_t m_size;
  sampler_options m_options;
  distributed_env m_env;
  std::size_t m_num_samples;
};

}  // namespace ringfeed::data
