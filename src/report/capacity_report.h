// How a capacity search is shown: one console line per trial, and the capacity.json document
// (the same for `tokperf capacity` against a server and `sim run --capacity` in virtual time).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "load/capacity_search.h"

namespace tokperf {

// "  trial  3: concurrency 16.0     PASS (close)  ttft:p95<=2s 1.45 s  tpot:p95<=50ms 34.2 ms"
std::string capacity_trial_line(int trial, const std::string& by, double load,
                                const LevelOutcome& outcome);

nlohmann::json level_outcome_json(const LevelOutcome& o);

// The whole document: schema_version, command, config, search parameters, result, every trial.
nlohmann::json capacity_json(const std::string& command, const nlohmann::json& config,
                             const nlohmann::json& search, const CapacityResult& r);

}  // namespace tokperf
