// The output vocabulary (output_spec.hpp) and the user-facing names every
// front end parses through the library (names.cpp): accepted spellings,
// round trips, and errors that name the bad value and list the good ones.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/image/pipeline.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>
#include <ringfeed/output_spec.hpp>

using ringfeed::dtype;
using ringfeed::layout;
using ringfeed::output_spec;

namespace {

// The message of the std::invalid_argument `f` throws ("" if none).
template <class F>
std::string invalid_argument_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("every dtype and layout is supported, checked in one place", "[names]") {
  CHECK(output_spec{} == output_spec::uint8_nhwc());
  for (const dtype t : {dtype::uint8, dtype::float32, dtype::float16, dtype::bfloat16})
    for (const layout l : {layout::nhwc, layout::nchw}) {
      const output_spec s{t, l};
      CHECK(s.supported());
      CHECK(s.normalized() == (t != dtype::uint8));
      CHECK(s.element_size() == (t == dtype::float32 ? 4u : t == dtype::uint8 ? 1u : 2u));
    }
  CHECK(to_string(output_spec{dtype::bfloat16, layout::nhwc}) == "bfloat16 NHWC");
  // A value no enum names (a bad cast from C) is refused by every user alike.
  const output_spec bad{static_cast<dtype>(9), layout::nchw};
  CHECK_FALSE(bad.supported());
  const std::string what = invalid_argument_of([&] { bad.check(); });
  INFO(what);
  CHECK(what.find("supported are uint8, float32, float16 and bfloat16, NHWC or NCHW") != std::string::npos);
  CHECK(invalid_argument_of([&] { ringfeed::image::pipeline().set_output(bad); }) == what);
  {
    std::uint8_t px[3] = {};
    float out[3] = {};
    CHECK(invalid_argument_of([&] { ringfeed::cuda::convert_batch_cpu(px, 1, 1, 1, bad, nullptr, out); }) == what);
  }
  CHECK(to_string(output_spec::float16_nchw()) == "float16 NCHW");
  // uint8 NCHW is what PILToTensor ends with; converting RGB bytes never makes it.
  std::uint8_t px[3] = {};
  std::uint8_t out[3] = {};
  CHECK(invalid_argument_of([&] {
          ringfeed::cuda::convert_batch_cpu(px, 1, 1, 1, output_spec::uint8_nchw(), nullptr, out);
        }).find("PILToTensor") != std::string::npos);
  CHECK(invalid_argument_of([&] { ringfeed::image::pipeline().set_output(output_spec::uint8_nchw()); })
            .find("uint8 NCHW is the output of PILToTensor") != std::string::npos);
}

TEST_CASE("output names: float32, float16, bfloat16 (NCHW or _nhwc) and uint8", "[names]") {
  CHECK(ringfeed::parse_output("float32") == output_spec::float32_nchw());
  CHECK(ringfeed::parse_output("float16") == output_spec::float16_nchw());
  CHECK(ringfeed::parse_output("bfloat16") == output_spec{dtype::bfloat16, layout::nchw});
  CHECK(ringfeed::parse_output("uint8") == output_spec::uint8_nhwc());
  CHECK(ringfeed::parse_output("float32_nhwc") == output_spec{dtype::float32, layout::nhwc});
  CHECK(ringfeed::parse_output("float16_nhwc") == output_spec{dtype::float16, layout::nhwc});
  CHECK(ringfeed::parse_output("bfloat16_nhwc") == output_spec{dtype::bfloat16, layout::nhwc});
  for (const std::string_view name : ringfeed::accepted_names("output"))
    CHECK(ringfeed::output_name(ringfeed::parse_output(name)) == name);
  CHECK(ringfeed::output_name(output_spec::uint8_nchw()) == "uint8");  // PILToTensor's end
  CHECK(invalid_argument_of([] { (void)ringfeed::parse_output("int8"); }) ==
        R"(output must be "float32", "float16", "bfloat16", "uint8", "float32_nhwc", "float16_nhwc" or )"
        R"("bfloat16_nhwc", not "int8")");
  CHECK_THROWS_AS(ringfeed::parse_output("Float32"), std::invalid_argument);
  CHECK_THROWS_AS(ringfeed::parse_output("uint8_nhwc"), std::invalid_argument);
  CHECK_THROWS_AS(ringfeed::parse_output(""), std::invalid_argument);
}

TEST_CASE("io backend names: auto, uring, pread", "[names]") {
  using ringfeed::io::backend;
  CHECK(ringfeed::io::parse_backend("auto") == backend::automatic);
  CHECK(ringfeed::io::parse_backend("uring") == backend::uring);
  CHECK(ringfeed::io::parse_backend("pread") == backend::pread);
  CHECK(invalid_argument_of([] { (void)ringfeed::io::parse_backend("aio"); }) ==
        R"(io must be "auto", "uring" or "pread", not "aio")");
}

TEST_CASE("on_error names: skip, fail", "[names]") {
  CHECK(ringfeed::parse_error_policy("skip") == ringfeed::error_policy::skip);
  CHECK(ringfeed::parse_error_policy("fail") == ringfeed::error_policy::fail);
  CHECK(invalid_argument_of([] { (void)ringfeed::parse_error_policy("ignore"); }) ==
        R"(on_error must be "skip" or "fail", not "ignore")");
}

TEST_CASE("pipeline preset names: train, val", "[names]") {
  ringfeed::loader_options o;
  ringfeed::apply_preset(o, "val", 64, true);
  CHECK_FALSE(o.sampler.shuffle);
  ringfeed::apply_preset(o, "train", 64, false);
  CHECK(o.sampler.shuffle);
  CHECK(invalid_argument_of([&] { ringfeed::apply_preset(o, "none", 64, false); }) ==
        R"(pipeline must be "train" or "val", not "none")");
  CHECK(o.pipeline.decoding().max_pixels == ringfeed::image::default_max_pixels);
  ringfeed::apply_preset(o, "val", 64, false, 1000);
  CHECK(o.pipeline.decoding().max_pixels == 1000);
  CHECK(invalid_argument_of([&] { ringfeed::apply_preset(o, "val", 64, false, 0); }) ==
        "max_pixels must be at least 1");
}
