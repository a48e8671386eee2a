// decode="gpu" on the simulated device with the simulated decoder
// (support/sim_jpeg_decoder): it decodes full size with libjpeg-turbo, so a
// GPU-decoding loader must give exactly the host path's bytes when the host
// path does not scale in the DCT domain — which checks the routing per
// image, the regions, the device resize and flip, the placement of every
// image in its slot, the CPU fallbacks and the gaps failed samples leave.
// Then the failures: a batch the decoder refuses, a file nobody can decode,
// a device lost in the decoder, no decoder at all, an op without a device
// kernel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "cuda/decode_stage.hpp"
#include "image/codecs/codec_detail.hpp"
#include "image_test_data.hpp"
#include "loader_fixtures.hpp"
#include "sim_device.hpp"
#include "sim_jpeg_decoder.hpp"

namespace {

namespace fs = std::filesystem;
namespace img = ringfeed::image;
using ringfeed::test::sim_device;
using ringfeed::test::sim_jpeg_decoder;
using ringfeed::test::sim_scope;
using bytes = std::vector<std::byte>;

// The photos, plus one file per route: progressive (hybrid), CMYK and
// arithmetic coding (the CPU, by the decoder's rules), an EXIF orientation
// and a PNG (the CPU, by the stage's).
fs::path mixed_folder(const fs::path& root) {
  namespace data = ringfeed::test::image_data;
  data::photo_folder(root);
  const fs::path extra = root / "class2";
  fs::create_directories(extra);
  for (const char* name : {"progressive.jpg", "cmyk.jpg", "arithmetic.jpg", "exif6.jpg", "gray.png", "gray.jpg"})
    fs::copy_file(data::dir() / "decode" / name, extra / name);
  return root;
}

img::pipeline train_pipeline() {
  // No DCT-domain scaling on the host: its fast mode is then exact mode's
  // arithmetic, what a full-size GPU decode gives.
  img::pipeline p = img::pipeline::train(24, img::pipeline_mode::fast);
  p.set_fast_min_reduction(1e9);
  return p;
}

ringfeed::loader_options options(const fs::path& root, int device) {
  ringfeed::loader_options o;
  o.source = root.string();
  o.dataset.use_cache = false;
  o.pipeline = train_pipeline();
  o.output = ringfeed::output_spec::float32_nchw();
  o.batch_size = 4;
  o.threads = 2;
  o.device = device;
  o.decode = device >= 0 ? ringfeed::decode_where::gpu : ringfeed::decode_where::cpu;
  o.sampler.seed = 11;
  o.log = [](std::string_view) {};
  return o;
}

struct epoch_out {
  std::vector<bytes> images;
  std::vector<std::vector<std::int64_t>> labels;
};

// Loaders made for `n` epochs read nothing past them (no prefetch of the
// next), so the counters count exactly those epochs' images.
ringfeed::loader_options for_epochs(ringfeed::loader_options o, int n) {
  o.end = ringfeed::loader_end{static_cast<std::uint64_t>(n - 1)};
  return o;
}

epoch_out epochs(ringfeed::loader& l, int n, sim_device* dev) {
  epoch_out out;
  for (int e = 0; e < n; ++e) {
    while (auto b = ringfeed::sync_wait(l.next())) {
      if (dev != nullptr) {
        b->wait(nullptr);
        dev->drain();  // the test reads device memory (host memory here) from the host
      }
      const auto* p = static_cast<const std::byte*>(b->images().data);
      out.images.emplace_back(p, p + b->images().bytes());
      out.labels.emplace_back(b->labels().begin(), b->labels().end());
    }
  }
  return out;
}

epoch_out host_epochs(const ringfeed::loader_options& o, int n) {
  ringfeed::loader_options h = for_epochs(o, n);
  h.device = -1;
  h.decode = ringfeed::decode_where::cpu;
  ringfeed::loader l(h);
  return epochs(l, n, nullptr);
}

void require_same(const epoch_out& got, const epoch_out& want) {
  REQUIRE(got.images.size() == want.images.size());
  for (std::size_t k = 0; k < got.images.size(); ++k) {
    INFO("batch " << k);
    REQUIRE(got.labels[k] == want.labels[k]);
    REQUIRE(got.images[k] == want.images[k]);
  }
}

// What next() threw before the epoch's end ("" when nothing did).
std::string error_of_epoch(ringfeed::loader& l) {
  try {
    while (ringfeed::sync_wait(l.next())) {
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::map<std::string, std::uint64_t> reasons_of(const ringfeed::gpu_decode_stats& g) {
  return {g.cpu_reasons.begin(), g.cpu_reasons.end()};
}

struct gpu_fixture {
  explicit gpu_fixture(const char* what) : photos(what), root(mixed_folder(photos.tmp.path() / "mixed")) {}
  ringfeed::test::photo_folder_fixture photos;
  fs::path root;
  sim_scope sim;
};

}  // namespace

TEST_CASE("decode=gpu gives the host path's bytes, each image on its route", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode routes");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 2);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  ringfeed::loader l(for_epochs(o, 2));
  REQUIRE(l.uses_device());
  require_same(epochs(l, 2, f.sim.dev.get()), want);

  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  CHECK(g.where == "gpu");
  CHECK(g.decoder == "simulated decoder");
  CHECK(g.hardware_engines == 7);
  // Per epoch: 14 baseline photos + gray.jpg on the engines; chelsea.jpg
  // (progressive, in both classes) and progressive.jpg on the hybrid backend.
  CHECK(g.hardware == 2 * 15);
  CHECK(g.hybrid == 2 * 3);
  CHECK(g.cpu == 2 * 4);
  const auto why = reasons_of(g);
  CHECK(why.at("4 components") == 2);
  CHECK(why.at("arithmetic coding") == 2);
  CHECK(why.at("EXIF orientation") == 2);
  CHECK(why.at("not a JPEG") == 2);
  CHECK(g.fallbacks == 0);
  CHECK(dec.rec->decoded == 2 * 18);
  CHECK(dec.rec->whole == 0);  // regions only: no whole-image decode was asked for
}

TEST_CASE("decode=gpu makes no synchronizing device call in a run", "[device_sim][gpu_decode]") {
  // What perf/gpu/cuda_sync_counter counts (cudaMalloc, cudaFree,
  // cudaHostAlloc, cudaFreeHost, the synchronizes) must not happen while a
  // run goes, not even in its first epoch, while the batches' regions,
  // scratch and resize tables grow to the largest crops: device buffers
  // grow in stream order, tables come from the pinned pool the stage pins
  // when it opens. (nvJPEG's pinned buffers come from such a pool too:
  // gpu_pinned_pool_tests.)
  gpu_fixture f("gpu decode syncs");
  ringfeed::loader_options o = options(f.root, 0);
  o.output = ringfeed::output_spec::uint8_nhwc();  // one copy a batch, no staging
  // One batch ahead, fixed: an adaptive depth frees and pins slabs as the
  // consumer's pace changes (slab_pool::retire_if_over: not the stage's).
  o.prefetch_batches = 1;
  const epoch_out want = host_epochs(o, 3);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  ringfeed::loader l(for_epochs(o, 3));
  using op = sim_device::op;
  const std::vector<op> counted{op::allocate, op::allocate_pinned, op::copy, op::synchronize, op::deallocate,
                                op::deallocate_pinned};
  auto counts = [&] {
    std::vector<std::size_t> c;
    for (op k : counted) c.push_back(f.sim.dev->calls(k));
    return c;
  };
  const std::vector<std::size_t> before = counts();
  std::vector<std::size_t> last;  // at the last batch (the run's end frees its slabs)
  epoch_out got;
  for (int e = 0; e < 3; ++e) {
    while (auto b = ringfeed::sync_wait(l.next())) {
      b->wait(nullptr);
      f.sim.dev->drain();
      last = counts();
      const auto* p = static_cast<const std::byte*>(b->images().data);
      got.images.emplace_back(p, p + b->images().bytes());
      got.labels.emplace_back(b->labels().begin(), b->labels().end());
    }
  }
  require_same(got, want);
  for (std::size_t k = 0; k < counted.size(); ++k) {
    INFO("sim_device op " << static_cast<int>(counted[k]));
    CHECK(last[k] - before[k] == 0);
  }
  CHECK(f.sim.dev->calls(op::allocate_async) > 0);  // the buffers did grow
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  CHECK(g.hardware + g.hybrid == 3 * 18);
}

TEST_CASE("decoders without regions: whole images, cropped on the device", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode whole");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 1);
  sim_jpeg_decoder::settings whole;
  whole.hardware_regions = false;
  whole.hybrid_regions = false;
  sim_jpeg_decoder::installed dec(*f.sim.dev, whole);
  ringfeed::loader l(for_epochs(o, 1));
  require_same(epochs(l, 1, f.sim.dev.get()), want);
  CHECK(dec.rec->whole == 18);
}

TEST_CASE("decode=gpu with uint8 output and a val recipe", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode val");
  ringfeed::loader_options o = options(f.root, 0);
  o.pipeline = img::pipeline::val(28, 24, img::pipeline_mode::fast);
  o.pipeline.set_fast_min_reduction(1e9);
  o.output = ringfeed::output_spec::uint8_nhwc();
  const epoch_out want = host_epochs(o, 1);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  ringfeed::loader l(for_epochs(o, 1));
  require_same(epochs(l, 1, f.sim.dev.get()), want);
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  for (const auto& [why, n] : g.cpu_reasons) INFO(why << ": " << n);
  CHECK(g.hardware == 15);
  CHECK(g.hybrid == 3);
}

TEST_CASE("bfloat16 and NHWC outputs: the device paths give the host path's bytes", "[device_sim][gpu_decode]") {
  // The host path writes them per sample (write_output); the upload
  // stage's kernel converts uint8 batches with the same table, after a
  // CPU decode (decode=cpu) or after the GPU decode's resize (decode=gpu).
  gpu_fixture f("gpu decode outputs");
  using ringfeed::dtype;
  using ringfeed::layout;
  for (const ringfeed::output_spec spec : {ringfeed::output_spec{dtype::bfloat16, layout::nchw},
                                           ringfeed::output_spec{dtype::float32, layout::nhwc},
                                           ringfeed::output_spec{dtype::float16, layout::nhwc},
                                           ringfeed::output_spec{dtype::bfloat16, layout::nhwc}}) {
    INFO(ringfeed::to_string(spec));
    ringfeed::loader_options o = options(f.root, 0);
    o.output = spec;
    const epoch_out want = host_epochs(o, 1);
    for (const auto where : {ringfeed::decode_where::cpu, ringfeed::decode_where::gpu}) {
      INFO("decode=" << ringfeed::to_string(where));
      o.decode = where;
      sim_jpeg_decoder::installed dec(*f.sim.dev);
      ringfeed::loader l(for_epochs(o, 1));
      REQUIRE(l.converts_on_device());
      const ringfeed::tensor_view v = l.batch_layout();
      CHECK(v.dtype == spec.dtype);
      CHECK(v.layout == spec.layout);
      CHECK(v.shape[spec.layout == layout::nhwc ? 3 : 1] == 3);
      require_same(epochs(l, 1, f.sim.dev.get()), want);
      CHECK(dec.rec->decoded == (where == ringfeed::decode_where::gpu ? 18u : 0u));
    }
  }
}

TEST_CASE("the hybrid backend's host side runs on the decode threads, each slot's work reused only once free",
          "[device_sim][gpu_decode]") {
  // nvjpegDecodeJpegHost (the Huffman decode) in decode(), the upload
  // task's call, would serialize every hybrid image there: prepare() runs
  // it in the decode task that read the image (never inside a decode()
  // call, on whatever pool thread), decode() only queues the device side. A slot's work (its pinned buffer) is prepared again
  // only once the decode queued out of it ran (a slow device here) though
  // nothing waited for it: its slab came back after the copy behind it.
  gpu_fixture f("gpu decode host stage");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 2);
  sim_jpeg_decoder::settings slow;
  slow.decode_time = std::chrono::milliseconds(2);
  sim_jpeg_decoder::installed dec(*f.sim.dev, slow);
  ringfeed::loader l(for_epochs(o, 2));
  require_same(epochs(l, 2, f.sim.dev.get()), want);
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  CHECK(g.hybrid == 2 * 3);
  CHECK(dec.rec->prepared == 2 * 18);
  CHECK(dec.rec->host_stages == g.hybrid);
  CHECK(dec.rec->host_in_decode == 0);
  CHECK(dec.rec->reused_early == 0);
  std::lock_guard lock(dec.rec->mutex);
  CHECK(!dec.rec->host_threads.empty());
}

TEST_CASE("images the engines refuse count as hybrid, the backend that decoded them", "[device_sim][gpu_decode]") {
  // nvjpegDecodeBatchedSupported's "no" moves an image routed to the
  // engines to the hybrid backend (here: those wider than 520 pixels,
  // coffee, hubble and rocket in both classes); stats() counts it there.
  gpu_fixture f("gpu decode moved");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 1);
  sim_jpeg_decoder::settings moving;
  moving.hardware_max_width = 520;
  SECTION("both backends decode regions") {}
  SECTION("the engines decode whole images: the moved ones are planned again, as regions") {
    moving.hardware_regions = false;
  }
  sim_jpeg_decoder::installed dec(*f.sim.dev, moving);
  ringfeed::loader l(for_epochs(o, 1));
  require_same(epochs(l, 1, f.sim.dev.get()), want);
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  CHECK(dec.rec->moved == 2 * 3);
  CHECK(g.hardware == 15 - 2 * 3);
  CHECK(g.hybrid == 3 + 2 * 3);
  CHECK(g.fallbacks == 0);
  CHECK(dec.rec->whole == (moving.hardware_regions ? 0u : 15u - 2 * 3));
}

TEST_CASE("the files kept for the decoder stay within memory_budget; the rest decode on the CPU",
          "[device_sim][gpu_decode]") {
  // Two slabs of 4 uint8 samples (a page each) and 96 KiB for the files:
  // the slots' file buffers (26 to 105 KB photos) cannot all be kept.
  gpu_fixture f("gpu decode file budget");
  ringfeed::loader_options o = options(f.root, 0);
  o.prefetch_batches = 1;
  o.memory_budget = 2 * 4096 + 96 * 1024;
  const epoch_out want = host_epochs(o, 2);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  ringfeed::loader l(for_epochs(o, 2));
  require_same(epochs(l, 2, f.sim.dev.get()), want);
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  const auto why = reasons_of(g);
  REQUIRE(why.count("files over their share of memory_budget") == 1);
  // The slots' resize plans share it: which image finds it full depends on
  // the threads' order.
  const auto plans = why.find("resize plans over the files' share of memory_budget");
  const std::uint64_t over =
      why.at("files over their share of memory_budget") + (plans == why.end() ? 0 : plans->second);
  CHECK(over > 0);
  CHECK(g.slot_bytes <= 96 * 1024);
  CHECK(g.hardware + g.hybrid > 0);  // the files that fit still decode on the GPU
  CHECK(g.hardware + g.hybrid + over == 2 * 18);
  CHECK(g.cpu == 2 * 4 + over);
  CHECK(dec.rec->decoded == g.hardware + g.hybrid);
}

TEST_CASE("the slots' resize plans count in memory_budget with the files", "[device_sim][gpu_decode]") {
  // A few KiB per slot (the resize's coefficients, planned on the decode
  // thread): counted with the files kept for the decoder (stats()'
  // slot_bytes), and within their share.
  sim_scope sim;
  namespace data = ringfeed::test::image_data;
  namespace cuda = ringfeed::cuda;
  const bytes file = ringfeed::test::read_file(data::dir_of_photos() / "coffee.jpg");
  img::decoder d;
  cuda::gpu_sample g;
  g.info = d.read_info(file, "coffee.jpg");
  g.plan = train_pipeline().plan(g.info.oriented_size(), img::sample_key{11, 0, 3});
  auto rec = std::make_shared<sim_jpeg_decoder::record>();
  auto stage_with = [&](std::size_t share) {
    return cuda::decode_stage(sim.dev, 0, std::make_unique<sim_jpeg_decoder>(*sim.dev, sim_jpeg_decoder::settings{}, rec),
                              24 * 24 * 3, share);
  };
  SECTION("room for both") {
    cuda::decode_stage stage = stage_with(1 << 20);
    g.backend = stage.route(g.info, g.plan).backend;
    REQUIRE(g.backend == cuda::jpeg_backend::hardware);
    REQUIRE(stage.keep_file(g, file));
    REQUIRE(stage.plan_resize(g));
    CHECK(g.resize.bytes.capacity() > 0);
    CHECK(stage.counters().slot_bytes == g.encoded.capacity() + g.resize.bytes.capacity());
  }
  SECTION("room for the file only: the CPU decodes it, saying why") {
    cuda::decode_stage stage = stage_with(file.size());
    g.backend = stage.route(g.info, g.plan).backend;
    REQUIRE(stage.keep_file(g, file));
    CHECK(!stage.plan_resize(g));
    CHECK(g.backend == cuda::jpeg_backend::cpu);
    const cuda::decode_counters c = stage.counters();
    CHECK(c.slot_bytes == g.encoded.capacity());
    REQUIRE(c.cpu_reasons.size() == 1);
    CHECK(c.cpu_reasons[0].first == "resize plans over the files' share of memory_budget");
  }
}

TEST_CASE("a batch the decoder refuses is retried image by image, the rest on the CPU", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode refusal");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 1);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  const std::size_t poisoned = fs::file_size(f.root / "class0" / "chelsea.jpg");
  dec.rec->poisoned_sizes.insert(poisoned);
  ringfeed::loader l(for_epochs(o, 1));
  require_same(epochs(l, 1, f.sim.dev.get()), want);
  const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
  CHECK(g.fallbacks == 2);  // chelsea.jpg in both classes
  CHECK(g.hardware == 15);
  CHECK(g.hybrid == 1);
  // Why, in stats(), and the decoder was told the file's name.
  CHECK(reasons_of(g).at("the GPU decoder refused it: simulated nvjpegDecodeBatchedEx: NVJPEG_STATUS_BAD_JPEG") == 2);
  {
    std::lock_guard lock(dec.rec->mutex);
    for (const std::string& name : dec.rec->refused_names) INFO(name);
    CHECK(std::any_of(dec.rec->refused_names.begin(), dec.rec->refused_names.end(),
                      [](const std::string& n) { return n.ends_with("chelsea.jpg"); }));
  }
  // Each batch holding it: refused whole, then refused alone.
  CHECK(dec.rec->refused >= 2 * 2);
  const auto split = std::map<std::string, std::uint64_t>(g.split_batches.begin(), g.split_batches.end());
  CHECK(split.at("simulated nvjpegDecodeBatchedEx: NVJPEG_STATUS_BAD_JPEG") >= 1);
  CHECK(dec.rec->reused_early == 0);
}

TEST_CASE("the CPU decode of an image the GPU refused reads its header no more", "[device_sim][gpu_decode]") {
  // gpu_route read each JPEG's header to route it; the upload thread's CPU
  // fallback (the GPU decoder refused it) decodes with that header, without
  // reading it again (libjpeg-turbo's own read inside the decode aside).
  gpu_fixture f("gpu decode fallback header");
  const ringfeed::loader_options o = options(f.root, 0);
  const epoch_out want = host_epochs(o, 1);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  dec.rec->poisoned_sizes.insert(fs::file_size(f.root / "class0" / "chelsea.jpg"));
  const std::uint64_t before = img::detail::jpeg_headers_read();  // (the loader starts reading when made)
  ringfeed::loader l(for_epochs(o, 1));
  require_same(epochs(l, 1, f.sim.dev.get()), want);
  CHECK(l.stats().gpu_decode.fallbacks == 2);
  // One read per JPEG of the epoch (all but gray.png), by the router.
  CHECK(img::detail::jpeg_headers_read() - before == 21);
}

TEST_CASE("a JPEG neither decoder can read is skipped or fails the batch, by name", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode corrupt");
  namespace data = ringfeed::test::image_data;
  const fs::path bad = f.root / "class2" / "corrupt.jpg";
  fs::copy_file(data::dir() / "bad" / "corrupt.jpg", bad);
  ringfeed::loader_options o = options(f.root, 0);
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  dec.rec->poisoned_sizes.insert(fs::file_size(bad));
  SECTION("on_error=skip: the other images, as the host path gives them") {
    o.on_error = ringfeed::error_policy::skip;
    const epoch_out want = host_epochs(o, 1);
    ringfeed::loader l(for_epochs(o, 1));
    require_same(epochs(l, 1, f.sim.dev.get()), want);
    const ringfeed::loader_stats s = l.stats();
    REQUIRE(s.skipped.size() == 1);
    CHECK(s.skipped[0].path.find("corrupt.jpg") != std::string::npos);
    CHECK(s.gpu_decode.fallbacks == 1);  // its header parsed: the GPU refused it, then the CPU did
  }
  SECTION("on_error=fail: next() names the file") {
    ringfeed::loader l(o);
    CHECK(error_of_epoch(l).find("corrupt.jpg") != std::string::npos);
  }
}

TEST_CASE("a device lost in the decoder ends the run with the device's error", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode lost");
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  ringfeed::loader l(options(f.root, 0));
  REQUIRE(ringfeed::sync_wait(l.next()));
  {
    std::lock_guard lock(dec.rec->mutex);
    dec.rec->lose_device = true;
  }
  CHECK(error_of_epoch(l).find("device is lost") != std::string::npos);
}

TEST_CASE("closing a GPU-decoding loader mid-epoch waits for its work and frees it", "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode close");
  sim_jpeg_decoder::installed dec(*f.sim.dev);
  {
    ringfeed::loader l(options(f.root, 0));
    REQUIRE(ringfeed::sync_wait(l.next()));
  }
  f.sim.dev->drain();
  CHECK(f.sim.dev->live_allocations() == 0);
}

TEST_CASE("decode=gpu decodes on the CPU, saying why, without a decoder or a device kernel",
          "[device_sim][gpu_decode]") {
  gpu_fixture f("gpu decode fallback");
  ringfeed::loader_options o = options(f.root, 0);
  SECTION("no decoder") {
    const epoch_out want = host_epochs(o, 1);
    ringfeed::loader l(for_epochs(o, 1));
    require_same(epochs(l, 1, f.sim.dev.get()), want);
    const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
    CHECK(g.where == "cpu");
    CHECK(!g.reason.empty());
    CHECK(g.hardware == 0);
  }
  SECTION("no pinned memory for the stage") {
    sim_jpeg_decoder::installed dec(*f.sim.dev);
    f.sim.dev->fail(sim_device::op::allocate_pinned, 2, false);  // the stage's, the loader's first pinning
    const epoch_out want = host_epochs(o, 1);
    ringfeed::loader l(for_epochs(o, 1));
    require_same(epochs(l, 1, f.sim.dev.get()), want);
    const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
    CHECK(g.where == "cpu");
    CHECK(g.reason.find("the GPU decode stage could not be set up") != std::string::npos);
    CHECK(dec.rec->calls == 0);
  }
  SECTION("an op without a device kernel") {
    sim_jpeg_decoder::installed dec(*f.sim.dev);
    o.pipeline = img::transform_list::parse("RandomResizedCrop(24); ColorJitter(brightness=0.4); ToTensor()")
                     .compile(img::pipeline_mode::fast);
    ringfeed::loader l(o);
    REQUIRE(ringfeed::sync_wait(l.next()));
    const ringfeed::gpu_decode_stats g = l.stats().gpu_decode;
    CHECK(g.where == "cpu");
    CHECK(g.reason.find("ColorJitter") != std::string::npos);
    CHECK(dec.rec->calls == 0);
  }
}
