// Entry point of the command-line interface: dispatches to the subcommands and turns exceptions at
// the edge into one clear message and an exit code.
#pragma once

namespace tokperf {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the run finished but failed (e.g. all requests failed)
inline constexpr int kExitUsage = 2;         // bad flags or input files
inline constexpr int kExitUnreachable = 3;   // target could not be reached before any load
inline constexpr int kExitInterrupted = 130; // Ctrl-C

int run_cli(int argc, char** argv);

}  // namespace tokperf
