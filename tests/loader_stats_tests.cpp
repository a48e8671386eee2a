// ringfeed::loader_stats::json() (loader/stats.hpp): the JSON every front
// end reports (Python's stats(), rf_loader_stats_json, `bench --json`).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <ringfeed/loader/stats.hpp>

using nlohmann::json;

TEST_CASE("stats JSON: gpu_decode says where images were decoded, by which backend", "[loader][stats][decode]") {
  ringfeed::loader_stats s;
  s.reasons = {{"decode", "cpu: exact mode"}};
  s.gpu_decode.where = "gpu";
  s.gpu_decode.reason = "asked";
  s.gpu_decode.decoder = "nvJPEG 13.0 (/usr/local/cuda/lib64/libnvjpeg.so.13)";
  s.gpu_decode.hardware_engines = 7;
  s.gpu_decode.hardware = 900;
  s.gpu_decode.hybrid = 60;
  s.gpu_decode.cpu = 40;
  s.gpu_decode.gpu_ns = 1'500'000'000;
  s.gpu_decode.cpu_ns = 250'000'000;
  s.gpu_decode.fallbacks = 3;
  s.gpu_decode.slot_bytes = 123456;
  s.gpu_decode.cpu_reasons = {{"progressive", 30}, {"not a JPEG", 10}};
  s.gpu_decode.split_batches = {{"nvjpegDecodeBatchedEx: NVJPEG_STATUS_BAD_JPEG", 2}};

  const json j = json::parse(s.json());
  CHECK(j.at("decode_reason") == "cpu: exact mode");
  const json& g = j.at("gpu_decode");
  CHECK(g.at("where") == "gpu");
  CHECK(g.at("reason") == "asked");
  CHECK(g.at("decoder") == "nvJPEG 13.0 (/usr/local/cuda/lib64/libnvjpeg.so.13)");
  CHECK(g.at("hardware_engines") == 7);
  CHECK(g.at("images") == json{{"hardware", 900}, {"hybrid", 60}, {"cpu", 40}});
  CHECK(g.at("gpu_s").get<double>() == Approx(1.5));
  CHECK(g.at("cpu_s").get<double>() == Approx(0.25));
  CHECK(g.at("fallbacks") == 3);
  CHECK(g.at("slot_bytes") == 123456);
  CHECK(g.at("cpu_reasons") == json{{"progressive", 30}, {"not a JPEG", 10}});
  CHECK(g.at("split_batches") == json{{"nvjpegDecodeBatchedEx: NVJPEG_STATUS_BAD_JPEG", 2}});
}

TEST_CASE("stats JSON: a loader that decodes on the CPU reports gpu_decode all the same", "[loader][stats][decode]") {
  // One shape whatever the loader does: scripts read stats()["gpu_decode"]
  // without checking for the key.
  const json g = json::parse(ringfeed::loader_stats{}.json()).at("gpu_decode");
  CHECK(g.at("where") == "cpu");
  CHECK(g.at("decoder") == "");
  CHECK(g.at("images") == json{{"hardware", 0}, {"hybrid", 0}, {"cpu", 0}});
  CHECK(g.at("cpu_reasons") == json::object());
}
