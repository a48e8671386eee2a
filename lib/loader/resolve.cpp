// ringfeed::resolve: see loader/resolve.hpp. The rules every front end
// used to write again (Python's loader.py, the C API, the CLI) live here.
#include <ringfeed/loader/resolve.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include <ringfeed/image/torch_reference.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/text.hpp>

#include "../cuda/device_api.hpp"
#include "gpu_obstacle.hpp"

namespace ringfeed {
namespace {

constexpr std::size_t gib = std::size_t{1} << 30;
constexpr int max_size = 32768;  // keeps val's size * 256 / 224 far from int overflow

// What a transform list ends with, in torchvision's words, from the output
// it gives (ToTensor and Normalize are fused into the output conversion).
std::string ends_with(output_spec end) {
  if (end.normalized()) return "a float tensor";
  return end == output_spec::uint8_nchw() ? "a uint8 tensor" : "a PIL image";
}

// The output a transform list gives when `name` is asked of it, or an
// error saying why it does not fit: the list's end decides, and output=
// may only pick float16 or float32 for a list that ends with a float
// tensor, or name what it already is ("uint8" for an image or PILToTensor).
output_spec fitting_output(const image::pipeline& p, const std::string& name) {
  const output_spec wanted = parse_output(name);
  const output_spec end = p.output();
  const bool fits = end.normalized() ? wanted.normalized() : wanted.dtype == dtype::uint8;
  if (!fits)
    throw std::invalid_argument("output \"" + name + "\" does not fit this transform, which ends with " +
                                ends_with(end) +
                                "; leave output unset (float16 is for transforms ending with a float tensor)");
  return end.normalized() ? wanted : end;
}

// Bytes of one sample in a batch slab: the output's, or uint8 RGB when a
// device makes the output from it (loader_plan's rule).
std::size_t sample_bytes(const loader_options& o, const std::string& recipe) {
  image::pipeline p = o.pipeline;
  const bool device_converts = o.device >= 0 && p.device_convertible() && o.output != output_spec::uint8_nchw();
  p.set_output(device_converts ? output_spec::uint8_nhwc() : o.output);
  auto shape = p.fixed_shape();
  if (!shape && o.pixels) shape = p.output_for({o.pixels->width, o.pixels->height});
  if (!shape)
    throw std::invalid_argument(
        recipe == "transform"
            ? "transform: the output size depends on the image (no crop or fixed-size resize at the end), so "
              "samples cannot be stacked into a batch; end it with a crop or Resize((h, w))"
            : "pipeline: the output size depends on the image");
  return shape->bytes();
}

// The placement near CUDA device `device` for `threads` decode threads,
// or why there is none. Probes CUDA (the loader does it next anyway).
numa_placement place_near(int device, std::size_t threads) {
  const std::shared_ptr<cuda::device_api> api = cuda::current_device_api();
  const cuda::device_probe probe = api->probe();
  if (!probe.available() || device >= probe.device_count) {
    numa_placement none;
    none.reason = "no CUDA device " + std::to_string(device) + " to place memory and threads near (" +
                  (probe.available() ? std::to_string(probe.device_count) + " found" : probe.reason) + ")";
    return none;
  }
  return place_near_gpu(node_sources::of_this_process(), api->pci_bus_id(device), threads);
}

// options.decode settled from what was asked (see resolve.hpp), with its reason.
option_reason settle_decode(loader_options& o, bool exact) {
  const std::optional<detail::gpu_obstacle> obstacle = detail::gpu_decode_obstacle(o, exact);
  switch (o.decode) {
    case decode_where::cpu:
      return {"decode", "asked"};
    case decode_where::gpu:
      if (obstacle) throw std::invalid_argument(obstacle->refusal);
      return {"decode", "asked"};
    case decode_where::automatic:
      break;
  }
  if (obstacle) {
    o.decode = decode_where::cpu;
    return {"decode", "cpu: " + obstacle->reason};
  }
  o.decode = decode_where::gpu;
  return {"decode", "gpu: device batches, fast mode, every op has a device kernel (the CPU decodes instead "
                    "where the device or nvJPEG is missing at open: gpu_decode says so)"};
}

}  // namespace

void check_one_recipe(std::string_view transform, bool preset_given) {
  if (!transform.empty() && preset_given)
    throw std::invalid_argument("give either transform or pipeline/size, not both: "
                                "transform replaces the train/val presets");
}

resolved resolve(loader_request r) {
  resolved out;
  loader_options& o = out.options;
  o = std::move(r.base);
  o.reasons.clear();

  if (r.max_pixels == 0) throw std::invalid_argument("max_pixels must be at least 1");
  check_one_recipe(r.transform, r.pipeline || r.size);
  if (!r.transform.empty()) {
    apply_transform(o, r.transform, r.exact, r.max_pixels);  // o.output: the list's end
    out.recipe = "transform";
    out.reasons.push_back({"transform", "torchvision's arithmetic as on " + image::current_torch_reference().name});
    if (r.output) o.output = fitting_output(o.pipeline, *r.output);
    if (!r.shuffle)
      out.reasons.push_back({"shuffle", o.sampler.shuffle ? "the transform draws random parameters"
                                                          : "the transform is deterministic"});
  } else {
    const int size = r.size.value_or(224);
    if (size < 1 || size > max_size)
      throw std::invalid_argument("size must be in [1, " + std::to_string(max_size) + "], not " +
                                  std::to_string(size));
    out.recipe = r.pipeline.value_or("train");
    apply_preset(o, out.recipe, size, r.exact, r.max_pixels);
    o.output = parse_output(r.output.value_or("float32"));
    if (!r.pipeline) out.reasons.push_back({"pipeline", "no transform or preset given: train"});
    if (!r.shuffle)
      out.reasons.push_back({"shuffle", out.recipe == "train" ? "the train preset is shuffled"
                                                              : "the val preset reads in dataset order"});
  }
  if (r.shuffle) o.sampler.shuffle = *r.shuffle;
  out.output = output_name(o.output);

  if (o.batch_size == 0) throw std::invalid_argument("batch_size must be at least 1");
  const std::size_t slab = o.batch_size * sample_bytes(o, out.recipe);
  const node_view node = r.node ? *r.node : read_node(node_sources::of_this_process());
  if (o.threads == 0) {
    sized share = decode_threads_for(node);
    if (r.workers && *r.workers > 0) {
      share.reason = *r.workers <= share.value
                         ? "num_workers=" + std::to_string(*r.workers) + " (this rank's share: " + share.reason + ")"
                         : "num_workers=" + std::to_string(*r.workers) + " capped at this rank's share: " + share.reason;
      share.value = std::min(share.value, *r.workers);
    }
    o.threads = share.value;
    out.reasons.push_back({"threads", std::move(share.reason)});
  }
  if (r.memory_budget) {
    if (*r.memory_budget == 0) throw std::invalid_argument("memory_budget must be at least 1");
    o.memory_budget = *r.memory_budget;
  } else {
    const std::size_t wanted = std::max(gib, 4 * slab);
    sized budget = memory_budget_for(node, wanted,
                                     wanted == gib ? "1 GiB: room for 4 batch slabs of " + byte_size_text(slab) + " and more"
                                                   : "4 batch slabs of " + byte_size_text(slab) + ": more than 1 GiB",
                                     slab);
    o.memory_budget = budget.value;
    out.reasons.push_back({"memory_budget", std::move(budget.reason)});
  }
  if (o.device >= 0) {
    o.numa = r.numa ? std::move(*r.numa) : place_near(o.device, o.threads);
    out.reasons.push_back({"numa", o.numa.reason});
  }
  out.reasons.push_back(settle_decode(o, r.exact));
  io::settle_s3_options(o.s3);
  o.reasons = out.reasons;
  return out;
}

namespace detail {

std::optional<gpu_obstacle> gpu_decode_obstacle(const loader_options& o, bool exact) {
  const std::string refused = "decode=\"gpu\": ";
  if (o.device < 0)
    return gpu_obstacle{"batches stay on the host (no device): the GPU decodes only into device batches",
                        refused + "it decodes into batches on a CUDA device, and batches stay on the host here; "
                                  "give the device option (Python: device=\"cuda\") or use decode=\"auto\" or "
                                  "\"cpu\""};
  if (exact)
    return gpu_obstacle{"exact mode: torchvision-identical pixels need libjpeg-turbo's IDCT and chroma upsampling",
                        refused + "not with exact=True: the GPU's IDCT and chroma upsampling are not "
                                  "libjpeg-turbo's, so torchvision-identical pixels cannot hold; use exact=False "
                                  "or decode=\"cpu\""};
  if (const std::string op = o.pipeline.device_refusal(); !op.empty())
    return gpu_obstacle{op + " has no device kernel (the GPU decode runs the crop/resize/flip head and "
                             "ToTensor/Normalize)",
                        refused + op + " has no device kernel (the GPU decode runs the crop/resize/flip head and "
                                       "ToTensor/Normalize); use decode=\"auto\" or \"cpu\""};
  if (o.pixels)
    return gpu_obstacle{"the images are in memory as pixels: nothing to decode",
                        refused + "the images are given in memory as pixels, so there is nothing to decode; "
                                  "use decode=\"auto\" or \"cpu\""};
  if (o.cache == cache_kind::pixels && !o.cache_dir.empty())
    return gpu_obstacle{"cache=\"pixels\" keeps pixels decoded on the CPU and reads them instead of decoding",
                        refused + "not with cache=\"pixels\", which keeps pixels decoded on the CPU (exact "
                                  "mode's) and reads them instead of decoding; use cache=\"bytes\" or "
                                  "decode=\"auto\" or \"cpu\""};
  return std::nullopt;
}

}  // namespace detail

}  // namespace ringfeed
