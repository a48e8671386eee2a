// ringfeed::resolve — the one place that settles a loader's options.
//
// Every front end (the Python binding, the C API, the CLI) takes the user's
// options in its own syntax, fills a loader_request with what was given
// (unset stays std::nullopt) and calls resolve(). resolve() applies the
// rules that tie options together and picks the defaults that depend on
// others, so the front ends cannot drift apart:
//
//   - a transform list replaces the train/val preset and its size (not both);
//   - the output is the list's end; given, it must fit it (a float dtype only for
//     a list that ends with a float tensor);
//   - shuffle defaults to the recipe's: "train" and lists with a random op
//     are shuffled, "val" and deterministic lists are not;
//   - threads default to this rank's share of the CPUs it may use: the
//     affinity mask within the cgroup quota, divided among the local ranks
//     that share it (loader/node.hpp);
//   - memory_budget defaults to max(1 GiB, 4 batch slabs), so prefetch has
//     room whatever the batch, within a quarter of this rank's share of
//     the cgroup limit or MemAvailable;
//   - s3 credentials come in pairs and not with anonymous;
//   - decode (base.decode, as asked: "auto", "cpu" or "gpu") becomes cpu or
//     gpu. The GPU decodes into device batches (base.device >= 0), in fast
//     mode, when every op has a device kernel (pipeline::device_refusal():
//     the crop / resize / flip head and ToTensor / Normalize), from encoded
//     files (not in-memory pixels, not cache="pixels", which keeps pixels
//     the CPU decoded). "gpu" is refused otherwise, saying which and what to
//     use instead (exact mode: the GPU's IDCT and chroma upsampling are not
//     libjpeg-turbo's); "auto" is cpu with the first of those reasons, else
//     gpu. The loader still decodes on the CPU when the device or nvJPEG is
//     missing at open (loader_stats::gpu_decode says why).
//
// Each default it picks is returned with its reason (resolved::reasons),
// and the loader reports them in stats() as "<option>_reason".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/node.hpp>
#include <ringfeed/loader/numa.hpp>

namespace ringfeed {

/// The options a front end was given. `base` carries every option that
/// needs no settling, as given (source, batch_size, sampler seed/rank,
/// threads, io, cache, s3, device, on_error, end, resume, samples/pixels,
/// log, stop…); its pipeline, output, sampler.shuffle and memory_budget are
/// ignored: resolve() decides them from the fields below. Its decode is
/// what was asked (decode_where::automatic unless given), which resolve()
/// settles to cpu or gpu.
struct loader_request {
  loader_options base;
  /// A preset, "train" or "val" (apply_preset); unset: "train", unless a
  /// transform is given.
  std::optional<std::string> pipeline;
  /// The preset's output side (1 … 32768); unset: 224.
  std::optional<int> size;
  /// A transform list (image/transform_spec.hpp) instead of a preset.
  std::string transform;
  /// torchvision-identical pixels instead of fast mode.
  bool exact = false;
  std::uint64_t max_pixels = image::default_max_pixels;
  /// "float32", "float16", "bfloat16" (each also "_nhwc") or "uint8"
  /// (parse_output); unset: float32 for a
  /// preset, the list's end for a transform.
  std::optional<std::string> output;
  std::optional<bool> shuffle;
  std::optional<std::size_t> memory_budget;
  /// The user's statement of CPUs for data (DataLoader's num_workers > 0):
  /// with threads unset, threads = min(workers, this rank's share).
  std::optional<std::size_t> workers;
  /// The machine as resolve sees it (tests give one); unset: read_node of
  /// this process (loader/node.hpp).
  std::optional<node_view> node;
  /// Where batch slabs and decode threads go (tests give one); unset, when
  /// base.device feeds a CUDA device: place_near_gpu on this machine
  /// (loader/numa.hpp), reported as "numa".
  std::optional<numa_placement> numa;
};

struct resolved {
  loader_options options;
  /// "train", "val" or "transform".
  std::string recipe;
  /// The output's user-facing name (output_name: "float32", "bfloat16_nhwc", "uint8", ...).
  std::string output;
  /// The defaults picked, in the order above (also options.reasons, which
  /// the loader reports in stats()).
  std::vector<option_reason> reasons;
};

/// Settles `request` (see the top of this file): options.decode is never
/// automatic afterwards, and "decode" is among the reasons. Throws
/// std::invalid_argument naming the option and the reason when options
/// contradict each other or a value is out of range; the transform list's
/// errors name the op (image::transform_spec_error).
[[nodiscard]] resolved resolve(loader_request request);

/// Refuses a transform list given together with a preset (resolve()'s
/// first rule; ringfeed.decode applies it too): std::invalid_argument.
void check_one_recipe(std::string_view transform, bool preset_given);

/// The user-facing names front ends accept, in their documented order:
/// "pipeline", "output", "io", "on_error", "cache", "decode" (for
/// generated choices and help).
[[nodiscard]] std::vector<std::string_view> accepted_names(std::string_view option);

}  // namespace ringfeed
