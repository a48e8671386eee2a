// timm's ops (TimmAugmentOp, TimmRandAugment, TimmAutoAugment, TimmAugMix,
// TimmRandomErasing, TimmResizeKeepRatio, TimmCenterCropOrPad,
// TimmRandomCropOrPad): each spec
// parses back to itself, the level functions give timm's arguments at
// fixed magnitudes, probabilities and clipping hold, and erased boxes stay
// inside the image. Pixel parity with timm's own objects is in
// tests/python/test_timm_transforms.py (goldens committed).
#include <catch2/catch.hpp>

#include <ringfeed/image/transform_list.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace img = ringfeed::image;

namespace {

// What op 0 of `spec` draws for sample `index` of a 64 x 48 image.
std::vector<double> draws(const std::string& spec, std::uint64_t index, int width = 64, int height = 48) {
  const auto list = img::transform_list::parse(spec);
  ringfeed::sample_rng rng(ringfeed::sample_key{1, 0, index}, 1);
  return list.ops()[0]->draw_for_test(rng, {width, height}, 3);
}

// The set of |arg| values (and whether both signs occur) over 200 samples of
// one AugmentOp applied always with a fixed magnitude.
std::set<double> args_of(const std::string& name, double magnitude, const std::string& extra = "") {
  std::set<double> out;
  const std::string spec = "TimmAugmentOp(name='" + name + "', prob=1.0, magnitude=" + std::to_string(magnitude) +
                           extra + ")";
  for (std::uint64_t i = 0; i < 200; ++i) {
    const auto d = draws(spec, i);
    REQUIRE(d.size() == 4);
    CHECK(d[0] == 1.0);
    out.insert(std::round(d[2] * 1e9) / 1e9);
  }
  return out;
}

}  // namespace

TEST_CASE("timm ops: every spec parses back to itself", "[timm][spec]") {
  const std::string op = "TimmAugmentOp(name='ShearX', prob=0.3, magnitude=7, magnitude_std=inf, magnitude_max=12, "
                         "fill=(1, 2, 3), interpolation=('bicubic',), translate_const=99, translate_pct=0.2)";
  for (const std::string& spec :
       {op, "TimmRandAugment(ops=[" + op + ", " + op + "], num_layers=2, choice_weights=(0.25, 0.75))",
        "TimmAutoAugment(policy=[[" + op + "], [" + op + ", " + op + "]])",
        "TimmAugMix(ops=[" + op + "], alpha=0.5, width=4, depth=2)",
        std::string("TimmRandomErasing(probability=0.25, min_area=0.1, max_area=0.2, log_aspect_ratio=(-1, 1), "
                    "min_count=2, max_count=5, mode='pixel')"),
        std::string("TimmResizeKeepRatio(size=(40, 70), longest=0.5, interpolation=('bilinear', 'bicubic'), "
                    "random_scale_prob=0.5, random_aspect_prob=0.25)"),
        std::string("TimmCenterCropOrPad(size=(21, 30), fill=(1, 2, 3), padding_mode='reflect')"),
        std::string("TimmRandomCropOrPad(size=(21, 30), fill=(1, 2, 3), padding_mode='edge')")}) {
    INFO(spec);
    const std::string once = img::transform_list::parse(spec).spec();
    CHECK(img::transform_list::parse(once).spec() == once);
  }
}

TEST_CASE("timm ops: the level functions give timm's arguments", "[timm][draws]") {
  CHECK(args_of("Rotate", 5) == std::set<double>{-15.0, 15.0});  // (5/10)*30, negated half the time
  CHECK(args_of("ShearY", 10) == std::set<double>{-0.3, 0.3});
  CHECK(args_of("TranslateXRel", 10) == std::set<double>{-0.45, 0.45});
  CHECK(args_of("TranslateY", 4, ", translate_const=100") == std::set<double>{-40.0, 40.0});
  CHECK(args_of("Posterize", 9) == std::set<double>{3});             // int(0.9 * 4)
  CHECK(args_of("PosterizeIncreasing", 9) == std::set<double>{1});   // 4 - 3
  CHECK(args_of("PosterizeOriginal", 9) == std::set<double>{7});     // 3 + 4
  CHECK(args_of("Solarize", 9) == std::set<double>{230});            // int(0.9 * 256)
  CHECK(args_of("SolarizeIncreasing", 9) == std::set<double>{26});   // 256 - 230
  CHECK(args_of("SolarizeAdd", 9) == std::set<double>{99});          // int(0.9 * 110)
  CHECK(args_of("Color", 9) == std::set<double>{1.72});              // 0.9 * 1.8 + 0.1
  CHECK(args_of("ContrastIncreasing", 9) == std::set<double>{0.19, 1.81});  // 1 -/+ 0.81
  CHECK(args_of("Rotate", 12) == std::set<double>{-30.0, 30.0});     // clipped to 10
  CHECK(args_of("Rotate", 12, ", magnitude_max=15") == std::set<double>{-36.0, 36.0});
  CHECK(args_of("SharpnessIncreasing", 15, ", magnitude_max=15") == std::set<double>{0.1, 2.35});  // max(0.1, .)
}

TEST_CASE("timm ops: probability, noise and filter choice", "[timm][draws]") {
  int applied = 0, bicubic = 0;
  double below = 0, above = 0;
  for (std::uint64_t i = 0; i < 4000; ++i) {
    const auto d = draws("TimmAugmentOp(name='Rotate', prob=0.3, magnitude=9, magnitude_std=1)", i);
    if (d[0] == 0) {
      CHECK(std::isnan(d[2]));
      continue;
    }
    ++applied;
    bicubic += d[3] == 1;
    CHECK(d[1] >= 0);
    CHECK(d[1] <= 10);  // clipped to _LEVEL_DENOM
    (d[1] < 9 ? below : above) += 1;
  }
  CHECK(std::abs(applied - 1200) < 4 * std::sqrt(4000 * 0.3 * 0.7));
  CHECK(std::abs(bicubic - applied / 2.0) < 4 * std::sqrt(applied / 4.0));
  CHECK(std::abs(below - above) < 4 * std::sqrt(applied));  // symmetric noise around 9
  for (std::uint64_t i = 0; i < 200; ++i)
    CHECK(draws("TimmAugmentOp(name='Invert', prob=0.0)", i)[0] == 0);
}

TEST_CASE("timm ops: erased boxes lie inside the image, count in range", "[timm][erasing]") {
  std::set<int> counts;
  for (std::uint64_t i = 0; i < 500; ++i) {
    const auto d = draws("TimmRandomErasing(probability=1.0, min_count=1, max_count=4, mode='const')", i, 40, 30);
    const int n = static_cast<int>(d[0]);
    counts.insert(n);
    REQUIRE(d.size() == static_cast<std::size_t>(1 + 4 * n));
    for (int k = 0; k < n; ++k) {
      const double top = d[1 + 4 * k], left = d[2 + 4 * k], h = d[3 + 4 * k], w = d[4 + 4 * k];
      CHECK(top >= 0);
      CHECK(left >= 0);
      CHECK(h < 30);
      CHECK(w < 40);
      CHECK(top + h <= 30);
      CHECK(left + w <= 40);
    }
  }
  CHECK(counts == std::set<int>{1, 2, 3, 4});  // up to 10 attempts each: all placed at these areas
}
