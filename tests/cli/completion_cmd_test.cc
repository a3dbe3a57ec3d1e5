#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tokperf {
namespace {

struct Expected {
  std::string path;  // "" top level, "sim serve" …
  std::string word;  // a subcommand name or a flag
};

// Every subcommand and every flag of the real command tree (the one run_cli parses).
void walk(const CLI::App& app, const std::string& path, std::vector<Expected>& out) {
  for (const CLI::Option* opt : app.get_options({})) {
    for (const std::string& l : opt->get_lnames()) out.push_back({path, "--" + l});
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    out.push_back({path, sub->get_name()});
    walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::string run_bash(const std::string& script) {
  std::string out;
  FILE* p = popen(("bash -c '" + script + "' 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(Completion, BashOffersEverySubcommandAndFlagWhereTheCliAcceptsIt) {
  CLI::App app("tokperf", "tokperf");
  app.set_version_flag("--version", "tokperf test");
  CommandSet cmds;
  register_all_commands(app, cmds);
  std::vector<Expected> expected;
  walk(app, "", expected);
  ASSERT_GT(expected.size(), 50u) << "the command tree looks empty";

  const std::string dir = ::testing::TempDir() + std::to_string(::getpid()) + "-";
  const std::string script_path = dir + "tokperf-completion.bash";
  const std::string list_path = dir + "tokperf-completion-expected.txt";
  std::ofstream(script_path) << bash_completion_script(app);
  {
    std::ofstream list(list_path);
    for (const auto& e : expected) list << e.path << "|" << e.word << "\n";
  }
  // For each (command path, word): type the path and the word's first characters, ask the
  // completion function, and report the word if it is not among the candidates.
  const std::string check =
      "source " + script_path +
      "; n=0; "
      "while IFS=\"|\" read -r path word; do n=$((n+1)); "
      "  COMP_WORDS=(tokperf $path \"${word:0:3}\"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); "
      "  COMPREPLY=(); _tokperf; found=0; "
      "  for c in \"${COMPREPLY[@]}\"; do [[ $c == \"$word\" ]] && found=1; done; "
      "  [[ $found == 1 ]] || echo \"missing: [$path] $word\"; "
      "done < " +
      list_path + "; echo checked $n";
  std::string out = run_bash(check);
  EXPECT_EQ(out, "checked " + std::to_string(expected.size()) + "\n") << out;

  // And nothing from elsewhere: bench's flags are not offered at the top level or under sim.
  std::string top = run_bash("source " + script_path +
                             "; COMP_WORDS=(tokperf --ur); COMP_CWORD=1; _tokperf; "
                             "echo \"${COMPREPLY[*]}\"");
  EXPECT_EQ(top, "\n") << top;
  std::remove(script_path.c_str());
  std::remove(list_path.c_str());
}

}  // namespace
}  // namespace tokperf
