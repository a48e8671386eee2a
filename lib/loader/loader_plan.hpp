// Private: what a loader's options come to before anything runs — every
// refusal a bad option gets, where delivery starts, and how much batch
// memory there is — as a pure function of the options, the dataset, the
// sampler and the CUDA probe: no I/O, no threads, no allocation of batch
// memory. tests/loader_plan_tests.cpp checks each refusal and each size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <ringfeed/cuda/device.hpp>
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/sampler.hpp>
#include <ringfeed/loader/loader.hpp>

namespace ringfeed::detail {

struct loader_plan {
  image::pipeline pipe;               ///< the options' pipeline, its output chosen
  image::output_shape sample_shape;   ///< what one sample slot holds
  std::size_t sample_bytes = 0;
  std::size_t slab_bytes = 0;         ///< one batch: batch_size slots, whole pages
  std::size_t slabs = 0;              ///< batches of host memory: prefetch + the consumer's
  /// Worker coroutines, each reading then decoding one sample at a time:
  /// max(io_depth, decode threads), so every thread can decode even when
  /// io_depth is shallow (8 in memory, 4 on HDDs); reads in flight stay
  /// bounded by io_depth (run::read_slots).
  std::size_t workers = 0;
  std::size_t batches_per_epoch = 0;
  bool use_device = false;            ///< batches go to CUDA device opt.device
  /// With use_device: the host slabs already hold the output (the
  /// transforms end with a tensor or one channel, which the device kernel
  /// does not make from RGB bytes): uploaded as they are.
  bool host_converted = false;
  std::string host_reason;            ///< why they stay in host memory ("" on a device)
  std::uint64_t first_epoch = 0;      ///< where delivery starts (the resume state)
  std::size_t first_batch = 0;
  /// decode="gpu": bytes of memory_budget the GPU route's files may hold
  /// (kept from the decode threads to the upload thread's decode),
  /// share_budget_with_files; 0 before.
  std::size_t file_bytes = 0;
};

/// Slabs when prefetch_batches is 0: as many as the budget holds, at most this.
inline constexpr std::size_t max_default_slabs = 8;

/// Refuses threads, pread_threads or io_depth above max_threads /
/// max_io_depth (loader.hpp), naming the option: before any thread,
/// ring or read slot is made of them. plan_loader calls it too.
void check_limits(const loader_options& opt);

/// Checks `opt` against the dataset and sampler and sizes the batch memory.
/// `devices` is consulted only when opt.device >= 0. Throws
/// std::invalid_argument naming the option, the value and the way out.
[[nodiscard]] loader_plan plan_loader(const loader_options& opt, const data::dataset& ds, const data::sampler& smp,
                                      const cuda::device_probe& devices);

/// The GPU decode's share of the budget: the encoded files of the batches
/// in flight are held until the upload thread decodes them, so they count
/// in memory_budget beside the slabs. Without prefetch_batches the slabs
/// give up what they must for the files to have at least a quarter of the
/// budget (never fewer than 2 slabs); the files get the rest, budget −
/// slabs × slab_bytes. With prefetch_batches the slabs are what was asked
/// and the files get the rest (maybe 0: every image then decodes on the
/// CPU, which stats()' cpu_reasons say). Pure.
void share_budget_with_files(const loader_options& opt, loader_plan& p) noexcept;

}  // namespace ringfeed::detail
