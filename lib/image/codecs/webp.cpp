// WebP through libwebp, decoded the way Pillow 9.4's WebPImagePlugin does it
// (the same library): every file, still or animated, goes through
// WebPAnimDecoder in MODE_RGBA without threads, the first frame is taken,
// and convert("RGB") drops the alpha channel.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>
#include <string>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image::detail {
namespace {

struct anim_deleter {
  void operator()(WebPAnimDecoder* dec) const noexcept { WebPAnimDecoderDelete(dec); }
};
using anim_ptr = std::unique_ptr<WebPAnimDecoder, anim_deleter>;

struct demux_deleter {
  void operator()(WebPDemuxer* dmx) const noexcept { WebPDemuxDelete(dmx); }
};
using demux_ptr = std::unique_ptr<WebPDemuxer, demux_deleter>;

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated file (not enough data)";
  }
  return "unknown error";
}

WebPData data_of(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

// The header as WebPGetFeatures reads it: the canvas size from VP8X when
// present, else the bitstream's frame size. Nothing is allocated.
WebPBitstreamFeatures features_of(std::span<const std::byte> bytes, std::string_view name) {
  WebPBitstreamFeatures features{};
  const VP8StatusCode status =
      WebPGetFeatures(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), &features);
  if (status != VP8_STATUS_OK) throw image_error(name, std::string("WebP: reading the header: ") + status_text(status));
  return features;
}

image_info info_of(const WebPBitstreamFeatures& features) {
  image_info info;
  info.format = image_format::webp;
  info.width = features.width;
  info.height = features.height;
  info.components = features.has_alpha ? 4 : 3;  // Pillow's RGBA / RGB(X)
  info.bit_depth = 8;
  return info;
}

// The EXIF chunk's Orientation, 1 when absent. Some writers put the JPEG
// APP1 "Exif\0\0" prefix in front of the TIFF header: skip it.
int orientation_of(std::span<const std::byte> bytes) {
  const WebPData data = data_of(bytes);
  const demux_ptr dmx(WebPDemux(&data));
  if (!dmx) return 1;
  WebPChunkIterator it{};
  int orientation = 1;
  if (WebPDemuxGetChunk(dmx.get(), "EXIF", 1, &it)) {
    const std::uint8_t* p = it.chunk.bytes;
    std::size_t n = it.chunk.size;
    if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
      p += 6;
      n -= 6;
    }
    orientation = exif_orientation_from_tiff(p, n);
    WebPDemuxReleaseChunkIterator(&it);
  }
  return orientation;
}

}  // namespace

image_info webp_read_info(std::span<const std::byte> bytes, std::string_view name) {
  image_info info = info_of(features_of(bytes, name));
  info.orientation = orientation_of(bytes);
  return info;
}

image_info webp_decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                       std::uint64_t max_pixels) {
  const WebPBitstreamFeatures features = features_of(bytes, name);
  image_info info = info_of(features);
  // WebPAnimDecoderNew allocates two RGBA canvases: refuse bombs before it.
  check_pixel_limit(name, info.width, info.height, max_pixels);

  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) throw image_error(name, "WebP: libwebp version mismatch");
  options.color_mode = MODE_RGBA;  // as Pillow's _webp.c
  options.use_threads = 0;
  const WebPData data = data_of(bytes);
  const anim_ptr dec(WebPAnimDecoderNew(&data, &options));
  if (!dec) throw image_error(name, "WebP: cannot parse the file (corrupt or truncated container)");
  WebPAnimInfo anim{};
  if (!WebPAnimDecoderGetInfo(dec.get(), &anim)) throw image_error(name, "WebP: cannot read the container's info");
  if (static_cast<int>(anim.canvas_width) != info.width || static_cast<int>(anim.canvas_height) != info.height)
    throw image_error(name, "WebP: the canvas size disagrees with the header");
  std::uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) || rgba == nullptr)
    throw image_error(name, "WebP: cannot decode the first frame (corrupt or truncated data)");

  out.reset(info.width, info.height, 3);
  const std::size_t pixels = static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height);
  std::uint8_t* rgb = out.data();
  for (std::size_t i = 0; i < pixels; ++i) {
    rgb[3 * i] = rgba[4 * i];
    rgb[3 * i + 1] = rgba[4 * i + 1];
    rgb[3 * i + 2] = rgba[4 * i + 2];
  }
  info.orientation = orientation_of(bytes);
  return info;
}

}  // namespace ringfeed::image::detail
