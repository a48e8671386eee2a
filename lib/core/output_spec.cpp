// ringfeed::output_spec: the supported combinations, and names for messages
// (the user-facing names are parsed in names.cpp).
#include <ringfeed/output_spec.hpp>

#include <stdexcept>

namespace ringfeed {

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
      return "float32";
    case dtype::float16:
      return "float16";
    case dtype::bfloat16:
      return "bfloat16";
    case dtype::uint8:
      break;
  }
  return "uint8";
}

std::string_view to_string(layout l) noexcept { return l == layout::nchw ? "NCHW" : "NHWC"; }

std::string to_string(output_spec s) {
  std::string out(to_string(s.dtype));
  out.append(" ").append(to_string(s.layout));
  return out;
}

void output_spec::check() const {
  if (supported()) return;
  throw std::invalid_argument("output " + to_string(*this) +
                              " is not supported; supported are uint8, float32, float16 and bfloat16, NHWC or NCHW");
}

}  // namespace ringfeed
