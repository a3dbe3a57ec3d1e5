#include "analysis/diagnosis_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.h"
#include "metrics/stats.h"

namespace tokperf {

std::optional<Finding> prefill_rate_finding(std::span<const LevelSummary> lv,
                                            std::span<const RequestSample> rs,
                                            const DiagnosisThresholds& th) {
  // The lightest level has the least queueing, so its TTFT is closest to network + prefill.
  int level = -1;
  for (size_t i = 0; i < lv.size(); ++i) {
    if (level < 0 || level_load(lv[i], i) < level_load(lv[static_cast<size_t>(level)], level))
      level = static_cast<int>(i);
  }
  int want = level >= 0 ? lv[static_cast<size_t>(level)].params.level : -1;
  std::vector<double> x, y;
  for (const RequestSample& r : rs) {
    if (!r.measured || !r.ok || r.prompt_tokens < 0 || !std::isfinite(r.ttft_ms)) continue;
    if (want >= 0 && r.level != want) continue;
    x.push_back(static_cast<double>(r.prompt_tokens));
    y.push_back(r.ttft_ms);
  }
  if (x.size() < th.prefill_min_samples) return std::nullopt;
  auto [mn, mx] = std::minmax_element(x.begin(), x.end());
  if (*mn <= 0 || *mx < th.prefill_min_spread * *mn) return std::nullopt;
  double n = static_cast<double>(x.size()), sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  double mx_ = sx / n, my = sy / n, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx_) * (x[i] - mx_);
    sxy += (x[i] - mx_) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return std::nullopt;
  double slope_ms_per_token = sxy / sxx;
  double overhead_ms = my - slope_ms_per_token * mx_;
  double r2 = sxy * sxy / (sxx * syy);
  if (slope_ms_per_token <= 0 || r2 < th.prefill_min_r2) return std::nullopt;
  return Finding{
      FindingKind::kPrefillRate,
      Severity::kInfo,
      "TTFT grows with prompt length: prefill rate fitted",
      fmt::format("TTFT ~ {} + prompt tokens / {:.0f} tokens/s ({:.2f} ms per 1k tokens; R^2 "
                  "{:.2f}, {} requests, prompts {:.0f}-{:.0f} tokens).",
                  format_ms(overhead_ms), 1000.0 / slope_ms_per_token, slope_ms_per_token * 1000,
                  r2, x.size(), *mn, *mx),
      {"prefill costs about 2 x parameters x prompt tokens FLOPs: shorter prompts cut TTFT "
       "directly (summarising an agent's history took one TTFT from 2.8 s back to 0.8 s)",
       "reuse shared prefixes (prefix caching) so repeated system prompts are not re-prefilled",
       "the fixed overhead is network + gateway + scheduling: compare it with the engine's own "
       "metrics"}};
}

std::optional<Finding> kv_cache_tax_finding(std::span<const RequestSample> rs,
                                            const DiagnosisThresholds& th) {
  std::vector<double> early, late;
  size_t requests = 0, longest = 0;
  for (const RequestSample& r : rs) {
    if (!r.measured || !r.ok || r.itl_ms.size() < th.kv_tax_min_gaps) continue;
    size_t n = r.itl_ms.size(), q = n / 4;
    early.insert(early.end(), r.itl_ms.begin(), r.itl_ms.begin() + static_cast<ptrdiff_t>(q));
    late.insert(late.end(), r.itl_ms.end() - static_cast<ptrdiff_t>(q), r.itl_ms.end());
    ++requests;
    longest = std::max(longest, n + 1);
  }
  if (requests == 0) return std::nullopt;
  double e = percentile(early, 50), l = percentile(late, 50);
  if (!std::isfinite(e) || !std::isfinite(l) || l < th.kv_tax_growth * e ||
      l - e < th.kv_tax_min_rise_ms)
    return std::nullopt;
  return Finding{
      FindingKind::kKvCacheTax,
      Severity::kInfo,
      "ITL grows along long responses: the KV-cache read tax",
      fmt::format("Median ITL {} over the first quarter of long responses vs {} over the last "
                  "quarter (x{:.2f}; {} responses of {}+ tokens, up to {}): each decode step "
                  "reads the whole KV cache, which grows with every token.",
                  format_ms(e), format_ms(l), l / e, requests, th.kv_tax_min_gaps + 1, longest),
      {"models with GQA/MQA keep far fewer KV heads and shrink the cache read",
       "an FP8 KV cache halves the bytes read per step",
       "cap the output length or context where long answers are not needed"}};
}

std::optional<Finding> client_bound_finding(const ClientHealth* h) {
  if (h == nullptr) return std::nullopt;
  std::vector<std::string> w = h->warnings.empty() ? client_health_warnings(*h) : h->warnings;
  if (w.empty()) return std::nullopt;
  std::string evidence;
  for (const std::string& s : w) evidence += (evidence.empty() ? "" : "; ") + s;
  evidence += ".";
  return Finding{FindingKind::kClientBound,
                 Severity::kWarning,
                 "The measuring client itself may have been the bottleneck",
                 evidence,
                 {"rerun with fewer streams per client process or on a less loaded machine",
                  "split the load over several tokperf processes and merge their results",
                  "until then, treat TTFT and ITL as upper bounds: late timestamps inflate them"}};
}

std::optional<Finding> late_visible_finding(std::span<const LevelSummary> lv,
                                            const DiagnosisThresholds& th) {
  for (size_t i = 0; i < lv.size(); ++i) {
    const LevelSummary& s = lv[i];
    if (!std::isfinite(s.ttfo.p50) || !std::isfinite(s.ttft.p50) || s.ttft.p50 <= 0) continue;
    double gap = s.ttfo.p50 - s.ttft.p50;
    if (gap < th.late_visible_min_ms || s.ttfo.p50 < th.late_visible_ratio * s.ttft.p50) continue;
    return Finding{
        FindingKind::kLateVisibleOutput,
        Severity::kWarning,
        "First visible text arrives long after the first token",
        fmt::format("At {}: TTFO P50 {} vs TTFT P50 {} ({} later): the first tokens are reasoning "
                    "or other invisible output, so users wait longer than TTFT suggests.",
                    s.params.label.empty() ? fmt::format("level {}", i) : s.params.label,
                    format_ms(s.ttfo.p50), format_ms(s.ttft.p50), format_ms(gap)),
        {"show the reasoning stream or a progress cue while the model thinks",
         "lower the reasoning effort or turn thinking off on latency-sensitive paths",
         "a fast first token that is boilerplate (\"Sure, let me...\") is fake speed: measure "
         "time to the first meaningful output"}};
  }
  return std::nullopt;
}

void server_findings(std::span<const ServerEvidence> sv, const DiagnosisThresholds& th,
                     std::vector<Finding>& out) {
  auto fin = [](double v) { return std::isfinite(v); };
  // KV cache: any preemption, or usage at the top.
  std::vector<std::string> kv;
  for (const ServerEvidence& e : sv) {
    const bool preempted = fin(e.preemptions) && e.preemptions > 0;
    const bool full = fin(e.kv_usage_max) && e.kv_usage_max >= th.kv_usage_high;
    if (!preempted && !full) continue;
    std::string part = fmt::format("{}:", e.label);
    if (preempted) part += fmt::format(" {:.0f} preemptions", e.preemptions);
    if (fin(e.kv_usage_max)) part += fmt::format(" KV usage peaked at {:.0f}%", e.kv_usage_max * 100);
    kv.push_back(part);
  }
  if (!kv.empty()) {
    out.push_back(Finding{
        FindingKind::kKvCacheLimit, Severity::kWarning,
        "KV cache is the limit: the engine preempts or runs its KV cache full (server metrics)",
        fmt::format("{}", fmt::join(kv, "; ")),
        {"lower the concurrency (or the engine's max_num_seqs) so running sequences fit in the "
         "KV cache",
         "give the KV cache more memory: raise gpu_memory_utilization, quantise it (fp8 KV), cap "
         "max_model_len",
         "spread the load: tensor parallelism over more GPUs, or more replicas",
         "share prompt blocks with prefix caching when prompts repeat"}});
  }
  // Admission: requests waiting in the engine and queue time the largest part of TTFT.
  for (const ServerEvidence& e : sv) {
    if (!fin(e.queue_mean_ms) || !fin(e.client_ttft_mean_ms)) continue;
    const bool waiting = (fin(e.waiting_max) && e.waiting_max > 0) ||
                         (fin(e.waiting_mean) && e.waiting_mean > 0);
    const bool dominant = e.queue_mean_ms >= th.queue_share * e.client_ttft_mean_ms &&
                          (!fin(e.prefill_mean_ms) || e.queue_mean_ms > e.prefill_mean_ms) &&
                          (!fin(e.outside_server_ms) || e.queue_mean_ms > e.outside_server_ms);
    if (!waiting || !dominant) continue;
    out.push_back(Finding{
        FindingKind::kAdmissionQueueing, Severity::kWarning,
        "Admission queueing: requests wait in the engine's queue and that wait dominates TTFT "
        "(server metrics)",
        fmt::format("{}: queue {:.0f} ms of a {:.0f} ms client TTFT (mean), prefill {} ms; "
                    "{:.1f} requests waiting on average (max {:.0f}) on {}",
                    e.label, e.queue_mean_ms, e.client_ttft_mean_ms,
                    fin(e.prefill_mean_ms) ? fmt::format("{:.0f}", e.prefill_mean_ms) : "?",
                    fin(e.waiting_mean) ? e.waiting_mean : 0.0,
                    fin(e.waiting_max) ? e.waiting_max : 0.0, e.engine),
        {"offer less load than this level: the knee is below it",
         "raise the engine's batch limits (max_num_seqs, max_num_batched_tokens) if the KV cache "
         "has room",
         "add replicas behind the balancer",
         "admission control: refuse early (429) instead of queueing past the TTFT objective"}});
    break;
  }
  // Outside the engine: the gap between the client's and the server's TTFT dominates, or the
  // server's TTFT is fine while the client's is not.
  for (const ServerEvidence& e : sv) {
    if (!fin(e.outside_server_ms) || !fin(e.client_ttft_mean_ms)) continue;
    const bool dominant = e.outside_server_ms >= th.outside_min_ms &&
                          e.outside_server_ms >= th.outside_share * e.client_ttft_mean_ms;
    if (!dominant) continue;
    const bool server_fine =
        fin(e.server_ttft_mean_ms) && e.server_ttft_mean_ms < th.ttft_p95_high_ms &&
        e.client_ttft_mean_ms >= th.ttft_p95_high_ms;
    out.push_back(Finding{
        FindingKind::kOutsideEngine, Severity::kWarning,
        server_fine ? "Outside the engine: the server's TTFT is fine while the client's is not"
                    : "Outside the engine: most of TTFT passes between the client and the engine "
                      "(network, gateway, or the client)",
        fmt::format("{}: client TTFT {:.0f} ms, server TTFT {:.0f} ms (means): {:.0f} ms outside "
                    "the engine on {}",
                    e.label, e.client_ttft_mean_ms, e.server_ttft_mean_ms, e.outside_server_ms,
                    e.engine),
        {"measure again from next to the engine (same host, direct URL) to split network from "
         "gateway",
         "check gateways and load balancers: response buffering of streams, connection limits, "
         "TLS set-up, retries",
         "check the client's own health (event-loop lag, CPU) in this report",
         "for a remote client, compare with the network's round-trip time"}});
    break;
  }
}

}  // namespace tokperf
