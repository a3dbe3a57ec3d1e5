#include "sim/model_catalog.h"

#include <gtest/gtest.h>

namespace tokperf::sim {
namespace {

ModelShape model(const char* id) {
  auto m = find_model(id);
  EXPECT_TRUE(m.ok()) << id;
  return m.value();
}

// Exact counts: the published safetensors totals follow from the shapes (embeddings untied).
TEST(ModelCatalog, DenseParamCountsMatchPublishedTotals) {
  EXPECT_DOUBLE_EQ(count_params(model("llama-2-7b")).total, 6'738'415'616.0);
  EXPECT_DOUBLE_EQ(count_params(model("llama-2-70b")).total, 68'976'648'192.0);
  EXPECT_DOUBLE_EQ(count_params(model("llama-3.1-8b")).total, 8'030'261'248.0);
  EXPECT_DOUBLE_EQ(count_params(model("llama-3.1-70b")).total, 70'553'706'496.0);
  EXPECT_DOUBLE_EQ(count_params(model("mistral-7b")).total, 7'241'732'096.0);
  // Qwen2.5 model cards: 7.61B and 72.7B.
  EXPECT_NEAR(count_params(model("qwen2.5-7b")).total, 7.61e9, 0.01e9);
  EXPECT_NEAR(count_params(model("qwen2.5-72b")).total, 72.7e9, 0.1e9);
  // Dense: every weight is active.
  const auto c = count_params(model("llama-3.1-8b"));
  EXPECT_DOUBLE_EQ(c.active, c.total);
}

TEST(ModelCatalog, MoeParamCountsTotalAndActive) {
  const auto mixtral = count_params(model("mixtral-8x7b"));
  EXPECT_NEAR(mixtral.total, 46.7e9, 0.1e9);   // Mistral AI: 46.7B total
  EXPECT_NEAR(mixtral.active, 12.9e9, 0.1e9);  // 12.9B used per token
  const auto ds = count_params(model("deepseek-v3"));
  // DeepSeek-V3 report: 671B total, 37B activated (main model, without the MTP module).
  EXPECT_NEAR(ds.total, 671e9, 671e9 * 0.01);
  EXPECT_NEAR(ds.active, 37e9, 37e9 * 0.03);
  // One routed expert of DeepSeek-V3: 3 * 7168 * 2048.
  EXPECT_DOUBLE_EQ(ds.expert, 3.0 * 7168 * 2048);
}

TEST(ModelCatalog, KvElementsPerToken) {
  EXPECT_DOUBLE_EQ(kv_elements_per_token(model("llama-2-7b")), 2.0 * 32 * 32 * 128);
  EXPECT_DOUBLE_EQ(kv_elements_per_token(model("llama-3.1-70b")), 2.0 * 80 * 8 * 128);
  // MLA stores the 512-wide latent plus the 64-wide RoPE key per layer, shared by all heads.
  EXPECT_DOUBLE_EQ(kv_elements_per_token(model("deepseek-v3")), 61.0 * (512 + 64));
}

TEST(ModelCatalog, AttentionFlopsPerQueryKey) {
  EXPECT_DOUBLE_EQ(attention_flops_per_query_key(model("llama-2-7b")), 4.0 * 32 * 128 * 32);
}

TEST(ModelCatalog, MatmulParamsExcludeTheInputTable) {
  const auto c = count_params(model("llama-2-7b"));
  EXPECT_DOUBLE_EQ(c.matmul_active(), c.total - 32000.0 * 4096);
}

TEST(ModelCatalog, UnknownIdListsAccepted) {
  auto m = find_model("llama-9b");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("'llama-9b'"), std::string::npos);
  EXPECT_NE(m.error().find("mixtral-8x7b"), std::string::npos);
}

TEST(ModelCatalog, HfConfigDefaultsAndTiedEmbeddings) {
  auto m = model_from_hf_config_text(
      R"({"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,
          "intermediate_size":128,"vocab_size":100,"tie_word_embeddings":true})",
      "test");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->num_kv_heads, 4);
  EXPECT_EQ(m->head_dim, 16);
  const auto c = count_params(*m);
  // 2 layers * (4*64*64 attn + 3*64*128 mlp + 2*64 norms) + 64 final norm + 100*64 embedding.
  EXPECT_DOUBLE_EQ(c.total, 2.0 * (16384 + 24576 + 128) + 64 + 6400);
  EXPECT_DOUBLE_EQ(c.matmul_active(), c.total);
}

TEST(ModelCatalog, HfConfigRejectsMissingFields) {
  auto m = model_from_hf_config_text(R"({"hidden_size":64})", "'x.json'");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("'x.json'"), std::string::npos);
  EXPECT_FALSE(model_from_hf_config_text("not json", "y").ok());
}

}  // namespace
}  // namespace tokperf::sim
