// What a run keeps of its finished requests (bench from its event loop, sim run from the
// virtual-time engine), fed each record once as it finishes: requests.jsonl is written as records
// arrive; the per-level results (analysis/level_result.h), the time series and the server view's
// per-request inputs are kept in bounded memory, never the records themselves, so a run's memory
// does not grow with its request count beyond a few compact columns (docs/metrics.md, "Bounded
// memory"; issue 12).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/level_result.h"
#include "analysis/request_sample.h"
#include "core/result.h"
#include "load/bench_config.h"
#include "metrics/request_record.h"
#include "metrics/timeseries.h"
#include "report/json_output.h"
#include "servermetrics/ttft_decomposition.h"

namespace tokperf {

class RunRecorder {
 public:
  // The result builder for config's levels and SLO; writes nothing until open_output().
  explicit RunRecorder(const BenchConfig& config);

  // Creates config.out_dir and opens requests.jsonl in it (nothing without out_dir). Throws
  // UsageError naming the folder when it cannot. flush_each_line: a live run hands every line to
  // the kernel as it finishes (a crash loses nothing); a virtual-time run lets stdio buffer, and
  // its lines are formatted and written by a writer thread (RequestsJsonlWriter::set_background).
  void open_output(bool flush_each_line = true);
  // The origin of the time series' one-second windows: the run's start on the records' clock.
  // Set it before the first add().
  void set_run_start(int64_t ns) { timeseries_.set_run_start(ns); }

  // Computes the record's metrics once, writes its line and feeds every consumer.
  const RequestMetrics& add(const RequestTimeline& t);
  // Flushes and closes requests.jsonl; the first write error, if any.
  Status close();

  const RunResultBuilder& results() const { return results_; }
  const TimeseriesBuilder& timeseries() const { return timeseries_; }
  // Requests that can feed the server view (all when scraping; else those with server timings).
  std::span<const servermetrics::RequestDigest> digests() const { return digests_; }
  int64_t records() const { return records_; }
  // The records report.html draws its per-request figures from (ReportOptions::max_requests of
  // them at most, picked as a reader of requests.jsonl picks them); only with an output folder.
  RecordSampler* report_sample() { return out_dir_.empty() ? nullptr : &report_sample_; }

 private:
  bool keep_all_digests_;
  RunResultBuilder results_;
  TimeseriesBuilder timeseries_;
  std::vector<servermetrics::RequestDigest> digests_;
  RequestsJsonlWriter jsonl_;
  std::string out_dir_;
  RecordSampler report_sample_;
  Status write_status_ = Status::Ok();
  RequestMetrics last_{};
  int64_t records_ = 0;
};

}  // namespace tokperf
