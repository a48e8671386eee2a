// Pillow 9.4's ImagingResample (src/libImaging/Resample.c), the part that
// decides the result before a pixel is read, reproduced operation for
// operation: the filters, the coefficient computation in double (center,
// support, rounding of bounds, normalization by the sum), the conversion to
// PRECISION_BITS fixed point, and the skipping of a pass whose size and box
// are the identity. Both the CPU passes (resample.cpp) and the device resize
// (cuda/device_resize.cpp) run what this computes.
#include <ringfeed/image/resample_plan.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace ringfeed::image {
namespace {

// --- Pillow's filters ----------------------------------------------------------

double box_filter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // float constants, as Pillow
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos_filter(double x) {
  if (-3.0 <= x && x < 3.0) return sinc_filter(x) * sinc_filter(x / 3);
  return 0.0;
}

struct filter_def {
  double (*fn)(double);
  double support;
};

filter_def filter_of(resample_filter f) {
  switch (f) {
    case resample_filter::box: return {box_filter, 0.5};
    case resample_filter::bilinear: return {bilinear_filter, 1.0};
    case resample_filter::hamming: return {hamming_filter, 1.0};
    case resample_filter::bicubic: return {bicubic_filter, 2.0};
    case resample_filter::lanczos: return {lanczos_filter, 3.0};
  }
  throw std::invalid_argument("resample: unknown filter");
}

// --- one axis: bounds and coefficients (precompute_coeffs) --------------------

struct axis_geometry {
  int in_size;
  float in0;
  float in1;
  int out_size;
  double scale;
  double filterscale;
  double support;
  int ksize;

  axis_geometry(int in, float i0, float i1, int out, const filter_def& f)
      : in_size(in), in0(i0), in1(i1), out_size(out) {
    filterscale = scale = static_cast<double>(in1 - in0) / out_size;  // float difference, as Pillow
    if (filterscale < 1.0) filterscale = 1.0;
    support = f.support * filterscale;
    ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  }

  // Pillow's xmin and xmax - xmin for output pixel xx.
  void bounds(int xx, double& center, int& lo, int& len) const {
    center = in0 + (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    lo = xmin;
    len = xmax - xmin;
  }
};

// Coefficients of output pixels [first_out, first_out + n) of one axis.
void compute_axis(const axis_geometry& g, const filter_def& f, int first_out, int n, resample_axis& a) {
  a.first = first_out;
  a.count = n;
  a.ksize = g.ksize;
  const int ksize = g.ksize;
  const auto kn = static_cast<std::size_t>(n) * static_cast<std::size_t>(ksize);
  if (a.k.size() < kn) a.k.resize(kn);
  if (a.lo.size() < static_cast<std::size_t>(n)) {
    a.lo.resize(static_cast<std::size_t>(n));
    a.len.resize(static_cast<std::size_t>(n));
  }
  if (a.weights.size() < static_cast<std::size_t>(ksize)) a.weights.resize(static_cast<std::size_t>(ksize));
  const double ss = 1.0 / g.filterscale;
  a.read_lo = g.in_size;
  a.read_hi = 0;
  for (int i = 0; i < n; ++i) {
    const int xx = first_out + i;
    double center;
    int xmin;
    int xlen;
    g.bounds(xx, center, xmin, xlen);
    double ww = 0.0;
    for (int x = 0; x < xlen; ++x) {
      const double w = f.fn((x + xmin - center + 0.5) * ss);
      a.weights[static_cast<std::size_t>(x)] = w;
      ww += w;
    }
    std::int32_t* kk = a.k.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(ksize);
    for (int x = 0; x < xlen; ++x) {
      double w = a.weights[static_cast<std::size_t>(x)];
      if (ww != 0.0) w /= ww;
      // normalize_coeffs_8bpc
      kk[x] = w < 0 ? static_cast<std::int32_t>(-0.5 + w * (1 << resample_precision_bits))
                    : static_cast<std::int32_t>(0.5 + w * (1 << resample_precision_bits));
    }
    for (int x = std::max(xlen, 0); x < ksize; ++x) kk[x] = 0;
    a.lo[static_cast<std::size_t>(i)] = xmin;
    a.len[static_cast<std::size_t>(i)] = xlen;
    if (xlen > 0) {
      a.read_lo = std::min(a.read_lo, xmin);
      a.read_hi = std::max(a.read_hi, xmin + xlen);
    }
  }
  if (a.read_hi < a.read_lo) a.read_lo = a.read_hi = 0;
}

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("resample: " + what); }

// Checks the request; fills the plan's box, window and passes.
void normalize(const resample_request& rq, resample_plan& p) {
  if (rq.input.width < 1 || rq.input.height < 1) bad("empty input");
  if (rq.output.width < 1 || rq.output.height < 1) bad("height and width must be > 0");
  const resample_box box = rq.box.value_or(
      resample_box{0.0f, 0.0f, static_cast<float>(rq.input.width), static_cast<float>(rq.input.height)});
  // Pillow's _resize checks.
  if (box.x0 < 0 || box.y0 < 0) bad("box offset can't be negative");
  if (box.x1 > static_cast<float>(rq.input.width) || box.y1 > static_cast<float>(rq.input.height))
    bad("box can't exceed original image size");
  if (box.x1 - box.x0 < 0 || box.y1 - box.y0 < 0) bad("box can't be empty");
  const crop_box window = rq.window.empty() ? crop_box{0, 0, rq.output.height, rq.output.width} : rq.window;
  if (window.top < 0 || window.left < 0 || window.bottom() > rq.output.height || window.right() > rq.output.width)
    bad("window outside the output");
  p.box = box;
  p.window = window;
  // ImagingResampleInner: a pass whose size and box are the identity is skipped.
  p.need_horizontal = rq.output.width != rq.input.width || box.x0 != 0.0f ||
                      box.x1 != static_cast<float>(rq.output.width);
  p.need_vertical = rq.output.height != rq.input.height || box.y0 != 0.0f ||
                    box.y1 != static_cast<float>(rq.output.height);
}

// The input pixels [lo, lo + len) that output pixels [first, first + count)
// of one axis read.
std::pair<int, int> source_span(int in_size, float in0, float in1, int out_size, const filter_def& f, int first,
                                int count) {
  const axis_geometry g(in_size, in0, in1, out_size, f);
  double center;
  int lo0, len0, lo1, len1;
  g.bounds(first, center, lo0, len0);
  g.bounds(first + count - 1, center, lo1, len1);
  return {lo0, std::max(lo0 + len0, lo1 + len1) - lo0};
}

}  // namespace

void plan_resample(const resample_request& rq, resample_plan& p) {
  normalize(rq, p);
  const filter_def f = filter_of(rq.filter);
  if (p.need_horizontal)
    compute_axis(axis_geometry(rq.input.width, p.box.x0, p.box.x1, rq.output.width, f), f, p.window.left,
                 p.window.width, p.horizontal);
  if (p.need_vertical)
    compute_axis(axis_geometry(rq.input.height, p.box.y0, p.box.y1, rq.output.height, f), f, p.window.top,
                 p.window.height, p.vertical);
}

crop_box planned_reads(const resample_plan& p) {
  crop_box r{p.window.top, p.window.left, p.window.height, p.window.width};
  if (p.need_horizontal) {
    r.left = p.horizontal.read_lo;
    r.width = p.horizontal.read_hi - p.horizontal.read_lo;
  }
  if (p.need_vertical) {
    r.top = p.vertical.read_lo;
    r.height = p.vertical.read_hi - p.vertical.read_lo;
  }
  return r;
}

crop_box resampler::source_region(const resample_request& rq) {
  resample_plan n;  // only the box, window and passes: no axis is computed
  normalize(rq, n);
  const filter_def f = filter_of(rq.filter);
  crop_box region{n.window.top, n.window.left, n.window.height, n.window.width};
  if (n.need_horizontal)
    std::tie(region.left, region.width) =
        source_span(rq.input.width, n.box.x0, n.box.x1, rq.output.width, f, n.window.left, n.window.width);
  if (n.need_vertical)
    std::tie(region.top, region.height) =
        source_span(rq.input.height, n.box.y0, n.box.y1, rq.output.height, f, n.window.top, n.window.height);
  return region;
}

}  // namespace ringfeed::image
