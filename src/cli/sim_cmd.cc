// Placeholder until the sim command lands; replaced by its implementation.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace tokperf {

void register_sim_command(CLI::App& app, CommandSet& cmds) {
  auto* sub = app.add_subcommand("sim", "(not built yet)");
  cmds.add(sub, [] { return 1; });
}

}  // namespace tokperf
