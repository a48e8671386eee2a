#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <system_error>

#include <ringfeed/detail/atomic_file.hpp>
#include <ringfeed/detail/path_inside.hpp>

#include "commands.hpp"

namespace ringfeed::cli {

loader_request recipe_request(const recipe_options& r, bool exact, std::uint64_t seed, std::uint64_t max_pixels) {
  const auto given = [](const CLI::Option* option) { return option != nullptr && option->count() > 0; };
  loader_request request;
  request.transform = r.transform;
  if (given(r.pipeline_option) || r.transform.empty()) request.pipeline = r.pipeline;
  if (given(r.size_option) || r.transform.empty()) request.size = r.size;
  request.exact = exact;
  request.max_pixels = max_pixels;
  request.base.sampler.seed = seed;
  return request;
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
  for (const auto& key : io::s3_option_keys()) {
    if (key.secret) continue;
    std::string flag = "--s3-" + std::string(key.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string help(key.help);
    const std::string name(key.name);
    if (key.type == io::s3_option_key::kind::text)
      cmd->add_option_function<std::string>(
             flag, [&target, name](const std::string& v) { io::set_s3_option(target, name, v); }, help)
          ->group(group);
    else
      cmd->add_flag_callback(flag, [&target, name] { io::set_s3_option(target, name, "1"); }, help)->group(group);
  }
}

void check_numbers(CLI::App& app) {
  // CLI11 reads "-1" into an unsigned option as 2^64 - 1, and "nan" or
  // "1e400" into a double: neither is what anyone typed them for.
  const CLI::Validator not_negative(
      [](std::string& value) -> std::string {
        const auto first = value.find_first_not_of(" \t");
        return first != std::string::npos && value[first] == '-' ? "must not be negative: " + value : "";
      },
      "");
  const CLI::Validator finite(
      [](std::string& value) -> std::string {
        double v = 0;
        return CLI::detail::lexical_cast(value, v) && std::isfinite(v) ? "" : "not a finite number: " + value;
      },
      "");
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type.rfind("UINT", 0) == 0) o->check(not_negative);
    if (type.rfind("FLOAT", 0) == 0) o->check(finite);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_numbers(*sub);
}

CLI::Option* add_max_pixels_option(CLI::App* cmd, std::uint64_t& target) {
  return cmd
      ->add_option("--max-pixels", target,
                   "refuse images whose header declares more pixels than this, before allocating "
                   "(a decompression bomb); Pillow's limit is the default")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void refuse_output_inside(const std::filesystem::path& out, const std::string& source, const char* command) {
  std::error_code ec;
  if (!std::filesystem::is_directory(source, ec)) return;  // a URL, a manifest, a tar file
  if (detail::path_inside(out, source))
    throw std::runtime_error(std::string(command) + ": the output '" + out.string() + "' is inside the source '" +
                             source + "': what it writes would be read as part of the dataset; write elsewhere");
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
