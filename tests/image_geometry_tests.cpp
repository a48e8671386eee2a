// Geometry ops: resize, crop, flips, pad, affine and rotate equal
// torchvision 0.14's functional layer on PIL images (Pillow 9.4) bit for
// bit, over crops of the committed JPEG, PNG, WebP, TIFF, BMP and PGM files
// as RGB and L, odd, square, 1x1 and 2x3, every interpolation, padding mode
// and fill (goldens: data/image/geometry/, make_geometry_goldens.py).
#include <catch2/catch.hpp>

#include <ringfeed/image/geometry.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "image/kernels/geometry_detail.hpp"
#include "image_test_data.hpp"
#include "simd_switch.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

std::filesystem::path geometry_dir() { return data::dir() / "geometry"; }

img::interpolation interpolation_named(const std::string& s) {
  static const std::map<std::string, img::interpolation> names{
      {"nearest", img::interpolation::nearest}, {"bilinear", img::interpolation::bilinear},
      {"bicubic", img::interpolation::bicubic}, {"box", img::interpolation::box},
      {"hamming", img::interpolation::hamming}, {"lanczos", img::interpolation::lanczos}};
  return names.at(s);
}

img::padding_mode padding_named(const std::string& s) {
  static const std::map<std::string, img::padding_mode> names{{"constant", img::padding_mode::constant},
                                                               {"edge", img::padding_mode::edge},
                                                               {"reflect", img::padding_mode::reflect},
                                                               {"symmetric", img::padding_mode::symmetric}};
  return names.at(s);
}

struct golden_case {
  std::string line;
  std::size_t offset = 0;
  int width = 0;
  int height = 0;
  int channels = 0;
  std::string src;
  std::string op;
  std::istringstream args;  // the rest of the line
};

const std::vector<std::uint8_t>& goldens() {
  static const std::vector<std::uint8_t> blob = [] {
    const std::vector<std::byte> raw = data::read_file(geometry_dir() / "goldens.bin");
    const auto u8 = data::as_u8(raw);
    return std::vector<std::uint8_t>(u8.begin(), u8.end());
  }();
  return blob;
}

const data::pnm& source(const std::string& name) {
  static std::map<std::string, data::pnm> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    const bool rgb = name.size() > 4 && name.compare(name.size() - 4, 4, "_rgb") == 0;
    it = cache.emplace(name, data::read_pnm(geometry_dir() / "src" / (name + (rgb ? ".ppm" : ".pgm")))).first;
  }
  return it->second;
}

img::fill_color read_fill(std::istringstream& in) {
  int r = 0, g = 0, b = 0;
  in >> r >> g >> b;
  return {static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)};
}

double read_double(std::istringstream& in) {
  std::string s;
  in >> s;
  return std::stod(s);
}

// Applies the case's op to its source through the public API.
void apply(golden_case& c, img::image_buffer& out) {
  const img::image_view src = source(c.src).view();
  auto& in = c.args;
  if (c.op == "resize") {
    img::size2 size;
    std::string interp;
    in >> size.width >> size.height >> interp;
    img::resize(src, size, interpolation_named(interp), out);
  } else if (c.op == "crop") {
    img::crop_box b;
    in >> b.top >> b.left >> b.height >> b.width;
    img::crop(src, b, out);
  } else if (c.op == "hflip") {
    img::hflip(src, out);
  } else if (c.op == "vflip") {
    img::vflip(src, out);
  } else if (c.op == "pad") {
    int l = 0, t = 0, r = 0, b = 0;
    std::string mode;
    in >> l >> t >> r >> b >> mode;
    img::pad(src, l, t, r, b, padding_named(mode), read_fill(in), out);
  } else if (c.op == "affine") {
    // What F.affine does on a PIL image: center (w * 0.5, h * 0.5), the
    // inverse matrix, Image.transform to the input's size.
    const double angle = read_double(in);
    int tx = 0, ty = 0;
    in >> tx >> ty;
    const double scale = read_double(in);
    const double shx = read_double(in);
    const double shy = read_double(in);
    std::string interp;
    in >> interp;
    const auto m = img::inverse_affine_matrix({src.width * 0.5, src.height * 0.5}, angle,
                                              {static_cast<double>(tx), static_cast<double>(ty)}, scale, {shx, shy});
    img::affine(src, m, src.size(), interpolation_named(interp), read_fill(in), out);
  } else if (c.op == "transform") {
    std::array<double, 6> m{};
    for (double& v : m) v = read_double(in);
    img::size2 size;
    std::string interp;
    in >> size.width >> size.height >> interp;
    img::affine(src, m, size, interpolation_named(interp), read_fill(in), out);
  } else if (c.op == "rotate") {
    const double angle = read_double(in);
    std::string interp, cx, cy;
    int expand = 0;
    in >> interp >> expand >> cx >> cy;
    std::optional<std::array<double, 2>> center;
    if (cx != "-") center = std::array<double, 2>{std::stod(cx), std::stod(cy)};
    img::rotate(src, angle, interpolation_named(interp), expand != 0, center, read_fill(in), out);
  } else {
    FAIL("unknown op " << c.op);
  }
}

std::vector<std::string> case_lines(const std::string& op) {
  std::ifstream in(geometry_dir() / "cases.txt");
  REQUIRE(in);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string offset, w, h, c, src, name;
    ls >> offset >> w >> h >> c >> src >> name;
    if (name == op) lines.push_back(line);
  }
  return lines;
}

// Runs every golden case of `op`; returns how many ran. Each mismatch is a
// failed CHECK naming the case line.
int check_op(const std::string& op) {
  const auto lines = case_lines(op);
  const auto& blob = goldens();
  img::image_buffer out;  // reused across cases, as a worker reuses its buffer
  int mismatches = 0;
  for (const std::string& line : lines) {
    INFO(line);
    golden_case c;
    c.line = line;
    std::istringstream ls(line);
    ls >> c.offset >> c.width >> c.height >> c.channels >> c.src >> c.op;
    std::string rest;
    std::getline(ls, rest);
    c.args.str(rest);
    apply(c, out);
    REQUIRE(out.width() == c.width);
    REQUIRE(out.height() == c.height);
    REQUIRE(out.channels() == c.channels);
    const std::size_t n = out.size_bytes();
    REQUIRE(c.offset + n <= blob.size());
    const auto got = data::packed(out.view());
    const std::vector<std::uint8_t> expected(blob.begin() + static_cast<std::ptrdiff_t>(c.offset),
                                             blob.begin() + static_cast<std::ptrdiff_t>(c.offset + n));
    const auto stats = data::compare(got, expected);
    if (stats.differing != 0) ++mismatches;
    CHECK(stats.differing == 0);
  }
  CHECK(mismatches == 0);
  return static_cast<int>(lines.size());
}

}  // namespace

TEST_CASE("resize equals F.resize on PIL images for every interpolation", "[image][geometry]") {
  CHECK(check_op("resize") >= 150);
}

TEST_CASE("crop equals F.crop, zero outside the image", "[image][geometry]") {
  CHECK(check_op("crop") >= 80);
}

TEST_CASE("hflip and vflip equal F.hflip and F.vflip", "[image][geometry]") {
  CHECK(check_op("hflip") >= 18);
  CHECK(check_op("vflip") >= 18);
}

TEST_CASE("hflip mirrors every RGB and L row, SSSE3 widths and views with a stride", "[image][geometry]") {
  // RGB rows of 6 or more pixels take five pixels per shuffle; against the
  // definition, for every width from 1 to 40 (each tail length), and on a
  // view into a wider image.
  std::mt19937 gen(13);
  for (const int channels : {3, 1})
    for (int width = 1; width <= 40; ++width) {
      img::image_buffer wide(width + 3, 5, channels);
      for (std::size_t i = 0; i < wide.size_bytes(); ++i) wide.data()[i] = static_cast<std::uint8_t>(gen() & 0xFF);
      img::image_view src = wide.view();
      src.width = width;
      img::image_buffer out;
      img::hflip(src, out);
      bool same = out.view().width == width && out.view().height == 5;
      for (int y = 0; y < 5 && same; ++y)
        for (int x = 0; x < width; ++x)
          for (int c = 0; c < channels; ++c)
            same = same && out.view().row(y)[x * channels + c] == src.row(y)[(width - 1 - x) * channels + c];
      INFO(channels << " channels, width " << width);
      CHECK(same);
    }
}

TEST_CASE("pad equals F.pad in every mode, past the image's size and negative", "[image][geometry]") {
  CHECK(check_op("pad") >= 150);
}

TEST_CASE("affine equals F.affine (inverse matrix + Image.transform)", "[image][geometry]") {
  CHECK(check_op("affine") >= 200);
}

TEST_CASE("affine with a raw matrix equals Image.transform, fixed and float paths", "[image][geometry]") {
  CHECK(check_op("transform") >= 9);
}

TEST_CASE("rotate equals F.rotate: fast paths, expand, center, fill", "[image][geometry]") {
  CHECK(check_op("rotate") >= 300);
}

TEST_CASE("resized_output_size equals torchvision's, errors included", "[image][geometry]") {
  std::ifstream in(geometry_dir() / "sizes.txt");
  REQUIRE(in);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    INFO(line);
    std::istringstream ls(line);
    img::size2 size;
    int n = 0;
    ls >> size.width >> size.height >> n;
    std::vector<int> s(static_cast<std::size_t>(n));
    for (int& v : s) ls >> v;
    std::string max_size, w;
    ls >> max_size >> w;
    const std::optional<int> m = max_size == "-" ? std::nullopt : std::optional<int>(std::stoi(max_size));
    if (w == "error") {
      CHECK_THROWS_AS((void)img::resized_output_size(size, s, m), std::invalid_argument);
    } else {
      int h = 0;
      ls >> h;
      const img::size2 got = img::resized_output_size(size, s, m);
      CHECK(got.width == std::stoi(w));
      CHECK(got.height == h);
    }
    ++lines;
  }
  CHECK(lines >= 100);
}

TEST_CASE("geometry ops refuse bad parameters with a clear message", "[image][geometry]") {
  const data::pnm& s = source("jpg_rgb");
  img::image_buffer out;
  CHECK_THROWS_WITH(img::resize(s.view(), {0, 5}, img::interpolation::bilinear, out), Catch::Contains("> 0"));
  CHECK_THROWS_WITH(img::crop(s.view(), {0, 0, 5, -1}, out), Catch::Contains("right is less than"));
  CHECK_THROWS_WITH(img::pad(s.view(), -40, 0, 0, 0, img::padding_mode::constant, {}, out), Catch::Contains(">= 0"));
  CHECK_THROWS_WITH(img::pad(s.view(), -20, 0, -20, 0, img::padding_mode::reflect, {}, out),
                    Catch::Contains("crops more"));
  // np.pad refuses to extend an empty axis (only an empty source has one:
  // negative paddings that empty an axis leave it unpadded).
  const img::image_view empty{s.pixels.data(), 0, 5, 3, 0};
  CHECK_THROWS_WITH(img::pad(empty, 1, 0, 0, 0, img::padding_mode::edge, {}, out), Catch::Contains("empty axis"));
  img::pad(empty, 0, 2, 0, 1, img::padding_mode::reflect, {}, out);
  CHECK(out.width() == 0);
  CHECK(out.height() == 8);
  CHECK_THROWS_WITH(img::affine(s.view(), {1, 0, 0, 0, 1, 0}, s.view().size(), img::interpolation::lanczos, {}, out),
                    Catch::Contains("nearest, bilinear and bicubic"));
  CHECK_THROWS_WITH(img::rotate(s.view(), 10, img::interpolation::box, false, std::nullopt, {}, out),
                    Catch::Contains("nearest, bilinear and bicubic"));
  CHECK_THROWS_WITH((void)img::inverse_affine_matrix({0, 0}, 0, {0, 0}, 0.0, {0, 0}), Catch::Contains("scale"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(img::affine(s.view(), img::inverse_affine_matrix({1, 1}, nan, {0, 0}, 1, {0, 0}), {5, 5},
                                img::interpolation::bilinear, {}, out),
                    Catch::Contains("finite"));
  CHECK_THROWS_WITH(img::rotate(s.view(), nan, img::interpolation::nearest, true, std::nullopt, {}, out),
                    Catch::Contains("finite"));
  CHECK_THROWS_WITH(img::rotate(s.view(), 10, img::interpolation::nearest, true, std::array<double, 2>{nan, 0}, {},
                                out),
                    Catch::Contains("center must be finite"));
  CHECK_THROWS_WITH((void)img::resized_output_size({10, 10}, {}, std::nullopt), Catch::Contains("1 or 2"));
  CHECK_THROWS_WITH((void)img::resized_output_size({10, 10}, {5, 5}, 7), Catch::Contains("max_size"));
  CHECK_THROWS_WITH((void)img::resized_output_size({10, 10}, {5}, 5), Catch::Contains("strictly greater"));
  const std::vector<std::uint8_t> four(16 * 4);
  const img::image_view rgba{four.data(), 4, 4, 4, 16};
  CHECK_THROWS_WITH(img::hflip(rgba, out), Catch::Contains("1 or 3 channels"));
}

TEST_CASE("inverse_affine_matrix is torchvision's for F.affine's center", "[image][geometry]") {
  // _get_inverse_affine_matrix([18.5, 14.5], 17.0, [3, -2], 1.3, [12.0, -7.5])
  // printed by torchvision 0.14 with repr().
  const auto m = img::inverse_affine_matrix({18.5, 14.5}, 17.0, {3, -2}, 1.3, {12.0, -7.5});
  const std::array<double, 6> expected{0.6672295229102022, 0.37496841697913014, -0.5325399548084739,
                                       -0.32174739561536575, 0.7060102237018481, 12.592441209457263};
  for (std::size_t i = 0; i < 6; ++i) {
    INFO(i);
    CHECK(m[i] == expected[i]);
  }
}

TEST_CASE("ops reuse the destination's capacity", "[image][geometry]") {
  const data::pnm& s = source("jpg_rgb");
  img::image_buffer out;
  img::rotate(s.view(), 33, img::interpolation::bilinear, true, std::nullopt, {}, out);
  const std::uint8_t* before = out.data();
  const std::size_t cap = out.capacity();
  img::affine(s.view(), img::inverse_affine_matrix({1, 1}, 5, {0, 0}, 1, {0, 0}), {20, 20},
              img::interpolation::bicubic, {}, out);
  img::pad(s.view(), 1, 1, 1, 1, img::padding_mode::symmetric, {}, out);
  img::crop(s.view(), {-1, -1, 10, 10}, out);
  img::resize(s.view(), {30, 20}, img::interpolation::nearest, out);
  CHECK(out.data() == before);
  CHECK(out.capacity() == cap);
}

TEST_CASE("the affine's AVX2 paths give the portable loop's bytes", "[image][geometry]") {
  // RGB bilinear and bicubic affines take four pixels at a time on AVX2
  // where all their taps are inside, nearest ones eight at a time inside
  // runs; the goldens above prove the portable loops against Pillow, this
  // proves the AVX2 paths against them on many more
  // matrices: rotations, shears, scales and fractional shifts, images whose
  // width is and is not a multiple of 4, pixels at every edge and outside,
  // and views with a stride (a crop of a wider image).
  if (!img::geometry_detail::affine_filter_simd()) {
    WARN("no AVX2 on this CPU: only the portable loop exists here");
    return;
  }
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> angle(-180, 180), shear(-40, 40), shift(-9, 9), scale(0.6, 1.7);
  std::size_t compared = 0;
  for (const img::size2 size : {img::size2{4, 2}, img::size2{5, 7}, img::size2{37, 29}, img::size2{64, 48},
                                img::size2{131, 70}}) {
    const int extra = size.width % 2 == 0 ? 0 : 3;
    img::image_buffer wide(size.width + extra, size.height, 3);
    for (int y = 0; y < size.height; ++y)
      for (int i = 0; i < (size.width + extra) * 3; ++i) wide.view().row(y)[i] = static_cast<std::uint8_t>(gen() & 0xFF);
    img::image_view src = wide.view();
    src.width = size.width;
    for (const auto interp : {img::interpolation::nearest, img::interpolation::bilinear, img::interpolation::bicubic})
      for (int k = 0; k < 24; ++k) {
        const std::array<double, 2> center{size.width * 0.5, size.height * 0.5};
        const std::array<double, 6> m = img::inverse_affine_matrix(
            center, k % 4 == 0 ? 0.0 : angle(gen), {shift(gen), shift(gen)}, k % 3 == 0 ? 1.0 : scale(gen),
            {k % 2 == 0 ? shear(gen) : 0.0, k % 5 == 0 ? shear(gen) : 0.0});
        const img::size2 out{size.width + k % 5, size.height + k % 3};
        img::image_buffer fast, avx2, portable;
        img::affine(src, m, out, interp, {7, 8, 9}, fast);
        {
          const ringfeed::test::simd_off off(img::geometry_detail::set_affine_avx512);
          img::affine(src, m, out, interp, {7, 8, 9}, avx2);
        }
        {
          const ringfeed::test::simd_off off(img::geometry_detail::set_affine_filter_simd);
          img::affine(src, m, out, interp, {7, 8, 9}, portable);
        }
        INFO(size.width << "x" << size.height << " case " << k << " interpolation " << static_cast<int>(interp));
        CHECK(data::packed(fast.view()) == data::packed(portable.view()));
        CHECK(data::packed(avx2.view()) == data::packed(portable.view()));
        ++compared;
      }
  }
  CHECK(compared == 5 * 3 * 24);
}

TEST_CASE("the bicubic affine's AVX2 shortcuts for rows and columns kept give the portable bytes",
          "[image][geometry]") {
  // A shear or a translation along one axis (timm's ShearX / TranslateXRel:
  // (1, s, t, 0, 1, 0); ShearY / TranslateYRel: (1, 0, 0, s, 1, t)) keeps
  // every pixel's dy (dx) at 0: the AVX2 bicubic then filters one row (or
  // takes each row's floor tap). Against the portable loop, on fractional
  // and integer shifts, negative and positive shears, widths not a
  // multiple of 4.
  if (!img::geometry_detail::affine_filter_simd()) {
    WARN("no AVX2 on this CPU: only the portable loop exists here");
    return;
  }
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> shear(-0.9, 0.9), shift(-40, 40);
  img::image_buffer src(67, 45, 3);
  for (std::size_t i = 0; i < src.size_bytes(); ++i) src.data()[i] = static_cast<std::uint8_t>(gen() & 0xFF);
  std::size_t compared = 0;
  for (int k = 0; k < 40; ++k) {
    const double s = k % 4 == 0 ? 0.0 : shear(gen);
    const double t = k % 3 == 0 ? std::round(shift(gen)) : shift(gen);
    const std::array<double, 6> m = k % 2 == 0 ? std::array<double, 6>{1, s, t, 0, 1, 0}
                                               : std::array<double, 6>{1, 0, 0, s, 1, t};
    for (const auto interp : {img::interpolation::bilinear, img::interpolation::bicubic}) {
      img::image_buffer fast, avx2, portable;
      img::affine(src.view(), m, src.view().size(), interp, {7, 8, 9}, fast);
      {
        const ringfeed::test::simd_off off(img::geometry_detail::set_affine_avx512);
        img::affine(src.view(), m, src.view().size(), interp, {7, 8, 9}, avx2);
      }
      {
        const ringfeed::test::simd_off off(img::geometry_detail::set_affine_filter_simd);
        img::affine(src.view(), m, src.view().size(), interp, {7, 8, 9}, portable);
      }
      INFO("case " << k << " shear " << s << " shift " << t << " interpolation " << static_cast<int>(interp));
      CHECK(data::packed(fast.view()) == data::packed(portable.view()));
      CHECK(data::packed(avx2.view()) == data::packed(portable.view()));
      ++compared;
    }
  }
  CHECK(compared == 80);
}

namespace {

// A source view whose last byte lies right before an unreadable page: a
// read past the view's last pixel faults, gathers included (which ASan
// does not check), where image_buffer's spare capacity would hide it.
class guarded_source {
 public:
  guarded_source(int width, int height, std::ptrdiff_t stride, std::mt19937& gen) : m_width(width), m_height(height), m_stride(stride) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = static_cast<std::size_t>(height - 1) * static_cast<std::size_t>(stride) +
                              static_cast<std::size_t>(width) * 3;
    m_size = (bytes + page - 1) / page * page + page;
    m_base = mmap(nullptr, m_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m_base != MAP_FAILED);
    auto* guard = static_cast<std::uint8_t*>(m_base) + (m_size - page);
    m_data = guard - bytes;
    for (std::size_t i = 0; i < bytes; ++i) m_data[i] = static_cast<std::uint8_t>(gen());
    REQUIRE(mprotect(guard, page, PROT_NONE) == 0);
  }
  guarded_source(const guarded_source&) = delete;
  guarded_source& operator=(const guarded_source&) = delete;
  ~guarded_source() { munmap(m_base, m_size); }
  [[nodiscard]] img::image_view view() const { return {m_data, m_width, m_height, 3, m_stride}; }

 private:
  int m_width, m_height;
  std::ptrdiff_t m_stride;
  std::size_t m_size = 0;
  void* m_base = nullptr;
  std::uint8_t* m_data = nullptr;
};

}  // namespace

TEST_CASE("the affine's AVX2 and AVX-512 paths read nothing past the source's last pixel", "[image][geometry]") {
  // Tiny sizes, strides past 3 * width, and matrices that put long runs
  // and 4x4 taps on the last row and column: a tiny rotation onto a wider
  // output (nearest runs of 10+ pixels through the last pixel), upscales
  // and random turns; each against the portable loop. An over-read is a
  // crash here.
  std::mt19937 gen(29);
  std::uniform_real_distribution<double> angle(-180, 180), shift(-3, 3);
  std::size_t compared = 0;
  for (const img::size2 size : {img::size2{1, 1}, img::size2{2, 2}, img::size2{3, 3}, img::size2{4, 4},
                                img::size2{5, 3}, img::size2{7, 6}, img::size2{13, 11}, img::size2{37, 29}})
    for (const int pad : {0, 1, 7}) {
      const guarded_source src(size.width, size.height, static_cast<std::ptrdiff_t>(size.width) * 3 + pad, gen);
      const std::array<double, 2> center{size.width * 0.5, size.height * 0.5};
      for (int k = 0; k < 12; ++k) {
        const double a = k < 3 ? 0.01 * (k + 1) : k < 6 ? 0.0 : angle(gen);
        const double scale = k < 3 ? 1.0 : k < 6 ? 3.0 + k : 1.0 + (k % 3) * 0.5;
        const std::array<double, 6> m =
            img::inverse_affine_matrix(center, a, {k < 6 ? 0.0 : shift(gen), k < 6 ? 0.0 : shift(gen)}, scale, {0.0, 0.0});
        const img::size2 out{size.width * 3 + 10, size.height * 3 + 2};
        for (const auto interp : {img::interpolation::nearest, img::interpolation::bilinear, img::interpolation::bicubic}) {
          img::image_buffer fast, avx2, portable;
          img::affine(src.view(), m, out, interp, {7, 8, 9}, fast);
          {
            const ringfeed::test::simd_off off(img::geometry_detail::set_affine_avx512);
            img::affine(src.view(), m, out, interp, {7, 8, 9}, avx2);
          }
          {
            const ringfeed::test::simd_off off(img::geometry_detail::set_affine_filter_simd);
            img::affine(src.view(), m, out, interp, {7, 8, 9}, portable);
          }
          INFO(size.width << "x" << size.height << " pad " << pad << " case " << k << " interpolation "
                          << static_cast<int>(interp));
          CHECK(data::packed(fast.view()) == data::packed(portable.view()));
          CHECK(data::packed(avx2.view()) == data::packed(portable.view()));
          ++compared;
        }
      }
    }
  CHECK(compared == 8 * 3 * 12 * 3);
}

TEST_CASE("quarter turns move every pixel, across tiles, in views with a stride", "[image][geometry]") {
  // rotate's 90/180/270 fast paths move RGB pixels as 4-byte words in 32x32
  // tiles; the goldens hold small images only. Against the definition, on
  // sizes that cross tiles, and on a view into a wider image (a stride).
  std::mt19937 gen(9);
  for (const int channels : {3, 1})
    for (const img::size2 size : {img::size2{1, 1}, img::size2{33, 70}, img::size2{64, 64}, img::size2{100, 37}}) {
      img::image_buffer wide(size.width + 5, size.height, channels);
      for (int y = 0; y < size.height; ++y)
        for (int i = 0; i < (size.width + 5) * channels; ++i)
          wide.view().row(y)[i] = static_cast<std::uint8_t>(gen() & 0xFF);
      img::image_view src = wide.view();
      src.width = size.width;  // the first columns: stride > width * channels
      for (const int turns : {1, 2, 3}) {
        img::image_buffer dst;
        img::rotate(src, 90.0 * turns, img::interpolation::nearest, true, std::nullopt, {1, 2, 3}, dst);
        const int ow = turns == 2 ? size.width : size.height;
        const int oh = turns == 2 ? size.height : size.width;
        REQUIRE(dst.width() == ow);
        REQUIRE(dst.height() == oh);
        int wrong = 0;
        for (int y = 0; y < size.height; ++y)
          for (int x = 0; x < size.width; ++x) {
            // Counter-clockwise: 90 sends (x, y) to (y, w-1-x), 270 to (h-1-y, x).
            const int ox = turns == 1 ? y : turns == 2 ? size.width - 1 - x : size.height - 1 - y;
            const int oy = turns == 1 ? size.width - 1 - x : turns == 2 ? size.height - 1 - y : x;
            for (int c = 0; c < channels; ++c)
              wrong += dst.view().row(oy)[ox * channels + c] != src.row(y)[x * channels + c] ? 1 : 0;
          }
        INFO(size.width << "x" << size.height << "x" << channels << " turned " << 90 * turns);
        CHECK(wrong == 0);
      }
    }
}

TEST_CASE("integer shifts copy pixels: the filters' own bytes, bilinear and bicubic", "[image][geometry]") {
  // The augment policies' TranslateX/Y (int(magnitude)) and magnitude-0
  // shears give torchvision matrices that only shift by whole pixels;
  // those skip the filters (whose weights there are 1 and 0). The matrices
  // qualify, other ones do not, and the copy equals the filters' output at
  // every edge, shift, size and channel count.
  namespace gd = img::geometry_detail;
  for (const img::size2 size : {img::size2{176, 176}, img::size2{175, 131}, img::size2{1, 1}})
    for (const std::array<double, 2> t : {std::array<double, 2>{0, 0}, {3, -7}, {-32, 15}, {500, 0}}) {
      const std::array<double, 2> center{size.width * 0.5, size.height * 0.5};
      const auto d = gd::integer_shift(img::inverse_affine_matrix(center, 0.0, t, 1.0, {0.0, 0.0}));
      INFO(size.width << "x" << size.height << " translate " << t[0] << "," << t[1]);
      REQUIRE(d);
      CHECK((*d)[0] == -static_cast<int>(t[0]));
      CHECK((*d)[1] == -static_cast<int>(t[1]));
    }
  const std::array<double, 2> c{20.5, 10.0};
  CHECK_FALSE(gd::integer_shift(img::inverse_affine_matrix(c, 17.0, {3, 0}, 1.0, {0.0, 0.0})));
  CHECK_FALSE(gd::integer_shift(img::inverse_affine_matrix(c, 0.0, {3, 0}, 1.0, {5.0, 0.0})));
  CHECK_FALSE(gd::integer_shift(img::inverse_affine_matrix(c, 0.0, {3, 0}, 1.25, {0.0, 0.0})));
  CHECK_FALSE(gd::integer_shift(img::inverse_affine_matrix(c, 0.0, {2.5, 0}, 1.0, {0.0, 0.0})));

  std::mt19937 gen(12);
  std::size_t compared = 0;
  for (const int channels : {3, 1})
    for (const img::size2 size : {img::size2{1, 1}, img::size2{4, 3}, img::size2{37, 29}, img::size2{64, 48}}) {
      img::image_buffer src(size.width, size.height, channels);
      for (int y = 0; y < size.height; ++y)
        for (int i = 0; i < size.width * channels; ++i) src.view().row(y)[i] = static_cast<std::uint8_t>(gen());
      for (const std::array<int, 2> d : {std::array<int, 2>{0, 0}, {1, 0}, {0, -1}, {-5, 3}, {8, 8}, {-36, 28},
                                         {37, 0}, {0, -29}, {200, -200}})
        for (const auto interp : {img::interpolation::bilinear, img::interpolation::bicubic}) {
          const std::array<double, 6> m{1.0, -0.0, static_cast<double>(d[0]), 0.0, 1.0, static_cast<double>(d[1])};
          const img::size2 out{size.width + (d[0] & 1) * 3, size.height + 2};
          img::image_buffer fast, filtered;
          img::affine(src.view(), m, out, interp, {7, 8, 9}, fast);
          {
            const ringfeed::test::simd_off off(gd::set_affine_shift_path);
            img::affine(src.view(), m, out, interp, {7, 8, 9}, filtered);
          }
          INFO(channels << " channels, " << size.width << "x" << size.height << " shift " << d[0] << "," << d[1]
                        << (interp == img::interpolation::bicubic ? " bicubic" : " bilinear"));
          CHECK(data::packed(fast.view()) == data::packed(filtered.view()));
          ++compared;
        }
    }
  CHECK(compared == 2 * 4 * 9 * 2);
}
