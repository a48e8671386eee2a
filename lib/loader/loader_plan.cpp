#include "loader_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <ringfeed/thread_pool.hpp>
#include <ringfeed/text.hpp>

namespace ringfeed::detail {
namespace {

constexpr std::size_t page = 4096;

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

void check_streaming(const loader_options& opt, const data::dataset& ds, const data::sampler& smp) {
  if (!opt.stream_shards) return;
  if (ds.shards().empty())
    throw std::invalid_argument("loader: stream_shards reads tar shards, and '" + opt.source +
                                "' has none: pack it first with `ringfeed pack " + escape_bytes(opt.source) + " OUT`");
  if (opt.stream_read_size == 0) throw std::invalid_argument("loader: stream_read_size must be at least 1");
  if (smp.world_size() > 1)
    throw std::invalid_argument("loader: stream_shards with world_size " + std::to_string(smp.world_size()) +
                                " is not supported yet (each rank would need its own shards)");
}

void check_resume(const loader_options& opt, const data::sampler& smp, loader_plan& p) {
  if (!opt.resume) return;
  const loader_state& st = *opt.resume;
  if (st.seed != opt.sampler.seed || st.rank != smp.rank() || st.world_size != smp.world_size())
    throw std::invalid_argument("loader: the resume state was saved with seed " + std::to_string(st.seed) + ", rank " +
                                std::to_string(st.rank) + "/" + std::to_string(st.world_size) +
                                " but this loader has seed " + std::to_string(opt.sampler.seed) + ", rank " +
                                std::to_string(smp.rank()) + "/" + std::to_string(smp.world_size()));
  if (st.next_batch > p.batches_per_epoch)
    throw std::invalid_argument("loader: the resume state's batch " + std::to_string(st.next_batch) +
                                " is past the epoch's " + std::to_string(p.batches_per_epoch) + " batches");
  p.first_epoch = st.epoch;
  p.first_batch = st.next_batch;
}

// Where batches go: a CUDA device when one is usable, else host memory.
void choose_device(const loader_options& opt, const cuda::device_probe& devices, loader_plan& p) {
  if (opt.device < 0) {
    p.host_reason = "host batches requested (device = -1)";
  } else if (!devices.available()) {
    p.host_reason = "no usable CUDA device (" + devices.reason + ")";
  } else if (opt.device >= devices.device_count) {
    throw std::invalid_argument("loader: device " + std::to_string(opt.device) + " requested but " +
                                std::to_string(devices.device_count) + " CUDA device(s) found");
  } else {
    p.use_device = true;
  }
}

void size_memory(const loader_options& opt, loader_plan& p) {
  p.slab_bytes = (opt.batch_size * p.sample_bytes + page - 1) / page * page;
  const std::size_t fit = opt.memory_budget / p.slab_bytes;
  if (fit < 2)
    throw std::invalid_argument("loader: memory_budget " + mib(opt.memory_budget) + " holds " + std::to_string(fit) +
                                " batch(es) of " + mib(p.slab_bytes) + " (batch_size " +
                                std::to_string(opt.batch_size) + "); it needs at least 2: raise it or lower batch_size");
  if (opt.prefetch_batches == 0) {
    p.slabs = std::min(fit, max_default_slabs);
    return;
  }
  p.slabs = opt.prefetch_batches + 1;  // + the batch the consumer holds
  if (p.slabs > fit)
    throw std::invalid_argument("loader: prefetch_batches " + std::to_string(opt.prefetch_batches) + " needs " +
                                mib(p.slabs * p.slab_bytes) + ", more than memory_budget " + mib(opt.memory_budget));
}

}  // namespace

void check_limits(const loader_options& opt) {
  const auto refuse = [](const char* name, std::size_t value, std::size_t most, const char* why) {
    throw std::invalid_argument("loader: " + std::string(name) + " " + std::to_string(value) + " is more than " +
                                std::to_string(most) + " (" + why + ")");
  };
  if (opt.threads > max_threads) refuse("threads", opt.threads, max_threads, "0 chooses from the CPUs this process may use");
  if (opt.pread_threads > max_threads)
    refuse("pread_threads", opt.pread_threads, max_threads, "0: min(io_depth, 16)");
  if (opt.io_depth > max_io_depth)
    refuse("io_depth", opt.io_depth, max_io_depth, "io_uring's largest queue; 0 asks the storage probe");
}

void share_budget_with_files(const loader_options& opt, loader_plan& p) noexcept {
  if (opt.prefetch_batches == 0) {
    const std::size_t for_slabs = opt.memory_budget - opt.memory_budget / 4;
    p.slabs = std::max<std::size_t>(2, std::min(p.slabs, for_slabs / p.slab_bytes));
  }
  const std::size_t slabs_bytes = p.slabs * p.slab_bytes;
  p.file_bytes = opt.memory_budget > slabs_bytes ? opt.memory_budget - slabs_bytes : 0;
}

loader_plan plan_loader(const loader_options& opt, const data::dataset& ds, const data::sampler& smp,
                        const cuda::device_probe& devices) {
  check_limits(opt);
  if (opt.batch_size == 0) throw std::invalid_argument("loader: batch_size must be at least 1");
  if (ds.empty()) throw std::invalid_argument("loader: '" + escape_bytes(opt.source) + "' holds no samples");
  check_streaming(opt, ds, smp);
  loader_plan p;
  p.batches_per_epoch = smp.num_batches(opt.batch_size, opt.drop_last);
  if (p.batches_per_epoch == 0)
    throw std::invalid_argument("loader: '" + escape_bytes(opt.source) + "' gives rank " + std::to_string(smp.rank()) + " " +
                                std::to_string(smp.num_samples()) + " samples per epoch, fewer than batch_size " +
                                std::to_string(opt.batch_size) + " with drop_last: no batch to deliver");
  check_resume(opt, smp, p);
  choose_device(opt, devices, p);

  opt.output.check();  // on the device path too, where the uploader converts to it
  p.pipe = opt.pipeline;
  // The device kernel makes the output from RGB bytes; anything else is
  // made on the host and uploaded as it is.
  p.host_converted = p.use_device && (!p.pipe.device_convertible() || opt.output == output_spec::uint8_nchw());
  p.pipe.set_output(p.use_device && !p.host_converted ? output_spec::uint8_nhwc() : opt.output);
  auto shape = p.pipe.fixed_shape();
  if (!shape && opt.pixels)  // images in memory all have one size
    shape = p.pipe.output_for({opt.pixels->width, opt.pixels->height});
  if (!shape)
    throw std::invalid_argument(
        "loader: the pipeline's output size depends on the image; end it with center_crop, "
        "random_resized_crop or an exact resize so samples fit batch slots");
  p.sample_shape = *shape;
  p.sample_bytes = shape->bytes();
  size_memory(opt, p);
  p.workers = std::max({opt.io_depth, thread_pool::default_thread_count(opt.threads), std::size_t{1}});
  return p;
}

}  // namespace ringfeed::detail
