#include "sim/serving_metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace tokperf::sim {
namespace {

// vLLM V1's bucket bounds (vllm/v1/metrics/loggers.py).
std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> itl_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}
std::vector<double> e2e_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

// Prometheus renders bounds like Python's float repr: 0.001, 1.0, 2560.0.
std::string bound_text(double b) {
  std::string s = fmt::format("{}", b);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void histogram(std::string& out, const char* name, const char* help, const PromHistogram& h,
               const std::string& label) {
  header(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.buckets()[i];
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{},le=\"{}\"}} {}\n", name, label,
                   bound_text(h.bounds()[i]), cumulative);
  }
  cumulative += h.buckets().back();
  fmt::format_to(std::back_inserter(out), "{}_bucket{{{},le=\"+Inf\"}} {}\n", name, label,
                 cumulative);
  fmt::format_to(std::back_inserter(out), "{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, label,
                 h.sum(), name, label, h.count());
}

}  // namespace

PromHistogram::PromHistogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void PromHistogram::observe(double value) {
  // "le": a value equal to a bound belongs to that bucket.
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

ServingMetrics::ServingMetrics()
    : ttft_s(ttft_buckets()),
      itl_s(itl_buckets()),
      tpot_s(itl_buckets()),
      e2e_s(e2e_buckets()),
      queue_s(e2e_buckets()),
      prefill_s(e2e_buckets()),
      decode_s(e2e_buckets()),
      inference_s(e2e_buckets()) {}

std::string render_prometheus(const ServingMetrics& m, const EngineStats& engine,
                              const std::string& served_model) {
  const std::string label = fmt::format("model_name=\"{}\"", served_model);
  std::string out;
  out.reserve(8192);
  auto gauge = [&](const char* name, const char* help, double v) {
    header(out, name, "gauge", help);
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, label, v);
  };
  auto counter = [&](const char* name, const char* help, int64_t v) {
    header(out, name, "counter", help);
    fmt::format_to(std::back_inserter(out), "{}_total{{{}}} {}\n", name, label, v);
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        static_cast<double>(engine.running));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        static_cast<double>(engine.waiting));
  const double usage = engine.kv_blocks_total > 0 ? static_cast<double>(engine.kv_blocks_used) /
                                                        static_cast<double>(engine.kv_blocks_total)
                                                  : 0.0;
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage);
  gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", usage);
  counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.",
          engine.preemptions_total);
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", m.prompt_tokens_total);
  counter("vllm:generation_tokens", "Number of generation tokens processed.",
          m.generation_tokens_total);
  header(out, "vllm:request_success", "counter", "Count of successfully processed requests.");
  for (const auto& [reason, n] : {std::pair<const char*, int64_t>{"length", m.success_length},
                                  {"stop", m.success_stop},
                                  {"abort", m.aborted}}) {
    fmt::format_to(std::back_inserter(out),
                   "vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", label, reason,
                   n);
  }
  counter("vllm:prefix_cache_queries", "Prefix-cache queries, in tokens.",
          engine.prefix_queries_tokens);
  counter("vllm:prefix_cache_hits", "Prefix-cache hits, in tokens.", engine.prefix_hit_tokens);
  histogram(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            m.ttft_s, label);
  histogram(out, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            m.itl_s, label);
  histogram(out, "vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds (deprecated name of ITL).", m.tpot_s,
            label);
  histogram(out, "vllm:e2e_request_latency_seconds",
            "Histogram of end to end request latency in seconds.", m.e2e_s, label);
  histogram(out, "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", m.queue_s, label);
  histogram(out, "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", m.prefill_s, label);
  histogram(out, "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", m.decode_s, label);
  histogram(out, "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", m.inference_s, label);
  return out;
}

}  // namespace tokperf::sim
