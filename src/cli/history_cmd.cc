// `tokperf history`: lists recorded runs, newest first; `tokperf history record DIR` adds a saved
// run by hand (bench records its own runs).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <ctime>
#include <memory>

#include "cli/app.h"
#include "cli/commands.h"
#include "core/units.h"
#include "store/history_store.h"

namespace tokperf {
namespace {

struct HistoryCmdConfig {
  std::string store;
  HistoryFilter filter;
  std::string record_dir;
  std::string label;
};

std::string when(int64_t unix_us) {
  std::time_t t = static_cast<std::time_t>(unix_us / 1000000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::gmtime(&t));
  return buf;
}

int run_history(const HistoryCmdConfig& c) {
  std::string path = c.store.empty() ? default_store_path() : c.store;
  if (!c.record_dir.empty()) {
    auto id = record_run_in_history(c.record_dir, path, c.label);
    if (!id) throw UsageError(id.error());
    fmt::print("recorded {} as #{} in {}\n", c.record_dir, *id, path);
    return kExitOk;
  }
  auto store = HistoryStore::open(path);
  if (!store) throw UsageError(store.error());
  auto rows = (*store)->list(c.filter);
  if (!rows) throw UsageError(rows.error());
  if (rows->empty()) {
    fmt::print("no runs recorded in {}\n", path);
    return kExitOk;
  }
  fmt::print("{:>5}  {:<16}  {:<8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>7}  {}\n", "id",
             "recorded (UTC)", "command", "TTFT P50", "TTFT P95", "TPOT P50", "TPOT P95", "tok/s",
             "failed", "label / model / folder");
  for (const HistoryEntry& e : *rows) {
    std::string what = e.label.empty() ? "" : e.label + "  ";
    what += e.model.empty() ? "" : e.model + "  ";
    fmt::print("{:>5}  {:<16}  {:<8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>7}  {}{}\n", e.id,
               when(e.recorded_unix_us), e.command, format_ms(e.ttft_p50_ms),
               format_ms(e.ttft_p95_ms), format_ms(e.tpot_p50_ms), format_ms(e.tpot_p95_ms),
               format_rate(e.out_tok_s), fmt::format("{}/{}", e.failed, e.sent), what, e.dir);
  }
  return kExitOk;
}

}  // namespace

void register_history_command(CLI::App& app, CommandSet& cmds) {
  auto c = std::make_shared<HistoryCmdConfig>();
  auto* sub = app.add_subcommand("history", "List recorded runs (newest first)");
  sub->add_option("--store", c->store,
                  "History database (default: $XDG_DATA_HOME/tokperf/history.db)");
  sub->add_option("-n,--limit", c->filter.limit, "Most runs to list")->capture_default_str();
  sub->add_option("--command", c->filter.command, "Only runs of this command, e.g. bench");
  sub->add_option("--grep", c->filter.contains,
                  "Only runs whose label, model, URL or folder contains this");
  sub->add_option("--record", c->record_dir, "Record the saved run in this folder, then exit");
  sub->add_option("--label", c->label, "Label for --record");
  cmds.add(sub, [c] { return run_history(*c); });
}

}  // namespace tokperf
