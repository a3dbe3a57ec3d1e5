#include "load/bench_config.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace tokperf {
namespace {

// Header names whose values are credentials.
bool is_secret_header(const std::string& h) {
  std::string name = h.substr(0, h.find(':'));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "authorization" || name == "proxy-authorization" || name == "api-key" ||
         name == "x-api-key" || name == "cookie" || name.find("token") != std::string::npos ||
         name.find("secret") != std::string::npos || name.find("key") != std::string::npos;
}

nlohmann::json phase_json(const PhaseLimit& p) {
  if (p.none()) return nullptr;
  if (p.requests > 0) return {{"requests", p.requests}};
  return {{"duration_s", p.duration_ns / 1e9}};
}

nlohmann::json load_json(const LoadConfig& l) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& s : l.plan.levels) levels.push_back(s.label());
  return {{"levels", l.trace.empty() ? levels : nlohmann::json::array({"trace"})},
          {"warmup", l.default_warmup ? nlohmann::json("default") : phase_json(l.plan.warmup)},
          {"measure", phase_json(l.plan.measure)},
          {"cooldown", phase_json(l.plan.cooldown)},
          {"arrivals", arrival_kind_name(l.plan.arrivals)},
          {"burstiness", l.plan.burstiness},
          {"seed", l.plan.seed},
          {"max_concurrency", l.plan.max_concurrency},
          {"trace_entries", l.trace.size()},
          {"timeout_s", l.timeout_ns / 1e9},
          {"stop_on_saturation", l.stop_on_saturation},
          {"threads", l.threads}};
}

nlohmann::json slo_text(const SloSpec& s) {
  if (s.empty()) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& o : s.objectives) a.push_back(o.text);
  return a;
}

nlohmann::json workload_json(const BenchConfig& c) {
  if (!c.workload) return nullptr;
  const WorkloadOptions& o = c.workload->options();
  return {{"description", c.workload->describe()},
          {"dataset", o.dataset.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.dataset)},
          {"dataset_entries", c.workload->dataset_size()},
          {"replayed", c.workload->replays()},
          {"input_tokens", o.input.text()},
          {"output_tokens", o.output.text()},
          {"prefix_groups", o.prefix_groups},
          {"prefix_tokens", o.prefix_tokens},
          {"tokens_per_word", c.workload->tokens_per_word()}};
}

// What `tokperf merge` checks and reports about a shard (docs/DISTRIBUTED.md); null unsharded.
nlohmann::json shard_json(const BenchConfig& c) {
  if (!c.shard.active()) return nullptr;
  const ClockStatus& k = c.shard_clock;
  auto ms = [](double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  return {{"index", c.shard.index},
          {"count", c.shard.count},
          {"source", c.shard.source},
          {"host", c.shard_host},
          {"start_at_unix_us", c.load.start_at_unix_us > 0 ? nlohmann::json(c.load.start_at_unix_us)
                                                           : nlohmann::json(nullptr)},
          {"level_slot_s", c.load.level_slot_ns > 0 ? nlohmann::json(c.load.level_slot_ns / 1e9)
                                                    : nlohmann::json(nullptr)},
          {"clock",
           {{"source", k.source},
            {"synchronised", k.synchronised},
            {"estimated_error_ms", ms(k.estimated_error_ms)},
            {"maximum_error_ms", ms(k.maximum_error_ms)}}}};
}

}  // namespace

nlohmann::json config_json(const BenchConfig& c) {
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& h : c.target.headers) {
    headers.push_back(is_secret_header(h) ? h.substr(0, h.find(':')) + ": <redacted>" : h);
  }
  nlohmann::json extra = nullptr;
  if (!c.target.extra_body_json.empty()) {
    extra = nlohmann::json::parse(c.target.extra_body_json, nullptr, /*allow_exceptions=*/false);
  }
  return {
      {"target",
       {{"base_url", c.target.base_url},
        {"api", c.target.api},
        {"model", c.target.model},
        {"api_key", c.target.api_key.empty() ? nlohmann::json(nullptr) : nlohmann::json("<redacted>")},
        {"headers", headers},
        {"extra_body", extra},
        {"include_usage", c.target.include_usage},
        {"ignore_eos", c.target.ignore_eos},
        {"http2", c.target.http2},
        {"http_client", c.target.http_client}}},
      {"prompt",
       {{"input_tokens", c.prompt.input_tokens},
        {"input_tokens_exact", c.prompt.input_tokens_exact},
        {"input_tokens_note", c.prompt.input_tokens_note},
        {"input_tokens_method", c.prompt.input_tokens_method_label()},
        {"prompt_chars", c.prompt.text.size()},
        {"unique_prefix", c.prompt.unique_prefix},
        {"output_tokens", c.prompt.output_tokens}}},
      {"load", load_json(c.load)},
      {"workload", workload_json(c)},
      {"slo", slo_text(c.slo)},
      {"run_id", c.run_id},
      {"deployment", c.deployment},
      {"shard", shard_json(c)},
  };
}

}  // namespace tokperf
