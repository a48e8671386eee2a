#include "commands.hpp"

namespace ringfeed::cli {

void register_gen(CLI::App& app) {
  app.add_subcommand("gen", "generate an ImageNet-like JPEG dataset (not yet written)");
}

}  // namespace ringfeed::cli
