// `ringfeed export SOURCE --out DIR`: write the samples exactly as the loader
// delivers them, one PPM per sample, named `<position>_<label>.ppm` with the
// position in the epoch's delivery order. The pixels are the pipeline's
// uint8 RGB output before normalization, so they can be compared with
// torchvision's (or viewed) directly.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <ringfeed/loader.hpp>

#include "commands.hpp"

namespace ringfeed::cli {
namespace {

namespace fs = std::filesystem;

struct export_options {
  std::string source;
  std::string out;
  std::string pipeline = "val";
  bool exact = false;
  std::uint64_t max_pixels = image::default_max_pixels;
  std::size_t count = 0;  // 0: the whole epoch
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::size_t threads = 0;
  int size = 224;
  std::string io = "auto";
  std::string on_error = "fail";
};

void write_ppm(const fs::path& path, const std::uint8_t* rgb, std::int64_t height, std::int64_t width) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << "P6\n" << width << ' ' << height << "\n255\n";
  f.write(reinterpret_cast<const char*>(rgb), static_cast<std::streamsize>(height * width * 3));
  if (!f) throw std::runtime_error("cannot write '" + path.string() + "'");
}

int run_export(const export_options& opt) {
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) throw std::runtime_error("cannot create '" + opt.out + "': " + ec.message());

  loader_options o;
  o.source = opt.source;
  apply_preset(o, opt.pipeline, opt.size, opt.exact, opt.seed, opt.max_pixels);
  o.output = output_spec::uint8_nhwc();
  o.device = -1;
  o.threads = opt.threads;
  o.io = io::parse_backend(opt.io);
  o.batch_size = 32;
  o.on_error = parse_error_policy(opt.on_error);
  o.resume = loader_state{opt.seed, opt.epoch, 0, 0, 1};
  o.sampler.rank = 0;
  o.sampler.world_size = 1;

  loader l(o);
  std::size_t position = 0;
  for (batch& b : l.epoch(opt.epoch)) {
    const auto& v = b.images();
    const std::int64_t h = v.shape[1], w = v.shape[2];
    const auto* base = static_cast<const std::uint8_t*>(v.data);
    for (std::size_t k = 0; k < b.size(); ++k) {
      if (opt.count != 0 && position == opt.count) break;
      const fs::path name = fs::path(opt.out) / (std::to_string(position) + "_" + std::to_string(b.labels()[k]) + ".ppm");
      write_ppm(name, base + k * static_cast<std::size_t>(h * w * 3), h, w);
      ++position;
    }
    if (opt.count != 0 && position == opt.count) break;
  }
  // --on-error skip: the files left out and why, beside the images, so one
  // command audits a dataset.
  const loader_stats st = l.stats();
  if (o.on_error == error_policy::skip) {
    const fs::path list = fs::path(opt.out) / "skipped.tsv";
    std::ofstream f(list, std::ios::trunc);
    f << "path\treason\n";
    for (const auto& k : st.skipped) f << k.path << '\t' << k.reason << '\n';
    if (!f) throw std::runtime_error("cannot write '" + list.string() + "'");
  }
  std::printf("export: %zu samples of epoch %llu (%s, %s mode, seed %llu, read with %s) -> %s\n", position,
              static_cast<unsigned long long>(opt.epoch), opt.pipeline.c_str(), opt.exact ? "exact" : "fast",
              static_cast<unsigned long long>(opt.seed), st.backend.c_str(), opt.out.c_str());
  if (o.on_error == error_policy::skip)
    std::printf("export: %zu file(s) skipped, listed with the reasons in %s\n", st.skipped.size(),
                (fs::path(opt.out) / "skipped.tsv").c_str());
  return 0;
}

}  // namespace

void register_export(CLI::App& app) {
  auto opt = std::make_shared<export_options>();
  CLI::App* cmd = app.add_subcommand("export", "write samples as the loader delivers them, as <position>_<label>.ppm");
  cmd->add_option("SOURCE", opt->source, "dataset: directory, manifest, tar shards, nfs://server/export/path or lmdb:///path")->required();
  cmd->add_option("--out", opt->out, "directory to write into")->required();
  cmd->add_option("--pipeline", opt->pipeline, "train (shuffled, augmented) or val (ImageFolder order)")
      ->check(CLI::IsMember({"train", "val"}));
  cmd->add_flag("--exact", opt->exact, "decode full size and resample like Pillow (default: fast mode)");
  add_max_pixels_option(cmd, opt->max_pixels);
  cmd->add_option("--count", opt->count, "samples to write (0: the whole epoch)");
  cmd->add_option("--seed", opt->seed, "sampler and augmentation seed");
  cmd->add_option("--epoch", opt->epoch, "which epoch's order and augmentation");
  cmd->add_option("--threads", opt->threads, "decode threads (0 = one per core)");
  cmd->add_option("--size", opt->size, "output side (val resizes to size*256/224 first)")->check(CLI::PositiveNumber);
  add_io_option(cmd, opt->io);
  cmd->add_option("--on-error", opt->on_error,
                  "fail (default): stop at the first file that cannot be read or decoded, naming it; skip: leave "
                  "it out and list it with the reason in OUT/skipped.tsv")
      ->check(accepted_by(parse_error_policy));
  cmd->callback([opt] {
    const int rc = run_export(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ringfeed::cli
