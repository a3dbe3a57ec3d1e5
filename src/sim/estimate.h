// `tokperf estimate`: the textbook arithmetic for one deployment and one request shape, plus what
// the engine's step model expects for an otherwise idle server.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/cost_model.h"

namespace tokperf::sim {

struct EstimateRequest {
  int64_t prompt_tokens = 1000;
  int64_t output_tokens = 200;
  int64_t context_tokens = 0;             // for the capacity in sequences; 0: prompt + output
  int64_t max_num_batched_tokens = 8192;  // prefill chunk size the engine uses
  std::string engine;  // the engine preset's name, for the accuracy line ("" : not said)
};

struct Estimate {
  double weight_bytes_total = 0;
  double weight_bytes_per_gpu = 0;
  double kv_bytes_per_token = 0;
  double kv_bytes_per_token_per_gpu = 0;
  double kv_budget_bytes_per_gpu = 0;
  bool fits = false;
  int64_t kv_capacity_tokens = 0;
  int64_t context_tokens = 0;
  int64_t kv_capacity_sequences = 0;  // at context_tokens each
  double prefill_bound_s = 0;         // whole prompt, 100% of peak
  double decode_bound_first_s = 0;    // per token at context = prompt
  double decode_bound_last_s = 0;     // per token at context = prompt + output
  double expected_ttft_s = 0;         // step model, one request on an idle engine
  double expected_tpot_s = 0;         // mean step time over the decode
  double expected_e2e_s = 0;
  std::vector<std::string> notes;  // warnings a reader must see (does not fit, ...)
};

Estimate compute_estimate(const CostModel& cost, const EstimateRequest& req);

std::string format_estimate_text(const Estimate& e, const CostModel& cost,
                                 const EstimateRequest& req);
nlohmann::json estimate_to_json(const Estimate& e, const CostModel& cost,
                                const EstimateRequest& req);

}  // namespace tokperf::sim
