#include "servermetrics/ttft_decomposition.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/clock.h"

namespace tokperf::servermetrics {
namespace {

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double median_of(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double client_ttft_ms(const RequestTimeline& t) {
  if (!t.ok() || t.token_events.empty() || t.send_ns == 0) return kNaN;
  return ns_to_ms(t.token_events.front().t_ns - t.send_ns);
}

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string bucket_text(const HistogramDelta* h, const char* what) {
  if (!h) return {};
  auto p = h->percentile(0.5);
  if (!p) return {};
  if (std::isinf(p->upper)) return fmt::format("{} P50 > {:g} s", what, p->lower);
  return fmt::format("{} P50 in [{:g}, {:g}] s", what, p->lower, p->upper);
}

}  // namespace

RequestDigest digest_of(const RequestTimeline& t, const RequestMetrics& m,
                        const ServerTimingOf& timing_of) {
  RequestDigest d;
  d.level = t.level;
  d.client_ttft_ms = client_ttft_ms(t);
  d.prompt_tokens = m.prompt_tokens;
  d.output_tokens = m.output_tokens;
  d.timing = timing_of(t);
  return d;
}

std::vector<RequestDigest> digests_of(std::span<const RequestTimeline> records,
                                      const ServerTimingOf& timing_of) {
  std::vector<RequestDigest> v;
  v.reserve(records.size());
  for (const auto& t : records) v.push_back(digest_of(t, compute_request_metrics(t), timing_of));
  return v;
}

LevelDecomposition decompose_level(std::span<const RequestTimeline> records, int level,
                                   const ServerWindow& w) {
  return decompose_level(digests_of(records), level, w);
}

LevelDecomposition decompose_level(std::span<const RequestDigest> requests, int level,
                                   const ServerWindow& w) {
  LevelDecomposition d;
  std::vector<double> ttft;
  for (const auto& t : requests) {
    if (t.level != level) continue;
    if (std::isfinite(t.client_ttft_ms)) ttft.push_back(t.client_ttft_ms);
    if (t.prompt_tokens > 0) d.client_prompt_tokens += t.prompt_tokens;
    if (t.output_tokens > 0) d.client_output_tokens += t.output_tokens;
  }
  d.client_requests = static_cast<int64_t>(ttft.size());
  d.client_ttft_mean_ms = mean_of(ttft);
  auto mean_ms = [](const HistogramDelta* h) { return h && h->count > 0 ? h->mean() * 1e3 : kNaN; };
  const HistogramDelta* server_ttft = w.h(Concept::kTtft);
  const HistogramDelta* queue = w.h(Concept::kQueue);
  const HistogramDelta* prefill = w.h(Concept::kPrefill);
  d.server_ttft_mean_ms = mean_ms(server_ttft);
  d.queue_mean_ms = mean_ms(queue);
  d.prefill_mean_ms = mean_ms(prefill);
  d.server_requests = server_ttft ? server_ttft->count : queue ? queue->count : 0;
  d.outside_server_ms = d.client_ttft_mean_ms - d.server_ttft_mean_ms;
  d.server_overhead_ms = d.server_ttft_mean_ms - d.queue_mean_ms - d.prefill_mean_ms;
  std::vector<std::pair<double, const char*>> parts = {{d.queue_mean_ms, "queue"},
                                                       {d.prefill_mean_ms, "prefill"},
                                                       {d.outside_server_ms, "outside_server"},
                                                       {d.server_overhead_ms, "server_overhead"}};
  double best = -1;
  for (const auto& [v, name] : parts) {
    if (std::isfinite(v) && v > best) {
      best = v;
      d.dominant = name;
    }
  }
  std::vector<std::string> res;
  for (auto s : {bucket_text(server_ttft, "TTFT"), bucket_text(queue, "queue"),
                 bucket_text(prefill, "prefill")}) {
    if (!s.empty()) res.push_back(s);
  }
  d.resolution = fmt::format("{}", fmt::join(res, "; "));
  return d;
}

std::optional<ServerRequestTiming> timing_from_record(const RequestTimeline& t) {
  const ServerTimings& r = t.server;
  if (r.prompt_ms < 0) return std::nullopt;
  ServerRequestTiming s;
  s.prompt_ms = r.prompt_ms;
  if (r.queue_ms >= 0) s.queue_ms = r.queue_ms;
  s.prompt_n = r.prompt_tokens;
  return s;
}

RequestDecomposition decompose_requests(std::span<const RequestTimeline> records, int level,
                                        const ServerTimingOf& timing_of) {
  return decompose_requests(digests_of(records, timing_of), level);
}

RequestDecomposition decompose_requests(std::span<const RequestDigest> requests, int level) {
  RequestDecomposition d;
  std::vector<double> ttft, prompt, queue, rest;
  bool all_queue = true, all_prompt_n = true;
  int64_t prompt_n = 0;
  for (const auto& t : requests) {
    if (t.level != level) continue;
    const double client = t.client_ttft_ms;
    if (!std::isfinite(client)) continue;
    const auto& s = t.timing;
    if (!s || !std::isfinite(s->prompt_ms)) continue;
    ttft.push_back(client);
    prompt.push_back(s->prompt_ms);
    d.server_prompt_ms_total += s->prompt_ms;
    if (s->prompt_n >= 0) {
      prompt_n += s->prompt_n;
    } else {
      all_prompt_n = false;
    }
    double r = client - s->prompt_ms;
    if (std::isfinite(s->queue_ms)) {
      queue.push_back(s->queue_ms);
      r -= s->queue_ms;
    } else {
      all_queue = false;
    }
    rest.push_back(r);
  }
  d.requests = static_cast<int64_t>(ttft.size());
  if (d.requests == 0) return d;
  d.client_ttft_mean_ms = mean_of(ttft);
  d.client_ttft_p50_ms = median_of(ttft);
  d.server_prompt_mean_ms = mean_of(prompt);
  d.server_prompt_p50_ms = median_of(prompt);
  if (all_queue) d.server_queue_mean_ms = mean_of(queue);
  if (all_prompt_n) d.server_prompt_n_total = prompt_n;
  d.remainder_mean_ms = mean_of(rest);
  d.remainder_p50_ms = median_of(rest);
  d.remainder_min_ms = *std::min_element(rest.begin(), rest.end());
  return d;
}

nlohmann::json level_decomposition_json(const LevelDecomposition& d) {
  return {{"client_requests", d.client_requests},
          {"client_ttft_mean_ms", num(d.client_ttft_mean_ms)},
          {"server_requests", d.server_requests},
          {"server_ttft_mean_ms", num(d.server_ttft_mean_ms)},
          {"queue_mean_ms", num(d.queue_mean_ms)},
          {"prefill_mean_ms", num(d.prefill_mean_ms)},
          {"outside_server_ms", num(d.outside_server_ms)},
          {"server_overhead_ms", num(d.server_overhead_ms)},
          {"dominant", d.dominant.empty() ? nlohmann::json() : nlohmann::json(d.dominant)},
          {"client_prompt_tokens", d.client_prompt_tokens},
          {"client_output_tokens", d.client_output_tokens},
          {"resolution", d.resolution}};
}

nlohmann::json request_decomposition_json(const RequestDecomposition& d) {
  return {
      {"requests", d.requests},
      {"client_ttft_mean_ms", num(d.client_ttft_mean_ms)},
      {"client_ttft_p50_ms", num(d.client_ttft_p50_ms)},
      {"server_prompt_mean_ms", num(d.server_prompt_mean_ms)},
      {"server_prompt_p50_ms", num(d.server_prompt_p50_ms)},
      {"server_queue_mean_ms", num(d.server_queue_mean_ms)},
      {"remainder_mean_ms", num(d.remainder_mean_ms)},
      {"remainder_p50_ms", num(d.remainder_p50_ms)},
      {"remainder_min_ms", num(d.remainder_min_ms)},
      {"server_prompt_ms_total", d.server_prompt_ms_total},
      {"server_prompt_n_total",
       d.server_prompt_n_total >= 0 ? nlohmann::json(d.server_prompt_n_total) : nlohmann::json()}};
}

std::string describe_decomposition(const LevelDecomposition& d) {
  if (!std::isfinite(d.client_ttft_mean_ms)) return {};
  std::string s = fmt::format("TTFT {:.1f} ms =", d.client_ttft_mean_ms);
  bool any = false;
  auto add = [&](double v, const char* name) {
    if (!std::isfinite(v)) return;
    fmt::format_to(std::back_inserter(s), "{} {:.1f} {}", any ? " +" : "", v, name);
    any = true;
  };
  add(d.outside_server_ms, "outside server");
  add(d.queue_mean_ms, "queue");
  add(d.prefill_mean_ms, "prefill");
  add(d.server_overhead_ms, "server overhead");
  if (!any) return {};
  s += " (means)";
  return s;
}

}  // namespace tokperf::servermetrics
