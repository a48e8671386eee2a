// libFuzzer target: the transform spec grammar (transform_list::parse), the
// text every front end (CLI --transform, the C API, Python) hands to C++.
// Malformed text must be std::invalid_argument (transform_spec_error or an
// argument torchvision would reject); a list that parses must print (spec())
// as text that parses to the same list; and a list whose numbers stay small
// must run on a tiny image without crashing (errors allowed: an op that
// cannot take its input is std::invalid_argument or image_error).
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/image/transform_list.hpp>

#include "fuzz_support.hpp"

using ringfeed::fuzz::require;
namespace img = ringfeed::image;

namespace {

// Big numbers make big images (Pad(100000), RandomResizedCrop(7E4)); the
// parser handles them, the run would only measure the allocator. So no
// more than 3 digits in a row, and no exponent after a digit or a point.
bool small_numbers(std::string_view text) {
  std::size_t digits = 0;
  char before = ' ';
  for (char c : text) {
    if ((c == 'e' || c == 'E') && ((before >= '0' && before <= '9') || before == '.')) return false;
    digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
    if (digits > 3) return false;
    before = c;
  }
  return true;
}

std::vector<std::byte> tiny_ppm() {
  std::string s = "P6\n7 5\n255\n";
  for (int i = 0; i < 7 * 5 * 3; ++i) s.push_back(static_cast<char>((i * 37) & 0xFF));
  std::vector<std::byte> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  img::transform_list list;
  try {
    list = img::transform_list::parse(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string spec = list.spec();
  img::transform_list again;
  try {
    again = img::transform_list::parse(spec);
  } catch (const std::invalid_argument&) {
    require(false, "spec() of a parsed list parses");
  }
  require(again.spec() == spec, "parse(spec()) prints the same spec");
  if (!small_numbers(text) || list.empty()) return 0;
  static const std::vector<std::byte> image = tiny_ppm();
  try {
    const img::pipeline p = list.compile(img::pipeline_mode::exact);
    img::pipeline_workspace ws;
    std::vector<std::byte> out;
    img::output_shape shape;
    (void)p.apply_to(ws, image, "tiny.ppm", {1, 2, 3}, out, shape);
    require(out.size() == shape.bytes(), "the output holds its shape");
  } catch (const std::invalid_argument&) {
  } catch (const img::image_error&) {
  }
  return 0;
}
