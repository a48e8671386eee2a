// ringfeed::image::torch_reference — which torch's arithmetic the ops
// follow where torch versions compute the same formula differently.
//
// torchvision's transforms are bit-identical to ringfeed's ops on one
// torch; on another the same Python line can give other bits. The one such
// places today: torch.linspace in float32, which builds the magnitude bins
// of AutoAugment, RandAugment, TrivialAugmentWide and AugMix (torch 1.13's
// vectorised kernel computes 8-lane chunks from their first element on
// AVX2; torch 2.x each element from the nearer end, with a fused
// multiply-add on AVX2/AVX512, without one with no vector unit), and the
// bmm of the tensor affine grid AugMix's geometric ops sample through.
//
// The reference is process-wide, as torch is: Python sets it from the torch
// it has imported (ringfeed.transforms), C++ and the CLI keep the default
// (the committed goldens' torch 1.13 on AVX2). An op reads it when it is
// built, so a list parsed once keeps its arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringfeed::image {

enum class linspace_rule : std::uint8_t {
  chunked8,  // torch 1.x, AVX2: 8-lane chunks from each chunk's first element
  fused,     // torch 2.x, AVX2 / AVX512: each element from the nearer end, fma
  plain,     // torch 2.x without a vector unit: the same, multiply then add
};

struct torch_reference {
  std::string name = "torch 1.13 (AVX2)";
  linspace_rule linspace = linspace_rule::chunked8;
  /// The affine grid's bmm (F_t.affine / rotate on tensors): torch 2.x on
  /// AVX2/AVX512 fuses it (tensor_kernels.hpp), torch 1.13 rounds each step.
  bool fused_bmm = false;
  /// torchvision's tensor resize of a uint8 tensor: torch 2.x's v2
  /// (resize_image) keeps uint8 for bicubic, and for bilinear where
  /// torch.backends.cpu.get_cpu_capability() is AVX2 or AVX512, running
  /// torch's uint8 kernels; otherwise it resizes a float copy and rounds,
  /// as torch 1.x's torchvision (F_t.resize) always does.
  bool uint8_bilinear = false;
  bool uint8_bicubic = false;
  /// torch's major version (1 for the default, the goldens' torch 1.13).
  int major = 1;

  /// From "torch=2.14.1+cu130 cpu=AVX512 [torchvision=0.29.1] [pillow=12.3.0]"
  /// (torch.__version__, torch.backends.cpu.get_cpu_capability(); the
  /// other two are only named).
  /// Throws std::invalid_argument for text it cannot read.
  [[nodiscard]] static torch_reference parse(std::string_view text);
};

/// The reference ops built from now on follow (thread-safe).
void set_torch_reference(const torch_reference& r);
[[nodiscard]] torch_reference current_torch_reference();

/// Element `i` of torch.linspace(start, end, steps) in float32 under `rule`.
[[nodiscard]] float linspace_at(linspace_rule rule, double start, double end, int steps, int i);

}  // namespace ringfeed::image
