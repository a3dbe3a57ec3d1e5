#include "cli/run_recorder.h"

#include <filesystem>

#include <fmt/format.h>

#include "cli/bench_output.h"
#include "cli/commands.h"
#include "report/html_report.h"

namespace tokperf {

RunRecorder::RunRecorder(const BenchConfig& config)
    : keep_all_digests_(config.server_metrics),
      results_(result_builder(config)),
      out_dir_(config.out_dir),
      report_sample_(ReportOptions{}.max_requests) {}

void RunRecorder::open_output(bool flush_each_line) {
  if (out_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(out_dir_, ec);
  if (ec) {
    throw UsageError(fmt::format("--out '{}' cannot be created: {}", out_dir_, ec.message()));
  }
  Status st = jsonl_.open(out_dir_ + "/requests.jsonl");
  if (!st) throw UsageError(fmt::format("--out '{}': {}", out_dir_, st.error()));
  jsonl_.set_flush_each_line(flush_each_line);
  // Nothing to flush line by line: format and write on a second thread (a virtual-time run's
  // engine then keeps its core).
  jsonl_.set_background(!flush_each_line);
}

const RequestMetrics& RunRecorder::add(const RequestTimeline& t) {
  last_ = compute_request_metrics(t);  // once per record
  ++records_;
  if (jsonl_.is_open() && write_status_) write_status_ = jsonl_.write(t, last_);
  if (!out_dir_.empty()) report_sample_.add(t, last_);
  results_.add(t, last_);
  timeseries_.add(t);
  if (keep_all_digests_ || t.server.present()) {
    digests_.push_back(servermetrics::digest_of(t, last_));
  }
  return last_;
}

Status RunRecorder::close() {
  if (!jsonl_.is_open()) return write_status_;
  Status st = jsonl_.close();
  return write_status_ ? st : write_status_;
}

}  // namespace tokperf
