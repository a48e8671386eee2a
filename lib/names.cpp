// The user-facing names every front end accepts (the CLI's --output; the C
// API's and Python's output), parsed in one place each so the spellings and
// the errors cannot drift apart. Each function is declared beside its type.
#include <ringfeed/output_spec.hpp>

#include "names_detail.hpp"

namespace ringfeed {
namespace {

// Each table in the documented order (README.md, ringfeed.h, --help).
constexpr detail::named<output_spec> output_names[] = {
    {"float32", output_spec::float32_nchw()},
    {"float16", output_spec::float16_nchw()},
    {"uint8", output_spec::uint8_nhwc()},
};

}  // namespace

output_spec parse_output(std::string_view name) { return detail::parse_name("output", name, output_names); }

std::string_view output_name(output_spec s) noexcept { return detail::name_of(s, output_names); }

}  // namespace ringfeed
