// CSV exports for spreadsheets: one row per request (requests.csv) and one per load level
// (levels.csv). RFC 4180 quoting; undefined values are empty fields; durations in ms. Columns:
// docs/REPORTS.md ("CSV exports").
#pragma once

#include <span>
#include <string>

#include "analysis/request_sample.h"
#include "metrics/aggregate.h"

namespace tokperf {

std::string requests_csv(std::span<const RequestSample> requests);
// The same, a row at a time (a caller streaming a saved run's records): the header line, and one
// request's line appended to `out`.
std::string requests_csv_header();
void append_requests_csv_row(std::string& out, const RequestSample& r);
std::string levels_csv(std::span<const LevelSummary> levels);

// A CSV field: quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& s);

}  // namespace tokperf
