// The torch whose arithmetic the ops follow (torch_reference.hpp), and
// torch.linspace under each rule. Compiled with -ffp-contract=off (see
// lib/CMakeLists.txt) so that only the std::fma calls fuse.
#include <ringfeed/image/torch_reference.hpp>

#include <cmath>
#include <mutex>
#include <stdexcept>

namespace ringfeed::image {

namespace {

std::mutex g_mutex;
torch_reference g_reference;

std::string_view field(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    const std::string_view word = text.substr(at, end - at);
    if (word.size() > key.size() && word.substr(0, key.size()) == key && word[key.size()] == '=')
      return word.substr(key.size() + 1);
    at = end + 1;
  }
  return {};
}

}  // namespace

torch_reference torch_reference::parse(std::string_view text) {
  const std::string_view version = field(text, "torch");
  std::string cpu(field(text, "cpu"));
  for (char& c : cpu) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::size_t dot = version.find('.');
  if (version.empty() || dot == 0 || dot == std::string_view::npos || version[0] < '0' || version[0] > '9')
    throw std::invalid_argument("torch reference '" + std::string(text) +
                                "': expected 'torch=<version> cpu=<capability>'");
  const int major = std::stoi(std::string(version.substr(0, dot)));
  if (cpu.empty()) cpu = "AVX2";
  torch_reference r;
  r.name = "torch " + std::string(version) + " (" + cpu + ")";
  r.major = major;
  if (major < 2) {
    // torch 1.13's 8-lane chunks are AVX2's; with AVX512 it draws 16-lane
    // ones, which ringfeed does not model (Debian's torch runs AVX2).
    if (cpu != "AVX2")
      throw std::invalid_argument(r.name + ": ringfeed follows torch 1.x's arithmetic on AVX2 only "
                                           "(set ATEN_CPU_CAPABILITY=avx2)");
    r.linspace = linspace_rule::chunked8;
  } else {
    r.linspace = cpu == "DEFAULT" ? linspace_rule::plain : linspace_rule::fused;
    r.fused_bmm = cpu != "DEFAULT";
    r.uint8_bicubic = true;
    r.uint8_bilinear = cpu == "AVX2" || cpu == "AVX512";
  }
  // named beside it: they decide nothing here, but a reader of stats() sees
  // which installation the output was made to match
  if (const auto tv = field(text, "torchvision"); !tv.empty()) r.name += ", torchvision " + std::string(tv);
  if (const auto pil = field(text, "pillow"); !pil.empty()) r.name += ", Pillow " + std::string(pil);
  return r;
}

void set_torch_reference(const torch_reference& r) {
  const std::lock_guard lock(g_mutex);
  g_reference = r;
}

torch_reference current_torch_reference() {
  const std::lock_guard lock(g_mutex);
  return g_reference;
}

// start + step·i in the first half, end − step·(steps − 1 − i) in the
// second (ATen's scalar rule; torch 2.x vectorises it lane by lane).
// torch 1.13 on AVX2: the first floor(steps / 16) · 16 elements come from
// its vectorised loop in 8-lane chunks: the chunk's first element by the
// scalar rule, then + k·step, rounded separately.
float linspace_at(linspace_rule rule, double start, double end, int steps, int i) {
  if (steps == 1) return static_cast<float>(start);
  const float s = static_cast<float>(start);
  const float e = static_cast<float>(end);
  const float step = (e - s) / static_cast<float>(steps - 1);
  const auto scalar = [&](int k) {
    if (rule == linspace_rule::plain)
      return k < steps / 2 ? s + step * static_cast<float>(k) : e - step * static_cast<float>(steps - 1 - k);
    return k < steps / 2 ? std::fma(step, static_cast<float>(k), s)
                         : std::fma(-step, static_cast<float>(steps - 1 - k), e);
  };
  if (rule != linspace_rule::chunked8 || i >= steps / 16 * 16) return scalar(i);
  const int chunk = i / 8 * 8;
  const float lane_step = static_cast<float>(i - chunk) * step;
  return scalar(chunk) + lane_step;
}

}  // namespace ringfeed::image
