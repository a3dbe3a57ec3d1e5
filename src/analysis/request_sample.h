// One request as the analyses see it: the fields of a requests.jsonl record
// (docs/requests-schema.md) that diagnosis, perceived speed and compare read. Built from a saved
// record (report/run_loader.h) or from an in-memory timeline, so the analyses work the same on a
// live run and a saved one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
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

// The sample of a finished in-memory request: exactly what reading its requests.jsonl line back
// gives (report/run_loader.h), field by field: token times rounded to the record's microsecond,
// an undefined (non-finite) figure as the reader's default. `m` must be compute_request_metrics(t).
RequestSample request_sample_from(const RequestTimeline& t, const RequestMetrics& m);

// The stride a report samples a run's records at: the smallest power of two k such that every
// k-th record (the 1st, the k+1-th, ...) is at most max_samples of them; 1 when max_samples is 0
// (no bound). A power of two so that a run can keep the same sample while its records arrive
// (RecordSampler) as a reader picks from the finished file.
int64_t sample_stride(int64_t records, size_t max_samples);

// Keeps, in bounded memory, the samples of the records seen so far that sample_stride would pick:
// while records arrive it keeps every k-th (k a power of two) and halves what it keeps when it
// would hold more than max_samples, so at any point it holds exactly the records sample_stride
// picks from those seen. What a run's report is drawn from without reading requests.jsonl back.
class RecordSampler {
 public:
  explicit RecordSampler(size_t max_samples) : max_(max_samples) {}
  void add(const RequestTimeline& t, const RequestMetrics& m);
  int64_t records() const { return n_; }
  int64_t stride() const { return stride_; }
  const std::vector<RequestSample>& samples() const { return kept_; }
  std::vector<RequestSample> take() { return std::move(kept_); }

 private:
  size_t max_;
  int64_t n_ = 0;
  int64_t stride_ = 1;
  std::vector<RequestSample> kept_;
};

}  // namespace tokperf
