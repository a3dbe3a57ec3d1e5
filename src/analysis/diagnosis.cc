#include "analysis/diagnosis.h"

#include "analysis/diagnosis_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/units.h"
#include "metrics/stats.h"

namespace tokperf {
namespace {

bool finite(double v) { return std::isfinite(v); }

std::string load_name(const LevelSummary& s, size_t index) {
  if (!s.params.label.empty()) return s.params.label;
  return fmt::format("level {}", index);
}

// TPOT P95 when measured, else ITL P95: servers that report one token per request have no TPOT.
double decode_p95(const LevelSummary& s) { return finite(s.tpot.p95) ? s.tpot.p95 : s.itl.p95; }
double decode_p50(const LevelSummary& s) { return finite(s.itl.p50) ? s.itl.p50 : s.tpot.p50; }

std::vector<const RequestSample*> measured_ok(std::span<const RequestSample> rs, int level) {
  std::vector<const RequestSample*> out;
  for (const RequestSample& r : rs) {
    if (r.measured && r.ok && (level < 0 || r.level == level)) out.push_back(&r);
  }
  return out;
}

std::optional<Finding> queueing(std::span<const LevelSummary> lv, const DiagnosisThresholds& th) {
  // Across a sweep: compare the lightest and heaviest levels that measured anything.
  size_t lo = lv.size(), hi = lv.size();
  for (size_t i = 0; i < lv.size(); ++i) {
    if (lv[i].ttft.count == 0) continue;
    if (lo == lv.size() || level_load(lv[i], i) < level_load(lv[lo], lo)) lo = i;
    if (hi == lv.size() || level_load(lv[i], i) > level_load(lv[hi], hi)) hi = i;
  }
  if (lo == lv.size()) return std::nullopt;
  Finding f{FindingKind::kQueueing, Severity::kWarning, "", "", {}};
  f.remedies = {
      "scale out (more replicas) or route to less loaded ones",
      "cap concurrency at admission and answer \"busy\" rather than let everyone slow down",
      "cap the maximum output length so slots free up sooner",
      "give short requests priority; consider prefill/decode disaggregation"};
  const LevelSummary& a = lv[lo];
  const LevelSummary& b = lv[hi];
  if (lo != hi && finite(a.ttft.p95) && finite(b.ttft.p95) &&
      b.ttft.p95 >= th.queue_ttft_growth * a.ttft.p95 &&
      b.ttft.p95 - a.ttft.p95 >= th.queue_ttft_min_rise_ms && finite(decode_p50(a)) &&
      finite(decode_p50(b)) && decode_p50(b) < th.flat_itl_growth * decode_p50(a)) {
    f.title = "Queueing: TTFT P95 rises with load while ITL stays flat";
    f.evidence = fmt::format(
        "TTFT P95 rose from {} at {} to {} at {} (x{:.1f}) while ITL P50 went {} -> {} (x{:.2f}): "
        "requests wait for a slot before prefill, decoding itself is not slower.",
        format_ms(a.ttft.p95), load_name(a, lo), format_ms(b.ttft.p95), load_name(b, hi),
        b.ttft.p95 / a.ttft.p95, format_ms(decode_p50(a)), format_ms(decode_p50(b)),
        decode_p50(b) / decode_p50(a));
    return f;
  }
  // Within one level: a TTFT tail far above its median with a steady ITL.
  for (size_t i = 0; i < lv.size(); ++i) {
    const LevelSummary& s = lv[i];
    if (!finite(s.ttft.p50) || !finite(s.ttft.p95) || !finite(s.itl.p50) || !finite(s.itl.p95))
      continue;
    if (s.ttft.p95 >= th.spike_ttft_p95_over_p50 * s.ttft.p50 &&
        s.ttft.p95 - s.ttft.p50 >= th.queue_ttft_min_rise_ms &&
        s.itl.p95 < th.spike_ttft_p95_over_p50 * s.itl.p50) {
      f.title = "Queueing: TTFT P95 spikes while ITL is stable";
      f.evidence = fmt::format(
          "At {}: TTFT P95 {} is x{:.1f} its P50 {}, while ITL P95 {} stays near its P50 {}: "
          "some requests wait in a queue before their prefill starts.",
          load_name(s, i), format_ms(s.ttft.p95), s.ttft.p95 / s.ttft.p50, format_ms(s.ttft.p50),
          format_ms(s.itl.p95), format_ms(s.itl.p50));
      return f;
    }
  }
  return std::nullopt;
}

// Decode-bound and both-bound findings look at the level with the worst decode tail.
void decode_findings(std::span<const LevelSummary> lv, const DiagnosisThresholds& th,
                     std::vector<Finding>& out) {
  size_t worst = lv.size();
  for (size_t i = 0; i < lv.size(); ++i) {
    if (!finite(decode_p95(lv[i]))) continue;
    if (worst == lv.size() || decode_p95(lv[i]) > decode_p95(lv[worst])) worst = i;
  }
  if (worst == lv.size()) return;
  const LevelSummary& s = lv[worst];
  double d95 = decode_p95(s);
  if (d95 <= th.tpot_p95_high_ms) return;
  const char* what = finite(s.tpot.p95) ? "TPOT" : "ITL";
  if (finite(s.ttft.p95) && s.ttft.p95 <= th.ttft_p95_high_ms) {
    out.push_back(
        {FindingKind::kDecodeBandwidth,
         Severity::kWarning,
         "Decode is slow while TTFT is fine: memory-bandwidth-bound decoding",
         fmt::format("At {}: {} P95 {} exceeds {} (about {:.1f} tokens/s per user) while TTFT P95 "
                     "{} is within {}: every decode step re-reads the weights and KV cache.",
                     load_name(s, worst), what, format_ms(d95), format_ms(th.tpot_p95_high_ms),
                     1000.0 / d95, format_ms(s.ttft.p95), format_ms(th.ttft_p95_high_ms)),
         {"quantize weights (INT8 halves, INT4 quarters the bytes read per token) or the KV cache "
          "(FP8)",
          "run fewer concurrent sequences (smaller decode batch)",
          "use a GPU with more memory bandwidth", "use a smaller model"}});
  } else if (finite(s.ttft.p95)) {
    out.push_back(
        {FindingKind::kComputeAndBandwidth,
         Severity::kWarning,
         "Both TTFT and decode are slow: compute and bandwidth both short",
         fmt::format("At {}: TTFT P95 {} exceeds {} and {} P95 {} exceeds {}.", load_name(s, worst),
                     format_ms(s.ttft.p95), format_ms(th.ttft_p95_high_ms), what, format_ms(d95),
                     format_ms(th.tpot_p95_high_ms)),
         {"check prompt lengths first: long prompts drive TTFT (prefill cost grows with them)",
          "then the batch size: large decode batches drive ITL",
          "if both are reasonable, the deployment is under-provisioned: more or faster GPUs"}});
  }
}

std::optional<Finding> stalls(std::span<const LevelSummary> lv, std::span<const RequestSample> rs,
                              const DiagnosisThresholds& th) {
  std::vector<double> gaps;
  size_t requests_with_long_gap = 0;
  for (const RequestSample* r : measured_ok(rs, -1)) {
    bool long_gap = false;
    for (double g : r->itl_ms) {
      gaps.push_back(g);
      long_gap = long_gap || g >= th.stall_gap_ms;
    }
    requests_with_long_gap += long_gap;
  }
  DistStats d = compute_dist_stats(gaps);
  if (d.count == 0) {  // no records: fall back to the worst level's pooled statistics
    for (const LevelSummary& s : lv) {
      if (s.itl.count > 0 && (d.count == 0 || s.itl.p99 > d.p99)) d = s.itl;
    }
  }
  if (d.count == 0 || !finite(d.p50) || d.p50 <= 0) return std::nullopt;
  bool tail =
      d.p99 >= th.stall_itl_p99_over_p50 * d.p50 && d.p99 - d.p50 >= th.stall_min_p99_rise_ms;
  bool gap = d.max >= th.stall_gap_ms && d.max >= th.stall_itl_p99_over_p50 * d.p50;
  if (!tail && !gap) return std::nullopt;
  std::string affected = requests_with_long_gap > 0
                             ? fmt::format("; {} request(s) had a gap of {} or more",
                                           requests_with_long_gap, format_ms(th.stall_gap_ms))
                             : "";
  return Finding{
      FindingKind::kStalls,
      Severity::kWarning,
      "Stalls: occasional long pauses in the middle of responses",
      fmt::format("ITL P50 {} but P99 {} (x{:.0f}) and the longest gap {}{}: users see the text "
                  "freeze even though the average looks fine.",
                  format_ms(d.p50), format_ms(d.p99), d.p99 / d.p50, format_ms(d.max), affected),
      {"look for \"preempted\" / \"swap\" in the engine log: a full KV cache evicts sequences and "
       "re-prefills them later; give the KV cache more memory or run fewer sequences at once",
       "long prefills interleaved with decoding freeze other streams: enable chunked prefill or "
       "split prefill and decode (disaggregation), cap prompt length"}};
}

std::optional<Finding> drift(std::span<const LevelSummary> lv, std::span<const RequestSample> rs,
                             const DiagnosisThresholds& th) {
  for (size_t i = 0; i < lv.size(); ++i) {
    std::vector<const RequestSample*> v =
        measured_ok(rs, lv[i].params.level < 0 ? -1 : lv[i].params.level);
    std::sort(v.begin(), v.end(), [](const RequestSample* a, const RequestSample* b) {
      return a->start_unix_us != b->start_unix_us ? a->start_unix_us < b->start_unix_us
                                                  : a->seq < b->seq;
    });
    size_t third = v.size() / 3;
    if (third < th.drift_min_samples) continue;
    auto p95_of = [&](size_t from, size_t to, bool itl) {
      std::vector<double> x;
      for (size_t k = from; k < to; ++k) {
        if (itl)
          x.insert(x.end(), v[k]->itl_ms.begin(), v[k]->itl_ms.end());
        else
          x.push_back(v[k]->ttft_ms);
      }
      return percentile(std::move(x), 95);
    };
    double t0 = p95_of(0, third, false), t1 = p95_of(v.size() - third, v.size(), false);
    double i0 = p95_of(0, third, true), i1 = p95_of(v.size() - third, v.size(), true);
    auto worse = [&](double a, double b) {
      return finite(a) && finite(b) && b >= th.drift_factor * a && b - a >= th.drift_min_rise_ms;
    };
    if (!worse(t0, t1) && !worse(i0, i1)) continue;
    return Finding{
        FindingKind::kDrift,
        Severity::kWarning,
        "Drift: the service got slower as the run went on",
        fmt::format("At {}: TTFT P95 {} in the first third of the requests vs {} in the last "
                    "third; ITL P95 {} vs {} ({} requests per third).",
                    load_name(lv[i], i), format_ms(t0), format_ms(t1), format_ms(i0), format_ms(i1),
                    third),
        {"watch long runs (10 min or more): memory fragmentation and growth degrade the later part",
         "check the engine's KV-cache usage and host memory over time; restart or tune its memory "
         "settings",
         "make sure the load is steady: a growing backlog also looks like drift"}};
  }
  return std::nullopt;
}

}  // namespace

const char* finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::kQueueing:
      return "queueing";
    case FindingKind::kDecodeBandwidth:
      return "decode_bandwidth";
    case FindingKind::kComputeAndBandwidth:
      return "compute_and_bandwidth";
    case FindingKind::kStalls:
      return "stalls";
    case FindingKind::kDrift:
      return "drift";
    case FindingKind::kPrefillRate:
      return "prefill_rate";
    case FindingKind::kKvCacheTax:
      return "kv_cache_tax";
    case FindingKind::kClientBound:
      return "client_bound";
    case FindingKind::kLateVisibleOutput:
      return "late_visible_output";
    case FindingKind::kKvCacheLimit:
      return "kv_cache_limit";
    case FindingKind::kAdmissionQueueing:
      return "admission_queueing";
    case FindingKind::kOutsideEngine:
      return "outside_engine";
  }
  return "unknown";
}

const char* severity_name(Severity s) { return s == Severity::kInfo ? "info" : "warning"; }

double level_load(const LevelSummary& s, size_t index) {
  if (s.params.concurrency > 0) return s.params.concurrency;
  if (finite(s.params.target_rate_rps)) return s.params.target_rate_rps;
  return static_cast<double>(index);
}

std::vector<Finding> diagnose(const DiagnosisInput& in, const DiagnosisThresholds& th) {
  std::vector<Finding> out;
  if (auto f = queueing(in.levels, th)) out.push_back(std::move(*f));
  decode_findings(in.levels, th, out);
  if (auto f = stalls(in.levels, in.requests, th)) out.push_back(std::move(*f));
  if (auto f = drift(in.levels, in.requests, th)) out.push_back(std::move(*f));
  if (auto f = prefill_rate_finding(in.levels, in.requests, th)) out.push_back(std::move(*f));
  if (auto f = kv_cache_tax_finding(in.requests, th)) out.push_back(std::move(*f));
  if (auto f = client_bound_finding(in.health)) out.push_back(std::move(*f));
  if (auto f = late_visible_finding(in.levels, th)) out.push_back(std::move(*f));
  server_findings(in.server, th, out);
  return out;
}

}  // namespace tokperf
