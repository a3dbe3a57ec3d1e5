// Parses a command line into one subcommand declared with the shared flag tables, the way
// cli/app.cc does, so flag tests go through CLI11 exactly as users do.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace tokperf::testing_cli {

// Declares flags with `declare` on a subcommand "cmd" and parses "cmd ARGS". Throws what CLI11
// throws for a malformed command line.
inline void parse_into(const std::function<void(CLI::App*)>& declare, const std::string& args) {
  CLI::App app("test");
  CLI::App* sub = app.add_subcommand("cmd");
  declare(sub);
  app.parse("cmd " + args, false);
}

}  // namespace tokperf::testing_cli
