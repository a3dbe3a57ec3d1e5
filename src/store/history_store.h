// Run history in SQLite: every recorded run (configuration, summary, per-level statistics, the
// folder it was written to) in one database file, shared by concurrent tokperf processes.
// Concurrency: WAL journal plus a busy timeout, writes in BEGIN IMMEDIATE transactions, so several
// runs finishing at once all land. One HistoryStore per thread (a connection is not shared between
// threads). Schema: docs/REPORTS.md ("History").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

struct sqlite3;

namespace tokperf {

// $XDG_DATA_HOME/tokperf/history.db, else $HOME/.local/share/tokperf/history.db.
std::string default_store_path();

struct HistoryEntry {
  int64_t id = 0;
  int64_t recorded_unix_us = 0;
  int64_t started_unix_us = 0;
  std::string command, dir, label, model, base_url;
  int64_t levels = 0, sent = 0, failed = 0;
  // Headline figures: the heaviest level (the last one), NaN when undefined.
  double ttft_p50_ms = 0, ttft_p95_ms = 0, tpot_p50_ms = 0, tpot_p95_ms = 0, out_tok_s = 0;
};

struct HistoryFilter {
  int64_t limit = 20;    // newest first
  std::string command;   // "" : any
  std::string contains;  // substring of label, model, base_url or dir; "" : any
  int64_t since_unix_us = 0;
};

class HistoryStore {
 public:
  // Opens (creating the file, its folder and the schema when missing) the store at `path`.
  static Result<std::unique_ptr<HistoryStore>> open(const std::string& path);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Records a run from its summary.json document; `dir` is stored as given (make it absolute).
  Result<int64_t> record(const nlohmann::json& summary, const std::string& dir,
                         const std::string& label = "");
  Result<std::vector<HistoryEntry>> list(const HistoryFilter& filter = {});
  Result<HistoryEntry> get(int64_t id);
  // The summary.json document recorded with run `id`.
  Result<nlohmann::json> summary(int64_t id);

 private:
  explicit HistoryStore(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// What bench calls after a run: records `dir` (its summary.json) in the store at `store_path`
// ("" : default_store_path()). Returns the new id.
Result<int64_t> record_run_in_history(const std::string& dir, const std::string& store_path = "",
                                      const std::string& label = "");

}  // namespace tokperf
