// The machine-readable outputs: requests.jsonl (one record per request, appended as requests
// finish) and summary.json (configuration, per-level statistics, client health). Field-by-field
// contracts: docs/requests-schema.md and docs/summary-schema.md. NaN (undefined metric) is written
// as null.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "metrics/aggregate.h"
#include "metrics/client_health.h"
#include "metrics/request_record.h"
#include "metrics/stats.h"

namespace tokperf {

inline constexpr int kRequestsSchemaVersion = 1;
inline constexpr int kSummarySchemaVersion = 1;

// A finite number, or null for NaN/inf (JSON has no NaN).
nlohmann::json json_number_or_null(double v);

// One requests.jsonl object. `m` must be compute_request_metrics(t).
nlohmann::json request_record_json(const RequestTimeline& t, const RequestMetrics& m);
// Appends the same record as one line of text (no newline) without building the object: what the
// writer uses, once per request. It parses to exactly request_record_json(t, m); the text is
// dump()'s but where dump()'s Grisu2 is not the shortest round-trip form.
void append_request_record(std::string& out, const RequestTimeline& t, const RequestMetrics& m);

nlohmann::json dist_stats_json(const DistStats& s);
nlohmann::json level_summary_json(const LevelSummary& s);
nlohmann::json client_health_json(const ClientHealth& h);

// Run-wide facts for summary.json beside the configuration.
struct RunInfo {
  std::string command;          // e.g. "bench", "sim run"
  int64_t started_unix_us = 0;  // wall clock, label only
  double duration_s = std::numeric_limits<double>::quiet_NaN();
  std::string exit_reason;         // e.g. "completed", "interrupted", "duration"
  std::vector<std::string> notes;  // e.g. "prompt lengths approximated (no tokenize endpoint)"
  // The files written beside summary.json, {"requests": "requests.jsonl", ...}; empty: none.
  std::vector<std::pair<std::string, std::string>> files;
};

// The whole summary.json document. `config_redacted` must already have its secrets removed: this
// function writes it as given.
nlohmann::json summary_json(const nlohmann::json& config_redacted,
                            const std::vector<LevelSummary>& levels, const ClientHealth& health,
                            const RunInfo& run = {});

// Writes `doc` to `path` atomically: a temporary file in the same folder, flushed and fsync'd, then
// renamed over `path`, so a reader never sees half a file. indent < 0 writes one line.
Status write_json_file(const std::string& path, const nlohmann::json& doc, int indent = 2);

// Appends requests.jsonl lines. Each line is flushed to the kernel as it is written, so a crash of
// tokperf loses no finished request (a power cut may: no fsync per line, by design). Not
// thread-safe: the single recorder that owns it calls it. Errors come back as Status; after one,
// later writes fail.
//
// Background mode (set_background, for virtual-time runs that need no per-line flush): write()
// copies the record into a batch and a writer thread formats and writes the batches in order, so
// formatting runs on another core than the engine. The lines are the same bytes in the same order;
// a write error reaches the caller on a later write() or on close(); memory stays bounded (a few
// batches in flight: write() waits for the writer when they are all full).
class RequestsJsonlWriter {
 public:
  RequestsJsonlWriter();
  ~RequestsJsonlWriter();
  RequestsJsonlWriter(const RequestsJsonlWriter&) = delete;
  RequestsJsonlWriter& operator=(const RequestsJsonlWriter&) = delete;

  // Creates or truncates `path`.
  Status open(const std::string& path);
  Status write(const RequestTimeline& t, const RequestMetrics& m);
  Status write_line(const nlohmann::json& record);
  // Flushes and closes; safe to call twice. The destructor closes too but drops the status.
  Status close();

  bool is_open() const { return file_ != nullptr; }
  int64_t lines_written() const { return lines_; }
  // On (the default): each line reaches the kernel as it is written, so a crash loses no finished
  // request. Off: stdio's buffer collects lines (a virtual-time run, where nothing is lost by a
  // crash that the rerun would not reproduce, writes a million records without a syscall each).
  void set_flush_each_line(bool on) { flush_each_line_ = on; }
  // On: the writer thread above (starts with the next write; lines are not flushed one by one).
  // Call it after open() and before the first write(); close() stops the thread.
  void set_background(bool on);

 private:
  struct Background;
  Status write_text_line();  // line_ plus '\n'
  std::FILE* file_ = nullptr;
  bool flush_each_line_ = true;
  std::unique_ptr<Background> bg_;
  std::string line_;  // reused: no allocation per record
  std::string path_;
  int64_t lines_ = 0;
};

}  // namespace tokperf
