// Colour and pixel ops (ringfeed/image/color.hpp) against torchvision 0.14 on
// PIL images (Pillow 9.4), bit for bit: every op and parameter variant on
// crops of the committed JPEG / PNG / WebP / TIFF / BMP / PNM goldens, as RGB
// and as L, tiny and thin sizes included (data/image/color/, made by
// make_color_goldens.py); hue, saturation and grayscale over all 2^24 RGB
// colours (hashes); gaussian_kernel1d against torch's float bits; bad
// parameters. The goldens are committed: no Python needed.
//
// Measuring the blur on a larger set: make_color_goldens.py --many DIR, then
// RINGFEED_COLOR_CASES=DIR image_color_tests "[.measure]" prints the bytes
// that differ per op (it asserts nothing).
#include <catch2/catch.hpp>

#include <ringfeed/image/color.hpp>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "image_test_data.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;
namespace fs = std::filesystem;

namespace {

struct golden_case {
  std::string line;
  bool raises = false;
  std::size_t offset = 0;
  std::size_t length = 0;
  std::string src;
  std::string mode;
  std::string op;
  std::vector<std::string> args;
};

std::vector<golden_case> read_cases(const fs::path& dir) {
  std::ifstream in(dir / "cases.txt");
  REQUIRE(in);
  std::vector<golden_case> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    golden_case c;
    c.line = line;
    std::string offset;
    ls >> offset >> c.length >> c.src >> c.mode >> c.op;
    c.raises = offset == "-";
    if (!c.raises) c.offset = std::stoull(offset);
    for (std::string a; ls >> a;) c.args.push_back(a);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::uint8_t> read_blob(const fs::path& p) {
  const std::vector<std::byte> raw = data::read_file(p);
  std::vector<std::uint8_t> out(raw.size());
  if (!raw.empty()) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

// Sources by "name/mode", loaded once per directory.
class sources {
 public:
  explicit sources(fs::path dir) : m_dir(std::move(dir)) {}
  const data::pnm& get(const std::string& name, const std::string& mode) {
    const std::string key = name + "/" + mode;
    auto it = m_cache.find(key);
    if (it == m_cache.end())
      it = m_cache.emplace(key, data::read_pnm(m_dir / ("src_" + name + (mode == "rgb" ? ".ppm" : ".pgm")))).first;
    return it->second;
  }

 private:
  fs::path m_dir;
  std::map<std::string, data::pnm> m_cache;
};

double arg(const golden_case& c, std::size_t i) { return std::stod(c.args.at(i)); }
int iarg(const golden_case& c, std::size_t i) { return std::stoi(c.args.at(i)); }

void run(const golden_case& c, img::image_view src, img::image_buffer& dst) {
  if (c.op == "adjust_brightness") img::adjust_brightness(src, arg(c, 0), dst);
  else if (c.op == "adjust_contrast") img::adjust_contrast(src, arg(c, 0), dst);
  else if (c.op == "adjust_saturation") img::adjust_saturation(src, arg(c, 0), dst);
  else if (c.op == "adjust_sharpness") img::adjust_sharpness(src, arg(c, 0), dst);
  else if (c.op == "adjust_hue") img::adjust_hue(src, arg(c, 0), dst);
  else if (c.op == "to_grayscale") img::to_grayscale(src, iarg(c, 0), dst);
  else if (c.op == "posterize") img::posterize(src, iarg(c, 0), dst);
  else if (c.op == "solarize") img::solarize(src, arg(c, 0), dst);
  else if (c.op == "autocontrast") img::autocontrast(src, dst);
  else if (c.op == "equalize") img::equalize(src, dst);
  else if (c.op == "invert") img::invert(src, dst);
  else if (c.op == "gaussian_blur") img::gaussian_blur(src, {iarg(c, 0), iarg(c, 1)}, {arg(c, 2), arg(c, 3)}, dst);
  else FAIL("unknown op in cases.txt: " << c.op);
}

struct tally {
  int cases = 0;
  int exact = 0;
  std::size_t bytes = 0;
  std::size_t differing = 0;
};

// Runs every case of `dir`; returns per-op tallies and, in `failures`, a
// line per case that is not bit-identical (or did not throw as torch did).
std::map<std::string, tally> run_all(const fs::path& dir, std::vector<std::string>& failures) {
  const auto cases = read_cases(dir);
  const std::vector<std::uint8_t> blob = read_blob(dir / "goldens.bin");
  sources srcs(dir);
  std::map<std::string, tally> t;
  img::image_buffer dst;
  for (const golden_case& c : cases) {
    const data::pnm& src = srcs.get(c.src, c.mode);
    tally& k = t[c.op];
    ++k.cases;
    if (c.raises) {
      bool threw = false;
      try {
        run(c, src.view(), dst);
      } catch (const std::invalid_argument&) {
        threw = true;
      }
      if (threw) ++k.exact;
      else failures.push_back(c.line + ": torchvision raised, ringfeed did not");
      continue;
    }
    run(c, src.view(), dst);
    const std::vector<std::uint8_t> got = data::packed(dst.view());
    REQUIRE(c.offset + c.length <= blob.size());
    k.bytes += c.length;
    if (got.size() != c.length) {
      failures.push_back(c.line + ": " + std::to_string(got.size()) + " bytes, torchvision " +
                         std::to_string(c.length));
      k.differing += c.length;
      continue;
    }
    std::size_t diff = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < c.length; ++i)
      if (got[i] != blob[c.offset + i] && diff++ == 0) first = i;
    k.differing += diff;
    if (diff == 0) {
      ++k.exact;
    } else {
      failures.push_back(c.line + ": " + std::to_string(diff) + " bytes differ, first at " + std::to_string(first) +
                         " (ringfeed " + std::to_string(got[first]) + ", torchvision " +
                         std::to_string(blob[c.offset + first]) + ")");
    }
  }
  return t;
}

std::uint64_t image_hash(img::image_view v) {
  const std::vector<std::uint8_t> b = data::packed(v);
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < b.size(); ++i) h += b[i] * ((2 * static_cast<std::uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull);
  return h;
}

}  // namespace

TEST_CASE("colour ops equal torchvision on PIL images bit for bit", "[image][color]") {
  std::vector<std::string> failures;
  const auto tallies = run_all(data::dir() / "color", failures);
  REQUIRE(tallies.size() == 12);  // every op has goldens
  for (const auto& [op, k] : tallies) {
    INFO(op << ": " << k.exact << "/" << k.cases << " cases exact");
    CHECK(k.cases >= 26);
  }
  for (const std::string& f : failures) UNSCOPED_INFO(f);
  CHECK(failures.empty());
}

TEST_CASE("gaussian_kernel1d equals torchvision's float32 kernel bit for bit", "[image][color]") {
  std::ifstream in(data::dir() / "color" / "kernels.txt");
  REQUIRE(in);
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    int size = 0;
    std::string sigma;
    ls >> size >> sigma;
    const std::vector<float> k = img::gaussian_kernel1d(size, std::stod(sigma));
    REQUIRE(k.size() == static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) {
      std::string hex;
      ls >> hex;
      const auto want = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
      INFO("size " << size << " sigma " << sigma << " tap " << i);
      REQUIRE(std::bit_cast<std::uint32_t>(k[static_cast<std::size_t>(i)]) == want);
    }
    ++checked;
  }
  CHECK(checked > 600);
  CHECK(img::gaussian_default_sigma(5) == 5 * 0.15 + 0.35);
}

TEST_CASE("hue, saturation and grayscale match Pillow on every RGB colour", "[image][color]") {
  img::image_buffer all(4096, 4096, 3);
  for (std::uint32_t p = 0; p < (1u << 24); ++p) {
    all.data()[3 * p] = static_cast<std::uint8_t>(p >> 16);
    all.data()[3 * p + 1] = static_cast<std::uint8_t>(p >> 8);
    all.data()[3 * p + 2] = static_cast<std::uint8_t>(p);
  }
  std::ifstream in(data::dir() / "color" / "hashes.txt");
  REQUIRE(in);
  img::image_buffer dst;
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string op;
    double a = 0;
    std::uint64_t want = 0;
    ls >> op >> a >> want;
    if (op == "adjust_hue") img::adjust_hue(all.view(), a, dst);
    else if (op == "adjust_saturation") img::adjust_saturation(all.view(), a, dst);
    else if (op == "to_grayscale") img::to_grayscale(all.view(), static_cast<int>(a), dst);
    else FAIL("unknown op " << op);
    INFO(line);
    CHECK(image_hash(dst.view()) == want);
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("colour ops read strided views and reuse the destination", "[image][color]") {
  const data::pnm photo = data::read_pnm(data::dir() / "color" / "src_jpeg.ppm");
  const img::image_view crop = photo.view().crop({5, 7, 20, 31});  // stride > width × 3
  img::image_buffer packed(crop.width, crop.height, 3);
  for (int y = 0; y < crop.height; ++y) std::memcpy(packed.view().row(y), crop.row(y), 31 * 3);
  img::image_buffer a;
  img::image_buffer b;
  img::image_buffer dst(100, 100, 3);  // bigger: reset() shrinks it
  img::adjust_sharpness(crop, 2.0, a);
  img::adjust_sharpness(packed.view(), 2.0, b);
  CHECK(data::packed(a.view()) == data::packed(b.view()));
  img::gaussian_blur(crop, {5, 3}, {1.0, 0.7}, a);
  img::gaussian_blur(packed.view(), {5, 3}, {1.0, 0.7}, dst);
  CHECK(dst.width() == 31);
  CHECK(dst.height() == 20);
  CHECK(data::packed(a.view()) == data::packed(dst.view()));
  img::adjust_hue(crop, 0.25, a);
  img::adjust_hue(packed.view(), 0.25, b);
  CHECK(data::packed(a.view()) == data::packed(b.view()));
  img::blend(crop, packed.view(), 0.3, a);
  img::blend(packed.view(), packed.view(), 0.3, b);
  CHECK(data::packed(a.view()) == data::packed(packed.view()));  // blend(x, x) = x
}

TEST_CASE("blend is Image.blend: ImageEnhance.Color through it equals the goldens' saturation",
          "[image][color]") {
  // Color's degenerate image is convert("L").convert("RGB") = to_grayscale(3),
  // and adjust_saturation is checked against torchvision above.
  const data::pnm photo = data::read_pnm(data::dir() / "color" / "src_jpeg.ppm");
  img::image_buffer gray;
  img::to_grayscale(photo.view(), 3, gray);
  img::image_buffer via_blend;
  img::image_buffer direct;
  for (double f : {0.0, 0.3, 0.5, 1.0, 1.3, 2.0, -0.7}) {
    INFO("factor " << f);
    img::blend(gray.view(), photo.view(), f, via_blend);
    img::adjust_saturation(photo.view(), f, direct);
    CHECK(data::packed(via_blend.view()) == data::packed(direct.view()));
  }
}

TEST_CASE("colour ops reject bad parameters as torchvision does", "[image][color]") {
  img::image_buffer src(8, 6, 3);
  std::memset(src.data(), 100, src.size_bytes());
  img::image_buffer dst;
  const img::image_view v = src.view();
  CHECK_THROWS_AS(img::adjust_hue(v, 0.51, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::adjust_hue(v, -0.51, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::adjust_hue(v, std::nan(""), dst), std::invalid_argument);
  CHECK_THROWS_AS(img::to_grayscale(v, 2, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::posterize(v, 9, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::posterize(v, -1, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::adjust_brightness(v, std::numeric_limits<double>::infinity(), dst), std::invalid_argument);
  CHECK_THROWS_AS(img::gaussian_blur(v, {4, 3}, {1.0, 1.0}, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::gaussian_blur(v, {3, 3}, {0.0, 1.0}, dst), std::invalid_argument);
  CHECK_THROWS_AS(img::gaussian_blur(v, {3, 13}, {1.0, 1.0}, dst), std::invalid_argument);  // 13 / 2 ≥ 6 rows
  CHECK_THROWS_AS(img::gaussian_kernel1d(-1, 1.0), std::invalid_argument);
  img::image_buffer other(8, 5, 3);
  CHECK_THROWS_AS(img::blend(v, other.view(), 0.5, dst), std::invalid_argument);
  img::image_buffer rgba(4, 4, 4);
  CHECK_THROWS_AS(img::invert(rgba.view(), dst), std::invalid_argument);
  try {
    img::adjust_hue(v, 0.7, dst);
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("[-0.5, 0.5]") != std::string::npos);
  }
}

TEST_CASE("measure: bytes differing from torchvision on a large set", "[.measure]") {
  const char* dir = std::getenv("RINGFEED_COLOR_CASES");
  if (dir == nullptr) {
    WARN("set RINGFEED_COLOR_CASES to a make_color_goldens.py --many folder");
    return;
  }
  std::vector<std::string> failures;
  const auto tallies = run_all(dir, failures);
  for (const auto& [op, k] : tallies)
    WARN(op << ": " << k.exact << "/" << k.cases << " cases exact, " << k.differing << " of " << k.bytes
            << " bytes differ");
  for (const std::string& f : failures) WARN(f);
}
