// The inverse of request_record_json (report/json_output.h): a requests.jsonl record back into the
// RequestTimeline it was written from, so a saved run's records can go through the same
// result-building path as a live run's (tokperf merge). Exactness: every interval the metrics use
// comes back to the nanosecond (the record's millisecond figures are exact ns / 1e6 doubles), so
// compute_request_metrics on the rebuilt timeline equals the original's bit for bit and
// request_record_json writes the same record again. Times are rebuilt on the wall clock: send_ns =
// start_unix_us * 1000, the other stamps at their recorded offsets from it; that is the clock
// records of different machines share.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "metrics/request_record.h"

namespace tokperf {

// Fails (naming the field) when the record lacks what the metrics need.
Result<RequestTimeline> timeline_from_record(const nlohmann::json& record);

// Reads requests.jsonl one record at a time (bounded memory). Not thread-safe.
class RecordFileReader {
 public:
  RecordFileReader() = default;
  ~RecordFileReader();
  RecordFileReader(const RecordFileReader&) = delete;
  RecordFileReader& operator=(const RecordFileReader&) = delete;

  Status open(const std::string& path);
  // The next record; nullopt at the end of the file. A malformed line is an error naming the file
  // and line, except a torn last line (no newline: a crash mid-write), which ends the file and is
  // counted in torn_lines().
  Result<std::optional<RequestTimeline>> next();
  int64_t line() const { return line_; }
  int64_t torn_lines() const { return torn_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  int64_t line_ = 0;
  int64_t torn_ = 0;
};

}  // namespace tokperf
