// `ringfeed gen OUT [--images N] [--classes C] [--seed S] [--photos imagenet|large]
// [--force]`: writes an ImageNet-like ImageFolder tree of synthetic photographs,
//
//   OUT/train/<wnid>/<wnid>_<k>.JPEG          N images, classes as even as possible
//   OUT/val/<wnid>/ILSVRC2012_val_<8 digits>.JPEG  ~N/10 (at least one per class)
//   OUT/ringfeed-gen.json                     parameters and the resulting mix
//
// About 2% of the files use the other extensions real ImageNet trees hold
// (.jpeg, .JPG). --photos picks the photographs: ImageNet's mix (default) or
// large 1-4 megapixel ones (gen_image.hpp). Output is a pure function of
// (seed, images, classes, photos), recorded in the marker: each
// file depends only on its own derived seed, so the thread count and the
// order of work do not matter. Files are written under a hidden temporary
// name and renamed, so an interrupted run leaves no torn JPEGs.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <ringfeed/config.hpp>
#include <ringfeed/thread_pool.hpp>
#include <turbojpeg.h>

#include "commands.hpp"
#include "gen_image.hpp"

namespace ringfeed::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* marker_name = "ringfeed-gen.json";
constexpr const char* marker_generator = "ringfeed gen";
constexpr int marker_format = 1;

// Seed streams, so that train image 7 and val image 7 are unrelated.
enum : std::uint64_t { stream_train = 1, stream_val = 2, stream_train_ext = 3, stream_val_ext = 4 };

struct gen_options {
  std::string out;
  std::size_t images = 3000;
  std::size_t classes = 10;
  std::uint64_t seed = 0;
  photo_mix photos = photo_mix::imagenet;
  bool force = false;
};

struct planned_file {
  fs::path path;
  image_spec spec;
  std::string extension;
};

struct plan {
  std::vector<std::string> classes;
  std::vector<planned_file> files;  // train first, then val
  std::size_t train = 0;
  std::size_t val = 0;
};

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// ImageNet-style WordNet id: 'n' and eight digits; sorted order == class index.
std::string wnid(std::size_t index) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "n%08zu", index);
  return buf;
}

std::string draw_extension(std::uint64_t seed) {
  const float u = content_rng(seed).uniform();
  return u < 0.01f ? ".jpeg" : (u < 0.02f ? ".JPG" : ".JPEG");
}

plan make_plan(const gen_options& o, const fs::path& out) {
  plan p;
  p.train = o.images;
  // ~10%, but never a val class folder without an image (ImageFolder rejects those).
  p.val = std::max((o.images + 9) / 10, o.classes);
  for (std::size_t c = 0; c < o.classes; ++c) p.classes.push_back(wnid(c));
  p.files.reserve(p.train + p.val);

  // train: class c holds images/classes files, the first images%classes one more.
  std::size_t index = 0;
  for (std::size_t c = 0; c < o.classes; ++c) {
    const std::size_t count = o.images / o.classes + (c < o.images % o.classes ? 1 : 0);
    for (std::size_t k = 0; k < count; ++k, ++index) {
      planned_file f;
      f.spec = draw_image_spec(derive_seed(o.seed, stream_train, index), o.photos);
      f.spec.class_index = static_cast<int>(c);
      f.extension = draw_extension(derive_seed(o.seed, stream_train_ext, index));
      f.path = out / "train" / p.classes[c] / (p.classes[c] + "_" + std::to_string(k) + f.extension);
      p.files.push_back(std::move(f));
    }
  }
  // val: round-robin over the classes, numbered from 1 like ILSVRC2012.
  for (std::size_t v = 0; v < p.val; ++v) {
    char name[40];
    std::snprintf(name, sizeof name, "ILSVRC2012_val_%08zu", v + 1);
    planned_file f;
    f.spec = draw_image_spec(derive_seed(o.seed, stream_val, v), o.photos);
    f.spec.class_index = static_cast<int>(v % o.classes);
    f.extension = draw_extension(derive_seed(o.seed, stream_val_ext, v));
    f.path = out / "val" / p.classes[v % o.classes] / (name + f.extension);
    p.files.push_back(std::move(f));
  }
  return p;
}

std::string subsampling_name(int subsamp) {
  switch (subsamp) {
    case TJSAMP_444: return "4:4:4";
    case TJSAMP_422: return "4:2:2";
    case TJSAMP_420: return "4:2:0";
    case TJSAMP_GRAY: return "gray";
    case TJSAMP_440: return "4:4:0";
    case TJSAMP_411: return "4:1:1";
    default: return "other";
  }
}

// The marker that identifies OUT as ours, with what was asked and what came
// out. Deterministic (no timestamps) so that two runs compare byte for byte.
nlohmann::json describe(const gen_options& o, const plan& p, bool complete, const std::vector<std::uint64_t>* sizes) {
  std::map<std::string, std::size_t> subsampling, extensions, quality;
  std::size_t progressive = 0, tiny = 0, large = 0;
  double megapixels = 0, mp_min = std::numeric_limits<double>::max(), mp_max = 0;
  for (const auto& f : p.files) {
    const double mp = static_cast<double>(f.spec.width) * static_cast<double>(f.spec.height) / 1e6;
    megapixels += mp;
    mp_min = std::min(mp_min, mp);
    mp_max = std::max(mp_max, mp);
    ++subsampling[subsampling_name(f.spec.subsamp)];
    ++extensions[f.extension];
    ++quality[std::to_string(f.spec.quality)];
    progressive += f.spec.progressive ? 1 : 0;
    tiny += std::max(f.spec.width, f.spec.height) < 100 ? 1 : 0;
    large += std::max(f.spec.width, f.spec.height) >= 1024 ? 1 : 0;
  }
  nlohmann::json j = {
      {"generator", marker_generator},
      {"format", marker_format},
      {"ringfeed_version", RINGFEED_VERSION_STRING},
      {"complete", complete},
      {"seed", o.seed},
      {"photos", photo_mix_name(o.photos)},
      {"classes", o.classes},
      {"train_images", p.train},
      {"val_images", p.val},
      {"mix",
       {{"subsampling", subsampling},
        {"progressive", progressive},
        {"quality", quality},
        {"extensions", extensions},
        {"tiny_under_100px", tiny},
        {"large_1024px_plus", large},
        // Rounded to 1/1000: a short, stable text.
        {"megapixels",
         {{"min", std::round(mp_min * 1e3) / 1e3},
          {"mean", std::round(megapixels / static_cast<double>(p.files.size()) * 1e3) / 1e3},
          {"max", std::round(mp_max * 1e3) / 1e3}}}}},
  };
  if (sizes != nullptr) {
    std::uint64_t total = 0;
    for (auto s : *sizes) total += s;
    j["bytes"] = total;
  }
  return j;
}

// True when `path` is a marker written by `ringfeed gen` (any version).
bool is_gen_marker(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return false;
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("generator") && j["generator"] == marker_generator;
}

// Makes OUT ready: created if missing; a previous gen output is replaced (its
// train/ and val/ removed, so no stale files of a larger run survive); any
// other non-empty directory is refused unless --force, which writes into it
// without deleting anything.
void prepare_output(const gen_options& o, const fs::path& out) {
  std::error_code ec;
  const auto st = fs::status(out, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw std::runtime_error("cannot inspect " + quoted(out) + ": " + ec.message());
  }
  if (!fs::exists(st)) {
    fs::create_directories(out, ec);
    if (ec) throw std::runtime_error("cannot create output directory " + quoted(out) + ": " + ec.message());
    return;
  }
  if (!fs::is_directory(st))
    throw std::runtime_error("output path " + quoted(out) + " exists and is not a directory");
  const bool empty = fs::is_empty(out, ec);
  if (ec) throw std::runtime_error("cannot read output directory " + quoted(out) + ": " + ec.message());
  if (empty) return;

  if (is_gen_marker(out / marker_name)) {
    for (const char* split : {"train", "val"}) {
      fs::remove_all(out / split, ec);
      if (ec) throw std::runtime_error("cannot remove previous output " + quoted(out / split) + ": " + ec.message());
    }
    return;
  }
  if (!o.force) {
    throw std::runtime_error("output directory " + quoted(out) +
                             " is not empty and is not a previous `ringfeed gen` output (no valid " + marker_name +
                             "); choose another directory or pass --force to write into it anyway");
  }
}

void make_directories(const fs::path& out, const plan& p) {
  for (const char* split : {"train", "val"}) {
    for (const auto& c : p.classes) {
      std::error_code ec;
      const fs::path dir = out / split / c;
      fs::create_directories(dir, ec);
      if (ec) throw std::runtime_error("cannot create directory " + quoted(dir) + ": " + ec.message());
    }
  }
}

// Shared by the workers. `next` only hands out unique indices and `failed` is
// a hint to stop early, so both can be relaxed: the results (sizes[i], error)
// are read by the main thread after join(), which synchronizes with every
// worker's writes.
struct work_queue {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::string error;  // first failure, guarded by error_mutex
};

void run_worker(const plan& p, std::vector<std::uint64_t>& sizes, work_queue& q) {
  const planned_file* current = nullptr;
  try {
    jpeg_encoder encoder;
    while (!q.failed.load(std::memory_order_relaxed)) {
      const std::size_t i = q.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= p.files.size()) break;
      current = &p.files[i];
      const auto bytes = encoder.encode(current->spec);
      write_file_atomically(current->path, {bytes});
      sizes[i] = bytes.size();
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (current != nullptr && what.find(current->path.string()) == std::string::npos) {
      what = "while generating " + quoted(current->path) + ": " + what;
    }
    const std::lock_guard lock(q.error_mutex);
    if (q.error.empty()) q.error = std::move(what);
    q.failed.store(true, std::memory_order_relaxed);
  }
}

void run_gen(const gen_options& o) {
  if (o.images < o.classes) {
    throw std::invalid_argument("gen: --images (" + std::to_string(o.images) + ") must be at least --classes (" +
                                std::to_string(o.classes) + ") so that every class folder holds an image");
  }
  const auto start = std::chrono::steady_clock::now();
  const fs::path out(o.out);
  prepare_output(o, out);
  const plan p = make_plan(o, out);
  // Marked first (incomplete): an interrupted run is still recognised as ours.
  write_text_atomically(out / marker_name, describe(o, p, false, nullptr).dump(2) + "\n");
  make_directories(out, p);

  std::vector<std::uint64_t> sizes(p.files.size(), 0);
  work_queue q;
  const auto threads = static_cast<unsigned>(std::min(thread_pool::default_thread_count(0), p.files.size()));
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < threads; ++t) workers.emplace_back([&] { run_worker(p, sizes, q); });
  }  // jthreads join here
  if (q.failed.load(std::memory_order_relaxed)) {
    throw std::runtime_error(q.error + " (output in " + quoted(out) + " is incomplete)");
  }
  write_text_atomically(out / marker_name, describe(o, p, true, &sizes).dump(2) + "\n");

  std::uint64_t total = 0;
  for (auto s : sizes) total += s;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("gen: %zu %s images (%zu train + %zu val) in %zu classes, %.1f MB, %.2f s (%u thread%s) -> %s\n",
              p.files.size(), std::string(photo_mix_name(o.photos)).c_str(), p.train, p.val, o.classes,
              static_cast<double>(total) / 1e6, seconds, threads, threads == 1 ? "" : "s", out.string().c_str());
}

}  // namespace

void register_gen(CLI::App& app) {
  auto opts = std::make_shared<gen_options>();
  auto* sub = app.add_subcommand("gen", "generate an ImageNet-like JPEG dataset (ImageFolder layout)");
  sub->add_option("OUT", opts->out, "output directory (created if missing)")->required();
  sub->add_option("--images", opts->images, "number of training images")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
  sub->add_option("--classes", opts->classes, "number of classes")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
  sub->add_option("--seed", opts->seed, "seed; the same seed gives byte-identical files")->capture_default_str();
  auto photos = std::make_shared<std::string>(photo_mix_name(opts->photos));
  std::vector<std::string> names;
  for (const photo_mix m : photo_mixes) names.emplace_back(photo_mix_name(m));
  sub->add_option("--photos", *photos,
                  "imagenet: ImageNet's mix of sizes (~0.2 MP); large: 1-4 megapixel photos (mean 2.5 MP), the "
                  "size of phone, DSLR and OpenImages-class datasets")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  sub->add_flag("--force", opts->force, "write into a non-empty directory that is not a previous gen output");
  sub->callback([opts, photos] {
    for (const photo_mix m : photo_mixes) {
      if (*photos == photo_mix_name(m)) opts->photos = m;
    }
    run_gen(*opts);
  });
}

}  // namespace ringfeed::cli
