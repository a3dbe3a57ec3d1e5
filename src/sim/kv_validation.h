// The simulator's KV-cache capacity against vLLM's own startup logs (data/validation/
// kv_capacity.jsonl): each row is one real engine start whose log printed the KV cache it sized
// (tokens, or blocks of 16), with the model, GPU, tensor parallelism, dtype, memory utilisation
// and the token count of its profiling forward pass. The rows are split by a fixed seed
// (kv_capacity_split.json) before any prediction; `tokperf sim validate --kv` prints every row's
// prediction and the median error per half, and a test recomputes the held-out one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/validation.h"

namespace tokperf::sim {

struct KvCapacityRow {
  std::string id, source, engine, vllm_version;
  Deployment deployment;
  double gpu_memory_utilization = 0.9;
  // Tokens of vLLM's profiling forward pass (its max_num_batched_tokens) and the sequences its
  // sampler is profiled with (max_num_seqs), as the row's evidence gives them.
  int64_t profile_tokens = 0;
  int64_t max_num_seqs = 0;
  double logged_tokens = 0;  // what the log printed (blocks x 16 where it printed blocks)
  bool held_out = false;
};

// The held-out figures `estimate` prints beside a vLLM KV capacity (the `vllm` preset's profiled
// reserve): rows, median |error| in %, worst ratio. tests/sim/kv_validation_test.cc recomputes them
// and fails when the model drifts from them; update them with docs/SIMULATOR.md, "KV-cache
// capacity", when it does.
struct KvCapacityFigures {
  int rows;
  double median_pct, worst_ratio;
};
inline constexpr KvCapacityFigures kKvCapacityHeldOut{7, 1.5, 1.26};

// Reads kv_capacity.jsonl and kv_capacity_split.json from `dir`; every row must be in exactly one
// half. A row names a built-in model (`model`) or carries its Hugging Face config (`model_config`),
// and a built-in GPU (`gpu`) or a GPU spec (`gpu_spec`, --gpu-spec's fields).
Result<std::vector<KvCapacityRow>> load_kv_capacity_set(const std::string& dir);

struct KvCapacityResult {
  struct Row {
    const KvCapacityRow* row;
    double predicted;  // tokens, rounded down to whole 16-token blocks as vLLM allocates them
    double error_pct() const { return 100.0 * (predicted / row->logged_tokens - 1.0); }
  };
  std::vector<Row> rows;
  std::vector<std::string> failures;  // "id: why"
  MetricSummary summary(bool held_out) const;
};

// Each row through CostModel::kv_capacity_tokens with the `vllm` preset's knobs, the row's memory
// utilisation and profiling shape, then `overrides` (knob names as `sim validate --knob`).
KvCapacityResult run_kv_validation(const std::vector<KvCapacityRow>& rows,
                                   const KnobOverrides& overrides = {});

}  // namespace tokperf::sim
