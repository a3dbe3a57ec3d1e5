#include "cli/output_flags.h"

#include <ctime>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

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

}  // namespace

void add_output_flags(CLI::App* sub, OutputFlags& f) {
  const char* g = "Output";
  sub->add_option("--out", f.out_dir,
                  "Folder for summary.json, requests.jsonl, timeseries.csv and report.html "
                  "(default: tokperf-results/<time>-<run id>)")
      ->group(g);
  sub->add_flag("--no-save", f.no_save, "Write no files (console only)")->group(g);
  sub->add_option("--store", f.store, "History store (SQLite; default under ~/.local/share)")
      ->group(g);
  sub->add_flag("--no-history", f.no_history, "Do not record this run in the history store")
      ->group(g);
  sub->add_flag("--json", f.json, "Print summary.json to stdout (the table goes to stderr)")
      ->group(g);
}

void apply_output_flags(const OutputFlags& f, BenchConfig& c) {
  c.out_dir = f.no_save ? std::string() : f.out_dir;
  if (!f.no_save && c.out_dir.empty()) {
    c.out_dir = fmt::format("tokperf-results/{}-{}", local_timestamp(), c.run_id);
  }
  c.record_history = !f.no_history;
  c.history_store = f.store;
}

}  // namespace tokperf
