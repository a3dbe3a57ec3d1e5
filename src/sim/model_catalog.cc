#include "sim/model_catalog.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tokperf::sim {
namespace {

// Built-ins are kept as the config.json fields that matter, copied from each model's Hugging Face
// repository (docs/CATALOG.md), so they go through the same parser as a user's file.
struct BuiltinConfig {
  const char* id;
  const char* name;
  const char* config_json;
};

constexpr BuiltinConfig kBuiltins[] = {
    {"llama-2-7b", "Llama-2-7B",
     R"({"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
     "num_key_value_heads":32,"intermediate_size":11008,"vocab_size":32000,
     "tie_word_embeddings":false,"max_position_embeddings":4096})"},
    {"llama-2-70b", "Llama-2-70B",
     R"({"model_type":"llama","num_hidden_layers":80,"hidden_size":8192,"num_attention_heads":64,
     "num_key_value_heads":8,"intermediate_size":28672,"vocab_size":32000,
     "tie_word_embeddings":false,"max_position_embeddings":4096})"},
    {"llama-3.1-8b", "Llama-3.1-8B",
     R"({"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
     "num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,
     "tie_word_embeddings":false,"max_position_embeddings":131072})"},
    {"llama-3.1-70b", "Llama-3.1-70B",
     R"({"model_type":"llama","num_hidden_layers":80,"hidden_size":8192,"num_attention_heads":64,
     "num_key_value_heads":8,"intermediate_size":28672,"vocab_size":128256,
     "tie_word_embeddings":false,"max_position_embeddings":131072})"},
    {"qwen2.5-7b", "Qwen2.5-7B",
     R"({"model_type":"qwen2","num_hidden_layers":28,"hidden_size":3584,"num_attention_heads":28,
     "num_key_value_heads":4,"intermediate_size":18944,"vocab_size":152064,
     "tie_word_embeddings":false,"max_position_embeddings":32768})"},
    {"qwen2.5-72b", "Qwen2.5-72B",
     R"({"model_type":"qwen2","num_hidden_layers":80,"hidden_size":8192,"num_attention_heads":64,
     "num_key_value_heads":8,"intermediate_size":29568,"vocab_size":152064,
     "tie_word_embeddings":false,"max_position_embeddings":32768})"},
    {"mistral-7b", "Mistral-7B-v0.1",
     R"({"model_type":"mistral","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
     "num_key_value_heads":8,"intermediate_size":14336,"vocab_size":32000,
     "tie_word_embeddings":false,"max_position_embeddings":32768})"},
    {"mixtral-8x7b", "Mixtral-8x7B",
     R"({"model_type":"mixtral","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
     "num_key_value_heads":8,"intermediate_size":14336,"vocab_size":32000,
     "num_local_experts":8,"num_experts_per_tok":2,"tie_word_embeddings":false,
     "max_position_embeddings":32768})"},
    {"deepseek-v3", "DeepSeek-V3",
     R"({"model_type":"deepseek_v3","num_hidden_layers":61,"hidden_size":7168,
     "num_attention_heads":128,"num_key_value_heads":128,"intermediate_size":18432,
     "moe_intermediate_size":2048,"n_routed_experts":256,"n_shared_experts":1,
     "num_experts_per_tok":8,"first_k_dense_replace":3,"q_lora_rank":1536,"kv_lora_rank":512,
     "qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"vocab_size":129280,
     "tie_word_embeddings":false,"max_position_embeddings":163840})"},
};

int64_t get_int(const nlohmann::json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<int64_t>() : fallback;
}

double attention_params_per_layer(const ModelShape& m) {
  const double h = static_cast<double>(m.hidden);
  if (m.is_mla()) {
    const double qk_dim = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double heads = static_cast<double>(m.num_heads);
    const double q = m.q_lora_rank > 0
                         ? h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads * qk_dim
                         : h * heads * qk_dim;
    const double kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
    const double kv_b = static_cast<double>(m.kv_lora_rank) * heads *
                        static_cast<double>(m.qk_nope_head_dim + m.v_head_dim);
    const double o = heads * m.v_head_dim * h;
    return q + kv_a + kv_b + o;
  }
  const double q_dim = static_cast<double>(m.num_heads * m.head_dim);
  const double kv_dim = static_cast<double>(m.num_kv_heads * m.head_dim);
  double p = h * q_dim + 2 * h * kv_dim + q_dim * h;
  if (m.qkv_bias) p += q_dim + 2 * kv_dim;
  return p;
}

}  // namespace

double ParamCounts::matmul_active() const {
  // When tied, the one table is counted once in `active` and does the output matmul.
  return tied ? active : active - embedding;
}

ParamCounts count_params(const ModelShape& m) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden);
  c.embedding = static_cast<double>(m.vocab) * h;
  c.lm_head = c.embedding;
  c.tied = m.tied_embeddings;
  const double norms = 2 * h;  // input and post-attention RMSNorm
  const double attn = attention_params_per_layer(m);
  const double dense_mlp = 3 * h * static_cast<double>(m.intermediate);
  const int64_t moe_layers = m.num_moe_layers();
  const int64_t dense_layers = m.num_layers - moe_layers;
  c.expert = 3 * h * static_cast<double>(m.moe_intermediate);
  c.router = m.is_moe() ? h * static_cast<double>(m.num_experts) : 0;

  const double shared = dense_layers * (attn + norms + dense_mlp) +
                        moe_layers * (attn + norms + c.router + m.shared_experts * c.expert) +
                        h /* final norm */ + c.embedding + (m.tied_embeddings ? 0 : c.lm_head);
  c.attention = static_cast<double>(m.num_layers) * attn;
  c.total = shared + moe_layers * m.num_experts * c.expert;
  c.active = shared + moe_layers * m.experts_per_token * c.expert;
  return c;
}

double kv_elements_per_token(const ModelShape& m) {
  if (m.is_mla()) return static_cast<double>(m.num_layers * (m.kv_lora_rank + m.qk_rope_head_dim));
  return 2.0 * static_cast<double>(m.num_layers * m.num_kv_heads * m.head_dim);
}

double attention_flops_per_query_key(const ModelShape& m) {
  const double heads = static_cast<double>(m.num_heads);
  if (m.is_mla()) {
    const double qk = static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim);
    return 2.0 * heads * (qk + static_cast<double>(m.kv_lora_rank)) * m.num_layers;
  }
  return 4.0 * heads * static_cast<double>(m.head_dim) * m.num_layers;
}

Result<ModelShape> model_from_hf_config_text(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error{"model config " + where + " is not a JSON object"};
  }
  // Multimodal configs nest the language model under text_config.
  if (auto t = j.find("text_config");
      t != j.end() && t->is_object() && !j.contains("hidden_size")) {
    j = *t;
  }
  ModelShape m;
  m.id = "custom";
  m.name = j.value("_name_or_path", std::string("custom model"));
  m.num_layers = get_int(j, "num_hidden_layers", 0);
  m.hidden = get_int(j, "hidden_size", 0);
  m.num_heads = get_int(j, "num_attention_heads", 0);
  m.num_kv_heads = get_int(j, "num_key_value_heads", m.num_heads);
  m.head_dim = get_int(j, "head_dim", m.num_heads > 0 ? m.hidden / m.num_heads : 0);
  m.intermediate = get_int(j, "intermediate_size", 0);
  m.vocab = get_int(j, "vocab_size", 0);
  m.tied_embeddings = j.value("tie_word_embeddings", false);
  const std::string type = j.value("model_type", std::string());
  m.qkv_bias = j.value("attention_bias", type == "qwen2" || type == "qwen2_moe");
  m.max_context = get_int(j, "max_position_embeddings", 0);
  m.num_experts =
      get_int(j, "num_local_experts", get_int(j, "n_routed_experts", get_int(j, "num_experts", 0)));
  m.experts_per_token = get_int(j, "num_experts_per_tok", 0);
  m.shared_experts = get_int(j, "n_shared_experts", 0);
  m.moe_intermediate = get_int(j, "moe_intermediate_size", m.intermediate);
  m.first_dense_layers = get_int(j, "first_k_dense_replace", 0);
  m.q_lora_rank = get_int(j, "q_lora_rank", 0);
  m.kv_lora_rank = get_int(j, "kv_lora_rank", 0);
  m.qk_nope_head_dim = get_int(j, "qk_nope_head_dim", 0);
  m.qk_rope_head_dim = get_int(j, "qk_rope_head_dim", 0);
  m.v_head_dim = get_int(j, "v_head_dim", 0);

  if (m.num_layers <= 0 || m.hidden <= 0 || m.num_heads <= 0 || m.num_kv_heads <= 0 ||
      m.head_dim <= 0 || m.intermediate <= 0 || m.vocab <= 0) {
    return Error{
        "model config " + where +
        " lacks a positive num_hidden_layers, hidden_size, num_attention_heads, "
        "intermediate_size or vocab_size (a Hugging Face decoder config.json is expected)"};
  }
  if (m.is_moe() && (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts ||
                     m.first_dense_layers >= m.num_layers)) {
    return Error{"model config " + where +
                 " has experts but num_experts_per_tok is missing or larger than the expert count"};
  }
  return m;
}

const std::vector<ModelShape>& builtin_models() {
  static const std::vector<ModelShape> kModels = [] {
    std::vector<ModelShape> v;
    for (const auto& b : kBuiltins) {
      auto m = model_from_hf_config_text(b.config_json, b.id);
      // Built-in configs are constants checked by the tests; a failure is a programmer error.
      if (!m.ok()) continue;
      m->id = b.id;
      m->name = b.name;
      v.push_back(std::move(m).value());
    }
    return v;
  }();
  return kModels;
}

Result<ModelShape> find_model(std::string_view id) {
  std::string known;
  for (const auto& m : builtin_models()) {
    if (m.id == id) return m;
    known += known.empty() ? m.id : ", " + m.id;
  }
  return Error{"--model '" + std::string(id) + "' is not a known model; accepted: " + known +
               " (or --model-config FILE with a Hugging Face config.json)"};
}

Result<ModelShape> load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"--model-config '" + path + "' cannot be read"};
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = model_from_hf_config_text(ss.str(), "'" + path + "'");
  if (m.ok() && m->name == "custom model") m->name = path;
  return m;
}

}  // namespace tokperf::sim
