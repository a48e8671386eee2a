// A committed folder of decoder inputs and Pillow goldens (tests/data/image/
// webp/, tiff/, bmp_pnm/, orientation/): DIR/manifest.txt names the inputs,
// DIR/NAME.ppm is Pillow 9.4's Image.open(NAME).convert("RGB") as a binary
// P6, and an optional DIR/NAME.oriented.ppm is ImageOps.exif_transpose of
// that (a folder has one for every input or for none). Written by
// the generator scripts beside them (tests/data/image/README.md); the tests
// read them without Python. When an interpreter with the goldens' Pillow is
// at hand, live_pillow_mismatches() re-decodes the inputs with it to catch a
// stale golden.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace ringfeed::test::image_data {

class golden_set {
 public:
  /// Reads `folder`/manifest.txt, a relative `folder` being under dir()
  /// (tests/data/image); throws when it is missing or empty.
  explicit golden_set(const std::filesystem::path& folder) : m_dir(dir() / folder) {
    std::ifstream manifest(m_dir / "manifest.txt");
    if (!manifest) throw std::runtime_error("cannot open " + (m_dir / "manifest.txt").string());
    for (std::string line; std::getline(manifest, line);) {
      if (!line.empty() && line[0] != '#') m_names.push_back(line);
    }
    if (m_names.empty()) throw std::runtime_error((m_dir / "manifest.txt").string() + " lists no files");
  }

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_dir; }
  /// The input file names, sorted, each with its extension ("lossy.webp").
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return m_names; }
  [[nodiscard]] std::vector<std::byte> input(const std::string& name) const { return read_file(m_dir / name); }
  [[nodiscard]] pnm golden(const std::string& name) const { return read_pnm(m_dir / (name + ".ppm")); }
  /// Whether the folder has NAME.oriented.ppm goldens (for every input).
  [[nodiscard]] bool has_oriented() const { return std::filesystem::exists(m_dir / (m_names[0] + ".oriented.ppm")); }
  [[nodiscard]] pnm oriented_golden(const std::string& name) const {
    return read_pnm(m_dir / (name + ".oriented.ppm"));
  }

  /// Files in the folder that are neither a listed input, its golden nor
  /// the manifest, and listed inputs or goldens that are missing: empty
  /// when the manifest describes the folder exactly.
  [[nodiscard]] std::vector<std::string> inconsistencies() const {
    std::vector<std::string> expected{"manifest.txt"};
    const bool oriented = has_oriented();
    for (const auto& n : m_names) {
      expected.push_back(n);
      expected.push_back(n + ".ppm");
      if (oriented) expected.push_back(n + ".oriented.ppm");
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(m_dir)) found.push_back(e.path().filename().string());
    std::sort(expected.begin(), expected.end());
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    std::vector<std::string> missing;
    std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(), std::back_inserter(out));
    std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(), std::back_inserter(missing));
    for (const auto& m : missing) out.push_back("missing " + m);
    return out;
  }

 private:
  std::filesystem::path m_dir;
  std::vector<std::string> m_names;
};

/// Decodes input `name` of `set` with `d` into `out` and checks the RGB
/// result equals its golden bit for bit (size, then every sample). Returns
/// what decode() returned.
inline ringfeed::image::image_info check_decode_equals_golden(const golden_set& set, const std::string& name,
                                                              ringfeed::image::decoder& d,
                                                              ringfeed::image::image_buffer& out) {
  const pnm expected = set.golden(name);
  const ringfeed::image::image_info info = d.decode(set.input(name), name, out);
  REQUIRE(out.channels() == 3);
  REQUIRE(out.width() == expected.width);
  REQUIRE(out.height() == expected.height);
  const diff_stats stats = compare(packed(out.view()), expected.pixels);
  CHECK(stats.differing == 0);
  CHECK(stats.max_abs == 0);
  return info;
}

/// The interpreter for the live Pillow check: $RINGFEED_TEST_PYTHON, else
/// Debian's /usr/bin/python3 (the `python3` on PATH may lack Pillow).
inline std::string reference_python() {
  const char* p = std::getenv("RINGFEED_TEST_PYTHON");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

struct live_pillow_result {
  bool ran = false;
  std::string why_not;                 ///< when !ran: no interpreter, no Pillow, another Pillow release
  std::vector<std::string> mismatches;  ///< one line per input whose golden the live Pillow does not reproduce
};

/// Decodes every input of `set` with reference_python()'s Pillow
/// (tests/data/image/pillow_rgb.py) and compares with the committed golden
/// bit for bit. Does not run (why_not says why) without an interpreter, without
/// Pillow, or with a Pillow release other than the goldens' major.minor.
inline live_pillow_result live_pillow_mismatches(const golden_set& set) {
  live_pillow_result result;
  const temp_dir tmp;
  const auto quoted = [](const std::filesystem::path& p) { return "'" + p.string() + "'"; };
  const std::filesystem::path log = tmp.path() / "log";
  const std::string cmd = quoted(reference_python()) + " " + quoted(dir() / "pillow_rgb.py") + " " +
                          quoted(set.path()) + " " + quoted(tmp.path() / "out") + " >" + quoted(log) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const int rc = status == -1 || !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
  std::string output;
  if (std::filesystem::exists(log)) {
    const auto bytes = read_file(log);
    output.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    while (!output.empty() && output.back() == '\n') output.pop_back();
  }
  if (rc == 3 || rc == 4 || rc == 126 || rc == 127) {
    result.why_not = reference_python() + ": " + (rc >= 126 ? "cannot run it (" + output + ")" : output);
    return result;
  }
  if (rc != 0) throw std::runtime_error("pillow_rgb.py failed (exit " + std::to_string(rc) + "): " + output);
  result.ran = true;
  for (const auto& name : set.names()) {
    const std::filesystem::path live = tmp.path() / "out" / (name + ".ppm");
    if (!std::filesystem::exists(live)) {
      result.mismatches.push_back(name + ": the live Pillow cannot decode it (" + output + ")");
      continue;
    }
    const auto check = [&](const std::string& golden, const pnm& want) {
      const std::filesystem::path live_golden = tmp.path() / "out" / golden;
      if (!std::filesystem::exists(live_golden)) {
        result.mismatches.push_back(golden + ": pillow_rgb.py wrote none");
        return;
      }
      const pnm got = read_pnm(live_golden);
      if (got.width != want.width || got.height != want.height)
        result.mismatches.push_back(golden + ": Pillow decodes " + std::to_string(got.width) + "x" +
                                    std::to_string(got.height) + ", the golden is " + std::to_string(want.width) +
                                    "x" + std::to_string(want.height));
      else if (got.pixels != want.pixels)
        result.mismatches.push_back(golden + ": " + std::to_string(compare(got.pixels, want.pixels).differing) +
                                    " samples differ from the golden");
    };
    check(name + ".ppm", set.golden(name));
    if (set.has_oriented()) check(name + ".oriented.ppm", set.oriented_golden(name));
  }
  return result;
}

/// The stale-golden test case body: CHECKs that the live Pillow reproduces
/// every golden of `folder`, or WARNs why that part did not run (the parity
/// checks against the committed goldens run regardless).
inline void check_goldens_against_live_pillow(const std::string& folder) {
  const golden_set set(folder);
  const live_pillow_result r = live_pillow_mismatches(set);
  if (!r.ran) {
    WARN("live Pillow check of " << folder << "/ not run (the committed goldens are used all the same): "
                                 << r.why_not);
    return;
  }
  INFO("regenerate with the script named in " << (set.path() / "manifest.txt").string());
  for (const auto& m : r.mismatches) FAIL_CHECK(m);
  CHECK(r.mismatches.empty());
}

}  // namespace ringfeed::test::image_data
