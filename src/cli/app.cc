#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>

#include "cli/commands.h"

namespace tokperf {

int run_cli(int argc, char** argv) {
  CLI::App app{"tokperf: measure and explain how fast an LLM service feels (TTFT, TPOT, ITL, E2E)",
               "tokperf"};
  app.set_version_flag("--version", std::string("tokperf ") + TOKPERF_VERSION);
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);
  CommandSet cmds;
  register_bench_command(app, cmds);
  register_estimate_command(app, cmds);
  register_sim_command(app, cmds);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  try {
    // Nested commands (sim serve) register the innermost App, so the first parsed one is the choice.
    for (auto& [sub, run] : cmds.commands()) {
      if (sub->parsed()) return run();
    }
  } catch (const UsageError& e) {
    fmt::print(stderr, "tokperf: {}\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tokperf: {}\n", e.what());
    return kExitFailure;
  }
  fmt::print(stderr, "tokperf: no command given; try 'tokperf --help'\n");
  return kExitUsage;
}

}  // namespace tokperf
