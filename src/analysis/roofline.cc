#include "analysis/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.h"
#include "metrics/stats.h"
#include "sim/cost_model.h"

namespace tokperf {
namespace {

bool finite(double v) { return std::isfinite(v); }

double ratio(double num, double den) {
  return finite(num) && finite(den) && den > 0 ? num / den : RooflineLevel::kNaN;
}

std::string pct(double f) { return finite(f) ? fmt::format("{:.0f}%", 100 * f) : "-"; }

}  // namespace

Result<std::optional<sim::DeploymentFlags>> recorded_deployment(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("deployment") || config["deployment"].is_null())
    return std::optional<sim::DeploymentFlags>{};
  const nlohmann::json& d = config["deployment"];
  if (!d.is_object()) return Error{"summary.json config.deployment is not an object"};
  sim::DeploymentFlags f;
  for (auto [key, field] :
       {std::pair{"model", &f.model}, std::pair{"model_config", &f.model_config},
        std::pair{"gpu", &f.gpu}, std::pair{"gpu_spec", &f.gpu_spec}, std::pair{"dtype", &f.dtype},
        std::pair{"kv_dtype", &f.kv_dtype}}) {
    if (!d.contains(key)) continue;
    if (!d[key].is_string())
      return Error{fmt::format("summary.json config.deployment.{} is not a string", key)};
    *field = d[key].get<std::string>();
  }
  if (d.contains("tp")) {
    if (!d["tp"].is_number_integer() || d["tp"].get<int>() < 1)
      return Error{"summary.json config.deployment.tp is not a positive integer"};
    f.tp = d["tp"].get<int>();
  }
  return std::optional<sim::DeploymentFlags>{f};
}

Result<Roofline> compute_roofline(const sim::DeploymentFlags& flags, const std::string& source,
                                  std::span<const LevelSummary> levels,
                                  std::span<const RequestSample> requests,
                                  double fallback_prompt_tokens) {
  Result<sim::Deployment> dep = sim::resolve_deployment(flags);
  if (!dep) return Error{dep.error()};
  sim::CostModel cost(*dep, sim::CostKnobs{});
  const sim::Deployment& d = cost.deployment();
  const double peak_bw = d.gpu.memory_bw_bytes_per_s * d.tp;
  const double peak_flops = d.gpu.matmul_flops(d.weight_dtype) * d.tp;
  const double weight_bytes = cost.params().active * sim::dtype_bytes(d.weight_dtype);
  Roofline r;
  r.source = source;
  r.deployment =
      fmt::format("{} {} weights, {} KV on {} x {}", d.model.name, sim::dtype_name(d.weight_dtype),
                  sim::dtype_name(d.kv_dtype), d.tp, d.gpu.name);
  r.peak_bandwidth_gbps = peak_bw / 1e9;
  r.weight_gb = weight_bytes / 1e9;
  for (const LevelSummary& s : levels) {
    RooflineLevel l;
    l.label = s.params.label;
    std::vector<double> prompts, outputs;
    for (const RequestSample& q : requests) {
      if (!q.measured || !q.ok || (s.params.level >= 0 && q.level != s.params.level)) continue;
      if (q.prompt_tokens >= 0) prompts.push_back(static_cast<double>(q.prompt_tokens));
      outputs.push_back(static_cast<double>(q.output_tokens));
    }
    l.prompt_tokens = prompts.empty() ? fallback_prompt_tokens : percentile(prompts, 50);
    double mean_out = 0;
    for (double o : outputs) mean_out += o / static_cast<double>(outputs.size());
    l.context_tokens = l.prompt_tokens + mean_out / 2;
    if (s.params.concurrency > 0) {
      l.batch = s.params.concurrency;
    } else if (finite(s.request_throughput_rps) && finite(s.e2e.p50)) {
      l.batch = std::max(1.0, s.request_throughput_rps * s.e2e.p50 / 1000);  // Little's law
    }
    // One decode step reads the (active) weights once for the whole batch and each sequence's KV
    // cache; it computes 2 x active params FLOPs per sequence.
    l.step_bytes = weight_bytes + l.batch * l.context_tokens * cost.kv_bytes_per_token();
    double compute_s = l.batch * 2 * cost.params().active / peak_flops;
    l.decode_bound_ms = 1000 * std::max(l.step_bytes / peak_bw, compute_s);
    l.tpot_p50_ms = finite(s.tpot.p50) ? s.tpot.p50 : s.itl.p50;
    l.bandwidth_gbps = ratio(l.step_bytes / 1e9 * 1000, l.tpot_p50_ms);
    l.bandwidth_fraction = ratio(l.bandwidth_gbps, r.peak_bandwidth_gbps);
    l.decode_fraction = ratio(l.decode_bound_ms, l.tpot_p50_ms);
    int64_t prompt = static_cast<int64_t>(std::llround(l.prompt_tokens));
    if (prompt > 0) l.prefill_bound_ms = 1000 * cost.prefill_bound_s(prompt);
    l.ttft_p50_ms = s.ttft.p50;
    l.prefill_fraction = ratio(l.prefill_bound_ms, l.ttft_p50_ms);
    r.levels.push_back(std::move(l));
  }
  return r;
}

std::string render_roofline_text(const Roofline& r) {
  std::string out = fmt::format(
      "roofline ({}): {}; peak memory bandwidth {:.0f} GB/s, {:.1f} GB of weights read per "
      "token\n",
      r.source, r.deployment, r.peak_bandwidth_gbps, r.weight_gb);
  out += fmt::format("  {:<12} {:>6} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>9}\n", "level",
                     "batch", "TPOT P50", "decode LB", "of bound", "GB/s (BW%)", "TTFT P50",
                     "prefill LB", "of bound");
  for (const RooflineLevel& l : r.levels) {
    out += fmt::format(
        "  {:<12} {:>6.1f} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>9}\n", l.label, l.batch,
        format_ms(l.tpot_p50_ms), format_ms(l.decode_bound_ms), pct(l.decode_fraction),
        finite(l.bandwidth_gbps)
            ? fmt::format("{:.0f} ({})", l.bandwidth_gbps, pct(l.bandwidth_fraction))
            : "-",
        format_ms(l.ttft_p50_ms), format_ms(l.prefill_bound_ms), pct(l.prefill_fraction));
  }
  return out;
}

}  // namespace tokperf
