#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <system_error>

#include <ringfeed/detail/atomic_file.hpp>

#include "commands.hpp"

namespace ringfeed::cli {

void apply_preset(loader_options& o, const std::string& pipeline, int size, bool exact, std::uint64_t seed,
                  std::uint64_t max_pixels) {
  if (size < 1) throw std::runtime_error("--size must be at least 1");
  ringfeed::apply_preset(o, pipeline, size, exact, max_pixels);
  o.sampler.seed = seed;
}

void apply_recipe(loader_options& o, const recipe_options& r, bool exact, std::uint64_t seed,
                  std::uint64_t max_pixels) {
  if (r.transform.empty()) return apply_preset(o, r.pipeline, r.size, exact, seed, max_pixels);
  const bool preset_given = (r.pipeline_option != nullptr && r.pipeline_option->count() > 0) ||
                            (r.size_option != nullptr && r.size_option->count() > 0);
  if (preset_given)
    throw std::runtime_error("--transform replaces --pipeline and --size: give one or the other");
  ringfeed::apply_transform(o, r.transform, exact, max_pixels);
  o.sampler.seed = seed;
}

CLI::Option* add_recipe_options(CLI::App* cmd, recipe_options& r, const char* presets_help) {
  r.pipeline_option = cmd->add_option("--pipeline", r.pipeline, presets_help);
  r.size_option =
      cmd->add_option("--size", r.size, "output side (val resizes to size*256/224 first)")->check(CLI::PositiveNumber);
  cmd->add_option("--transform", r.transform,
                  "a torchvision transform list instead of a preset, e.g. 'Resize(232); CenterCrop(224); "
                  "ToTensor(); Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))' "
                  "(grammar: include/ringfeed/image/transform_spec.hpp)");
  return r.pipeline_option;
}

CLI::Option* add_io_option(CLI::App* cmd, std::string& target) {
  return cmd
      ->add_option("--io", target,
                   "local reads: auto (io_uring, else pread threads with one log line), uring (io_uring or fail), "
                   "pread (a pool of threads doing blocking reads)")
      ->check(accepted_by(io::parse_backend));
}

void add_s3_options(CLI::App* cmd, io::s3_options& target) {
  const char* group = "s3:// (else from AWS_* variables and ~/.aws, as the AWS tools)";
  cmd->add_option("--s3-endpoint", target.endpoint, "endpoint URL, e.g. http://127.0.0.1:9000 (MinIO)")->group(group);
  cmd->add_option("--s3-region", target.region, "region (signing)")->group(group);
  cmd->add_option("--s3-profile", target.profile, "profile of ~/.aws/credentials and ~/.aws/config")->group(group);
  cmd->add_option("--s3-ca-bundle", target.ca_bundle, "CA certificates for TLS (PEM file)")->group(group);
  cmd->add_flag("--s3-anonymous", target.anonymous, "unsigned requests (public buckets)")->group(group);
  cmd->add_flag_callback("--s3-path-style", [&target] { target.path_style = true; },
                         "path-style addressing (endpoint/bucket/key), forced")
      ->group(group);
}

CLI::Option* add_max_pixels_option(CLI::App* cmd, std::uint64_t& target) {
  return cmd
      ->add_option("--max-pixels", target,
                   "refuse images whose header declares more pixels than this, before allocating "
                   "(a decompression bomb); Pillow's limit is the default")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const unsigned char>> parts) {
  try {
    detail::atomic_file f(path);
    for (const auto& p : parts) f.write(std::as_bytes(p));
    f.commit();
  } catch (const std::system_error& e) {
    throw std::runtime_error(e.what());
  }
}

void write_text_atomically(const std::filesystem::path& path, std::string_view text) {
  write_file_atomically(path, {{reinterpret_cast<const unsigned char*>(text.data()), text.size()}});
}

progress_line::progress_line(std::function<std::string()> render, bool enabled) : m_render(std::move(render)) {
  if (!enabled) return;
  m_thread = std::thread([this] {
    std::unique_lock lock(m_mutex);
    while (!m_cv.wait_for(lock, std::chrono::milliseconds(100), [this] { return m_stop; })) {
      const std::string line = m_render();
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
      std::fflush(stderr);
    }
  });
}

void progress_line::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_one();
  if (m_thread.joinable()) {
    m_thread.join();
    std::fputs("\r\033[K", stderr);
  }
}

std::string progress_line::bar(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  constexpr int width = 30;
  const int filled = static_cast<int>(fraction * width);
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%s%s] %5.1f%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), fraction * 100.0);
  return buf;
}

}  // namespace ringfeed::cli
