// perf/bench/turbojpeg_decode.hpp — one JPEG through TurboJPEG and nothing else:
// the bare decode baseline_turbojpeg_bench and decode_limit both time.
// Plain C++ and TurboJPEG: baselines link no ringfeed code.
#pragma once

#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringfeed::perf {

/// tjDecompressHeader3 + tjDecompress2 of `file` to TJPF_RGB at `factor`,
/// flags 0 (accurate ISLOW DCT, fancy upsampling: what Pillow and
/// ringfeed's exact mode use), into `out` (grown as needed). Returns the
/// pixels decoded; on a fatal error sets `error` and returns 0. Warnings
/// (TJERR_WARNING) still decode the whole image and do not count as errors.
inline std::uint64_t tj_decode_rgb(tjhandle tj, const std::vector<std::byte>& file, tjscalingfactor factor,
                                   std::vector<unsigned char>& out, std::string& error) {
  const auto* src = reinterpret_cast<const unsigned char*>(file.data());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, src, file.size(), &width, &height, &subsamp, &colorspace) != 0) {
    error = std::string("tjDecompressHeader3: ") + tjGetErrorStr2(tj);
    return 0;
  }
  const int w = TJSCALED(width, factor);
  const int h = TJSCALED(height, factor);
  const std::size_t need = static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3;
  if (out.size() < need) out.resize(need);
  if (tjDecompress2(tj, src, file.size(), out.data(), w, 0, h, TJPF_RGB, 0) != 0 &&
      tjGetErrorCode(tj) == TJERR_FATAL) {
    error = std::string("tjDecompress2: ") + tjGetErrorStr2(tj);
    return 0;
  }
  return static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h);
}

}  // namespace ringfeed::perf
