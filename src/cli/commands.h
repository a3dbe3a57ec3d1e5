// Registration of the subcommands. Each command lives in its own file (cli/<name>_cmd.cc), declares its
// options on a plain config struct through CLI11 (so --help shows real defaults), and adds a runner
// that is called after parsing when that subcommand was chosen. Runners return an exit code
// (cli/app.h) and may throw UsageError for bad input found after parsing.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace tokperf {

// Bad input (flags, files) found after CLI11's own checks; app.cc prints it and exits kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CommandSet {
 public:
  using Runner = std::function<int()>;
  void add(CLI::App* sub, Runner run) { commands_.emplace_back(sub, std::move(run)); }
  const std::vector<std::pair<CLI::App*, Runner>>& commands() const { return commands_; }

 private:
  std::vector<std::pair<CLI::App*, Runner>> commands_;
};

void register_bench_command(CLI::App& app, CommandSet& cmds);     // cli/bench_cmd.cc
void register_capacity_command(CLI::App& app, CommandSet& cmds);  // cli/capacity_cmd.cc
void register_estimate_command(CLI::App& app, CommandSet& cmds);  // cli/estimate_cmd.cc
void register_sim_command(CLI::App& app, CommandSet& cmds);       // cli/sim_cmd.cc
void register_report_command(CLI::App& app, CommandSet& cmds);    // cli/report_cmd.cc
void register_compare_command(CLI::App& app, CommandSet& cmds);   // cli/compare_cmd.cc
void register_history_command(CLI::App& app, CommandSet& cmds);   // cli/history_cmd.cc
void register_completion_command(CLI::App& app, CommandSet& cmds);  // cli/completion_cmd.cc
void register_merge_command(CLI::App& app, CommandSet& cmds);       // cli/merge_cmd.cc

// Every command above, in --help order: what run_cli parses, exposed so tests can walk the tree.
void register_all_commands(CLI::App& app, CommandSet& cmds);

// The bash completion script for the command tree under `app` (cli/completion_cmd.cc).
std::string bash_completion_script(const CLI::App& app);

}  // namespace tokperf
