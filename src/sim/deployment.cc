#include "sim/deployment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine_preset.h"
#include "sim/validation.h"

namespace tokperf::sim {

Result<Deployment> resolve_deployment(const DeploymentFlags& f) {
  Deployment d;
  auto model = !f.model_config_text.empty()
                   ? model_from_hf_config_text(f.model_config_text, "(inline model_config)")
               : f.model_config.empty() ? find_model(f.model)
                                        : load_hf_config(f.model_config);
  if (!model.ok()) return Error{model.error()};
  d.model = std::move(model).value();
  if (f.max_model_len < 0) {
    return Error{"--max-model-len " + std::to_string(f.max_model_len) +
                 " must be a positive number of tokens (or 0: the model's own)"};
  }
  if (f.max_model_len > 0) {
    // vLLM refuses a length above the model's (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN), SGLang
    // likewise (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN): so does the simulator.
    if (d.model.max_context > 0 && f.max_model_len > d.model.max_context) {
      return Error{"--max-model-len " + std::to_string(f.max_model_len) + " is above " +
                   d.model.name + "'s max_position_embeddings (" +
                   std::to_string(d.model.max_context) + "); accepted: 1 to " +
                   std::to_string(d.model.max_context)};
    }
    d.model.max_context = f.max_model_len;
  }
  auto gpu = f.gpu_spec.empty() ? find_gpu(f.gpu) : load_gpu_spec(f.gpu_spec);
  if (!gpu.ok()) return Error{gpu.error()};
  d.gpu = std::move(gpu).value();
  auto dtype = parse_dtype(f.dtype, "--dtype");
  if (!dtype.ok()) return Error{dtype.error()};
  d.weight_dtype = *dtype;
  auto preset = find_engine_preset(f.engine);
  if (!preset.ok()) return Error{preset.error()};
  if (f.kv_dtype == "auto") {
    // vLLM's kv_cache_dtype=auto keeps the activation dtype even for quantised weights; NIM's FP8
    // profiles store FP8 KV.
    d.kv_dtype = d.weight_dtype == DType::kBf16 ? DType::kBf16 : DType::kFp16;
    if (preset->fp8_kv_with_fp8_weights && d.weight_dtype == DType::kFp8 && d.gpu.fp8_flops > 0) {
      d.kv_dtype = DType::kFp8;
    }
  } else {
    auto kv = parse_dtype(f.kv_dtype, "--kv-dtype");
    if (!kv.ok()) return Error{kv.error() + " (or auto)"};
    if (*kv == DType::kInt4)
      return Error{"--kv-dtype 'int4' is not supported; accepted: auto, fp16, bf16, fp8, int8"};
    d.kv_dtype = *kv;
  }
  if (f.tp < 1 || d.model.num_heads % f.tp != 0) {
    return Error{"--tp " + std::to_string(f.tp) + " must be a positive divisor of the model's " +
                 std::to_string(d.model.num_heads) + " attention heads (e.g. 1, 2, 4, 8)"};
  }
  d.tp = f.tp;
  if (f.dp_attention && f.tp < 2) {
    return Error{
        "--dp-attention splits requests over the --tp GPUs; it needs --tp 2 or more (got " +
        std::to_string(f.tp) + ")"};
  }
  d.dp_attention = f.dp_attention;
  return d;
}

namespace {

// The document `sim calibrate --out FILE` wrote; the error names the file and what it lacks.
Result<nlohmann::json> read_calibration(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return Error{"--calibration '" + path + "' cannot be read"};
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("knobs") || !j["knobs"].is_array()) {
    return Error{"--calibration '" + path +
                 "' is not what sim calibrate --out writes (a JSON object with a \"knobs\" list "
                 "of {name, fitted})"};
  }
  for (const auto& k : j["knobs"]) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string() || !k.contains("fitted") ||
        !k["fitted"].is_number()) {
      return Error{"--calibration '" + path +
                   "': every \"knobs\" entry needs a name and a fitted number"};
    }
  }
  return j;
}

// The --knob flags a calibration was fitted with (deployment.knobs; none in older files).
std::vector<std::string> calibration_knob_flags(const nlohmann::json& c) {
  std::vector<std::string> flags;
  if (!c.contains("deployment") || !c["deployment"].is_object()) return flags;
  const nlohmann::json& d = c["deployment"];
  if (!d.contains("knobs") || !d["knobs"].is_array()) return flags;
  for (const auto& k : d["knobs"]) {
    if (k.is_string()) flags.push_back(k.get<std::string>());
  }
  return flags;
}

}  // namespace

Result<EnginePreset> engine_preset(const DeploymentFlags& f, const GpuSpec& gpu, int tp) {
  auto preset = find_engine_preset(f.engine, gpu, tp);
  if (!preset.ok()) return preset;
  if (!f.calibration.empty()) {
    auto c = read_calibration(f.calibration);
    if (!c.ok()) return Error{c.error()};
    // Its constants belong to the preset it was fitted on (vllm and vllm-0.13 differ in how they
    // schedule, not in their constants: the same fit on the other would mislead).
    if (c->contains("deployment") && (*c)["deployment"].contains("engine") &&
        (*c)["deployment"]["engine"].is_string()) {
      const std::string fitted_on = (*c)["deployment"]["engine"].get<std::string>();
      if (!fitted_on.empty() && fitted_on != f.engine) {
        return Error{"--calibration '" + f.calibration + "' was fitted with --engine " +
                     fitted_on + ", and this run's --engine is " + f.engine + ": give --engine " +
                     fitted_on + " (or fit again with --engine " + f.engine + ")"};
      }
    }
    // The --knob flags it was fitted with first (switches and fixed values are part of the model
    // it fitted), then the fitted values.
    auto with = parse_knob_overrides(calibration_knob_flags(*c));
    if (!with.ok()) return Error{"--calibration '" + f.calibration + "': " + with.error()};
    KnobOverrides fitted;
    for (const auto& k : (*c)["knobs"])
      fitted[k["name"].get<std::string>()] = k["fitted"].get<double>();
    for (const KnobOverrides& o : {*with, fitted}) {
      if (Status s = apply_knob_overrides(o, *preset); !s.ok()) {
        return Error{"--calibration '" + f.calibration + "': " + s.error()};
      }
    }
  }
  auto overrides = parse_knob_overrides(f.knobs);
  if (!overrides.ok()) return Error{overrides.error()};
  if (Status s = apply_knob_overrides(*overrides, *preset); !s.ok()) {
    return Error{"--knob: " + s.error()};
  }
  return preset;
}

EngineConfig engine_config_with_flags(const EnginePreset& p, const EngineConfig& flags,
                                      bool max_num_seqs_given, bool max_num_batched_tokens_given) {
  EngineConfig c = p.config;
  c.eos_mean_tokens = flags.eos_mean_tokens;
  if (max_num_seqs_given) c.max_num_seqs = flags.max_num_seqs;
  if (max_num_batched_tokens_given) c.max_num_batched_tokens = flags.max_num_batched_tokens;
  c.enable_prefix_caching = flags.enable_prefix_caching;
  return c;
}

std::string knob_note(const DeploymentFlags& f) {
  if (f.knobs.empty() && f.calibration.empty()) return "";
  std::string note;
  if (!f.calibration.empty()) {
    auto c = read_calibration(f.calibration);
    note = "--calibration " + f.calibration + " replaces the " + f.engine +
           " preset's constants with those sim calibrate fitted";
    if (c.ok()) {
      const nlohmann::json& j = *c;
      if (j.contains("levels") && j["levels"].is_array()) {
        const size_t n = j["levels"].size();
        note += fmt::format(" on {} measured level{}", n, n == 1 ? "" : "s");
      }
      if (const auto with = calibration_knob_flags(j); !with.empty()) {
        note += fmt::format(" with --knob {}", fmt::join(with, ", "));
      }
      const nlohmann::json* check = j.contains("check") ? &j["check"] : nullptr;
      if (check != nullptr && check->contains("fitted_median_abs_pct")) {
        // One figure of a check's {"ttft", "tpot", "output_tok_s"}, rounded up.
        auto pct_of = [](const nlohmann::json& e, const char* k) {
          return e.contains(k) && e[k].is_number()
                     ? fmt::format("{:.0f}%", std::ceil(e[k].get<double>()))
                     : std::string("-");
        };
        auto pct = [&](const char* k) { return pct_of((*check)["fitted_median_abs_pct"], k); };
        const size_t n = (*check)["held_out"].size();
        note += fmt::format(
            " (its check, on {} level{} it was not fitted on: TTFT within {}, TPOT {}, "
            "output {}, median |error|",
            n, n == 1 ? "" : "s", pct("ttft"), pct("tpot"), pct("output_tok_s"));
        // The same levels as sim run's closed loop runs them, not at the measured times.
        if (check->contains("fitted_as_sim_run_median_abs_pct")) {
          const nlohmann::json& s = (*check)["fitted_as_sim_run_median_abs_pct"];
          auto spct = [&](const char* k) { return pct_of(s, k); };
          note += fmt::format(
              "; run as sim run runs a closed loop, its closed-loop levels: TTFT {}, TPOT {}, "
              "output {}",
              spct("ttft"), spct("tpot"), spct("output_tok_s"));
        }
        note += ")";
      } else {
        note += " (it ran no check: no error figure for it)";
      }
      if (j.contains("deployment") && j["deployment"].is_object()) {
        const nlohmann::json& d = j["deployment"];
        std::string differs;
        auto same = [&](const char* key, const nlohmann::json& mine) {
          if (d.contains(key) && d[key] != mine)
            differs += (differs.empty() ? "" : ", ") + std::string(key);
        };
        same("model", f.model);
        same("model_config", f.model_config);
        same("gpu", f.gpu);
        same("gpu_spec", f.gpu_spec);
        same("dtype", f.dtype);
        same("tp", f.tp);
        same("engine", f.engine);
        if (!differs.empty())
          note += "; it was fitted for another deployment (" + differs + " differ)";
      }
    }
  }
  if (!f.knobs.empty()) {
    note += (note.empty() ? "" : "; ") +
            (fmt::format("--knob {}", fmt::join(f.knobs, ", ")) + " replaces the " + f.engine +
             " preset's values" + (f.calibration.empty() ? "" : " on top"));
  }
  return note + ": the accuracy figures are for the presets as shipped";
}

CostKnobs engine_knobs(const EnginePreset& p, const EngineConfig& c, const DeploymentFlags& f) {
  CostKnobs k = knobs_for_engine(p, p.knobs, c);
  if (f.cuda_graph_max_batch >= 0) k.cuda_graph_max_batch = f.cuda_graph_max_batch;
  if (f.kv_cache_tokens > 0) k.kv_cache_tokens = f.kv_cache_tokens;
  if (f.frontend_us_per_token >= 0) k.output_overhead_s = f.frontend_us_per_token * 1e-6;
  if (f.frontend_ms_per_request >= 0) k.request_overhead_s = f.frontend_ms_per_request * 1e-3;
  return k;
}

}  // namespace tokperf::sim
