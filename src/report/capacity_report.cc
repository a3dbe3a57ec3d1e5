#include "report/capacity_report.h"

#include <cmath>

#include <fmt/format.h>

#include "core/units.h"
#include "report/json_output.h"

namespace tokperf {

std::string capacity_trial_line(int trial, const std::string& by, double load,
                                const LevelOutcome& o) {
  std::string values;
  for (const auto& ob : o.objectives) {
    values += fmt::format("  {} {}", ob.text, format_ms(ob.value_ms));
  }
  return fmt::format("  trial {:>2}: {} {:<8} {}{}{}\n", trial, by, format_rate(load),
                     o.meets_slo ? "PASS" : "FAIL", o.decisive ? "" : " (close)", values);
}

nlohmann::json level_outcome_json(const LevelOutcome& o) {
  nlohmann::json objectives = nlohmann::json::array();
  for (const auto& x : o.objectives) {
    objectives.push_back({{"objective", x.text},
                          {"value_ms", json_number_or_null(x.value_ms)},
                          {"ci_lower_ms", json_number_or_null(x.ci_lower_ms)},
                          {"ci_upper_ms", json_number_or_null(x.ci_upper_ms)},
                          {"threshold_ms", x.threshold_ms},
                          {"pass", x.pass}});
  }
  return {{"meets_slo", o.meets_slo}, {"decisive", o.decisive}, {"objectives", objectives}};
}

nlohmann::json capacity_json(const std::string& command, const nlohmann::json& config,
                             const nlohmann::json& search, const CapacityResult& r) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : r.trials) {
    trials.push_back({{"load", t.x}, {"outcome", level_outcome_json(t.outcome)}});
  }
  return {
      {"schema_version", 1},
      {"tokperf_version", TOKPERF_VERSION},
      {"command", command},
      {"config", config},
      {"search", search},
      {"result",
       {{"found", r.found},
        {"max_passing", r.max_passing},
        {"lower", r.lower},
        {"upper", std::isfinite(r.upper) ? nlohmann::json(r.upper) : nlohmann::json("inf")},
        {"converged", r.converged},
        {"budget_exhausted", r.budget_exhausted},
        {"confidence", r.confidence},
        {"summary", r.summary},
        {"at_answer", level_outcome_json(r.at_answer)}}},
      {"trials", trials},
  };
}

}  // namespace tokperf
