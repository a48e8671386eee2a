// ringfeed — command-line front end: generate datasets, read and decode them
// as fast as the machine allows, and say where the time goes.
#include <cstdio>
#include <exception>

#include <ringfeed/config.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ringfeed " RINGFEED_VERSION_STRING
               ": coroutine I/O and image loading that keeps GPUs fed"};
  app.require_subcommand(1);
  app.set_version_flag("--version", RINGFEED_VERSION_STRING);
  ringfeed::cli::register_bench(app);
  ringfeed::cli::register_gen(app);
  ringfeed::cli::register_export(app);
  ringfeed::cli::register_probe(app);
  ringfeed::cli::register_pack(app);
  ringfeed::cli::register_cache(app);
  ringfeed::cli::check_numbers(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringfeed: %s\n", e.what());
    return 1;
  }
  return 0;
}
