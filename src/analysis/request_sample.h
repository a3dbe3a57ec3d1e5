// One request as the analyses see it: the fields of a requests.jsonl record
// (docs/requests-schema.md) that diagnosis, perceived speed and compare read. Built from a saved
// record (report/run_loader.h) or from an in-memory timeline, so the analyses work the same on a
// live run and a saved one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "metrics/request_record.h"

namespace tokperf {

struct RequestSample {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t seq = 0;
  int level = 0;
  bool measured = true;  // phase == measure
  bool ok = true;
  std::string error_kind;     // "" when ok
  int64_t start_unix_us = 0;  // wall clock at send; orders requests in time
  double queue_ms = 0;
  double ttft_ms = kNaN, ttfo_ms = kNaN, tpot_ms = kNaN, e2e_ms = kNaN;
  double end_ms = kNaN;  // stream end (also for failed requests)
  std::vector<double> itl_ms;
  int64_t output_tokens = 0;
  int64_t prompt_tokens = -1;  // -1 unknown
  // Optional per-event detail (empty when the record lacks it): arrival of each token-carrying
  // event, ms after send, and the visible characters each carried.
  std::vector<double> token_ms;
  std::vector<int32_t> content_chars;
};

// Arrival times (ms after send) of the token events: token_ms when recorded, else rebuilt as
// ttft_ms + running sum of itl_ms. Empty when the request produced no token.
std::vector<double> token_arrivals_ms(const RequestSample& r);

// The sample of a finished in-memory request. `m` must be compute_request_metrics(t).
RequestSample request_sample_from(const RequestTimeline& t, const RequestMetrics& m);

}  // namespace tokperf
