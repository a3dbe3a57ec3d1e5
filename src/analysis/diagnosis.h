// Diagnosis: turns a run's per-level statistics and per-request records into findings in the
// source material's terms (queueing vs prefill vs decode bandwidth vs stalls; SOURCE_NOTES.md,
// "Diagnosis table"). Every finding cites the figures that triggered it and the remedies the source
// material gives; a healthy run yields no finding. Rules and thresholds: docs/REPORTS.md.
#pragma once

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/request_sample.h"
#include "metrics/aggregate.h"
#include "metrics/client_health.h"

namespace tokperf {

enum class FindingKind : uint8_t {
  kQueueing,             // TTFT P95 rises with load (or spikes) while ITL stays flat
  kDecodeBandwidth,      // TPOT/ITL high while TTFT is fine
  kComputeAndBandwidth,  // both high at the same level
  kStalls,               // ITL P99 >> P50, single gaps of seconds
  kDrift,                // the last third of a level markedly worse than the first
  kPrefillRate,          // TTFT grows with prompt length: fitted prefill rate and overhead
  kKvCacheTax,           // ITL grows along long responses
  kClientBound,          // the measuring client itself was short of CPU / lagging
  kLateVisibleOutput,    // first visible output long after the first token
  // From the server's own metrics (bench --server-metrics; docs/SERVER-METRICS.md):
  kKvCacheLimit,         // preemptions, or KV-cache usage near 100%
  kAdmissionQueueing,    // requests waiting in the engine and queue time dominating TTFT
  kOutsideEngine,        // client − server TTFT dominant: network, gateway or the client
};
const char* finding_kind_name(FindingKind k);  // "queueing", "decode_bandwidth", ...

enum class Severity : uint8_t { kInfo, kWarning };
const char* severity_name(Severity s);  // "info", "warning"

struct Finding {
  FindingKind kind = FindingKind::kQueueing;
  Severity severity = Severity::kWarning;
  std::string title;     // one line, e.g. "Queueing: TTFT rises with load while ITL stays flat"
  std::string evidence;  // the figures that triggered it, with units and levels
  std::vector<std::string> remedies;
};

// Defaults follow the source material: a chat SLO of TTFT P95 <= 2 s and TPOT P95 <= 100 ms, and
// "single gaps of seconds" for stalls. Ratios are chosen so that ordinary jitter never triggers.
struct DiagnosisThresholds {
  double ttft_p95_high_ms = 2000;
  double tpot_p95_high_ms = 100;
  double queue_ttft_growth = 2.0;        // TTFT P95, highest load / lowest load
  double queue_ttft_min_rise_ms = 200;   // ...and at least this much higher
  double flat_itl_growth = 1.5;          // ITL P50 grew by less than this: "flat"
  double spike_ttft_p95_over_p50 = 3.0;  // within one level: TTFT P95 / P50
  double stall_itl_p99_over_p50 = 10;
  double stall_min_p99_rise_ms = 100;
  double stall_gap_ms = 1000;  // a single gap this long is a stall
  double drift_factor = 1.5;   // last third P95 / first third P95
  double drift_min_rise_ms = 20;
  size_t drift_min_samples = 20;  // requests per third
  size_t prefill_min_samples = 10;
  double prefill_min_spread = 1.5;  // longest / shortest prompt
  double prefill_min_r2 = 0.6;
  size_t kv_tax_min_gaps = 200;  // only responses at least this long
  double kv_tax_growth = 1.3;    // median ITL, last quarter / first quarter
  double kv_tax_min_rise_ms = 5;
  double late_visible_min_ms = 500;  // TTFO P50 - TTFT P50
  double late_visible_ratio = 2;     // TTFO P50 / TTFT P50
  // Server evidence.
  double kv_usage_high = 0.95;       // KV-cache usage (0-1) at which the cache is "full"
  double queue_share = 0.3;          // queue mean >= this share of the client's TTFT mean...
  double outside_share = 0.5;        // client − server TTFT >= this share of the client's TTFT...
  double outside_min_ms = 20;        // ...and at least this much
};

// What the engine's own metrics said about one level (summary.json levels[i].server; NaN where
// the engine does not report it). Filled by the run loader; see docs/SERVER-METRICS.md.
struct ServerEvidence {
  std::string label;   // the level's label, for findings
  std::string engine;  // "vLLM", "llama.cpp", …
  double client_ttft_mean_ms = NAN;
  double server_ttft_mean_ms = NAN;
  double queue_mean_ms = NAN;
  double prefill_mean_ms = NAN;
  double outside_server_ms = NAN;  // client − server TTFT
  double waiting_mean = NAN, waiting_max = NAN;
  double kv_usage_max = NAN;  // 0-1
  double preemptions = NAN;   // during the level
};

struct DiagnosisInput {
  std::span<const LevelSummary> levels;     // in run order
  std::span<const RequestSample> requests;  // all phases; only measured ones are used
  const ClientHealth* health = nullptr;     // null when unknown
  std::span<const ServerEvidence> server = {};  // per level when the server was scraped
};

// Findings in a fixed order (the order of FindingKind), at most one per kind.
std::vector<Finding> diagnose(const DiagnosisInput& in, const DiagnosisThresholds& th = {});

// The load a level ran at, for ordering levels: concurrency, else target rate, else its index.
double level_load(const LevelSummary& s, size_t index);

}  // namespace tokperf
