// pipeline::apply — decode, resample, write into the caller's slot.
//
// Every geometric pipeline reduces to one plan: crop the source, resize the
// crop, take a window of the result (zeros outside), maybe mirror it. Exact
// mode runs that literally on a full decode (Pillow crops, then resizes the
// crop). Fast mode asks the resampler which source pixels the window reads,
// decodes only those (at a DCT scale when the resize shrinks enough), then
// resamples the same way.
#include <ringfeed/image/pipeline.hpp>

#include "ops_detail.hpp"
#include "image/kernels/cpu_features.hpp"
#include "image/transforms/planes.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ringfeed::image {

struct pipeline_workspace::impl {
  decoder dec;
  resampler rs;
  image_buffer source;  // the decoded image or region
  image_buffer window;  // the output window, when it cannot go straight to dst
  frame head;           // the fused steps' output, when ops follow them
  op_scratch scratch;   // the appended ops' buffers
};

pipeline_workspace::pipeline_workspace() : m_impl(std::make_unique<impl>()) {}
pipeline_workspace::~pipeline_workspace() = default;
pipeline_workspace::pipeline_workspace(pipeline_workspace&&) noexcept = default;
pipeline_workspace& pipeline_workspace::operator=(pipeline_workspace&&) noexcept = default;

namespace {

std::string size_text(size2 s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

// The resample of a plan's crop to its resized size, for the part of the
// window inside the resized image: what render_from() runs and what
// rows_read() asks the rows of, so the two cannot disagree.
resample_request crop_request(const sample_plan& plan) {
  resample_request rq;
  rq.input = {plan.crop.width, plan.crop.height};
  rq.output = plan.resized;
  rq.filter = plan.filter;
  rq.window = intersect(plan.window, {0, 0, plan.resized.height, plan.resized.width});
  return rq;
}

void check_dst(const output_shape& shape, std::span<std::byte> dst) {
  if (dst.size() != shape.bytes())
    throw std::invalid_argument("pipeline::apply: destination is " + std::to_string(dst.size()) +
                                " bytes, the output needs " + std::to_string(shape.bytes()) + " (" +
                                std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x3)");
}

void check_source(std::string_view name, size2 actual, const sample_plan& plan) {
  if (actual != plan.source)
    throw image_error(name, "image is " + size_text(actual) + ", the plan expects " + size_text(plan.source));
}

void flip_portable(mutable_image_view v) {
  for (int y = 0; y < v.height; ++y) {
    std::uint8_t* row = v.row(y);
    for (int a = 0, b = v.width - 1; a < b; ++a, --b)
      for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
  }
}

#if defined(__x86_64__)
// Five RGB pixels reversed per byte shuffle, each row through a scratch
// row: the byte-by-byte swap was 8% of a pixel-cache hit.
__attribute__((target("ssse3"))) void flip_ssse3(mutable_image_view v) {
  const __m128i reverse5 = _mm_setr_epi8(12, 13, 14, 9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, -1);
  thread_local std::vector<std::uint8_t> scratch;
  const int w = v.width;
  scratch.resize(static_cast<std::size_t>(w) * 3 + 16);
  for (int y = 0; y < v.height; ++y) {
    std::uint8_t* row = v.row(y);
    std::uint8_t* out = scratch.data();
    // Output pixels [x, x + 5) are input pixels [w - 5 - x, w - x); the load
    // reads one byte past them, inside the row while x >= 1.
    int x = 1;
    for (; x + 5 <= w; x += 5) {
      const __m128i in = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (w - 5 - x) * 3));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x * 3), _mm_shuffle_epi8(in, reverse5));
    }
    for (; x < w; ++x) std::memcpy(out + x * 3, row + (w - 1 - x) * 3, 3);
    std::memcpy(out, row + (w - 1) * 3, 3);  // x = 0
    std::memcpy(row, out, static_cast<std::size_t>(w) * 3);
  }
}
#endif

void flip_in_place(mutable_image_view v) {
#if defined(__x86_64__)
  static const bool fast = detail::cpu_has_avx2();  // AVX2 implies SSSE3
  if (fast && v.width >= 6) {
    flip_ssse3(v);
    return;
  }
#endif
  flip_portable(v);
}

// What one apply() works with.
struct run_context {
  decoder& dec;
  resampler& rs;
  image_buffer& source;
  image_buffer& window;
  const pipeline& recipe;
  // What render() writes: the recipe's output, or uint8 NHWC into the head
  // frame when appended ops follow the fused steps.
  bool to_head = false;

  output_spec out() const { return to_head ? output_spec::uint8_nhwc() : recipe.output(); }
  const normalize_params* norm() const {
    const auto& n = recipe.normalization();
    return !to_head && recipe.output().normalized() && n ? &*n : nullptr;
  }

  // Resamples `src` per `rq` into the plan's window (zeros where the window
  // leaves the resized image) and writes it to dst in the output format. An
  // empty crop (RandomResizedCrop's fallback on a 1-pixel-high image) reads
  // no pixel: Pillow resamples it to black.
  void render(image_view src, resample_request rq, const sample_plan& plan, std::span<std::byte> dst) const {
    const bool nothing_read = rq.input.width < 1 || rq.input.height < 1;
    const crop_box inner =
        nothing_read ? crop_box{} : intersect(plan.window, {0, 0, plan.resized.height, plan.resized.width});
    rq.window = inner;
    if (out() == output_spec::uint8_nhwc() && inner == plan.window) {
      const mutable_image_view out{reinterpret_cast<std::uint8_t*>(dst.data()), plan.window.width,
                                   plan.window.height, 3, static_cast<std::ptrdiff_t>(plan.window.width) * 3};
      rs.resize(src, rq, out);
      if (plan.flip) flip_in_place(out);
      return;
    }
    window.reset(plan.window.width, plan.window.height, 3);
    const mutable_image_view all = window.view();
    if (inner != plan.window) std::memset(all.data, 0, window.size_bytes());
    if (!inner.empty())
      rs.resize(src, rq,
                all.crop({inner.top - plan.window.top, inner.left - plan.window.left, inner.height, inner.width}));
    write_output(window.view(), plan.flip, out(), norm(), dst);
  }

  // Exact: `source` holds the whole decoded image.
  void render_full(const sample_plan& plan, std::span<std::byte> dst) const {
    render_from(image_rows::whole(source.view()), plan, dst);
  }
  // render_full from (RGB) rows of the source image that hold every row
  // the crop's resample reads (rows_read()): the crop's rows outside them
  // are never read, so the result is the whole image's.
  void render_from(const image_rows& from, const sample_plan& plan, std::span<std::byte> dst) const {
    resample_request rq = crop_request(plan);
    const crop_box usable = intersect({from.top, 0, from.rows.height, from.rows.width}, plan.crop);
    if (usable.empty()) {  // nothing of the crop is held: only right when nothing is read (an empty crop)
      render(from.rows.crop({0, 0, 0, 0}), rq, plan, dst);
      return;
    }
    rq.src_top = usable.top - plan.crop.top;
    rq.src_left = usable.left - plan.crop.left;
    render(from.rows.crop({usable.top - from.top, usable.left, usable.height, usable.width}), rq, plan, dst);
  }

  // Fast: decode only what the window reads, at the largest DCT scale the
  // shrink allows. Returns the scale used.
  int render_fast(std::span<const std::byte> encoded, std::string_view name, const image_info& info,
                  const sample_plan& plan, std::span<std::byte> dst) const {
    resample_request rq;
    rq.output = plan.resized;
    rq.filter = plan.filter;
    rq.window = intersect(plan.window, {0, 0, plan.resized.height, plan.resized.width});
    if (rq.window.empty() || plan.crop.empty()) {  // all padding, or an empty crop
      render(source.view(), rq, plan, dst);
      return 1;
    }
    const double shrink = std::min(static_cast<double>(plan.crop.width) / plan.resized.width,
                                   static_cast<double>(plan.crop.height) / plan.resized.height) /
                          recipe.fast_min_reduction();
    int denom = 1;
    for (int d : {8, 4, 2}) {
      if (shrink >= d) {
        denom = d;
        break;
      }
    }
    scaled_request req;
    req.scale_denom = denom;
    req.fail_on_any_warning = recipe.decoding().fail_on_any_warning;
    req.max_pixels = recipe.decoding().max_pixels;
    if (denom == 1) {
      // Exact mode's arithmetic on the crop, reading only the pixels the
      // window needs: the result equals exact mode's.
      rq.input = {plan.crop.width, plan.crop.height};
      const crop_box need = resampler::source_region(rq);
      req.region = {need.top + plan.crop.top, need.left + plan.crop.left, need.height, need.width};
      const scaled_result got = dec.decode_scaled(encoded, name, req, source);
      const crop_box usable = intersect(got.held, plan.crop);
      rq.src_left = usable.left - plan.crop.left;
      rq.src_top = usable.top - plan.crop.top;
      render(source.view().crop({usable.top - got.held.top, usable.left - got.held.left, usable.height, usable.width}),
             rq, plan, dst);
      return 1;
    }
    // The scaled image, with the crop as Pillow's float box.
    const auto fd = static_cast<float>(denom);
    rq.input = {scaled_dimension(info.width, denom), scaled_dimension(info.height, denom)};
    rq.box = resample_box{static_cast<float>(plan.crop.left) / fd, static_cast<float>(plan.crop.top) / fd,
                          static_cast<float>(plan.crop.right()) / fd, static_cast<float>(plan.crop.bottom()) / fd};
    req.region = resampler::source_region(rq);
    const scaled_result got = dec.decode_scaled(encoded, name, req, source);
    rq.src_left = got.held.left;
    rq.src_top = got.held.top;
    render(source.view(), rq, plan, dst);
    return denom;
  }
};

// The fused steps of one sample: decode (fused with the geometry in fast
// mode) and render into `dst`, or into the head frame when `to_head`.
struct head_parts {
  decoder& dec;
  resampler& rs;
  image_buffer& source;
  image_buffer& window;
  frame& head;
};

// Decoded pixels into `source` as RGB: an L image as (v, v, v).
void load_pixels(image_view pixels, image_buffer& source) {
  source.reset(pixels.width, pixels.height, 3);
  for (int y = 0; y < pixels.height; ++y) {
    const std::uint8_t* in = pixels.row(y);
    std::uint8_t* out = source.view().row(y);
    if (pixels.channels == 3) {
      std::memcpy(out, in, static_cast<std::size_t>(pixels.width) * 3);
    } else {
      for (int x = 0; x < pixels.width; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
    }
  }
}

// `pixels` non-null: the image is already decoded (apply_pixels), and
// `encoded` is unused. `header` non-null: read_info's for `encoded`.
sample_result run_head(const pipeline& recipe, head_parts w, std::span<const std::byte> encoded,
                       std::string_view name, const sample_key& key, std::span<std::byte> dst, bool to_head,
                       const image_rows* pixels = nullptr, const image_info* header = nullptr) {
  run_context run{w.dec, w.rs, w.source, w.window, recipe, to_head};
  const auto out_span = [&](const sample_plan& plan) {
    if (!to_head) return dst;
    w.head.pixels.reset(plan.window.width, plan.window.height, 3);
    w.head.set_image(frame_kind::image);
    return std::span<std::byte>(reinterpret_cast<std::byte*>(w.head.pixels.data()), w.head.pixels.size_bytes());
  };
  sample_result result;
  if (pixels != nullptr) {
    // RGB is read where it is (an in-memory dataset, a pixel cache's read
    // buffer); L is made its RGB replicate first.
    if (pixels->rows.channels != 3) load_pixels(pixels->rows, w.source);
    const image_rows rgb{pixels->rows.channels == 3 ? pixels->rows : w.source.view(), pixels->top, pixels->size};
    result.info.width = pixels->size.width;
    result.info.height = pixels->size.height;
    result.info.components = pixels->rows.channels;
    result.plan = recipe.plan(pixels->size, key);
    if (!to_head) check_dst(recipe.shape_for(result.plan.source), dst);
    run.render_from(rgb, result.plan, out_span(result.plan));
    return result;
  }
  if (recipe.mode() == pipeline_mode::fast) {
    result.info = header != nullptr ? *header : w.dec.read_info(encoded, name);
    const bool rotate = recipe.decoding().apply_exif_orientation && result.info.orientation != 1;
    if (result.info.format == image_format::jpeg && !rotate) {
      result.plan = recipe.plan({result.info.width, result.info.height}, key);
      if (!to_head) check_dst(recipe.shape_for(result.plan.source), dst);
      result.scale_denom = run.render_fast(encoded, name, result.info, result.plan, out_span(result.plan));
      return result;
    }
  }
  // Exact, or a PNG / an EXIF-rotated file in fast mode: the plan needs the
  // decoded size.
  result.info = w.dec.decode(encoded, name, w.source, recipe.decoding());
  result.plan = recipe.plan(w.source.view().size(), key);
  if (!to_head) check_dst(recipe.shape_for(result.plan.source), dst);
  run.render_full(result.plan, out_span(result.plan));
  return result;
}

// Writes the last frame of the appended ops to `dst` as `spec`: an image
// as bytes (NHWC) or as ToTensor [+ Normalize] (the recipe's normalize),
// a uint8 tensor as NCHW bytes, a float tensor as spec's float dtype and
// layout.
void write_frame(frame& f, output_spec spec, const std::optional<normalize_params>& norm, std::span<std::byte> dst) {
  const std::size_t plane = static_cast<std::size_t>(f.height) * f.width;
  const int ch = f.channels;
  if (f.kind == frame_kind::image && spec == output_spec::uint8_nhwc()) {
    std::memcpy(dst.data(), f.pixels.data(), f.pixels.size_bytes());
    return;
  }
  if (f.kind != frame_kind::tensor_f32 && spec.dtype == dtype::uint8) {  // NCHW bytes
    detail::split_planes(f.pixels.data(), plane, ch, reinterpret_cast<std::uint8_t*>(dst.data()));
    return;
  }
  if (f.kind != frame_kind::tensor_f32) {  // ToTensor [+ Normalize], as write_output
    detail::write_normalized(f.pixels.view(), false, spec, spec.normalized() && norm ? &*norm : nullptr,
                             dst.data());
    return;
  }
  if (spec == output_spec::float32_nchw()) {
    std::memcpy(dst.data(), f.values.data(), f.values.size() * sizeof(float));
    return;
  }
  for (int c = 0; c < ch; ++c) {
    const float* in = f.values.data() + static_cast<std::size_t>(c) * plane;
    for (std::size_t i = 0; i < plane; ++i) detail::store_output(dst.data(), spec, ch, plane, c, i, in[i]);
  }
}

}  // namespace

sample_result pipeline::apply(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                              const sample_key& key, std::span<std::byte> dst) const {
  return apply_any(ws, encoded, nullptr, name, key, dst);
}

sample_result pipeline::apply(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_info& header,
                              std::string_view name, const sample_key& key, std::span<std::byte> dst) const {
  return apply_any(ws, encoded, nullptr, name, key, dst, &header);
}

sample_result pipeline::apply_pixels(pipeline_workspace& ws, image_view pixels, std::string_view name,
                                     const sample_key& key, std::span<std::byte> dst) const {
  return apply_pixel_rows(ws, image_rows::whole(pixels), name, key, dst);
}

sample_result pipeline::apply_pixel_rows(pipeline_workspace& ws, const image_rows& pixels, std::string_view name,
                                         const sample_key& key, std::span<std::byte> dst) const {
  if (pixels.rows.channels != 1 && pixels.rows.channels != 3)
    throw std::invalid_argument("pipeline::apply_pixels: " + std::to_string(pixels.rows.channels) +
                                " channels (1 or 3 are taken)");
  if (pixels.rows.width != pixels.size.width || pixels.top < 0 || pixels.top + pixels.rows.height > pixels.size.height)
    throw std::invalid_argument("pipeline::apply_pixel_rows: rows outside the image");
  return apply_any(ws, {}, &pixels, name, key, dst);
}

std::pair<int, int> pipeline::rows_read(size2 source, const sample_key& key) const {
  const sample_plan plan = this->plan(source, key);
  const resample_request rq = crop_request(plan);
  if (plan.crop.empty() || rq.window.empty()) return {0, 0};  // all padding, or an empty crop: nothing read
  const crop_box need = resampler::source_region(rq);
  return {plan.crop.top + need.top, plan.crop.top + need.bottom()};
}

sample_result pipeline::apply_any(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_rows* pixels,
                                  std::string_view name, const sample_key& key, std::span<std::byte> dst,
                                  const image_info* header) const {
  if (const auto fixed = fixed_shape()) check_dst(*fixed, dst);
  pipeline_workspace::impl& w = *ws.m_impl;
  if (m_tail.empty()) {
    sample_result result =
        run_head(*this, {w.dec, w.rs, w.source, w.window, w.head}, encoded, name, key, dst, false, pixels, header);
    if (!m_output_ops.empty()) run_output_ops(shape_for(result.plan.source), key, dst);
    return result;
  }
  sample_result result;
  if (m_crop_region && pixels == nullptr && run_crop_region(ws, encoded, name, key, result, header)) {
    run_tail(ws, name, key, dst, crop_region_ops);
    return result;
  }
  result = run_head(*this, {w.dec, w.rs, w.source, w.window, w.head}, encoded, name, key, dst, true, pixels, header);
  run_tail(ws, name, key, dst);
  return result;
}

bool pipeline::run_crop_region(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                               const sample_key& key, sample_result& result, const image_info* header) const {
  if (m_mode != pipeline_mode::fast) return false;  // exact: the literal full decode, as for a PIL image
  pipeline_workspace::impl& w = *ws.m_impl;
  const image_info info = header != nullptr ? *header : w.dec.read_info(encoded, name);
  if (info.format != image_format::jpeg || (m_decode.apply_exif_orientation && info.orientation != 1)) return false;
  // The draws of RandomResizedCrop's run() on the full decode: its stream,
  // the image's size (the header's: no rotation).
  const size2 source{info.width, info.height};
  constexpr std::size_t crop = crop_region_ops - 1;  // the RandomResizedCrop after ToImage
  sample_rng rng(key, m_tail_streams[crop]);
  const crop_box box = random_resized_crop_box(source, describe_geometry(*m_tail[crop]).range, rng);
  if (box.empty()) return false;
  scaled_request req;  // scale 1: the region's pixels equal a full decode's
  req.region = box;
  req.fail_on_any_warning = m_decode.fail_on_any_warning;
  req.max_pixels = m_decode.max_pixels;
  const scaled_result got = w.dec.decode_scaled(encoded, name, req, w.source);
  frame& f = w.head;  // ToImage's uint8 tensor of the crop, then the op's resize
  const crop_box held = {box.top - got.held.top, box.left - got.held.left, box.height, box.width};
  if (!finish_tensor_crop(*m_tail[crop], w.source.view().crop(held), f, w.scratch))
    throw std::logic_error("pipeline: the region decode's second op is not a tensor RandomResizedCrop");
  result.info = info;
  result.plan.source = source;
  result.plan.crop = box;
  result.plan.resized = f.size();
  result.plan.window = {0, 0, f.height, f.width};
  return true;
}

frame& pipeline::run_tail_ops(pipeline_workspace& ws, const sample_key& key, std::size_t first) const {
  pipeline_workspace::impl& w = *ws.m_impl;
  for (std::size_t i = first; i < m_tail.size(); ++i) run_op(*m_tail[i], w.head, key, m_tail_streams[i], w.scratch);
  return w.head;
}

void pipeline::run_tail(pipeline_workspace& ws, std::string_view name, const sample_key& key,
                        std::span<std::byte> dst, std::size_t first) const {
  frame& f = run_tail_ops(ws, key, first);
  const output_shape got{f.channels, f.height, f.width, m_output};
  if (dst.size() != got.bytes())
    throw image_error(name, "the transforms made a " + std::to_string(f.channels) + "x" + std::to_string(f.height) +
                                "x" + std::to_string(f.width) + " output, the batch slot holds " +
                                std::to_string(dst.size()) + " bytes");
  write_frame(f, m_output, m_normalize, dst);
  run_output_ops(got, key, dst);
}

void pipeline::run_output_ops(const output_shape& shape, const sample_key& key, std::span<std::byte> dst) const {
  for (std::size_t i = 0; i < m_output_ops.size(); ++i)
    run_on_output(*m_output_ops[i], dst, shape, key, m_output_streams[i]);
}

std::string pipeline::device_refusal() const {
  if (!m_tail.empty()) return std::string(m_tail.front()->name());
  if (!m_output_ops.empty()) return std::string(m_output_ops.front()->name());
  return {};
}

bool pipeline::head_deterministic() const noexcept {
  return m_geometry != geometry::random_resized_crop && m_flip_p <= 0.0;
}

std::string pipeline::head_spec() const {
  std::string s = "head";
  switch (m_geometry) {
    case geometry::none: s += " none"; break;
    case geometry::resize_shorter: s += " resize " + std::to_string(m_shorter_side); break;
    case geometry::resize_exact:
      s += " resize " + std::to_string(m_size.height) + "x" + std::to_string(m_size.width);
      break;
    case geometry::random_resized_crop: s += " random_resized_crop"; break;
  }
  s += " filter " + std::to_string(static_cast<int>(m_filter));
  if (m_center_crop) s += " center_crop " + std::to_string(m_center_crop->height) + "x" + std::to_string(m_center_crop->width);
  return s;
}

image_view pipeline::apply_head(pipeline_workspace& ws, image_view pixels, std::string_view name) const {
  if (!head_deterministic()) throw std::logic_error("pipeline::apply_head: the head draws at random");
  if (pixels.channels != 1 && pixels.channels != 3)
    throw std::invalid_argument("pipeline::apply_head: " + std::to_string(pixels.channels) + " channels");
  pipeline_workspace::impl& w = *ws.m_impl;
  const image_rows whole = image_rows::whole(pixels);
  (void)run_head(*this, {w.dec, w.rs, w.source, w.window, w.head}, {}, name, sample_key{}, {}, true, &whole);
  return w.head.pixels.view();
}

sample_result pipeline::apply_after_head(pipeline_workspace& ws, image_view head, std::string_view name,
                                         const sample_key& key, std::span<std::byte> dst) const {
  if (const auto fixed = fixed_shape()) check_dst(*fixed, dst);
  pipeline_workspace::impl& w = *ws.m_impl;
  sample_result result;
  result.info.width = head.width;
  result.info.height = head.height;
  result.info.components = head.channels;
  result.plan.source = head.size();
  result.plan.crop = result.plan.window = {0, 0, head.height, head.width};
  result.plan.resized = head.size();
  if (m_tail.empty()) {  // as render(): the output conversion of the window
    const output_shape shape{3, head.height, head.width, m_output};
    check_dst(shape, dst);
    write_output(head, false, m_output, m_output.normalized() && m_normalize ? &*m_normalize : nullptr, dst);
    run_output_ops(shape, key, dst);
    return result;
  }
  frame& f = w.head;
  if (head.data != f.pixels.view().data) f.pixels.assign(head);
  f.set_image(frame_kind::image);
  run_tail(ws, name, key, dst);
  return result;
}

sample_result pipeline::apply_to(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                                 const sample_key& key, std::vector<std::byte>& dst, output_shape& shape) const {
  pipeline_workspace::impl& w = *ws.m_impl;
  sample_result result;
  std::size_t first = 0;
  if (m_crop_region && run_crop_region(ws, encoded, name, key, result))
    first = crop_region_ops;
  else
    result = run_head(*this, {w.dec, w.rs, w.source, w.window, w.head}, encoded, name, key, {}, true);
  frame& f = run_tail_ops(ws, key, first);
  shape = output_shape{f.channels, f.height, f.width, m_output};
  dst.resize(shape.bytes());
  write_frame(f, m_output, m_normalize, dst);
  run_output_ops(shape, key, dst);
  return result;
}

sample_result pipeline::apply_plan(pipeline_workspace& ws, std::span<const std::byte> encoded, std::string_view name,
                                   const sample_plan& plan, std::span<std::byte> dst) const {
  return apply_plan_any(ws, encoded, nullptr, name, plan, dst);
}

sample_result pipeline::apply_plan(pipeline_workspace& ws, std::span<const std::byte> encoded, const image_info& header,
                                   std::string_view name, const sample_plan& plan, std::span<std::byte> dst) const {
  return apply_plan_any(ws, encoded, &header, name, plan, dst);
}

sample_result pipeline::apply_plan_any(pipeline_workspace& ws, std::span<const std::byte> encoded,
                                       const image_info* header, std::string_view name, const sample_plan& plan,
                                       std::span<std::byte> dst) const {
  if (!m_tail.empty() || !m_output_ops.empty())
    throw std::invalid_argument("pipeline::apply_plan: not for a pipeline with appended ops");
  check_dst(output_shape{3, plan.window.height, plan.window.width, m_output}, dst);
  if (plan.crop.empty() || intersect(plan.crop, {0, 0, plan.source.height, plan.source.width}) != plan.crop)
    throw std::invalid_argument("pipeline::apply_plan: crop outside the source");
  pipeline_workspace::impl& w = *ws.m_impl;
  const run_context run{w.dec, w.rs, w.source, w.window, *this};
  sample_result result;
  result.plan = plan;
  if (m_mode == pipeline_mode::fast) {
    result.info = header != nullptr ? *header : w.dec.read_info(encoded, name);
    const bool rotate = m_decode.apply_exif_orientation && result.info.orientation != 1;
    if (result.info.format == image_format::jpeg && !rotate) {
      check_source(name, {result.info.width, result.info.height}, plan);
      result.scale_denom = run.render_fast(encoded, name, result.info, plan, dst);
      return result;
    }
  }
  result.info = w.dec.decode(encoded, name, w.source, m_decode);
  check_source(name, w.source.view().size(), plan);
  run.render_full(plan, dst);
  return result;
}

}  // namespace ringfeed::image
