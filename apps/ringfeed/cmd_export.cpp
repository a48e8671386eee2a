// `ringfeed export SOURCE --out DIR`: write the samples exactly as the loader
// delivers them, one PPM per sample, named `<position>_<label>.ppm` with the
// position in the epoch's delivery order. The pixels are the pipeline's
// uint8 RGB output before normalization, so they can be compared with
// torchvision's (or viewed) directly.
//
// Every file is written to a hidden temporary and renamed, so none is ever
// torn; OUT/INCOMPLETE exists from the start until the last image is
// written, so a directory left by an interrupt (SIGINT, SIGTERM: exit 130,
// 143), a failure or a kill says it is partial.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/text.hpp>

#include "commands.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

namespace fs = std::filesystem;

struct export_options {
  std::string source;
  std::string out;
  recipe_options recipe = recipe_with("val");
  bool exact = false;
  std::uint64_t max_pixels = image::default_max_pixels;
  std::size_t count = 0;  // 0: the whole epoch
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::size_t threads = 0;
  std::string io = "auto";
  io::s3_options s3;
  std::string on_error = "fail";
};

// Marks OUT while it is not a whole export: written before the first image,
// removed after the last one and skipped.tsv. Left behind by an interrupt
// (with the signal and the count), a failure, or a killed process.
constexpr const char* incomplete_marker = "INCOMPLETE";

void write_ppm(const fs::path& path, const std::uint8_t* rgb, std::int64_t height, std::int64_t width) {
  const std::string header = "P6\n" + std::to_string(width) + ' ' + std::to_string(height) + "\n255\n";
  write_file_atomically(path, {{reinterpret_cast<const unsigned char*>(header.data()), header.size()},
                               {rgb, static_cast<std::size_t>(height * width * 3)}});
}

void write_marker(const export_options& opt, const std::string& state) {
  write_text_atomically(fs::path(opt.out) / incomplete_marker,
                        "This directory does not hold a whole `ringfeed export` of " + opt.source + ":\n" + state +
                            "\nThe images present are complete files, a prefix of the delivery order.\n"
                            "A finished export removes this file.\n");
}

// --on-error skip: the files left out and why, beside the images, so one
// command audits a dataset. One line per file whatever its name holds:
// escape_bytes writes tabs, newlines, other control characters and bytes
// that are not UTF-8 as \xNN and a backslash as \\ (reversible).
void write_skipped(const fs::path& list, const std::vector<skipped_sample>& skipped) {
  std::string text = "path\treason\n";
  for (const auto& k : skipped) text += escape_bytes(k.path) + '\t' + escape_bytes(k.reason) + '\n';
  write_text_atomically(list, text);
}

// What a previous export leaves in OUT: <position>_<label>.ppm, the
// marker, skipped.tsv, and the temporary files of their atomic writes.
bool is_export_file(const std::string& name) {
  if (name == incomplete_marker || name == "skipped.tsv") return true;
  if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos) return true;
  const auto digits = [&](std::size_t at) {
    std::size_t k = at;
    while (k < name.size() && name[k] >= '0' && name[k] <= '9') ++k;
    return k;
  };
  std::size_t k = digits(0);
  if (k == 0 || k >= name.size() || name[k] != '_') return false;
  std::size_t l = k + 1 + (k + 1 < name.size() && name[k + 1] == '-');
  const std::size_t end = digits(l);
  return end > l && name.substr(end) == ".ppm";
}

// OUT made ready, once the source is open: created if missing; a previous
// export's files removed, so none of them passes for part of this one;
// anything else refused.
void prepare_output(const export_options& opt) {
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) throw std::runtime_error("cannot create '" + opt.out + "': " + ec.message());
  std::vector<fs::path> previous;
  for (fs::directory_iterator it(opt.out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_export_file(name))
      throw std::runtime_error("'" + opt.out + "' holds '" + name +
                               "', which is not from `ringfeed export`; choose an empty or new directory");
    previous.push_back(it->path());
  }
  if (ec) throw std::runtime_error("cannot list '" + opt.out + "': " + ec.message());
  for (const fs::path& p : previous)
    if (!fs::remove(p, ec) && ec) throw std::runtime_error("cannot remove '" + p.string() + "': " + ec.message());
}

int run_export(const export_options& opt) {
  // First, before the loader starts any thread: SIGINT/SIGTERM stop the
  // export between two images (interrupt.hpp).
  const interrupt_watch interrupt;
  refuse_output_inside(opt.out, opt.source, "export");

  loader_request request = recipe_request(opt.recipe, opt.exact, opt.seed, opt.max_pixels);
  request.base.source = opt.source;
  request.base.device = -1;
  request.base.batch_size = 32;
  request.shuffle.reset();  // the recipe's order: train is shuffled, val is not
  loader_options o = resolve(std::move(request)).options;
  const bool erases = !o.pipeline.output_ops().empty();  // RandomErasing on the float output
  if (erases || o.pipeline.last_frame().kind != image::frame_kind::image || o.pipeline.last_frame().channels != 3)
    throw std::runtime_error("export writes RGB images (PPM): this transform list ends with " +
                             (erases ? std::string("RandomErasing on a float tensor")
                                     : std::string(image::to_string(o.pipeline.last_frame().kind))) +
                             "; end it with an image, or with ToTensor() [+ Normalize], which export leaves out");
  o.output = output_spec::uint8_nhwc();  // export's own rule: the image before ToTensor/Normalize
  o.threads = opt.threads;
  o.io = io::parse_backend(opt.io);
  o.s3 = opt.s3;
  o.on_error = parse_error_policy(opt.on_error);
  o.resume = loader_state{opt.seed, opt.epoch, 0, 0, 1};
  o.sampler.rank = 0;
  o.sampler.world_size = 1;
  // Nothing is read past what is written: the epoch, or with --count the
  // batches holding its first samples. (With --on-error skip a skipped
  // sample's place goes to a later one, so the whole epoch may be needed.)
  o.end = loader_end{opt.epoch};
  if (opt.count != 0 && o.on_error == error_policy::fail) o.end->batches = opt.count / o.batch_size + (opt.count % o.batch_size != 0);

  std::optional<loader> l;
  if (!open_unless_interrupted(l, o, interrupt, "export")) return interrupt.exit_status();  // OUT untouched
  // Only now, the source open and the recipe valid, is a previous export replaced.
  prepare_output(opt);
  write_marker(opt, "the export is running, or it failed or was killed before the end.");
  std::size_t position = 0;
  bool stopped = false;  // by a signal, before the end
  if (l->state().epoch != opt.epoch) l->set_epoch(opt.epoch);
  // A signal ends the wait for a batch at once (a read stalled on a server).
  while (std::optional<batch> got = next_unless_interrupted(*l, interrupt)) {
    const batch& b = *got;
    const auto& v = b.images();
    const std::int64_t h = v.shape[1], w = v.shape[2];
    const auto* base = static_cast<const std::uint8_t*>(v.data);
    for (std::size_t k = 0; k < b.size(); ++k) {
      if (opt.count != 0 && position == opt.count) break;
      if (interrupt.requested()) {
        stopped = true;
        break;
      }
      const fs::path name = fs::path(opt.out) / (std::to_string(position) + "_" + std::to_string(b.labels()[k]) + ".ppm");
      write_ppm(name, base + k * static_cast<std::size_t>(h * w * 3), h, w);
      ++position;
    }
    if (stopped || (opt.count != 0 && position == opt.count)) break;
  }
  stopped = stopped || interrupt.requested();
  const loader_stats st = l->stats();
  l.reset();  // stops the pipeline and joins its threads

  const fs::path skipped_list = fs::path(opt.out) / "skipped.tsv";
  if (o.on_error == error_policy::skip) write_skipped(skipped_list, st.skipped);
  if (stopped) {
    write_marker(opt, "interrupted by " + interrupt.signal_name() + " after " + std::to_string(position) +
                          " samples.");
    std::fprintf(stderr, "ringfeed export: interrupted by %s after %zu samples; %s is incomplete (see %s)\n",
                 interrupt.signal_name().c_str(), position, opt.out.c_str(),
                 (fs::path(opt.out) / incomplete_marker).c_str());
    return interrupt.exit_status();
  }
  std::error_code ec;
  fs::remove(fs::path(opt.out) / incomplete_marker, ec);
  if (ec) throw std::runtime_error("cannot remove '" + opt.out + "/" + incomplete_marker + "': " + ec.message());
  std::printf("export: %zu samples of epoch %llu (%s, %s mode, seed %llu, read with %s) -> %s\n", position,
              static_cast<unsigned long long>(opt.epoch), (opt.recipe.transform.empty() ? opt.recipe.pipeline : opt.recipe.transform).c_str(), opt.exact ? "exact" : "fast",
              static_cast<unsigned long long>(opt.seed), st.backend.c_str(), opt.out.c_str());
  if (o.on_error == error_policy::skip)
    std::printf("export: %zu file(s) skipped, listed with the reasons in %s\n", st.skipped.size(),
                skipped_list.c_str());
  return 0;
}

}  // namespace

void register_export(CLI::App& app) {
  auto opt = std::make_shared<export_options>();
  CLI::App* cmd = app.add_subcommand("export", "write samples as the loader delivers them, as <position>_<label>.ppm");
  cmd->add_option("SOURCE", opt->source, "dataset: directory, manifest, tar shards, nfs://server/export/path, s3://bucket/prefix/, https:// shards or lmdb:///path")->required();
  cmd->add_option("--out", opt->out, "directory to write into")->required();
  add_recipe_options(cmd, opt->recipe, "train (shuffled, augmented) or val (ImageFolder order)")
      ->check(CLI::IsMember({"train", "val"}));
  cmd->add_flag("--exact", opt->exact, "decode full size and resample like Pillow (default: fast mode)");
  add_max_pixels_option(cmd, opt->max_pixels);
  cmd->add_option("--count", opt->count, "samples to write (0: the whole epoch)");
  cmd->add_option("--seed", opt->seed, "sampler and augmentation seed");
  cmd->add_option("--epoch", opt->epoch, "which epoch's order and augmentation");
  cmd->add_option("--threads", opt->threads, "decode threads (0 = one per core)");
  add_io_option(cmd, opt->io);
  add_s3_options(cmd, opt->s3);
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
