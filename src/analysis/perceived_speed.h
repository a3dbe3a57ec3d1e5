// Perceived speed: what a person reading the stream experiences, beyond TTFT and TPOT. Definitions
// (docs/REPORTS.md, "Perceived speed"):
//  - time to first N visible characters: send -> the token event that brings the visible text to N
//    characters;
//  - reading stall: a reader starts at the first token and reads at R tokens/s; whenever they have
//    read everything that arrived, they wait. The stall is the sum of those waits (TTFT excluded);
//  - reader TPOT threshold = 1000 / R ms: decoding faster than that no longer helps this reader.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "analysis/request_sample.h"
#include "metrics/stats.h"

namespace tokperf {

struct PerceivedOptions {
  int first_chars = 20;            // N
  double reader_tokens_per_s = 8;  // R: the source puts reading at 5-10 Chinese characters/s
  // Characters per token event assumed when a record has no content_chars (older files).
  double fallback_chars_per_event = 1;
};

struct PerceivedRequest {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double first_chars_ms = kNaN;    // NaN when the response never reached N visible characters
  bool chars_estimated = false;    // content_chars was absent: fallback_chars_per_event used
  double reading_stall_ms = kNaN;  // NaN when the request produced no token
  double reading_done_ms = kNaN;   // when the reader finishes, from send
};

// REQUIRES: options.reader_tokens_per_s > 0. Tokens are spread evenly over the token events when
// output_tokens exceeds the event count (servers that pack several tokens per chunk).
PerceivedRequest perceived_request(const RequestSample& r, const PerceivedOptions& options = {});

struct PerceivedSummary {
  DistStats first_chars_ms;               // over measured OK requests that reached N characters
  DistStats reading_stall_ms;             // over measured OK requests with a token
  double reader_tpot_threshold_ms = 0;    // 1000 / R
  int64_t requests = 0;                   // measured OK requests considered
  int64_t decode_faster_than_reader = 0;  // of those with a TPOT: TPOT <= threshold
  int64_t with_tpot = 0;
  int64_t stalled = 0;           // reading stall > 0
  bool chars_estimated = false;  // any request used the fallback
};

// The summary built one record at a time, so a caller can stream a run's records from disk
// instead of holding them (tokperf compare on a million-record run). Only two doubles per
// considered request are kept (exact percentiles).
class PerceivedAccumulator {
 public:
  // level < 0: every level.
  explicit PerceivedAccumulator(int level, const PerceivedOptions& options = {});
  void add(const RequestSample& r);
  PerceivedSummary finish() &&;

 private:
  int level_;
  PerceivedOptions options_;
  PerceivedSummary s_;
  std::vector<double> first_, stall_;
};

// level < 0: every level.
PerceivedSummary summarize_perceived(std::span<const RequestSample> requests, int level,
                                     const PerceivedOptions& options = {});

}  // namespace tokperf
