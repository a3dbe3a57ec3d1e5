// Roofline efficiency: measured TPOT against the decode lower bound (the share of the GPUs' memory
// bandwidth the service achieved) and TTFT against the prefill lower bound, when the run says what
// it measured (bench's built-in engine records its deployment; for a real server the user states
// it: `tokperf report --gpu ... --model ... --dtype ... --tp ...`). The bounds are the cost
// model's textbook ones (sim/cost_model.h, SOURCE_NOTES.md "Arithmetic"); definitions and caveats:
// docs/REPORTS.md ("Roofline").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/request_sample.h"
#include "core/result.h"
#include "metrics/aggregate.h"
#include "sim/deployment.h"

namespace tokperf {

struct RooflineLevel {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string label;
  double batch = 1;               // sequences decoding together: concurrency, else rate x E2E P50
  double prompt_tokens = 0;       // median over the level's requests
  double context_tokens = 0;      // mean KV context while decoding: prompt + half the output
  double step_bytes = 0;          // weights + the batch's KV cache, read once per decode step
  double decode_bound_ms = kNaN;  // one decode step at this batch, at 100% of peak
  double tpot_p50_ms = kNaN;
  double bandwidth_gbps = kNaN;      // step_bytes / TPOT P50 (1 GB = 1e9 bytes)
  double bandwidth_fraction = kNaN;  // of the peak over all TP GPUs
  double decode_fraction = kNaN;     // decode_bound / TPOT P50
  double prefill_bound_ms = kNaN;    // the whole prompt in one forward pass
  double ttft_p50_ms = kNaN;
  double prefill_fraction = kNaN;  // prefill_bound / TTFT P50 (> 1: prefix cache or queueless)
};

struct Roofline {
  std::string source;      // "simulated" (bench's built-in engine) or "declared" (user flags)
  std::string deployment;  // e.g. "Llama-2-7B fp16 weights, fp16 KV on 1 x NVIDIA A100 80GB"
  double peak_bandwidth_gbps = 0;  // all TP GPUs together
  double weight_gb = 0;            // bytes one token's forward pass reads, in GB
  std::vector<RooflineLevel> levels;
};

// The deployment recorded in a run's config (config["deployment"], see load/bench_config.h).
// nullopt when the run recorded none; an error names the malformed field.
Result<std::optional<sim::DeploymentFlags>> recorded_deployment(const nlohmann::json& config);

// The roofline of every level. `fallback_prompt_tokens` is used when the records carry no prompt
// length (config prompt.input_tokens). Fails when the deployment does not resolve (the message
// names the flag and what is accepted) or does not fit in the GPUs' memory.
Result<Roofline> compute_roofline(const sim::DeploymentFlags& flags, const std::string& source,
                                  std::span<const LevelSummary> levels,
                                  std::span<const RequestSample> requests,
                                  double fallback_prompt_tokens);

// Console text: one header line and one line per level.
std::string render_roofline_text(const Roofline& r);

}  // namespace tokperf
