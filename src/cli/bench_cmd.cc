// `tokperf bench`: load (closed or open loop, sweeps, traces) against an OpenAI-compatible streaming
// endpoint. Flags -> BenchConfig (validated once) -> probe the server -> build the prompt -> run ->
// report.
#include <unistd.h>

#include <ctime>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/target_flags.h"

namespace tokperf {
namespace {

std::string local_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

struct BenchFlags {
  TargetFlags target;
  LoadFlags load;
  std::string out_dir;
  bool no_save = false;
  std::string store;
  bool no_history = false;
  bool json = false;
  bool no_progress = false;
};

int run_bench(BenchFlags& flags) {
  if (flags.target.url.empty()) {
    throw UsageError("--url is required: the base URL of an OpenAI-compatible server, e.g. "
                     "--url http://127.0.0.1:8000/v1");
  }
  BenchConfig config;
  apply_target_flags(flags.target, config);
  config.load = make_load_config(flags.load);
  config.slo = make_slo(flags.load);
  config.load.progress = !flags.no_progress && !flags.json && isatty(STDERR_FILENO);
  config.out_dir = flags.no_save ? std::string() : flags.out_dir;
  if (!flags.no_save && config.out_dir.empty()) {
    config.out_dir = fmt::format("tokperf-results/{}-{}", local_timestamp(), config.run_id);
  }
  config.record_history = !flags.no_history;
  config.history_store = flags.store;
  std::vector<std::string> notes;
  auto ready = prepare_target(config, notes);
  if (!ready) {
    fmt::print(stderr, "tokperf: {}\n", ready.error());
    return kExitUnreachable;
  }
  return run_bench_load(config, notes, flags.json);
}

}  // namespace

void register_bench_command(CLI::App& app, CommandSet& cmds) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure TTFT, TPOT, ITL and E2E of a streaming endpoint under load");
  add_target_flags(sub, flags->target);
  add_load_flags(sub, flags->load);
  auto* out = "Output";
  sub->add_option("--out", flags->out_dir,
                  "Folder for summary.json, requests.jsonl, timeseries.csv and report.html "
                  "(default: tokperf-results/<time>-<run id>)")
      ->group(out);
  sub->add_flag("--no-save", flags->no_save, "Write no files (console only)")->group(out);
  sub->add_option("--store", flags->store, "History store (SQLite; default under ~/.local/share)")
      ->group(out);
  sub->add_flag("--no-history", flags->no_history, "Do not record this run in the history store")
      ->group(out);
  sub->add_flag("--json", flags->json, "Print summary.json to stdout (the table goes to stderr)")
      ->group(out);
  sub->add_flag("--no-progress", flags->no_progress, "No live progress line")->group(out);
  cmds.add(sub, [flags] { return run_bench(*flags); });
}

}  // namespace tokperf
