// `tokperf compare A B [C...]`: side-by-side table with deltas against A, a verdict on which run
// users would feel faster and why, and a CI gate (--fail-if) whose failure exits non-zero naming
// the failed condition. Runs are folders or history ids.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>

#include "analysis/ci_gate.h"
#include "analysis/compare.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "report/compare_html.h"
#include "report/html_report.h"
#include "report/run_loader.h"
#include "report/text_file.h"
#include "store/run_ref.h"

namespace tokperf {
namespace {

struct CompareCmdConfig {
  std::vector<std::string> runs;
  std::string level;
  std::string fail_if;
  std::string store;
  std::string html;  // "" : no HTML page
  double reader_tokens_per_s = 8;
  int first_chars = 20;
};

int run_compare(const CompareCmdConfig& c) {
  std::vector<GateCondition> gate;
  if (!c.fail_if.empty()) {
    auto g = parse_gate(c.fail_if);
    if (!g) throw UsageError(g.error());
    gate = std::move(*g);
  }
  PerceivedOptions po;
  po.reader_tokens_per_s = c.reader_tokens_per_s;
  po.first_chars = c.first_chars;
  std::vector<RunFigures> figures;
  std::vector<SavedRun> runs;
  for (const std::string& ref : c.runs) {
    auto dir = resolve_run_ref(ref, c.store);
    if (!dir) throw UsageError(dir.error());
    // The page's distributions and diagnosis come from a bounded sample (as `tokperf report`'s);
    // the table, verdict and gate read every record, streamed when the sample holds only some.
    auto run = load_run(*dir, ReportOptions{}.max_requests);
    if (!run) throw UsageError(run.error());
    std::string name = std::filesystem::path(*dir).lexically_normal().filename().string();
    if (name.empty() || name == ".") name = ref;
    auto f = run->stride == 1
                 ? run_figures(name, run->levels, run->requests, c.level, po)
                 : run_figures(
                       name, run->levels,
                       [&](PerceivedAccumulator& acc) {
                         for_each_request_sample(*dir, [&](const RequestSample& r) { acc.add(r); });
                       },
                       c.level, po);
    if (!f) throw UsageError(f.error());
    if (run->stride > 1 && !c.html.empty()) {
      fmt::print(stderr,
                 "tokperf compare: {}: the page's distributions and diagnosis come from one record "
                 "in every {} of the {} ({} read) to bound memory; the table, verdict and gate "
                 "use all of them\n",
                 name, run->stride, run->request_lines, run->requests.size());
    }
    figures.push_back(std::move(*f));
    runs.push_back(std::move(*run));
  }
  fmt::print("{}\n", render_compare_table(figures, c.first_chars));
  Verdict v = perceived_verdict(figures, po);
  fmt::print("verdict: {}\n", v.explanation);
  int failed = 0;
  std::vector<std::string> failures;
  for (size_t i = 1; i < figures.size() && !gate.empty(); ++i) {
    for (const GateFailure& f : evaluate_gate(gate, figures[0], figures[i])) {
      fmt::print(stderr, "FAIL {}: {}\n", f.condition, f.detail);
      failures.push_back(fmt::format("{} ({}): {}", f.condition, figures[i].name, f.detail));
      ++failed;
    }
  }
  if (!gate.empty() && failed == 0) fmt::print("gate passed: {}\n", c.fail_if);
  if (!c.html.empty()) {
    ReportOptions o;
    o.perceived = po;
    std::string page =
        render_compare_html({runs, figures, v, gate.empty() ? "" : c.fail_if, failures}, o);
    if (Status st = write_text_file(c.html, page); !st) {
      fmt::print(stderr, "tokperf: --html: {}\n", st.error());
      return kExitFailure;
    }
    fmt::print("wrote {}\n", c.html);
  }
  return failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

void register_compare_command(CLI::App& app, CommandSet& cmds) {
  auto c = std::make_shared<CompareCmdConfig>();
  auto* sub = app.add_subcommand(
      "compare", "Compare saved runs (A is the baseline): deltas, which one feels faster, CI gate");
  sub->add_option("runs", c->runs, "Run folders or history ids: A B [C...]")
      ->required()
      ->expected(2, 64);
  sub->add_option("--level", c->level, "Level label to compare (default: each run's last level)");
  sub->add_option("--fail-if", c->fail_if,
                  "Exit 1 when a condition holds for any run against A, e.g. "
                  "'ttft.p95>+10%,tpot.p95>+10%,errors>0'");
  sub->add_option("--reader-rate", c->reader_tokens_per_s, "Reading speed, tokens/s")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--first-chars", c->first_chars, "N for 'time to first N visible characters'")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--store", c->store, "History database (for history ids)");
  sub->add_option("--html", c->html,
                  "Also write a self-contained HTML comparison (table, verdict, overlaid CDFs)");
  cmds.add(sub, [c] { return run_compare(*c); });
}

}  // namespace tokperf
