// nvJPEG's routing per image (nvjpeg_route.hpp).
#include "nvjpeg_route.hpp"

namespace ringfeed::cuda {

jpeg_route nvjpeg_route(const image::image_info& info, bool hardware) noexcept {
  using image::chroma_subsampling;
  auto cpu = [](std::string_view why) { return jpeg_route{jpeg_backend::cpu, why}; };
  if (info.format != image::image_format::jpeg) return cpu("not a JPEG");
  if (info.width <= 0 || info.height <= 0) return cpu("no size in the header");
  if (info.arithmetic) return cpu("arithmetic coding");
  if (info.orientation != 1) return cpu("EXIF orientation");
  if (info.components == 4) return cpu("4 components");
  if (info.components != 1 && info.components != 3) return cpu("unusual component count");

  bool hardware_sampling = info.components == 1;
  if (info.components == 3) {
    switch (info.subsampling) {
      case chroma_subsampling::s444:
      case chroma_subsampling::s422:
      case chroma_subsampling::s420:
      case chroma_subsampling::s440:
        hardware_sampling = true;
        break;
      case chroma_subsampling::s411:
        break;  // the hybrid backend's NVJPEG_CSS_411; not the engines'
      case chroma_subsampling::none:
        return cpu("not YCbCr");  // an RGB JPEG (Adobe transform 0): nvJPEG would convert it as YCbCr
      case chroma_subsampling::s441:
      case chroma_subsampling::other:
        return cpu("chroma subsampling");
    }
  }
  const bool to_hardware = hardware && hardware_sampling && !info.progressive;
  return {to_hardware ? jpeg_backend::hardware : jpeg_backend::hybrid, {}};
}

}  // namespace ringfeed::cuda
