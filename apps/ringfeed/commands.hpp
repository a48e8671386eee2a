// Subcommands of the `ringfeed` CLI. Each lives in its own cmd_<name>.cpp and
// registers itself on the top-level app; main.cpp only wires them together.
// What several subcommands share lives here and in common.cpp.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <CLI/CLI.hpp>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>

namespace ringfeed::cli {

void register_bench(CLI::App& app);
void register_gen(CLI::App& app);
void register_export(CLI::App& app);
void register_probe(CLI::App& app);
void register_pack(CLI::App& app);
void register_cache(CLI::App& app);

/// What a command transforms with: a preset (--pipeline, --size) or a
/// transform list (--transform), never both.
struct recipe_options {
  std::string pipeline;
  int size = 224;
  std::string transform;
  CLI::Option* pipeline_option = nullptr;
  CLI::Option* size_option = nullptr;
};

/// A recipe_options whose default preset is `pipeline`.
inline recipe_options recipe_with(const char* pipeline) {
  recipe_options r;
  r.pipeline = pipeline;
  return r;
}

/// Adds --pipeline (help `presets_help`; returns it, for a check), --size
/// and --transform to `cmd`.
CLI::Option* add_recipe_options(CLI::App* cmd, recipe_options& r, const char* presets_help);

/// A request for ringfeed::resolve (loader/resolve.hpp) with the recipe
/// the command line gave: the preset (--pipeline, --size; the command's
/// default preset when neither they nor --transform is given) or the list,
/// and the seed. resolve() refuses both together and settles the output,
/// shuffle and memory defaults as every front end does.
loader_request recipe_request(const recipe_options& r, bool exact, std::uint64_t seed, std::uint64_t max_pixels);

/// A CLI11 check accepting exactly the names the library's `parse` accepts
/// (parse_output, io::parse_backend, parse_error_policy): its error names
/// the bad value and lists the accepted ones.
template <class Parse>
CLI::Validator accepted_by(Parse parse) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        try {
          (void)parse(value);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      "");
}

/// On every option of `app` and its subcommands: an unsigned one refuses a
/// negative value (CLI11 would wrap it), a floating-point one refuses NaN
/// and infinities. main() calls it once all are added.
void check_numbers(CLI::App& app);

/// `--io auto|uring|pread` on `cmd`, stored in `target` (default "auto":
/// io_uring, else pread threads with one log line saying why).
CLI::Option* add_io_option(CLI::App* cmd, std::string& target);

/// `--s3-<key>` on `cmd` for each key of io::s3_option_keys (endpoint,
/// region, profile, ca-bundle, anonymous, path-style), into `target`: what
/// the AWS environment would say, first in each chain. Credentials are not
/// options (a command line is visible to every user): environment, profile
/// files or the instance's chain give them.
void add_s3_options(CLI::App* cmd, io::s3_options& target);

/// `--max-pixels N` on `cmd` (default image::default_max_pixels, Pillow's).
CLI::Option* add_max_pixels_option(CLI::App* cmd, std::uint64_t& target);

/// Writes the concatenation of `parts` to `path` through a hidden temporary
/// beside it (".<name>.tmp") and rename(2): readers, and whoever looks after
/// an interrupt or a failure, see no file or the whole file, never a torn
/// one. Throws std::runtime_error naming the path and the reason (the
/// temporary is removed).
/// Throws when `out` is `source` or lies inside it and `source` is a local
/// directory: what `command` writes there would be read back as samples
/// (or as class folders) by the next run.
void refuse_output_inside(const std::filesystem::path& out, const std::string& source, const char* command);

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const unsigned char>> parts);
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

/// Redraws one status line on stderr every 100 ms from `render` (called on
/// the drawing thread), while enabled; stop() (or the destructor) ends it and
/// clears the line.
class progress_line {
 public:
  progress_line(std::function<std::string()> render, bool enabled);
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;
  ~progress_line() { stop(); }
  void stop();

  /// "[#####     ]  42.0%" for done of total.
  static std::string bar(double fraction);

 private:
  std::function<std::string()> m_render;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace ringfeed::cli
