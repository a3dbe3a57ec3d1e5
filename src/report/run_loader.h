// Reads a saved run back from its output folder: summary.json (docs/summary-schema.md),
// requests.jsonl (docs/requests-schema.md) and, when present, timeseries.csv (docs/LOAD.md). Used
// by `report`, `compare` and `history`, and by bench to render report.html from what it just wrote,
// so the report shows exactly what the files hold.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/request_sample.h"
#include "core/result.h"
#include "metrics/aggregate.h"
#include "metrics/client_health.h"
#include "metrics/timeseries.h"

namespace tokperf {

struct SavedRun {
  std::string dir;
  nlohmann::json summary;  // the whole summary.json document
  nlohmann::json config;   // summary["config"]; may hold secrets if another tool wrote it
  std::vector<LevelSummary> levels;
  ClientHealth health;
  std::vector<RequestSample> requests;    // all phases, file order (every `stride`-th line)
  int64_t request_lines = 0;  // lines of requests.jsonl (all of them, read or not)
  int64_t stride = 1;         // 1: every record was read
  std::vector<TimeseriesRow> timeseries;  // empty without timeseries.csv
  std::vector<ServerEvidence> server;     // per level with a server view (--server-metrics)
  std::vector<std::string> warnings;      // lines skipped and why
};

// Fails (message names the file and what is wrong) when summary.json is missing or malformed.
// A missing requests.jsonl or timeseries.csv is not an error; a malformed line is skipped with a
// warning so one torn line (a crash mid-write) does not lose the rest.
// max_requests > 0 bounds what is read of requests.jsonl: every k-th line (k =
// sample_stride(lines, max_requests), a power of two), evenly over the run, so a million-record
// run loads in bounded memory (figures from records then describe that sample; warnings say so).
// `kept`: the run that just wrote the folder hands over the same sample, kept while its records
// were written (RecordSampler with the same bound), and requests.jsonl is not read back.
Result<SavedRun> load_run(const std::string& dir, size_t max_requests = 0,
                          RecordSampler* kept = nullptr);

// Every record of dir/requests.jsonl, one at a time, as load_run reads them (malformed lines
// skipped), so a caller that needs all of them (report --slo) holds one at a time. Returns the
// number of lines; 0 without the file.
int64_t for_each_request_sample(const std::string& dir,
                                const std::function<void(const RequestSample&)>& fn);

// Inverse of level_summary_json / client_health_json / request_record_json; unknown fields are
// ignored, missing ones keep their defaults.
LevelSummary level_summary_from_json(const nlohmann::json& j);
ClientHealth client_health_from_json(const nlohmann::json& j);
RequestSample request_sample_from_json(const nlohmann::json& j);
// levels[i]["server"] (servermetrics/server_report.h) as diagnosis evidence; nullopt without one.
std::optional<ServerEvidence> server_evidence_from_json(const nlohmann::json& level);

// The "slo" object summary.json holds for level `index` (goodput_rps, attainment_pct, pass,
// objectives), or null when the run had no SLO.
const nlohmann::json* level_slo_json(const SavedRun& run, size_t index);

// Parses timeseries.csv text by its header names; unknown columns are ignored.
Result<std::vector<TimeseriesRow>> parse_timeseries_csv(const std::string& text);

}  // namespace tokperf
