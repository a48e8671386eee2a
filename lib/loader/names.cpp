// The user-facing names every front end accepts (the CLI's --output, --io and
// --on-error; the C API's and Python's output, io and on_error), parsed in
// one place each so the spellings and the errors cannot drift apart. Each
// function is declared beside its type.
#include <ringfeed/io/reader.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>
#include <ringfeed/output_spec.hpp>

#include "names_detail.hpp"

namespace ringfeed {
namespace {

// Each table in the documented order (README.md, ringfeed.h, --help).
constexpr detail::named<output_spec> output_names[] = {
    {"float32", output_spec::float32_nchw()},
    {"float16", output_spec::float16_nchw()},
    {"bfloat16", {dtype::bfloat16, layout::nchw}},
    {"uint8", output_spec::uint8_nhwc()},
    {"float32_nhwc", {dtype::float32, layout::nhwc}},
    {"float16_nhwc", {dtype::float16, layout::nhwc}},
    {"bfloat16_nhwc", {dtype::bfloat16, layout::nhwc}},
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

constexpr detail::named<cache_kind> cache_kind_names[] = {
    {"bytes", cache_kind::bytes},
    {"pixels", cache_kind::pixels},
};

constexpr detail::named<decode_where> decode_names[] = {
    {"auto", decode_where::automatic},
    {"cpu", decode_where::cpu},
    {"gpu", decode_where::gpu},
};

}  // namespace

decode_where parse_decode_where(std::string_view name) { return detail::parse_name("decode", name, decode_names); }

std::string_view to_string(decode_where d) noexcept {
  for (const auto& e : decode_names)
    if (e.value == d) return e.name;
  return "auto";
}

cache_kind parse_cache_kind(std::string_view name) { return detail::parse_name("cache", name, cache_kind_names); }

output_spec parse_output(std::string_view name) { return detail::parse_name("output", name, output_names); }

std::string output_name(output_spec s) {
  if (s.dtype == dtype::uint8) return "uint8";
  for (const auto& e : output_names)
    if (e.value == s) return std::string(e.name);
  return to_string(s);  // not reached: every float spec has a name
}

error_policy parse_error_policy(std::string_view name) {
  return detail::parse_name("on_error", name, error_policy_names);
}

namespace {
template <class T, std::size_t N>
std::vector<std::string_view> names_of(const detail::named<T> (&table)[N]) {
  std::vector<std::string_view> out;
  for (const auto& e : table) out.push_back(e.name);
  return out;
}
}  // namespace

std::vector<std::string_view> accepted_names(std::string_view option) {
  if (option == "pipeline") return names_of(detail::preset_names);
  if (option == "output") return names_of(output_names);
  if (option == "io") return names_of(backend_names);
  if (option == "on_error") return names_of(error_policy_names);
  if (option == "cache") return names_of(cache_kind_names);
  if (option == "decode") return names_of(decode_names);
  throw std::invalid_argument("accepted_names: no option '" + std::string(option) +
                              "' (pipeline, output, io, on_error, cache, decode)");
}

namespace io {
backend parse_backend(std::string_view name) { return detail::parse_name("io", name, backend_names); }
}  // namespace io

}  // namespace ringfeed
