// The user-facing names every front end accepts (the CLI's --output, --io and
// --on-error; the C API's and Python's output, io and on_error), parsed in
// one place each so the spellings and the errors cannot drift apart. Each
// function is declared beside its type.
#include <ringfeed/io/reader.hpp>
#include <ringfeed/loader.hpp>
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

constexpr detail::named<io::backend> backend_names[] = {
    {"auto", io::backend::automatic},
    {"uring", io::backend::uring},
    {"pread", io::backend::pread},
};

constexpr detail::named<error_policy> error_policy_names[] = {
    {"skip", error_policy::skip},
    {"fail", error_policy::fail},
};

}  // namespace

output_spec parse_output(std::string_view name) { return detail::parse_name("output", name, output_names); }

error_policy parse_error_policy(std::string_view name) {
  return detail::parse_name("on_error", name, error_policy_names);
}

namespace io {
backend parse_backend(std::string_view name) { return detail::parse_name("io", name, backend_names); }
}  // namespace io

}  // namespace ringfeed
