// Private: what keeps the GPU from decoding for a loader's options — one
// list of rules for resolve() (which settles decode="auto" and refuses
// decode="gpu") and for a loader opened without it (a C++ caller's "auto").
#pragma once

#include <optional>
#include <string>

#include <ringfeed/loader/loader.hpp>

namespace ringfeed::detail {

/// `reason` says why the CPU decodes (decode="auto"), `refusal` is
/// decode="gpu"'s error.
struct gpu_obstacle {
  std::string reason;
  std::string refusal;
};

/// The first obstacle, in the order auto reports them: host batches, exact
/// mode, an op without a device kernel (pipeline::device_refusal()), images
/// in memory, cache="pixels"; nothing when the GPU may decode.
[[nodiscard]] std::optional<gpu_obstacle> gpu_decode_obstacle(const loader_options& o, bool exact);

}  // namespace ringfeed::detail
