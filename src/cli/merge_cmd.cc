// `tokperf merge DIR… --out DIR`: the shards of one sharded run (bench --shard) joined into one run
// folder with the meaning of a single-process run's. Every shard's requests.jsonl is read record
// by record, in finish order across shards, and each record goes once through a RunRecorder: the
// same result-building path bench's record sink uses, so percentiles are exact over all records
// by construction. Shards that do not belong together are refused before anything is written.
// docs/DISTRIBUTED.md.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/run_recorder.h"
#include "metrics/slo.h"
#include "report/html_report.h"
#include "report/json_output.h"
#include "report/record_reader.h"
#include "report/shard_merge.h"
#include "store/history_store.h"

namespace tokperf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct MergeFlags {
  std::vector<std::string> dirs;
  std::string out;
  bool json = false;
  bool no_history = false;
  std::string store;
};

int64_t finish_key(const RequestTimeline& t) {
  int64_t end = t.end_ns != 0 ? t.end_ns : t.send_ns;
  if (!t.token_events.empty()) end = std::max(end, t.token_events.back().t_ns);
  return end;
}

// The merged run's configuration as report_run needs it: the levels, trace label and SLO every
// shard shares.
BenchConfig merged_config(const ShardFolder& ref, const MergeFlags& f) {
  BenchConfig c;
  c.load.plan.levels = shard_level_specs(ref);
  if (shard_replays_trace(ref)) c.load.trace.push_back(TraceEntry{});
  const json& slo = ref.summary["config"]["slo"];
  if (slo.is_array() && !slo.empty()) {
    std::string text;
    for (const json& o : slo) text += (text.empty() ? "" : ",") + o.get<std::string>();
    auto spec = parse_slo(text);
    if (!spec)
      throw UsageError(
          fmt::format("{}: its SLO '{}' does not parse: {}", ref.dir, text, spec.error()));
    c.slo = std::move(*spec);
  }
  c.out_dir = f.out;
  c.record_history = false;  // recorded below, once summary.json is final
  c.run_id = ref.summary["config"].value("run_id", "merged");
  return c;
}

int run_merge(const MergeFlags& f) {
  auto dirs = expand_shard_dirs(f.dirs);
  if (!dirs) throw UsageError(dirs.error());
  for (const std::string& d : *dirs) {
    std::error_code ec;
    if (fs::equivalent(d, f.out, ec)) {
      throw UsageError(
          fmt::format("--out {} is one of the shards' folders; choose a new folder", f.out));
    }
  }
  auto loaded = load_shards(*dirs);
  if (!loaded) throw UsageError(loaded.error());
  const std::vector<ShardFolder>& shards = *loaded;
  const ShardFolder& ref = shards.front();

  BenchConfig config = merged_config(ref, f);
  std::FILE* out = f.json ? stderr : stdout;
  fmt::print(out, "tokperf merge: {} shards of a run started at unix {:.3f} s against {} ({})\n",
             shards.size(), ref.summary.value("started_unix_us", int64_t{0}) / 1e6,
             ref.summary["config"]["target"].value("base_url", "?"),
             ref.summary["config"]["target"].value("model", "?"));

  // One reader per shard; the next record to go is the earliest-finishing head.
  std::vector<std::unique_ptr<RecordFileReader>> readers;
  std::vector<std::optional<RequestTimeline>> heads;
  auto advance = [&](size_t i) {
    auto r = readers[i]->next();
    if (!r) throw UsageError(fmt::format("refusing to merge: {}", r.error()));
    heads[i] = std::move(*r);
  };
  for (const ShardFolder& s : shards) {
    readers.push_back(std::make_unique<RecordFileReader>());
    Status st = readers.back()->open(s.dir + "/requests.jsonl");
    if (!st) throw UsageError(st.error());
    heads.emplace_back();
    advance(readers.size() - 1);
  }

  RunOutcome outcome;
  outcome.levels = merge_level_infos(shards);
  for (const LevelRunInfo& l : outcome.levels) {
    if (outcome.start_ns == 0 || (l.start_ns != 0 && l.start_ns < outcome.start_ns)) {
      outcome.start_ns = l.start_ns;
    }
    outcome.end_ns = std::max(outcome.end_ns, l.end_ns);
  }
  // Each record goes once through the recorder bench's record sink uses (cli/run_recorder.h):
  // its line, the per-level results, the time series, the server view; none is kept.
  RunRecorder recorder(config);
  recorder.open_output(/*flush_each_line=*/false);
  recorder.set_run_start(outcome.start_ns);
  for (;;) {
    size_t best = heads.size();
    for (size_t i = 0; i < heads.size(); ++i) {
      if (heads[i] && (best == heads.size() || finish_key(*heads[i]) < finish_key(*heads[best]))) {
        best = i;
      }
    }
    if (best == heads.size()) break;
    recorder.add(*heads[best]);
    advance(best);
  }
  if (Status st = recorder.close(); !st) {
    fmt::print(stderr, "tokperf: writing requests.jsonl failed: {}\n", st.error());
  }
  outcome.completed = true;
  bool first = true;
  std::vector<std::string> notes;
  std::set<std::string> seen_notes;
  int64_t torn = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardFolder& s = shards[i];
    torn += readers[i]->torn_lines();
    const json& self = s.shard["self"];
    outcome.self.cpu_user_s += self.value("cpu_user_s", 0.0);
    outcome.self.cpu_system_s += self.value("cpu_system_s", 0.0);
    outcome.self.peak_in_flight += self.value("peak_in_flight", int64_t{0});
    outcome.self.stream_events += self.value("stream_events", uint64_t{0});
    outcome.self.body_reads += self.value("body_reads", uint64_t{0});
    outcome.self.body_bytes += self.value("body_bytes", uint64_t{0});
    const int64_t started = s.summary.value("started_unix_us", int64_t{0});
    outcome.started_unix_us = first ? started : std::min(outcome.started_unix_us, started);
    first = false;
    for (const json& n : s.summary.value("notes", json::array())) {
      if (seen_notes.insert(n.get<std::string>()).second) notes.push_back(n.get<std::string>());
    }
  }
  outcome.self.wall_s = static_cast<double>(outcome.end_ns - outcome.start_ns) / 1e9;
  const ShardHealthView health = shard_health(shards);
  notes.push_back(fmt::format("merged from {} shards ({} records); {}", shards.size(), recorder.records(),
                              health.bottleneck));
  if (torn > 0) {
    notes.push_back(
        fmt::format("{} torn last line(s) of a shard's requests.jsonl were skipped", torn));
  }
  const int code = report_run(config, outcome, recorder, notes, f.json, "merge");

  // The merged summary: the shards' shared configuration, every shard's facts and health.
  auto summary_path = fs::path(f.out) / "summary.json";
  std::ifstream in(summary_path);
  json summary = json::parse(in, nullptr, false);
  if (summary.is_discarded()) {
    fmt::print(stderr, "tokperf: cannot read back {}\n", summary_path.string());
    return kExitFailure;
  }
  json cfg = ref.summary["config"];
  json merged_shard = cfg["shard"];
  for (const char* k : {"index", "source", "host", "clock"}) merged_shard.erase(k);
  merged_shard["merged"] = true;
  cfg["shard"] = merged_shard;
  summary["config"] = cfg;
  summary["shards"] = health.shards;
  summary["shard_bottleneck"] = health.bottleneck;
  const size_t worst = static_cast<size_t>(std::max(health.bottleneck_index, 0));
  summary["client_health"] = health.shards[worst]["client_health"];
  if (health.bottleneck_index >= 0)
    summary["client_health"]["warnings"].push_back(health.bottleneck);
  Status w = write_json_file(summary_path.string(), summary);
  if (!w) fmt::print(stderr, "tokperf: cannot write summary.json: {}\n", w.error());
  Status html = write_report_html(f.out);
  if (!html) fmt::print(stderr, "tokperf: cannot write report.html: {}\n", html.error());
  fmt::print(out, "shards: {}\n", health.bottleneck);
  for (const json& s : health.shards) {
    fmt::print(
        out, "  shard {} on {}: {}\n", s["index"].get<int>(), s["host"].get<std::string>(),
        s["warnings"].empty() ? std::string("healthy") : s["warnings"][0].get<std::string>());
  }
  if (!f.no_history) {
    auto id = record_run_in_history(f.out, f.store);
    if (id) {
      fmt::print(out, "recorded as history run #{}\n", *id);
    } else {
      fmt::print(stderr, "tokperf: could not record the run in the history store: {}\n",
                 id.error());
    }
  }
  return code;
}

}  // namespace

void register_merge_command(CLI::App& app, CommandSet& cmds) {
  auto flags = std::make_shared<MergeFlags>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Join the shards of a sharded bench (--shard) into one run folder, exactly");
  sub->add_option("dirs", flags->dirs,
                  "Shard folders, or a folder holding shard-* folders (bench --shard --out DIR)")
      ->required();
  sub->add_option("--out,-o", flags->out, "The merged run's folder")->required();
  sub->add_flag("--json", flags->json, "Print summary.json on stdout");
  sub->add_flag("--no-history", flags->no_history, "Do not record the merged run in the history");
  sub->add_option("--store", flags->store, "History store (default: the user's)");
  cmds.add(sub, [flags] { return run_merge(*flags); });
}

}  // namespace tokperf
