// JPEG decoding through libjpeg-turbo's libjpeg API, set up as Pillow sets
// it up (JpegDecode.c: jpeg_read_header, out_color_space RGB or CMYK,
// default ISLOW DCT and fancy upsampling), so full decodes are Pillow's
// pixels. The same decompressor does DCT-scaled and region decodes for fast
// mode.
//
// libjpeg reports errors by calling error_exit, which must not return: ours
// longjmps back to a setjmp in run_guarded(). Only trivially destructible
// objects live between the two, and no C++ exception crosses libjpeg.
#include <atomic>
#include <csetjmp>

#include <ringfeed/text.hpp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <cstring>
#include <string>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>

#include "image/codecs/codec_detail.hpp"

namespace ringfeed::image {
namespace {

struct error_manager {
  jpeg_error_mgr pub;  // first: libjpeg hands us a pointer to it
  std::jmp_buf jump;
  bool fail_on_any_warning = false;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<error_manager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings that leave a complete, correct image: Pillow decodes these files
// without complaint, and so do we (unless fail_on_any_warning).
bool benign_warning(int code) {
  switch (code) {
    case JWRN_EXTRANEOUS_DATA:      // "Corrupt JPEG data: N extraneous bytes before marker"
    case JWRN_JFIF_MAJOR:           // unknown JFIF revision
    case JWRN_ADOBE_XFORM:          // unknown Adobe color transform
    case JWRN_BOGUS_PROGRESSION:    // odd but decodable progressive scan script
    case JWRN_NOT_SEQUENTIAL:       // SOS parameters off for a sequential file
    case JWRN_BOGUS_ICC:            // broken ICC profile (we ignore profiles)
      return true;
    default:  // JWRN_JPEG_EOF (truncated), JWRN_HIT_MARKER, JWRN_HUFF_BAD_CODE,
              // JWRN_ARITH_BAD_CODE, JWRN_MUST_RESYNC: data lost
      return false;
  }
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace output
  auto* err = reinterpret_cast<error_manager*>(cinfo->err);
  cinfo->err->num_warnings++;
  if (err->fail_on_any_warning || !benign_warning(cinfo->err->msg_code)) {
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
  }
}

chroma_subsampling subsampling_of(const jpeg_decompress_struct& cinfo) {
  if (cinfo.num_components < 3) return chroma_subsampling::none;
  if (cinfo.jpeg_color_space != JCS_YCbCr && cinfo.jpeg_color_space != JCS_YCCK)
    return chroma_subsampling::none;
  const jpeg_component_info* c = cinfo.comp_info;
  for (int i = 2; i < cinfo.num_components && i < 3; ++i)
    if (c[i].h_samp_factor != c[1].h_samp_factor || c[i].v_samp_factor != c[1].v_samp_factor)
      return chroma_subsampling::other;
  if (c[0].h_samp_factor % c[1].h_samp_factor != 0 || c[0].v_samp_factor % c[1].v_samp_factor != 0)
    return chroma_subsampling::other;
  const int h = c[0].h_samp_factor / c[1].h_samp_factor;
  const int v = c[0].v_samp_factor / c[1].v_samp_factor;
  if (h == 1 && v == 1) return chroma_subsampling::s444;
  if (h == 2 && v == 1) return chroma_subsampling::s422;
  if (h == 2 && v == 2) return chroma_subsampling::s420;
  if (h == 1 && v == 2) return chroma_subsampling::s440;
  if (h == 4 && v == 1) return chroma_subsampling::s411;
  if (h == 1 && v == 4) return chroma_subsampling::s441;
  return chroma_subsampling::other;
}

// Pillow's CMYK path: libjpeg gives CMYK (YCCK converted), the "CMYK;I"
// unpacker inverts every byte (Adobe polarity), Convert.c cmyk2rgb maps
// with MULDIV255 and CLIP8.
inline std::uint8_t muldiv255(int a, int b) {
  const int tmp = a * b + 128;
  return static_cast<std::uint8_t>(((tmp >> 8) + tmp) >> 8);
}

void cmyk_to_rgb(const std::uint8_t* in, std::uint8_t* out, std::size_t pixels) {
  for (std::size_t i = 0; i < pixels; ++i, in += 4, out += 3) {
    const int c = 255 - in[0];
    const int m = 255 - in[1];
    const int y = 255 - in[2];
    const int nk = in[3];  // 255 - (255 - K)
    const auto clip8 = [](int v) { return static_cast<std::uint8_t>(v <= 0 ? 0 : v < 256 ? v : 255); };
    out[0] = clip8(nk - muldiv255(c, nk));
    out[1] = clip8(nk - muldiv255(m, nk));
    out[2] = clip8(nk - muldiv255(y, nk));
  }
}

}  // namespace

struct decoder::impl {
  jpeg_decompress_struct cinfo{};
  error_manager err{};
  bool created = false;
  std::vector<JSAMPROW> rows;  // row pointers, reused
  image_buffer cmyk;           // 4-channel scratch for CMYK files
  image_buffer oriented;       // scratch for EXIF orientation

  impl() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error_exit;
    err.pub.emit_message = on_emit_message;
    if (setjmp(err.jump) != 0) throw std::bad_alloc();  // jpeg_create_* only fails for memory
    jpeg_create_decompress(&cinfo);
    created = true;
  }
  ~impl() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  // Runs `body` (libjpeg calls only, trivially destructible locals) with
  // error_exit armed. On a libjpeg error: resets the decompressor for the
  // next image and throws image_error naming `name`.
  template <class Body>
  void run_guarded(std::string_view name, bool fail_on_any_warning, Body&& body) {
    err.fail_on_any_warning = fail_on_any_warning;
    if (!call_with_setjmp(body)) {
      jpeg_abort_decompress(&cinfo);
      throw image_error(name, "JPEG: " + escape_bytes(err.message));
    }
  }

  template <class Body>
  bool call_with_setjmp(Body& body) {
    if (setjmp(err.jump) != 0) return false;
    body();
    return true;
  }

  // jpeg_mem_src + jpeg_read_header. Caller is inside run_guarded.
  void start(std::span<const std::byte> bytes) {
    jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
                 static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&cinfo, TRUE);
  }

  image_info info_from_header() const {
    image_info info;
    info.format = image_format::jpeg;
    info.width = static_cast<int>(cinfo.image_width);
    info.height = static_cast<int>(cinfo.image_height);
    info.components = cinfo.num_components;
    info.subsampling = subsampling_of(cinfo);
    info.progressive = cinfo.progressive_mode != 0;
    info.arithmetic = cinfo.arith_code != 0;
    return info;
  }

  // After the header: checks what Pillow would refuse, picks the output
  // color space. Throws image_error (the decompressor is reset).
  void choose_color_space(std::string_view name) {
    const int n = cinfo.num_components;
    if (n == 1 || n == 3) {
      cinfo.out_color_space = JCS_RGB;  // gray is replicated, as Pillow's L → RGB
    } else if (n == 4) {
      cinfo.out_color_space = JCS_CMYK;
    } else {
      jpeg_abort_decompress(&cinfo);
      throw image_error(name, "JPEG: cannot handle " + std::to_string(n) + "-component images");
    }
  }

  void ensure_rows(std::size_t n) {
    if (rows.size() < n) rows.resize(n);
  }
};

long jpeg_library_version() noexcept { return LIBJPEG_TURBO_VERSION_NUMBER; }

std::optional<image_format> detect_format(std::span<const std::byte> bytes) noexcept {
  return detail::sniff_format(bytes);
}

namespace {
[[noreturn]] void throw_unrecognised(std::span<const std::byte> bytes, std::string_view name) {
  if (bytes.empty()) throw image_error(name, "empty file");
  const std::string_view foreign = detail::foreign_format_name(bytes);
  if (!foreign.empty())
    throw image_error(name, "unsupported image format (" + std::string(foreign) +
                                "); JPEG, PNG, WebP, TIFF, BMP and PBM/PGM/PPM are supported");
  throw image_error(name, "not an image ringfeed decodes (JPEG, PNG, WebP, TIFF, BMP, PBM/PGM/PPM): unrecognised "
                          "leading bytes");
}

// Relaxed: a count for tests, publishing nothing.
std::atomic<std::uint64_t> g_jpeg_headers_read{0};
}  // namespace

std::uint64_t detail::jpeg_headers_read() noexcept { return g_jpeg_headers_read.load(std::memory_order_relaxed); }

decoder::decoder() : m_impl(std::make_unique<impl>()) {}
decoder::~decoder() = default;
decoder::decoder(decoder&&) noexcept = default;
decoder& decoder::operator=(decoder&&) noexcept = default;

image_info decoder::read_info(std::span<const std::byte> bytes, std::string_view name) {
  const auto format = detect_format(bytes);
  if (!format) throw_unrecognised(bytes, name);
  if (*format != image_format::jpeg) return detail::read_info_other(*format, bytes, name);
  impl& d = *m_impl;
  g_jpeg_headers_read.fetch_add(1, std::memory_order_relaxed);
  d.run_guarded(name, false, [&] { d.start(bytes); });
  image_info info = d.info_from_header();
  jpeg_abort_decompress(&d.cinfo);
  info.orientation = detail::jpeg_exif_orientation(bytes);
  return info;
}

image_info decoder::decode(std::span<const std::byte> bytes, std::string_view name, image_buffer& out,
                           const decode_options& options) {
  const auto format = detect_format(bytes);
  if (!format) throw_unrecognised(bytes, name);
  image_info info;
  impl& d = *m_impl;
  image_buffer& decoded = options.apply_exif_orientation ? d.oriented : out;
  if (*format != image_format::jpeg) {
    info = detail::decode_other(*format, bytes, name, decoded, options.max_pixels);
  } else {
    d.run_guarded(name, options.fail_on_any_warning, [&] { d.start(bytes); });
    info = d.info_from_header();
    try {
      detail::check_pixel_limit(name, info.width, info.height, options.max_pixels);
    } catch (...) {
      jpeg_abort_decompress(&d.cinfo);
      throw;
    }
    d.choose_color_space(name);
    const bool cmyk = d.cinfo.out_color_space == JCS_CMYK;
    image_buffer& target = cmyk ? d.cmyk : decoded;
    target.reset(info.width, info.height, cmyk ? 4 : 3);
    if (cmyk) decoded.reset(info.width, info.height, 3);
    d.ensure_rows(static_cast<std::size_t>(info.height));
    for (int y = 0; y < info.height; ++y) d.rows[static_cast<std::size_t>(y)] = target.view().row(y);
    d.run_guarded(name, options.fail_on_any_warning, [&] {
      jpeg_start_decompress(&d.cinfo);
      while (d.cinfo.output_scanline < d.cinfo.output_height) {
        jpeg_read_scanlines(&d.cinfo, d.rows.data() + d.cinfo.output_scanline,
                            d.cinfo.output_height - d.cinfo.output_scanline);
      }
      jpeg_finish_decompress(&d.cinfo);
    });
    if (cmyk)
      cmyk_to_rgb(d.cmyk.data(), decoded.data(),
                  static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height));
    info.orientation = detail::jpeg_exif_orientation(bytes);
  }
  if (options.apply_exif_orientation) apply_orientation(decoded.view(), info.orientation, out);
  return info;
}

scaled_result decoder::decode_scaled(std::span<const std::byte> bytes, std::string_view name,
                                     const scaled_request& request, image_buffer& out) {
  const int denom = request.scale_denom;
  if (denom != 1 && denom != 2 && denom != 4 && denom != 8)
    throw std::invalid_argument("decode_scaled: scale_denom must be 1, 2, 4 or 8");
  const auto format = detect_format(bytes);
  if (!format) throw_unrecognised(bytes, name);
  if (*format != image_format::jpeg) {
    const image_info info = detail::decode_other(*format, bytes, name, out, request.max_pixels);
    return {1, {info.width, info.height}, {0, 0, info.height, info.width}};
  }
  impl& d = *m_impl;
  d.run_guarded(name, request.fail_on_any_warning, [&] {
    d.start(bytes);
    d.cinfo.scale_num = 1;
    d.cinfo.scale_denom = static_cast<unsigned>(denom);
  });
  try {
    detail::check_pixel_limit(name, d.cinfo.image_width, d.cinfo.image_height, request.max_pixels);
  } catch (...) {
    jpeg_abort_decompress(&d.cinfo);
    throw;
  }
  d.choose_color_space(name);
  const bool cmyk = d.cinfo.out_color_space == JCS_CMYK;
  // jpeg_start_decompress computes the scaled size; for progressive files it
  // also reads every scan (the coefficients are buffered).
  d.run_guarded(name, request.fail_on_any_warning, [&] { jpeg_start_decompress(&d.cinfo); });
  const int sw = static_cast<int>(d.cinfo.output_width);
  const int sh = static_cast<int>(d.cinfo.output_height);
  crop_box want = request.region.empty() ? crop_box{0, 0, sh, sw} : request.region;
  if (want.top < 0 || want.left < 0 || want.bottom() > sh || want.right() > sw) {
    jpeg_abort_decompress(&d.cinfo);
    throw std::invalid_argument("decode_scaled: region outside the scaled image");
  }
  // Fancy upsampling treats a partial row's ends as image edges, so ask for
  // one more column on each side than needed: the wanted ones stay exact.
  JDIMENSION x0 = static_cast<JDIMENSION>(want.left > 0 ? want.left - 1 : 0);
  const int x_end = want.right() < sw ? want.right() + 1 : sw;
  JDIMENSION xw = static_cast<JDIMENSION>(x_end) - x0;
  const int y0 = want.top;
  const int rows_wanted = want.height;
  const int channels = cmyk ? 4 : 3;
  image_buffer& target = cmyk ? d.cmyk : out;
  d.run_guarded(name, request.fail_on_any_warning, [&] {
    if (x0 > 0 || xw < static_cast<JDIMENSION>(sw)) jpeg_crop_scanline(&d.cinfo, &x0, &xw);
  });
  target.reset(static_cast<int>(xw), rows_wanted, channels);
  d.ensure_rows(static_cast<std::size_t>(rows_wanted));
  for (int y = 0; y < rows_wanted; ++y) d.rows[static_cast<std::size_t>(y)] = target.view().row(y);
  d.run_guarded(name, request.fail_on_any_warning, [&] {
    if (y0 > 0) jpeg_skip_scanlines(&d.cinfo, static_cast<JDIMENSION>(y0));
    JDIMENSION done = 0;
    while (done < static_cast<JDIMENSION>(rows_wanted))
      done += jpeg_read_scanlines(&d.cinfo, d.rows.data() + done, static_cast<JDIMENSION>(rows_wanted) - done);
  });
  // The rows below the region are not needed: stop here. (A file truncated
  // below the region therefore decodes; above or inside, it fails.)
  jpeg_abort_decompress(&d.cinfo);
  const crop_box held{y0, static_cast<int>(x0), rows_wanted, static_cast<int>(xw)};
  if (cmyk) {
    out.reset(held.width, held.height, 3);
    cmyk_to_rgb(d.cmyk.data(), out.data(),
                static_cast<std::size_t>(held.width) * static_cast<std::size_t>(held.height));
  }
  return {denom, {sw, sh}, held};
}

}  // namespace ringfeed::image
