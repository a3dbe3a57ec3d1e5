#include "cli/app.h"

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>

#include "cli/commands.h"

namespace tokperf {

namespace {

// Thousands of concurrent streams need thousands of sockets: lift the soft descriptor limit to the
// hard one (the default soft limit is often 1,024).
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

void register_all_commands(CLI::App& app, CommandSet& cmds) {
  register_bench_command(app, cmds);
  register_capacity_command(app, cmds);
  register_estimate_command(app, cmds);
  register_sim_command(app, cmds);
  register_report_command(app, cmds);
  register_compare_command(app, cmds);
  register_merge_command(app, cmds);
  register_history_command(app, cmds);
  register_completion_command(app, cmds);
}

int run_cli(int argc, char** argv) {
  raise_fd_limit();
  CLI::App app{"tokperf: measure and explain how fast an LLM service feels (TTFT, TPOT, ITL, E2E)",
               "tokperf"};
  app.set_version_flag("--version", std::string("tokperf ") + TOKPERF_VERSION);
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);
  CommandSet cmds;
  register_all_commands(app, cmds);
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
