#include "report/shard_merge.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "metrics/client_health.h"
#include "metrics/stats.h"
#include "report/run_loader.h"

namespace tokperf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json ns_or_null(int64_t ns) { return ns == 0 ? json(nullptr) : json(ns); }

int64_t to_wall(int64_t mono_ns, int64_t offset) { return mono_ns == 0 ? 0 : mono_ns + offset; }

// The global (single-process) schedule's figures of an open-loop level: every shard computes the
// same, and the merge checks they agree.
json global_schedule_json(const BenchConfig& c, size_t level) {
  LevelDriver whole(make_level_plan(c.load, level), 0);
  const LevelRunInfo& g = whole.info();
  return {{"target_rate_rps", g.target_rate_rps},
          {"scheduled_rate_rps", g.scheduled_rate_rps},
          {"measured_span_s", g.measured_span_s},
          {"scheduled_arrivals", g.scheduled_arrivals},
          {"schedule_fingerprint", g.schedule_fingerprint}};
}

Result<json> read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return Error{fmt::format("cannot read {}", p.string())};
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return Error{fmt::format("{} is not valid JSON (cut short?)", p.string())};
  return j;
}

// The configuration two shards of one run share: everything but what names the process.
json plan_of(const json& summary) {
  json c = summary.value("config", json::object());
  c.erase("run_id");
  c.erase("shard");
  return c;
}

// The first path at which a and b differ, "load.seed: 42 vs 7"; "" when equal.
std::string first_difference(const json& a, const json& b, const std::string& path = "") {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const json va = a.contains(k) ? a[k] : json(nullptr);
      const json vb = b.contains(k) ? b[k] : json(nullptr);
      std::string d = first_difference(va, vb, path.empty() ? k : path + "." + k);
      if (!d.empty()) return d;
    }
  }
  return fmt::format("{}: {} vs {}", path.empty() ? "config" : path, a.dump(), b.dump());
}

bool is_shard_folder(const fs::path& p) {
  return fs::exists(p / "summary.json") || fs::exists(p / "shard.json") ||
         fs::exists(p / "requests.jsonl");
}

}  // namespace

json shard_run_json(const BenchConfig& config, std::span<const LevelRunInfo> levels,
                    std::span<const int64_t> late_start_ns, const ClientSelfMeasure& self,
                    int64_t wall_minus_mono_ns, bool completed) {
  json lv = json::array();
  for (const LevelRunInfo& l : levels) {
    const auto i = static_cast<size_t>(l.level);
    json send_lag = json::array();
    for (int64_t ns : l.send_lag_ns) send_lag.push_back(ns);
    json j = {
        {"level", l.level},
        {"mode", l.spec.mode == LoadMode::kRate ? "rate" : "concurrency"},
        {"start", l.spec.start},
        {"end", l.spec.end},
        {"ramp_ns", l.spec.ramp_ns},
        {"open_loop", l.open_loop},
        {"start_unix_ns", to_wall(l.start_ns, wall_minus_mono_ns)},
        {"end_unix_ns", to_wall(l.end_ns, wall_minus_mono_ns)},
        {"late_start_ns", i < late_start_ns.size() ? late_start_ns[i] : 0},
        {"measured_sent", l.measured_sent},
        {"first_measured_send_unix_ns",
         ns_or_null(to_wall(l.first_measured_send_ns, wall_minus_mono_ns))},
        {"last_measured_send_unix_ns",
         ns_or_null(to_wall(l.last_measured_send_ns, wall_minus_mono_ns))},
        {"target_rate_rps", l.target_rate_rps},
        {"achieved_rate_rps", l.achieved_rate_rps},
        {"scheduled_arrivals", l.scheduled_arrivals},
        {"schedule_fingerprint", l.schedule_fingerprint},
        {"stopped_early", l.stopped_early ? json(*l.stopped_early) : json(nullptr)},
        {"send_lag_exceeded", l.send_lag_exceeded},
        {"send_lag_ns", std::move(send_lag)},
        {"sessions", l.sessions},
        {"sessions_started", l.sessions_started},
        {"sessions_completed", l.sessions_completed},
        {"sessions_failed", l.sessions_failed},
        {"sessions_cut", l.sessions_cut},
    };
    if (l.open_loop && i < config.load.plan.levels.size()) {
      j["global"] = global_schedule_json(config, i);
    }
    lv.push_back(std::move(j));
  }
  return {{"schema_version", kShardSchemaVersion},
          {"index", config.shard.index},
          {"count", config.shard.count},
          {"host", config.shard_host},
          {"trace", !config.load.trace.empty()},
          {"completed", completed},
          {"wall_minus_mono_ns", wall_minus_mono_ns},
          {"self",
           {{"cpu_user_s", self.cpu_user_s},
            {"cpu_system_s", self.cpu_system_s},
            {"wall_s", self.wall_s},
            {"peak_in_flight", self.peak_in_flight},
            {"stream_events", self.stream_events},
            {"body_reads", self.body_reads},
            {"body_bytes", self.body_bytes}}},
          {"levels", std::move(lv)}};
}

Result<std::vector<std::string>> expand_shard_dirs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::vector<std::string> problems;
  for (const std::string& a : args) {
    const fs::path p(a);
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      problems.push_back(fmt::format("{}: no such folder", a));
      continue;
    }
    if (is_shard_folder(p)) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (e.is_directory() && e.path().filename().string().starts_with("shard-")) {
        found.push_back(e.path().string());
      }
    }
    if (found.empty()) {
      problems.push_back(
          fmt::format("{}: neither a shard's folder (summary.json, shard.json, "
                      "requests.jsonl) nor a folder of shard-* folders",
                      a));
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  if (!problems.empty()) {
    std::string msg = "cannot merge:";
    for (const auto& p : problems) msg += "\n  " + p;
    return Error{msg};
  }
  return out;
}

Result<std::vector<ShardFolder>> load_shards(const std::vector<std::string>& dirs) {
  std::vector<std::string> problems;
  std::vector<ShardFolder> shards;
  for (const std::string& d : dirs) {
    const fs::path p(d);
    if (!fs::exists(p / "summary.json")) {
      problems.push_back(fmt::format(
          "{}: no summary.json: this shard did not finish (it crashed, was killed or is still "
          "running){}",
          d, fs::exists(p / "requests.jsonl") ? "; its requests.jsonl holds what it sent" : ""));
      continue;
    }
    auto summary = read_json(p / "summary.json");
    if (!summary) {
      problems.push_back(summary.error());
      continue;
    }
    const json cfg = summary->value("config", json::object());
    if (!cfg.contains("shard") || cfg["shard"].is_null()) {
      problems.push_back(fmt::format("{}: a single-process run (no --shard), not a shard", d));
      continue;
    }
    if (!fs::exists(p / "shard.json")) {
      problems.push_back(fmt::format("{}: no shard.json: the shard did not finish writing", d));
      continue;
    }
    auto shard = read_json(p / "shard.json");
    if (!shard) {
      problems.push_back(shard.error());
      continue;
    }
    if (shard->value("schema_version", 0) != kShardSchemaVersion) {
      problems.push_back(fmt::format("{}: shard.json schema_version {} (this tokperf reads {})", d,
                                     shard->value("schema_version", 0), kShardSchemaVersion));
      continue;
    }
    if (summary->value("exit_reason", std::string()) != "completed" ||
        !shard->value("completed", false)) {
      problems.push_back(
          fmt::format("{}: the shard did not complete (exit_reason '{}'): its "
                      "levels are cut short",
                      d, summary->value("exit_reason", std::string("?"))));
      continue;
    }
    if (!fs::exists(p / "requests.jsonl")) {
      problems.push_back(
          fmt::format("{}: no requests.jsonl (the run was saved without records?)", d));
      continue;
    }
    ShardFolder f;
    f.dir = d;
    f.index = cfg["shard"].value("index", -1);
    f.count = cfg["shard"].value("count", 0);
    f.summary = std::move(*summary);
    f.shard = std::move(*shard);
    shards.push_back(std::move(f));
  }
  if (!shards.empty()) {
    std::sort(shards.begin(), shards.end(),
              [](const ShardFolder& a, const ShardFolder& b) { return a.index < b.index; });
    const ShardFolder& ref = shards.front();
    const json ref_plan = plan_of(ref.summary);
    const json ref_cfg = ref.summary["config"];
    std::map<int, std::string> seen;
    for (const ShardFolder& s : shards) {
      const json cfg = s.summary["config"];
      if (s.summary.value("tokperf_version", "") != ref.summary.value("tokperf_version", "")) {
        problems.push_back(fmt::format("{}: tokperf {} but {} was run by tokperf {}", s.dir,
                                       s.summary.value("tokperf_version", "?"), ref.dir,
                                       ref.summary.value("tokperf_version", "?")));
      }
      if (s.count != ref.count) {
        problems.push_back(fmt::format("{}: shard {} of {} but {} is of {}: not one run", s.dir,
                                       s.index, s.count, ref.dir, ref.count));
      }
      if (cfg["shard"].value("start_at_unix_us", json(nullptr)) !=
          ref_cfg["shard"].value("start_at_unix_us", json(nullptr))) {
        problems.push_back(fmt::format("{}: --start-at {} but {} started at {}: not one run", s.dir,
                                       cfg["shard"]["start_at_unix_us"].dump(), ref.dir,
                                       ref_cfg["shard"]["start_at_unix_us"].dump()));
      }
      if (cfg.value("target", json()) != ref_cfg.value("target", json())) {
        problems.push_back(fmt::format("{}: a different target ({}) from {}", s.dir,
                                       first_difference(cfg["target"], ref_cfg["target"], "target"),
                                       ref.dir));
      } else if (const std::string d = first_difference(plan_of(s.summary), ref_plan); !d.empty()) {
        problems.push_back(fmt::format("{}: a different plan from {} ({})", s.dir, ref.dir, d));
      }
      auto [it, fresh] = seen.emplace(s.index, s.dir);
      if (!fresh) {
        problems.push_back(fmt::format("{} and {} are both shard {}", it->second, s.dir, s.index));
      }
    }
    if (ref.count > 0 && problems.empty()) {
      for (int i = 0; i < ref.count; ++i) {
        if (!seen.count(i)) {
          problems.push_back(
              fmt::format("shard {} of {} is missing (no folder of it was given)", i, ref.count));
        }
      }
    }
    // Every shard must have run the same schedule.
    for (const ShardFolder& s : shards) {
      const json& a = s.shard["levels"];
      const json& b = ref.shard["levels"];
      if (a.size() != b.size()) {
        problems.push_back(
            fmt::format("{} ran {} levels but {} ran {} (a level stopped early on "
                        "one shard ends the sweep there only)",
                        s.dir, a.size(), ref.dir, b.size()));
        continue;
      }
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].value("schedule_fingerprint", "") != b[i].value("schedule_fingerprint", "")) {
          problems.push_back(fmt::format("{} level {}: schedule fingerprint {} but {} has {}",
                                         s.dir, i + 1, a[i].value("schedule_fingerprint", ""),
                                         ref.dir, b[i].value("schedule_fingerprint", "")));
        }
      }
    }
  }
  if (shards.empty() && problems.empty()) problems.push_back("no shard folders given");
  if (!problems.empty()) {
    std::string msg = "refusing to merge (nothing was written):";
    for (const auto& p : problems) msg += "\n  " + p;
    return Error{msg};
  }
  return shards;
}

std::vector<LevelSpec> shard_level_specs(const ShardFolder& shard) {
  std::vector<LevelSpec> out;
  for (const json& l : shard.shard["levels"]) {
    LevelSpec s;
    s.mode = l.value("mode", "") == "rate" ? LoadMode::kRate : LoadMode::kConcurrency;
    s.start = l.value("start", 1.0);
    s.end = l.value("end", s.start);
    s.ramp_ns = l.value("ramp_ns", int64_t{0});
    out.push_back(s);
  }
  return out;
}

bool shard_replays_trace(const ShardFolder& shard) { return shard.shard.value("trace", false); }

std::vector<LevelRunInfo> merge_level_infos(std::span<const ShardFolder> shards) {
  std::vector<LevelRunInfo> out;
  if (shards.empty()) return out;
  const std::vector<LevelSpec> specs = shard_level_specs(shards.front());
  for (size_t i = 0; i < specs.size(); ++i) {
    LevelRunInfo m;
    m.level = static_cast<int>(i);
    m.spec = specs[i];
    bool first = true;
    for (const ShardFolder& s : shards) {
      const json& l = s.shard["levels"][i];
      m.open_loop = l.value("open_loop", false);
      const int64_t start = l.value("start_unix_ns", int64_t{0});
      const int64_t end = l.value("end_unix_ns", int64_t{0});
      m.start_ns = first ? start : std::min(m.start_ns, start);
      m.end_ns = first ? end : std::max(m.end_ns, end);
      m.measured_sent += l.value("measured_sent", int64_t{0});
      if (l["first_measured_send_unix_ns"].is_number()) {
        const int64_t a = l["first_measured_send_unix_ns"].get<int64_t>();
        const int64_t b = l["last_measured_send_unix_ns"].get<int64_t>();
        m.first_measured_send_ns =
            m.first_measured_send_ns == 0 ? a : std::min(m.first_measured_send_ns, a);
        m.last_measured_send_ns = std::max(m.last_measured_send_ns, b);
      }
      for (const json& ns : l["send_lag_ns"]) m.send_lag_ns.push_back(ns.get<int64_t>());
      m.schedule_fingerprint = l.value("schedule_fingerprint", "");
      if (!l["stopped_early"].is_null() && !m.stopped_early) {
        m.stopped_early =
            fmt::format("shard {}: {}", s.index, l["stopped_early"].get<std::string>());
      }
      m.send_lag_exceeded = m.send_lag_exceeded || l.value("send_lag_exceeded", false);
      m.sessions = l.value("sessions", false);
      m.sessions_started += l.value("sessions_started", int64_t{0});
      m.sessions_completed += l.value("sessions_completed", int64_t{0});
      m.sessions_failed += l.value("sessions_failed", int64_t{0});
      m.sessions_cut += l.value("sessions_cut", int64_t{0});
      if (l.contains("global")) {
        const json& g = l["global"];
        m.target_rate_rps = g.value("target_rate_rps", 0.0);
        m.scheduled_rate_rps = g.value("scheduled_rate_rps", 0.0);
        m.measured_span_s = g.value("measured_span_s", 0.0);
        m.scheduled_arrivals = g.value("scheduled_arrivals", int64_t{0});
      }
      first = false;
    }
    // Achieved against the global schedule: all measured sends over their union's span.
    if (m.open_loop && m.measured_sent > 1 && m.last_measured_send_ns > m.first_measured_send_ns) {
      m.achieved_rate_rps =
          static_cast<double>(m.measured_sent - 1) /
          (static_cast<double>(m.last_measured_send_ns - m.first_measured_send_ns) / 1e9);
    }
    out.push_back(std::move(m));
  }
  return out;
}

ShardHealthView shard_health(std::span<const ShardFolder> shards) {
  ShardHealthView v;
  v.shards = json::array();
  double worst_lag = -1;
  int worst_lag_index = -1;
  size_t worst_warnings = 0;
  double worst_warned_lag = -1;
  for (const ShardFolder& s : shards) {
    const json& cfg_shard = s.summary["config"]["shard"];
    const ClientHealth h =
        client_health_from_json(s.summary.value("client_health", json::object()));
    int64_t late_ns = 0;
    bool lag_exceeded = false;
    for (const json& l : s.shard["levels"]) {
      late_ns = std::max(late_ns, l.value("late_start_ns", int64_t{0}));
      lag_exceeded = lag_exceeded || l.value("send_lag_exceeded", false);
    }
    std::vector<std::string> warnings = h.warnings;
    if (lag_exceeded) {
      warnings.push_back(
          "its open-loop send lag exceeded the bound (--max-send-lag): it fell "
          "behind the schedule");
    }
    if (late_ns > 0) {
      warnings.push_back(
          fmt::format("a level started {:.0f} ms after its lockstep boundary (the "
                      "process started after --start-at, or its previous level "
                      "overran --level-slot)",
                      late_ns / 1e6));
    }
    v.shards.push_back({{"index", s.index},
                        {"host", s.shard.value("host", "")},
                        {"source", cfg_shard.value("source", "")},
                        {"dir", s.dir},
                        {"started_unix_us", s.summary.value("started_unix_us", int64_t{0})},
                        {"clock", cfg_shard.value("clock", json(nullptr))},
                        {"client_health", s.summary.value("client_health", json(nullptr))},
                        {"max_late_start_ms", late_ns / 1e6},
                        {"warnings", warnings}});
    const double lag = std::isfinite(h.loop_lag_p99_ms) ? h.loop_lag_p99_ms : 0;
    if (lag > worst_lag) {
      worst_lag = lag;
      worst_lag_index = s.index;
    }
    // The worst warned shard: the most warnings, then the highest loop lag.
    if (!warnings.empty() && (warnings.size() > worst_warnings ||
                              (warnings.size() == worst_warnings && lag > worst_warned_lag))) {
      worst_warnings = warnings.size();
      worst_warned_lag = lag;
      v.bottleneck_index = s.index;
    }
  }
  size_t warned = 0;
  for (const json& s : v.shards) warned += s["warnings"].empty() ? 0 : 1;
  if (v.bottleneck_index >= 0) {
    const json& b = v.shards[static_cast<size_t>(v.bottleneck_index)];
    const std::string why = b["warnings"][0].get<std::string>();
    if (warned == 1) {
      v.bottleneck = fmt::format("shard {} of {} (host {}) was the bottleneck: {}",
                                 v.bottleneck_index, shards.size(), b.value("host", "?"), why);
    } else {
      // Every strained client distorts its share; the worst is named, not singled out.
      v.bottleneck = fmt::format(
          "{} of {} shards' clients were strained; the worst, shard {} "
          "(host {}): {}",
          warned, shards.size(), v.bottleneck_index, b.value("host", "?"), why);
    }
  } else {
    v.bottleneck = fmt::format(
        "no shard was a bottleneck: every client stayed healthy (worst "
        "event-loop lag P99 {:.3f} ms, shard {})",
        std::max(worst_lag, 0.0), worst_lag_index);
  }
  return v;
}

}  // namespace tokperf
