// The diagnosis rules that fit a model to per-request detail or read the client's health; split
// from diagnosis.cc to keep each file to one idea. Internal to diagnose(): call that instead.
#pragma once

#include <optional>
#include <span>

#include "analysis/diagnosis.h"

namespace tokperf {

// TTFT = overhead + prompt_tokens / rate, fitted by least squares on the lightest level.
std::optional<Finding> prefill_rate_finding(std::span<const LevelSummary> lv,
                                            std::span<const RequestSample> rs,
                                            const DiagnosisThresholds& th);
// Median ITL over the last quarter of long responses against the first quarter.
std::optional<Finding> kv_cache_tax_finding(std::span<const RequestSample> rs,
                                            const DiagnosisThresholds& th);
std::optional<Finding> client_bound_finding(const ClientHealth* h);
std::optional<Finding> late_visible_finding(std::span<const LevelSummary> lv,
                                            const DiagnosisThresholds& th);
// From the server's own metrics: KV-cache limit, admission queueing, time spent outside the engine
// (in FindingKind order, at most one each).
void server_findings(std::span<const ServerEvidence> sv, const DiagnosisThresholds& th,
                     std::vector<Finding>& out);

}  // namespace tokperf
