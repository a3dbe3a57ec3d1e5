// `tokperf report DIR`: (re)writes DIR/report.html from a saved run, prints the diagnosis, and
// optionally exports CSV for spreadsheets. DIR may also be a history id (see `tokperf history`).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "analysis/diagnosis.h"
#include "analysis/level_result.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "report/csv_export.h"
#include "report/html_report.h"
#include "report/load_report.h"
#include "report/run_loader.h"
#include "report/text_file.h"
#include "sim/deployment_cli.h"
#include "store/run_ref.h"

namespace tokperf {
namespace {

struct ReportCmdConfig {
  std::string run;  // folder or history id
  std::string out;  // "" : <dir>/report.html
  std::string slo;
  std::string store;
  double reader_tokens_per_s = 8;
  int first_chars = 20;
  bool csv = false;
  sim::DeploymentFlags deployment;  // used only when given (deployment_given)
  bool deployment_given = false;
};

// `report --slo`: the saved run judged against another SLO, on every record (read once, one at a
// time: the page's own sample would judge only some). The outcome replaces, in memory only, the
// SLO figures summary.json recorded, so the page shows them as it shows a run's own.
void judge_saved_run(SavedRun& run, const std::string& slo_text) {
  auto spec = parse_slo(slo_text);
  if (!spec) throw UsageError(spec.error());
  SampleSloJudge judge(*spec);
  for_each_request_sample(run.dir, [&](const RequestSample& r) { judge.add(r); });
  for (size_t i = 0; i < run.levels.size() && i < run.summary["levels"].size(); ++i) {
    const LevelSummary& l = run.levels[i];
    run.summary["levels"][i]["slo"] = slo_report_json(judge.finish(l.params.level, l.window_s));
  }
  run.config["slo"] = slo_text;
  run.summary["config"]["slo"] = slo_text;
}

// requests.csv from every record of the run, streamed (the page's sample holds only some), written
// beside it through a temporary file.
Status write_requests_csv(const std::string& dir, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Error{fmt::format("cannot write '{}': {}", path, std::strerror(errno))};
  std::string buf = requests_csv_header();
  bool ok = true;
  auto flush = [&] {
    ok = ok && std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
    buf.clear();
  };
  for_each_request_sample(dir, [&](const RequestSample& r) {
    append_requests_csv_row(buf, r);
    if (buf.size() >= (size_t{1} << 20)) flush();
  });
  flush();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Error{fmt::format("cannot write '{}': {}", path, std::strerror(err))};
  }
  return Status::Ok();
}

int run_report(const ReportCmdConfig& c) {
  Result<std::string> ref = resolve_run_ref(c.run, c.store);
  if (!ref) throw UsageError(ref.error());
  const std::string& dir = *ref;
  ReportOptions o;
  // The records drawn from as bench draws them (the same page it wrote; bounded memory).
  Result<SavedRun> run = load_run(dir, o.max_requests);
  if (!run) throw UsageError(run.error());
  if (!c.slo.empty()) judge_saved_run(*run, c.slo);
  o.perceived.reader_tokens_per_s = c.reader_tokens_per_s;
  o.perceived.first_chars = c.first_chars;
  if (c.deployment_given) {
    o.deployment = c.deployment;
    if (auto d = sim::resolve_deployment(c.deployment); !d) throw UsageError(d.error());
  }
  std::string out = c.out.empty() ? dir + "/report.html" : c.out;
  std::string html = render_report_html(*run, o);
  if (Status st = write_text_file(out, html); !st) {
    fmt::print(stderr, "tokperf: {}\n", st.error());
    return kExitFailure;
  }
  fmt::print("wrote {}\n", out);
  for (const std::string& w : run->warnings) fmt::print(stderr, "warning: {}\n", w);
  std::vector<Finding> findings =
      diagnose({run->levels, run->requests, &run->health, run->server}, o.thresholds);
  if (findings.empty()) fmt::print("diagnosis: no finding\n");
  for (const Finding& f : findings) {
    fmt::print("[{}] {}\n  {}\n", severity_name(f.severity), f.title, f.evidence);
    for (const std::string& r : f.remedies) fmt::print("  - {}\n", r);
  }
  if (auto roof = report_roofline(*run, o); !roof) {
    fmt::print(stderr, "warning: roofline not shown: {}\n", roof.error());
  } else if (roof->has_value()) {
    fmt::print("{}", render_roofline_text(**roof));
  }
  if (c.csv) {
    for (const char* name : {"requests.csv", "levels.csv"}) {
      std::string path = dir + "/" + name;
      const Status st = name == std::string_view("requests.csv")
                            ? write_requests_csv(dir, path)
                            : write_text_file(path, levels_csv(run->levels));
      if (!st) {
        fmt::print(stderr, "tokperf: {}\n", st.error());
        return kExitFailure;
      }
      fmt::print("wrote {}\n", path);
    }
  }
  return kExitOk;
}

}  // namespace

void register_report_command(CLI::App& app, CommandSet& cmds) {
  auto c = std::make_shared<ReportCmdConfig>();
  auto* sub = app.add_subcommand(
      "report", "Write report.html (charts, diagnosis, perceived speed) for a saved run");
  sub->add_option("run", c->run, "Run folder (with summary.json) or history id")->required();
  sub->add_option("-o,--out", c->out, "Output file (default: RUN/report.html)");
  sub->add_option("--slo", c->slo,
                  "SLO for goodput and chart lines, e.g. 'ttft:p95<=2s,tpot:p95<=100ms'");
  sub->add_option("--reader-rate", c->reader_tokens_per_s,
                  "Reading speed for perceived-speed figures, tokens/s")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--first-chars", c->first_chars, "N for 'time to first N visible characters'")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--store", c->store, "History database (for history ids)");
  sub->add_flag("--csv", c->csv, "Also write requests.csv and levels.csv into the run folder");
  sim::add_deployment_flags(*sub, c->deployment, "--model",
                            "Roofline: what was measured (default: what the run recorded)");
  cmds.add(sub, [c, sub] {
    c->deployment_given = sim::deployment_flags_given(*sub, "--model");
    return run_report(*c);
  });
}

}  // namespace tokperf
