// ringfeed::resolve (loader/resolve.hpp): the rules every front end shares
// and the defaults it settles, with their reasons; and the s3 key table.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/loader/resolve.hpp>

using ringfeed::loader_request;
using ringfeed::output_spec;
using ringfeed::resolve;
using Catch::Matchers::Contains;

namespace {

loader_request request_for(std::string transform = {}) {
  loader_request r;
  r.base.source = "/data/train";
  r.base.batch_size = 4;
  r.transform = std::move(transform);
  r.node = ringfeed::node_view{};  // no limits: the reasons below are the plain ones
  return r;
}

std::string reason_of(const ringfeed::resolved& s, const std::string& option) {
  for (const auto& r : s.reasons)
    if (r.option == option) return r.reason;
  return {};
}

constexpr const char* float_list = "RandomResizedCrop(64); ToTensor(); Normalize((0.5,), (0.5,))";
constexpr const char* image_list = "Resize(72); CenterCrop(64)";

}  // namespace

TEST_CASE("resolve: the presets' defaults, each with its reason", "[resolve]") {
  const auto train = resolve(request_for());
  CHECK(train.recipe == "train");
  CHECK(train.output == "float32");
  CHECK(train.options.output == output_spec::float32_nchw());
  CHECK(train.options.sampler.shuffle);
  CHECK(reason_of(train, "shuffle") == "the train preset is shuffled");
  CHECK(reason_of(train, "pipeline") == "no transform or preset given: train");
  CHECK(train.options.reasons.size() == train.reasons.size());  // what stats() reports

  auto given = request_for();
  given.pipeline = "val";
  given.size = 32;
  given.output = "uint8";
  const auto val = resolve(given);
  CHECK(val.recipe == "val");
  CHECK(!val.options.sampler.shuffle);
  CHECK(val.options.output == output_spec::uint8_nhwc());
  CHECK(reason_of(val, "pipeline").empty());  // given: no reason to report

  given.shuffle = true;
  CHECK(resolve(given).options.sampler.shuffle);
  CHECK(reason_of(resolve(given), "shuffle").empty());
}

TEST_CASE("resolve: a transform list decides output and shuffle", "[resolve]") {
  const auto random = resolve(request_for(float_list));
  CHECK(random.recipe == "transform");
  CHECK(random.options.output == output_spec::float32_nchw());
  CHECK(random.options.sampler.shuffle);
  CHECK(reason_of(random, "shuffle") == "the transform draws random parameters");

  const auto fixed = resolve(request_for(image_list));
  CHECK(fixed.options.output == output_spec::uint8_nhwc());
  CHECK(fixed.output == "uint8");
  CHECK(!fixed.options.sampler.shuffle);

  auto half = request_for(float_list);
  half.output = "float16";
  CHECK(resolve(half).options.output == output_spec::float16_nchw());
  auto same = request_for(image_list);
  same.output = "uint8";
  CHECK(resolve(same).options.output == output_spec::uint8_nhwc());
  auto tensor = request_for("CenterCrop(8); PILToTensor()");
  tensor.output = "uint8";
  CHECK(resolve(tensor).options.output == output_spec::uint8_nchw());
}

TEST_CASE("resolve: contradictions are refused, naming the option", "[resolve]") {
  auto both = request_for(image_list);
  both.size = 64;
  CHECK_THROWS_WITH(resolve(both), Contains("give either transform or pipeline/size, not both"));
  both.size.reset();
  both.pipeline = "val";
  CHECK_THROWS_WITH(resolve(both), Contains("not both"));

  auto unfit = request_for(image_list);
  unfit.output = "float32";
  CHECK_THROWS_WITH(resolve(unfit), Contains("output \"float32\" does not fit this transform, which ends with a PIL "
                                             "image"));
  auto unfit_float = request_for(float_list);
  unfit_float.output = "uint8";
  CHECK_THROWS_WITH(resolve(unfit_float), Contains("does not fit this transform, which ends with a float tensor"));

  CHECK_THROWS_WITH(resolve(request_for("Resize(64); ToTensor()")), Contains("depends on the image"));
  auto size = request_for();
  size.size = 0;
  CHECK_THROWS_WITH(resolve(size), Contains("size must be in [1, 32768], not 0"));
  size.size = 32769;
  CHECK_THROWS_AS(resolve(size), std::invalid_argument);
  auto name = request_for();
  name.pipeline = "training";
  CHECK_THROWS_WITH(resolve(name), Contains("pipeline must be \"train\" or \"val\", not \"training\""));
  auto output = request_for();
  output.output = "int8";
  CHECK_THROWS_WITH(resolve(output), Contains("output must be"));
}

TEST_CASE("resolve: memory_budget is max(1 GiB, 4 batch slabs) unless given", "[resolve]") {
  auto small = request_for();
  small.base.device = -1;
  const auto s = resolve(small);
  CHECK(s.options.memory_budget == std::size_t{1} << 30);
  // 4 × 224·224·3 float32 = 2,408,448 bytes a slab
  CHECK(reason_of(s, "memory_budget") == "1 GiB: room for 4 batch slabs of 2408448 bytes and more");

  auto large = request_for();
  large.base.device = -1;
  large.base.batch_size = 1024;  // 616,562,688 bytes a slab
  const auto l = resolve(large);
  CHECK(l.options.memory_budget == 4 * std::size_t{616562688});
  CHECK(reason_of(l, "memory_budget") == "4 batch slabs of 588 MiB: more than 1 GiB");

  large.base.device = 0;  // a device converts uint8 RGB: a quarter of the bytes per slab
  CHECK(resolve(large).options.memory_budget == std::size_t{1} << 30);

  large.memory_budget = 12345;
  CHECK(resolve(large).options.memory_budget == 12345);
  CHECK(reason_of(resolve(large), "memory_budget").empty());
  large.memory_budget = 0;
  CHECK_THROWS_WITH(resolve(large), Contains("memory_budget must be at least 1"));
}

TEST_CASE("resolve: s3 credentials in pairs, never with anonymous", "[resolve][s3]") {
  auto r = request_for();
  ringfeed::io::set_s3_option(r.base.s3, "access_key_id", "AKID");
  CHECK_THROWS_WITH(resolve(r), Contains("give access_key_id and secret_access_key together"));
  ringfeed::io::set_s3_option(r.base.s3, "secret_access_key", "S");
  CHECK(resolve(r).options.s3.credentials->access_key_id == "AKID");
  ringfeed::io::set_s3_option(r.base.s3, "anonymous", "true");
  CHECK_THROWS_WITH(resolve(r), Contains("anonymous signs nothing"));

  auto token = request_for();
  ringfeed::io::set_s3_option(token.base.s3, "session_token", "T");
  CHECK_THROWS_WITH(resolve(token), Contains("session_token needs access_key_id"));
  auto empty = request_for();
  ringfeed::io::set_s3_option(empty.base.s3, "access_key_id", "");
  CHECK(!resolve(empty).options.s3.credentials);  // "" leaves them to the AWS chain
}

TEST_CASE("s3 keys: one table, each settable, errors name the key", "[resolve][s3]") {
  ringfeed::io::s3_options o;
  std::size_t secrets = 0;
  for (const auto& k : ringfeed::io::s3_option_keys()) {
    const bool text = k.type == ringfeed::io::s3_option_key::kind::text;
    CHECK_NOTHROW(ringfeed::io::set_s3_option(o, k.name, text ? "x" : "true"));
    secrets += k.secret ? 1 : 0;
  }
  CHECK(ringfeed::io::s3_option_keys().size() == 9);
  CHECK(secrets == 3);
  CHECK(o.endpoint == "x");
  CHECK(o.anonymous);
  CHECK(o.path_style == true);
  ringfeed::io::set_s3_option(o, "path_style", "auto");
  CHECK(!o.path_style);
  CHECK_THROWS_WITH(ringfeed::io::set_s3_option(o, "endpiont", "x"),
                    Contains("s3 has no option 'endpiont': it takes endpoint, region"));
  CHECK_THROWS_WITH(ringfeed::io::set_s3_option(o, "anonymous", "maybe"), Contains("s3 anonymous: expected"));
}

namespace {

// A request the GPU may decode: device batches (no NUMA probe), fast mode,
// the train preset, encoded files.
loader_request gpu_ready(std::string transform = {}) {
  auto r = request_for(std::move(transform));
  r.base.device = 0;
  r.numa = ringfeed::numa_placement{};
  return r;
}

// Each way the GPU cannot decode, applied to a gpu_ready() request.
struct gpu_obstacle_case {
  const char* name;
  void (*apply)(loader_request&);
  const char* auto_reason;  // in decode="auto"'s reason
  const char* refusal;      // in decode="gpu"'s error
};

const gpu_obstacle_case gpu_obstacles[] = {
    {"host batches", [](loader_request& r) { r.base.device = -1; }, "batches stay on the host (no device)",
     "give the device option (Python: device=\"cuda\")"},
    {"exact mode", [](loader_request& r) { r.exact = true; }, "exact mode",
     "not with exact=True: the GPU's IDCT and chroma upsampling are not libjpeg-turbo's"},
    {"an op without a device kernel",
     [](loader_request& r) { r.transform = "RandomResizedCrop(64); ColorJitter(0.4); ToTensor()"; },
     "ColorJitter has no device kernel",
     "decode=\"gpu\": ColorJitter has no device kernel (the GPU decode runs the crop/resize/flip head and "
     "ToTensor/Normalize); use decode=\"auto\" or \"cpu\""},
    {"in-memory pixels",
     [](loader_request& r) {
       ringfeed::pixel_array px;
       px.count = 1;
       px.height = px.width = 32;
       px.channels = 3;
       px.labels = {0};
       r.base.pixels = px;
     },
     "the images are in memory as pixels: nothing to decode",
     "given in memory as pixels, so there is nothing to decode"},
    {"the pixel cache",
     [](loader_request& r) {
       r.base.cache = ringfeed::cache_kind::pixels;
       r.base.cache_dir = "/var/cache/ringfeed";
     },
     "cache=\"pixels\" keeps pixels decoded on the CPU",
     "not with cache=\"pixels\", which keeps pixels decoded on the CPU"},
};

}  // namespace

TEST_CASE("resolve: decode=auto is gpu for device batches in fast mode, each op with a device kernel",
          "[resolve][decode]") {
  for (const char* transform : {"", float_list, "Resize(72); CenterCrop(64); RandomHorizontalFlip(); ToTensor()"}) {
    INFO(transform);
    const auto s = resolve(gpu_ready(transform));
    CHECK(s.options.decode == ringfeed::decode_where::gpu);
    CHECK_THAT(reason_of(s, "decode"), Contains("gpu: device batches, fast mode, every op has a device kernel"));
    CHECK_THAT(reason_of(s, "decode"), Contains("nvJPEG"));
  }
  // A pixel cache needs cache_dir: cache="pixels" alone keeps nothing.
  auto no_dir = gpu_ready();
  no_dir.base.cache = ringfeed::cache_kind::pixels;
  CHECK(resolve(no_dir).options.decode == ringfeed::decode_where::gpu);
}

TEST_CASE("resolve: decode=auto falls to the CPU with the reason", "[resolve][decode]") {
  for (const auto& c : gpu_obstacles) {
    INFO(c.name);
    auto r = gpu_ready();
    c.apply(r);
    const auto s = resolve(r);
    CHECK(s.options.decode == ringfeed::decode_where::cpu);
    CHECK_THAT(reason_of(s, "decode"), Catch::Matchers::StartsWith("cpu: ") && Contains(c.auto_reason));
    CHECK(s.options.reasons.back().option == "decode");  // what stats() reports as decode_reason
  }
  // The first that applies: host batches before exact mode.
  auto both = gpu_ready();
  both.base.device = -1;
  both.exact = true;
  CHECK_THAT(reason_of(resolve(both), "decode"), Contains("no device") && !Contains("exact"));
}

TEST_CASE("resolve: decode=gpu is refused where the GPU cannot decode, saying why", "[resolve][decode]") {
  for (const auto& c : gpu_obstacles) {
    INFO(c.name);
    auto r = gpu_ready();
    c.apply(r);
    r.base.decode = ringfeed::decode_where::gpu;
    CHECK_THROWS_AS(resolve(r), std::invalid_argument);
    CHECK_THROWS_WITH(resolve(r), Catch::Matchers::StartsWith("decode=\"gpu\": ") && Contains(c.refusal));
  }
  auto exact = gpu_ready();
  exact.exact = true;
  exact.base.decode = ringfeed::decode_where::gpu;
  CHECK_THROWS_WITH(resolve(exact), Contains("torchvision-identical pixels cannot hold; use exact=False or "
                                             "decode=\"cpu\""));
  auto fine = gpu_ready(float_list);
  fine.base.decode = ringfeed::decode_where::gpu;
  const auto s = resolve(fine);
  CHECK(s.options.decode == ringfeed::decode_where::gpu);
  CHECK(reason_of(s, "decode") == "asked");
}

TEST_CASE("resolve: decode=cpu is the CPU whatever else is asked", "[resolve][decode]") {
  auto r = gpu_ready();
  r.base.decode = ringfeed::decode_where::cpu;
  CHECK(resolve(r).options.decode == ringfeed::decode_where::cpu);
  CHECK(reason_of(resolve(r), "decode") == "asked");
  for (const auto& c : gpu_obstacles) {
    INFO(c.name);
    auto with = gpu_ready();
    c.apply(with);
    with.base.decode = ringfeed::decode_where::cpu;
    CHECK(resolve(with).options.decode == ringfeed::decode_where::cpu);
  }
}

TEST_CASE("accepted_names lists what the parsers take, in order", "[resolve]") {
  CHECK(ringfeed::accepted_names("pipeline") == std::vector<std::string_view>{"train", "val"});
  CHECK(ringfeed::accepted_names("output") ==
        std::vector<std::string_view>{"float32", "float16", "bfloat16", "uint8", "float32_nhwc", "float16_nhwc",
                                      "bfloat16_nhwc"});
  CHECK(ringfeed::accepted_names("io") == std::vector<std::string_view>{"auto", "uring", "pread"});
  CHECK(ringfeed::accepted_names("on_error") == std::vector<std::string_view>{"skip", "fail"});
  CHECK(ringfeed::accepted_names("decode") == std::vector<std::string_view>{"auto", "cpu", "gpu"});
  CHECK_THROWS_WITH(ringfeed::parse_decode_where("nvjpeg"),
                    Contains("not \"nvjpeg\"") && Contains("\"auto\", \"cpu\" or \"gpu\""));
  CHECK_THROWS_AS(ringfeed::accepted_names("shuffle"), std::invalid_argument);
}
