#include "commands.hpp"

namespace ringfeed::cli {

void register_probe(CLI::App& app) {
  app.add_subcommand("probe", "describe the storage under a path (not yet written)");
}

}  // namespace ringfeed::cli
