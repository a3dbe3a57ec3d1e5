#include "sim/kv_validation.h"

#include <cmath>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/engine_preset.h"
#include "sim/gpu_catalog.h"
#include "sim/model_catalog.h"

namespace tokperf::sim {
namespace {

constexpr double kBlockTokens = 16;  // vLLM's default block size on CUDA

}  // namespace

Result<std::vector<KvCapacityRow>> load_kv_capacity_set(const std::string& dir) {
  auto rows_text = read_text_file(dir + "/kv_capacity.jsonl");
  if (!rows_text) return Error{rows_text.error()};
  auto split = load_split_file(dir + "/kv_capacity_split.json");
  if (!split) return Error{split.error()};
  const std::set<std::string>& held = split->held_out;
  const std::set<std::string>& calib = split->calibration;
  std::vector<KvCapacityRow> out;
  std::istringstream lines(*rows_text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = dir + "/kv_capacity.jsonl line " + std::to_string(n);
    try {
      const auto j = nlohmann::json::parse(line);
      KvCapacityRow r;
      r.id = j.at("id").get<std::string>();
      r.source = j.at("source").get<std::string>();
      r.engine = j.value("engine", "");
      r.vllm_version = j.value("vllm_version", "");
      Result<ModelShape> model =
          j.contains("model_config")
              ? model_from_hf_config_text(j.at("model_config").dump(), where + " model_config")
              : find_model(j.at("model").get<std::string>());
      if (!model) return Error{where + ": " + model.error()};
      Result<GpuSpec> gpu = j.contains("gpu_spec")
                                ? gpu_from_json_text(j.at("gpu_spec").dump(), where + " gpu_spec")
                                : find_gpu(j.at("gpu").get<std::string>());
      if (!gpu) return Error{where + ": " + gpu.error()};
      auto dtype = parse_dtype(j.at("dtype").get<std::string>(), "dtype");
      if (!dtype) return Error{where + ": " + dtype.error()};
      r.deployment.model = std::move(model).value();
      r.deployment.gpu = std::move(gpu).value();
      r.deployment.weight_dtype = *dtype;
      // vLLM's "auto" KV cache: 16-bit, the model's activation type for FP8 checkpoints too.
      r.deployment.kv_dtype =
          *dtype == DType::kBf16 || *dtype == DType::kFp8 ? DType::kBf16 : DType::kFp16;
      r.deployment.tp = j.at("tp").get<int>();
      r.gpu_memory_utilization = j.at("gpu_memory_utilization").get<double>();
      r.profile_tokens = j.at("profile_tokens").get<int64_t>();
      r.max_num_seqs = j.at("max_num_seqs").get<int64_t>();
      r.logged_tokens = j.at("kv_cache_tokens").get<double>();
      if (r.deployment.tp < 1 || r.gpu_memory_utilization <= 0 || r.gpu_memory_utilization > 1 ||
          r.profile_tokens < 1 || r.max_num_seqs < 1 || r.logged_tokens <= 0) {
        return Error{where +
                     ": tp, profile_tokens, max_num_seqs and kv_cache_tokens must be "
                     "positive and gpu_memory_utilization in (0, 1]"};
      }
      const bool h = held.count(r.id) > 0, c = calib.count(r.id) > 0;
      if (h == c) {
        return Error{where + ": '" + r.id + "' must be in exactly one half of the split file"};
      }
      r.held_out = h;
      out.push_back(std::move(r));
    } catch (const nlohmann::json::exception& e) {
      return Error{where + ": " + e.what()};
    }
  }
  if (out.empty()) return Error{dir + "/kv_capacity.jsonl has no rows"};
  return out;
}

KvCapacityResult run_kv_validation(const std::vector<KvCapacityRow>& rows,
                                   const KnobOverrides& overrides) {
  KvCapacityResult result;
  for (const KvCapacityRow& row : rows) {
    EnginePreset preset = find_engine_preset("vllm", row.deployment.gpu, row.deployment.tp).value();
    preset.knobs.gpu_memory_utilization = row.gpu_memory_utilization;
    preset.knobs.profile_tokens = row.profile_tokens;
    preset.knobs.profile_seqs = row.max_num_seqs;
    if (Status s = apply_knob_overrides(overrides, preset); !s.ok()) {
      result.failures.push_back(row.id + ": " + s.error());
      continue;
    }
    const CostModel cost(row.deployment, preset.knobs);
    const auto tokens = static_cast<double>(cost.kv_capacity_tokens());
    if (tokens <= 0) {
      result.failures.push_back(row.id + ": the weights do not fit");
      continue;
    }
    result.rows.push_back({&row, std::floor(tokens / kBlockTokens) * kBlockTokens});
  }
  return result;
}

MetricSummary KvCapacityResult::summary(bool held_out) const {
  std::vector<std::pair<double, double>> pairs;
  for (const Row& r : rows) {
    if (r.row->held_out == held_out) pairs.emplace_back(r.predicted, r.row->logged_tokens);
  }
  return summarize_errors(pairs);
}

}  // namespace tokperf::sim
