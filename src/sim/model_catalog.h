// Transformer shapes the simulator knows, read from Hugging Face config.json fields, and the
// parameter counts computed from them (never typed in). Sources: docs/CATALOG.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf::sim {

// The config.json fields that matter for cost. Dense decoder with gated (SwiGLU) MLP; optional MoE
// (Mixtral / DeepSeek style) and optional multi-head latent attention (DeepSeek-V2/V3 MLA).
struct ModelShape {
  std::string id;
  std::string name;
  int64_t num_layers = 0;        // num_hidden_layers
  int64_t hidden = 0;            // hidden_size
  int64_t num_heads = 0;         // num_attention_heads
  int64_t num_kv_heads = 0;      // num_key_value_heads (GQA); = num_heads when absent
  int64_t head_dim = 0;          // head_dim; hidden / num_heads when absent
  int64_t intermediate = 0;      // intermediate_size (dense MLP)
  int64_t vocab = 0;             // vocab_size
  bool tied_embeddings = false;  // tie_word_embeddings
  bool qkv_bias = false;         // Qwen2 family: biases on q/k/v projections
  int64_t max_context = 0;       // max_position_embeddings
  // MoE: 0 experts = dense.
  int64_t num_experts = 0;         // num_local_experts / n_routed_experts / num_experts
  int64_t experts_per_token = 0;   // num_experts_per_tok (top-k)
  int64_t shared_experts = 0;      // n_shared_experts (always active)
  int64_t moe_intermediate = 0;    // moe_intermediate_size; = intermediate when absent
  int64_t first_dense_layers = 0;  // first_k_dense_replace: leading layers with a dense MLP
  // MLA: kv_lora_rank > 0 turns it on.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool is_moe() const { return num_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  int64_t num_moe_layers() const { return is_moe() ? num_layers - first_dense_layers : 0; }
};

struct ParamCounts {
  double total = 0;      // every weight
  double active = 0;     // weights one token touches (top-k + shared experts for MoE)
  double embedding = 0;  // input embedding table (a lookup: no FLOPs)
  double lm_head = 0;    // output projection (shares storage with embedding when tied)
  double expert = 0;     // one routed expert of one layer
  double router = 0;     // router weights of one MoE layer
  double attention = 0;  // attention projections of all layers
  bool tied = false;     // lm_head is the embedding table
  // Weights that do matmuls for every token: active minus the untied input table.
  double matmul_active() const;
};

ParamCounts count_params(const ModelShape& m);

// Elements of KV cache stored per token over all layers (K and V; for MLA the compressed latent
// plus the decoupled RoPE key, shared by all heads). Multiply by the KV dtype's bytes.
double kv_elements_per_token(const ModelShape& m);

// Attention FLOPs for one query token against one cached token, over all layers (QK^T and PV,
// 2 FLOPs per multiply-add). MLA assumes the absorbed form: attention runs in the latent space.
double attention_flops_per_query_key(const ModelShape& m);

const std::vector<ModelShape>& builtin_models();

// Looks up a built-in id; the error names the id and lists the known ones.
Result<ModelShape> find_model(std::string_view id);

// Builds a shape from a Hugging Face config.json text. `origin` names it in errors.
Result<ModelShape> model_from_hf_config_text(std::string_view text, std::string_view origin);
Result<ModelShape> load_hf_config(const std::string& path);

}  // namespace tokperf::sim
