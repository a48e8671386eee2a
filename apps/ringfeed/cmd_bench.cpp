#include "commands.hpp"

namespace ringfeed::cli {

void register_bench(CLI::App& app) {
  app.add_subcommand("bench", "read a dataset as fast as possible (not yet written)");
}

}  // namespace ringfeed::cli
