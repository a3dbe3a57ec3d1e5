// `tokperf sim run`: the deployment flags (sim/deployment_cli.h), bench's load flags
// (cli/load_flags.h) and prompt shape, run against the simulated engine in virtual time, with
// bench's outputs (requests.jsonl, summary.json, timeseries.csv, report.html, history), or with
// --capacity the SLO capacity search of `tokperf capacity`. docs/SIMULATOR.md ("sim run").
#pragma once

namespace CLI {
class App;
}

namespace tokperf {

class CommandSet;

// Adds `run` under the `sim` subcommand.
void register_sim_run_command(CLI::App& sim_app, CommandSet& cmds);

// Adds `validate` under the `sim` subcommand (cli/sim_validate_cmd.cc): the model against the
// published measurements in data/validation/.
void register_sim_validate_command(CLI::App& sim_app, CommandSet& cmds);

// Adds `calibrate` under the `sim` subcommand (cli/sim_calibrate_cmd.cc): the host's and serving
// stack's knobs fitted to runs measured against a real server (sim/calibration.h).
void register_sim_calibrate_command(CLI::App& sim_app, CommandSet& cmds);

}  // namespace tokperf
