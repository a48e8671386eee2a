// timm's RandomErasing (timm.data.random_erasing) as the list op
// TimmRandomErasing, on one normalized float tensor: with `probability`, a
// count of boxes (min_count, or random.randint(min_count, max_count)), each
// with up to 10 attempts at an area of uniform(min_area, max_area) · area /
// count and an aspect ratio of exp(uniform(log_aspect_ratio)), accepted
// when w < width and h < height, placed by randint(0, height − h) and
// randint(0, width − w), and filled with zeros ('const'), one standard
// normal value per channel ('rand') or per value ('pixel', torch's
// normal_() order: channel, row, column). num_splits only splits a batch
// (a 4-D input); on the one image a transform sees timm ignores it.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "image/transforms/planes.hpp"
#include "timm_augment.hpp"

namespace ringfeed::image {

namespace {

enum class erase_mode : unsigned char { constant, rand, pixel };
constexpr std::string_view mode_names[] = {"const", "rand", "pixel"};

struct erase_box {
  int top = 0, left = 0, h = 0, w = 0;
};

class timm_erasing_op final : public transform_op {
 public:
  struct options {
    double probability = 0.5, min_area = 0.02, max_area = 1.0 / 3.0;
    std::array<double, 2> log_aspect{std::log(0.3), std::log(1 / 0.3)};
    int min_count = 1, max_count = 1, num_splits = 0;
    erase_mode mode = erase_mode::constant;
  };
  explicit timm_erasing_op(options o) : m_o(o) {}
  std::string_view name() const noexcept override { return "TimmRandomErasing"; }
  std::string spec() const override {
    return "TimmRandomErasing(probability=" + spec_number(m_o.probability) + ", min_area=" + spec_number(m_o.min_area) +
           ", max_area=" + spec_number(m_o.max_area) + ", log_aspect_ratio=" + spec_tuple(m_o.log_aspect) +
           ", min_count=" + std::to_string(m_o.min_count) + ", max_count=" + std::to_string(m_o.max_count) +
           ", mode='" + std::string(mode_names[static_cast<int>(m_o.mode)]) +
           "', num_splits=" + std::to_string(m_o.num_splits) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    if (in.kind != frame_kind::tensor_f32)
      throw std::invalid_argument("TimmRandomErasing expects a float tensor (timm erases the normalized tensor), "
                                  "but the transform before it gives " + std::string(to_string(in.kind)));
    return in;
  }
  bool deterministic() const noexcept override { return false; }

  // _erase's geometry draws: the boxes that are erased (fill values are
  // drawn as each box is filled, after its placement, as timm does).
  template <class Fill>
  void erase(sample_rng& rng, size2 in, Fill&& fill) const {
    if (rng.uniform() > m_o.probability) return;
    const double area = static_cast<double>(in.height) * in.width;
    const int count = m_o.min_count == m_o.max_count
                          ? m_o.min_count
                          : static_cast<int>(rng.uniform_int(m_o.min_count, m_o.max_count + 1));
    for (int n = 0; n < count; ++n) {
      for (int attempt = 0; attempt < 10; ++attempt) {
        const double target = rng.uniform(m_o.min_area, m_o.max_area) * area / count;
        const double aspect = std::exp(rng.uniform(m_o.log_aspect[0], m_o.log_aspect[1]));
        const double hd = std::nearbyint(std::sqrt(target * aspect));  // int(round(...)), half to even
        const double wd = std::nearbyint(std::sqrt(target / aspect));
        if (!(wd < in.width && hd < in.height)) continue;
        erase_box b;
        b.h = static_cast<int>(hd);
        b.w = static_cast<int>(wd);
        b.top = static_cast<int>(rng.uniform_int(0, in.height - b.h + 1));
        b.left = static_cast<int>(rng.uniform_int(0, in.width - b.w + 1));
        fill(b);
        break;
      }
    }
  }
  // {count of boxes, then top, left, h, w of each}.
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int channels) const override {
    std::vector<double> out{0};
    erase(rng, in, [&](const erase_box& b) {
      out[0] += 1;
      out.insert(out.end(), {double(b.top), double(b.left), double(b.h), double(b.w)});
      skip_values(rng, b, channels);
    });
    return out;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch&) const override {
    erase(rng, f.size(), [&](const erase_box& b) {
      fill(b, f.channels, f.width, rng, [&](int c, std::size_t at, float v) { f.plane(c)[at] = v; });
    });
  }
  // run() on the float output (any float dtype and layout) the list's ToTensor
  // [+ Normalize] wrote (run_on_output): the same values, then converted.
  void erase_output(std::span<std::byte> dst, const output_shape& shape, sample_rng& rng) const {
    const std::size_t plane = static_cast<std::size_t>(shape.height) * static_cast<std::size_t>(shape.width);
    erase(rng, {shape.width, shape.height}, [&](const erase_box& b) {
      fill(b, shape.channels, shape.width, rng, [&](int c, std::size_t at, float v) {
        detail::store_output(dst.data(), shape.spec, shape.channels, plane, c, at, v);
      });
    });
  }

 private:
  // A box's values, channel by channel, row by row (torch's normal_()
  // order over a [C, h, w] tensor): `store(c, y * width + x, v)`.
  template <class Store>
  void fill(const erase_box& b, int channels, int width, sample_rng& rng, Store store) const {
    thread_local std::vector<float> row;  // a row's pixel-mode values
    row.resize(static_cast<std::size_t>(b.w));
    for (int c = 0; c < channels; ++c) {
      const float colour = m_o.mode == erase_mode::rand ? static_cast<float>(standard_normal(rng)) : 0.0f;
      if (m_o.mode != erase_mode::pixel) std::fill(row.begin(), row.end(), colour);
      for (int y = b.top; y < b.top + b.h; ++y) {
        if (m_o.mode == erase_mode::pixel) standard_normals(rng, row);
        const std::size_t at =
            static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(b.left);
        for (int x = 0; x < b.w; ++x) store(c, at + static_cast<std::size_t>(x), row[static_cast<std::size_t>(x)]);
      }
    }
  }
  // The fill values' draws, so the test hook's later boxes match run()'s.
  void skip_values(sample_rng& rng, const erase_box& b, int channels) const {
    if (m_o.mode == erase_mode::pixel) {  // standard_normals() row by row, as fill(): their draws vary
      std::vector<float> row(static_cast<std::size_t>(b.w));
      for (int i = 0; i < channels * b.h; ++i) standard_normals(rng, row);
    } else if (m_o.mode == erase_mode::rand) {
      for (int i = 0; i < channels; ++i) (void)standard_normal(rng);
    }
  }
  options m_o;
};

op_ptr make_timm_erasing(const spec_call& c) {
  const spec_args a(c);
  timm_erasing_op::options o;
  o.probability = a.number("probability", 0.5);
  o.min_area = a.number("min_area", 0.02);
  o.max_area = a.number("max_area", 1.0 / 3.0);
  const auto log_aspect = a.numbers("log_aspect_ratio", {std::log(0.3), std::log(1 / 0.3)});
  if (log_aspect.size() != 2) a.fail("log_aspect_ratio", "expected a sequence of 2 numbers");
  o.log_aspect = {log_aspect[0], log_aspect[1]};
  o.min_count = a.integer("min_count", 1);
  o.max_count = a.integer("max_count", o.min_count);
  o.num_splits = a.integer("num_splits", 0);
  o.mode = static_cast<erase_mode>(a.choice("mode", mode_names, 0));
  if (!(o.probability >= 0 && o.probability <= 1)) a.fail("probability", "must be in [0, 1]");
  if (!(std::isfinite(o.min_area) && std::isfinite(o.max_area))) a.fail("min_area", "areas must be finite");
  if (!(std::isfinite(o.log_aspect[0]) && std::isfinite(o.log_aspect[1])))
    a.fail("log_aspect_ratio", "must be finite");
  if (o.min_count < 1 || o.max_count < o.min_count || o.max_count > 1000)
    a.fail("max_count", "need 1 <= min_count <= max_count <= 1000");
  return std::make_shared<timm_erasing_op>(o);
}

}  // namespace

bool run_timm_erasing_on_output(const transform_op& op, std::span<std::byte> dst, const output_shape& shape,
                                sample_rng* rng) {
  const auto* erasing = dynamic_cast<const timm_erasing_op*>(&op);
  if (erasing == nullptr) return false;
  if (rng != nullptr) erasing->erase_output(dst, shape, *rng);
  return true;
}

std::span<const op_entry> timm_erasing_op_entries() {
  static const op_entry entries[] = {{"TimmRandomErasing", make_timm_erasing}};
  return entries;
}

}  // namespace ringfeed::image
