// Subcommands of the `ringfeed` CLI. Each lives in its own cmd_<name>.cpp and
// registers itself on the top-level app; main.cpp only wires them together.
#pragma once

#include <CLI/CLI.hpp>

namespace ringfeed::cli {

void register_bench(CLI::App& app);
void register_gen(CLI::App& app);
void register_export(CLI::App& app);
void register_probe(CLI::App& app);

}  // namespace ringfeed::cli
