// `ringfeed cache info DIR` and `ringfeed cache build SOURCE --cache-dir DIR
// [--pipeline P | --transform SPEC]`: the pixel cache (loader/pixel_cache.hpp)
// outside a training run. build runs one epoch of a loader with cache=pixels
// and the training run's recipe, so it fills exactly what training would
// (same keys: the recipe's deterministic head, the same pixels), resumes
// where an earlier build or run stopped (present entries are hits, checked
// and skipped), and stops cleanly on SIGINT/SIGTERM with every written entry
// usable.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ringfeed/loader/pixel_cache.hpp>
#include <ringfeed/text.hpp>

#include "commands.hpp"
#include "interrupt.hpp"

namespace ringfeed::cli {
namespace {

struct cache_options {
  std::string dir;
  std::string source;
  recipe_options recipe = recipe_with("train");
  io::s3_options s3;
  std::size_t threads = 0;
  std::string io = "auto";
  std::string on_error = "skip";
  double cache_gb = 0.0;  // 0: the loader's default (the disk's free space less max(5%, 1 GiB))
  bool json = false;
};

int run_info(const cache_options& opt) {
  const std::filesystem::path dir = std::filesystem::path(opt.dir) / "pixels";
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error("'" + escape_bytes(opt.dir) + "' holds no pixel cache (no directory '" +
                             escape_bytes(dir.string()) + "')");
  const pixel_cache_info info = pixel_cache::inspect(dir);
  const double per_image = info.entries == 0 ? 0.0 : static_cast<double>(info.bytes) / static_cast<double>(info.entries);
  if (opt.json) {
    const nlohmann::json out = {{"dir", dir.string()},        {"entries", info.entries},
                                {"bytes", info.bytes},         {"pixel_bytes", info.pixel_bytes},
                                {"bytes_per_image", per_image}, {"packs", info.packs},
                                {"torn", info.torn},           {"duplicates", info.duplicates},
                                {"runs", info.runs},           {"last_run", {{"hits", info.last_hits}, {"misses", info.last_misses}}},
                                {"hits", info.hits},           {"misses", info.misses}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("pixel cache %s\n", escape_bytes(dir.string()).c_str());
  std::printf("  %llu entries, %s (%.0f bytes per image), in %llu pack(s)\n",
              static_cast<unsigned long long>(info.entries), byte_size_text(info.bytes, byte_unit::gib).c_str(),
              per_image, static_cast<unsigned long long>(info.packs));
  const auto rate = [](std::uint64_t hits, std::uint64_t misses) {
    return hits + misses == 0 ? 0.0 : 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses);
  };
  if (info.runs == 0) {
    std::printf("  no run has read it yet\n");
  } else {
    std::printf("  hit rate %.1f%% in the last run (%llu hits, %llu misses), %.1f%% over %llu run(s)\n",
                rate(info.last_hits, info.last_misses), static_cast<unsigned long long>(info.last_hits),
                static_cast<unsigned long long>(info.last_misses), rate(info.hits, info.misses),
                static_cast<unsigned long long>(info.runs));
  }
  if (info.torn != 0)
    std::printf("  %llu torn record(s), left out at open (a writer killed mid-entry)\n",
                static_cast<unsigned long long>(info.torn));
  if (info.duplicates != 0)
    std::printf("  %llu duplicate(s): samples two writers filled; the first is used\n",
                static_cast<unsigned long long>(info.duplicates));
  return 0;
}

int run_build(const cache_options& opt) {
  const interrupt_watch interrupt;  // before any thread (interrupt.hpp)
  // Exact: the cache keeps exact mode's pixels (fast mode's reduced decode is
  // not cached), so a fast-mode run's entries are the same ones.
  loader_request request = recipe_request(opt.recipe, true, 0, image::default_max_pixels);
  request.base.source = opt.source;
  request.base.device = -1;
  request.base.batch_size = 64;
  request.shuffle = false;
  loader_options o = resolve(std::move(request)).options;
  o.threads = opt.threads;
  o.io = io::parse_backend(opt.io);
  o.on_error = parse_error_policy(opt.on_error);
  o.s3 = opt.s3;
  o.cache_dir = opt.dir;
  o.cache = cache_kind::pixels;
  if (opt.cache_gb > 0) o.cache_bytes = static_cast<std::uint64_t>(opt.cache_gb * 1e9);
  o.end = loader_end{0};
  o.sampler.rank = 0;
  o.sampler.world_size = 1;
  std::optional<loader> l;
  if (!open_unless_interrupted(l, o, interrupt, "cache build")) return interrupt.exit_status();
  if (!l->stats().pixel_cache) {  // (--on-error skip goes on without it: the line above says why)
    std::fprintf(stderr, "ringfeed cache build: no pixel cache could be made in '%s'\n", escape_bytes(opt.dir).c_str());
    return 1;
  }
  const std::size_t total = l->dataset().size();
  std::size_t done = 0;
  auto last = std::chrono::steady_clock::now();
  const bool tty = ::isatty(2) != 0;
  while (std::optional<batch> got = next_unless_interrupted(*l, interrupt)) {
    done += got->size();
    const auto now = std::chrono::steady_clock::now();
    if (now - last > std::chrono::seconds(1)) {
      last = now;
      const pixel_cache_stats p = l->stats().pixels;
      std::fprintf(stderr, "%s%zu/%zu images (%.0f%%), %llu new, %llu present%s", tty ? "\r" : "", done, total,
                   total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total),
                   static_cast<unsigned long long>(p.stores), static_cast<unsigned long long>(p.hits),
                   tty ? "" : "\n");
    }
  }
  const loader_stats st = l->stats();
  l.reset();
  if (tty) std::fprintf(stderr, "\n");
  const pixel_cache_stats& p = st.pixels;
  if (interrupt.requested()) {
    std::fprintf(stderr,
                 "ringfeed cache build: interrupted by %s after %zu of %zu images; the %llu entries written are "
                 "kept (run it again to go on)\n",
                 interrupt.signal_name().c_str(), done, total, static_cast<unsigned long long>(p.stores));
    return interrupt.exit_status();
  }
  std::printf("ringfeed cache build: %zu images, %llu added, %llu present, %llu entries (%s) in %s/pixels\n", done,
              static_cast<unsigned long long>(p.stores), static_cast<unsigned long long>(p.hits),
              static_cast<unsigned long long>(p.entries), byte_size_text(p.bytes, byte_unit::gib).c_str(),
              opt.dir.c_str());
  if (!p.filling) std::printf("  not complete: %s\n", p.reason.c_str());
  if (!st.skipped.empty()) {
    std::printf("  skipped %zu:\n", st.skipped.size());
    for (const auto& k : st.skipped) std::printf("    %s: %s\n", escape_bytes(k.path).c_str(), k.reason.c_str());
  }
  return p.filling || p.misses == p.stores ? 0 : 1;
}

}  // namespace

void register_cache(CLI::App& app) {
  CLI::App* cache = app.add_subcommand("cache", "the pixel cache: decoded pixels on local disk (--cache pixels)");
  cache->require_subcommand(1);
  auto opt = std::make_shared<cache_options>();

  CLI::App* info = cache->add_subcommand("info", "what a cache directory holds: entries, bytes, bytes per image");
  info->add_option("DIR", opt->dir, "the --cache-dir of the runs that filled it")->required();
  info->add_flag("--json", opt->json, "one JSON object");
  info->callback([opt] {
    if (const int rc = run_info(*opt); rc != 0) throw CLI::RuntimeError(rc);
  });

  CLI::App* build = cache->add_subcommand(
      "build", "fill the pixel cache ahead of training: one pass over SOURCE (resumable; Ctrl-C keeps what is written)");
  build->add_option("SOURCE", opt->source, "the dataset, as training reads it")->required();
  build->add_option("--cache-dir", opt->dir, "where the cache lives (its pixels/ folder)")->required();
  add_recipe_options(build, opt->recipe,
                     "the training run's preset: train (keeps the decode) or val (keeps Resize + CenterCrop); "
                     "--transform: its list (what is kept is the list's deterministic head)")
      ->check(CLI::IsMember({"train", "val"}));
  build->add_option("--threads", opt->threads, "decode threads (0: this rank's share of the CPUs)");
  add_io_option(build, opt->io);
  add_s3_options(build, opt->s3);
  build->add_option("--on-error", opt->on_error, "skip: report bad files and go on; fail: stop")
      ->check(accepted_by(parse_error_policy));
  build->add_option("--cache-gb", opt->cache_gb, "size bound, GB (default: the disk's free space less max(5%, 1 GiB))")
      ->check(CLI::Range(1e-9, 1e9)  /* (GB, as bytes in 64 bits) */);
  build->callback([opt] {
    if (const int rc = run_build(*opt); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace ringfeed::cli
