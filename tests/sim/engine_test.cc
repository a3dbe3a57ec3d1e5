#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "sim/engine_preset.h"

namespace tokperf::sim {
namespace {

// Scheduler mechanics without the serving front end (its own test below turns it on).
CostKnobs no_front_end() {
  CostKnobs k;
  k.request_overhead_s = 0;
  k.request_overhead_per_token_s = 0;
  return k;
}

const CostModel& cost() {
  static const CostModel c(Deployment{find_model("llama-2-7b").value(),
                                      find_gpu("a100-80g").value(), DType::kFp16, DType::kFp16, 1},
                           no_front_end());
  return c;
}

SimRequest req(uint64_t id, int64_t prompt, int64_t max_tokens) {
  SimRequest r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_tokens = max_tokens;
  return r;
}

// Steps until idle; returns the time the last step ended.
int64_t drain(Engine& e, int64_t now, std::vector<SeqEvent>* events = nullptr) {
  while (e.has_work()) {
    const StepResult& r = e.step(now);
    if (events) events->insert(events->end(), r.events.begin(), r.events.end());
    now += r.duration_ns;
  }
  return now;
}

// CUDA graphs (CostKnobs::cuda_graph_max_batch): the engine tells the cost model which steps are
// decodes, so that with a capture limit of 2 the prefill step and a decode step of 3 sequences run
// eager (at least the host's launch time) while a decode step of 2 replays its graph.
TEST(Engine, StepsAboveTheCaptureLimitOrWithPromptsRunEager) {
  CostKnobs k = no_front_end();
  k.cuda_graph_max_batch = 2;
  const CostModel c(Deployment{find_model("llama-2-7b").value(), find_gpu("a100-80g").value(),
                               DType::kFp16, DType::kFp16, 1},
                    k);
  const double host = 32 * k.eager_layer_host_s;
  Engine e(c, EngineConfig{});
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(e.submit(req(id, 64, id == 3 ? 2 : 4)).ok());
  std::vector<int64_t> durations;
  int64_t now = 0;
  while (e.has_work()) {
    const StepResult& r = e.step(now);
    durations.push_back(r.duration_ns);
    now += r.duration_ns;
  }
  // Prefill (3 prompts), decode x 3 (3 left after the first, 2 after request 3 ends), decode x 2.
  ASSERT_EQ(durations.size(), 4u);
  EXPECT_GE(durations[0], static_cast<int64_t>(host * 1e9));  // prompts: eager
  EXPECT_GE(durations[1], static_cast<int64_t>(host * 1e9));  // 3 decodes > 2: eager
  EXPECT_LT(durations[2], static_cast<int64_t>(host * 1e9));  // 2 decodes: graph
  EXPECT_LT(durations[3], static_cast<int64_t>(host * 1e9));
}

// SGLang without --max-running-requests (EngineConfig::max_num_seqs 0): a scheduler admits
// min(KV tokens / 2, clamp(KV tokens / context x 512, 2048, 4096)); data-parallel attention runs
// one scheduler a rank over its share.
TEST(Engine, SglangSizesItsRunningLimitFromMemory) {
  const Deployment d{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                     DType::kFp8, 8};
  const CostModel tp(d, CostKnobs{});
  const int64_t tokens = tp.kv_capacity_tokens();
  const int64_t pool = std::clamp<int64_t>(
      static_cast<int64_t>(static_cast<double>(tokens) / 163840 * 512), 2048, 4096);
  EXPECT_EQ(Engine::sglang_max_running_requests(tp), std::min(tokens / 2, pool));
  Deployment dp = d;
  dp.dp_attention = true;
  const CostModel ranks(dp, CostKnobs{});
  const int64_t per_rank = ranks.kv_capacity_tokens() / 8;
  const int64_t per_rank_pool = std::clamp<int64_t>(
      static_cast<int64_t>(static_cast<double>(per_rank) / 163840 * 512), 2048, 4096);
  EXPECT_EQ(Engine::sglang_max_running_requests(ranks), 8 * std::min(per_rank / 2, per_rank_pool));
  EXPECT_GE(Engine::sglang_max_running_requests(ranks), 8 * 2048);
  EXPECT_EQ(find_engine_preset("sglang").value().config.max_num_seqs, 0);
}

TEST(Engine, OneRequestPrefillsThenDecodesOneTokenPerStep) {
  Engine e(cost(), EngineConfig{});
  ASSERT_TRUE(e.submit(req(7, 100, 3)).ok());
  const StepResult& s1 = e.step(0);
  StepShape prefill;
  prefill.add(100, 0, true, true);
  const auto expect_ns = static_cast<int64_t>(std::llround(cost().step_time_s(prefill) * 1e9));
  EXPECT_EQ(s1.duration_ns, expect_ns);
  ASSERT_EQ(s1.events.size(), 1u);
  EXPECT_EQ(s1.events[0].kind, SeqEventKind::kFirstToken);
  EXPECT_EQ(s1.events[0].t_ns, expect_ns);
  EXPECT_EQ(s1.prefill_tokens, 100);
  std::vector<SeqEvent> ev;
  drain(e, expect_ns, &ev);
  ASSERT_EQ(ev.size(), 3u);  // token 2, token 3, finished
  EXPECT_EQ(ev[0].kind, SeqEventKind::kToken);
  EXPECT_EQ(ev[1].output_tokens, 3);
  EXPECT_EQ(ev[2].kind, SeqEventKind::kFinished);
  EXPECT_EQ(e.kv().num_used(), 0);
}

TEST(Engine, ChunkedPrefillKeepsEveryStepWithinTheBudget) {
  EngineConfig cfg;
  cfg.max_num_batched_tokens = 512;
  Engine e(cost(), cfg);
  for (uint64_t i = 0; i < 6; ++i) ASSERT_TRUE(e.submit(req(i, 1000, 20)).ok());
  int64_t now = 0;
  int steps_to_first = 0;
  bool first_seen = false;
  while (e.has_work()) {
    const StepResult& r = e.step(now);
    EXPECT_LE(r.new_tokens, 512);
    if (!first_seen) ++steps_to_first;
    for (const auto& ev : r.events) first_seen |= ev.kind == SeqEventKind::kFirstToken;
    now += r.duration_ns;
  }
  EXPECT_EQ(steps_to_first, 2);  // 1000 tokens = 512 + 488
}

// SGLang's default scheduler (mixed_batches off): a prompt that arrives while another request
// decodes gets a prefill-only batch (its chunks in successive steps) and the decoder waits; with
// mixed batches (vLLM) every one of those steps also carries the decoder's token.
TEST(Engine, UnmixedBatchesRunPrefillAloneAndDecodersWait) {
  for (const bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "mixed" : "unmixed");
    EngineConfig cfg;
    cfg.max_num_batched_tokens = 512;
    cfg.mixed_batches = mixed;
    Engine e(cost(), cfg);
    ASSERT_TRUE(e.submit(req(1, 100, 10)).ok());
    int64_t now = e.step(0).duration_ns;  // prefills request 1: its first token
    now += e.step(now).duration_ns;       // a decode step: its second token
    ASSERT_TRUE(e.submit(req(2, 1000, 5)).ok());
    // 1000 prompt tokens: 512 + 488 alone; 511 + 489 beside the decoder's token.
    for (int chunk = 0; chunk < 2; ++chunk) {
      const StepResult& r = e.step(now);
      EXPECT_EQ(r.prefill_tokens, chunk == 0 ? (mixed ? 511 : 512) : (mixed ? 489 : 488));
      EXPECT_EQ(r.num_seqs, mixed ? 2 : 1);
      int decoder_tokens = 0;
      for (const auto& ev : r.events) decoder_tokens += ev.request_id == 1;
      EXPECT_EQ(decoder_tokens, mixed ? 1 : 0);
      now += r.duration_ns;
    }
    const StepResult& r = e.step(now);  // both decode together
    EXPECT_EQ(r.num_seqs, 2);
    EXPECT_EQ(r.prefill_tokens, 0);
    drain(e, now + r.duration_ns);
    EXPECT_EQ(e.kv().num_used(), 0);
  }
}

// SGLang's overlap scheduler (EngineConfig::overlap_schedule, an opt-in knob: not adopted in the
// presets): while the engine is busy the next batch is formed when the current step begins, so a
// request that reaches the scheduler mid-step waits one step longer than without it; an idle
// engine starts a request at once; sglang-0.4 turns it off under data-parallel attention.
TEST(Engine, OverlapScheduleAdmitsAMidStepArrivalOneStepLater) {
  for (const bool mixed : {true, false}) {
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(mixed ? "mixed" : "unmixed") + (overlap ? ", overlap" : ""));
      EngineConfig cfg;
      cfg.mixed_batches = mixed;
      cfg.overlap_schedule = overlap;
      Engine e(cost(), cfg);
      ASSERT_TRUE(e.submit(req(1, 100, 10)).ok());
      const StepResult& first = e.step(0);  // idle engine: request 1 starts at once either way
      EXPECT_EQ(first.prefill_tokens, 100);
      const int64_t t1 = first.duration_ns;
      const int64_t t2 = t1 + e.step(t1).duration_ns;  // a decode step [t1, t2)
      SimRequest late = req(2, 50, 3);
      late.arrival_ns = t1 + 1;  // reached the scheduler during that step
      ASSERT_TRUE(e.submit(late).ok());
      const StepResult& at_t2 = e.step(t2);
      EXPECT_EQ(at_t2.prefill_tokens, overlap ? 0 : 50);
      EXPECT_EQ(at_t2.num_seqs, overlap ? 1 : (mixed ? 2 : 1));
      const StepResult& at_t3 = e.step(t2 + at_t2.duration_ns);
      if (overlap) {
        EXPECT_EQ(at_t3.prefill_tokens, 50);  // one step later
      }
      drain(e, t2 + at_t2.duration_ns + at_t3.duration_ns);
      EXPECT_EQ(e.kv().num_used(), 0);
    }
  }
  const Deployment d{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                     DType::kFp8, 8};
  Deployment dp = d;
  dp.dp_attention = true;
  EngineConfig cfg = find_engine_preset("sglang-0.4").value().config;
  cfg.overlap_schedule = true;
  EXPECT_TRUE(Engine(CostModel(d, CostKnobs{}), cfg).config().overlap_schedule);
  EXPECT_FALSE(Engine(CostModel(dp, CostKnobs{}), cfg).config().overlap_schedule);
  EXPECT_FALSE(find_engine_preset("sglang").value().config.overlap_schedule);
}

// SGLang 0.4 under data-parallel attention (EngineConfig::dp_attention_halves_chunk_per_rank, an
// opt-in knob: not adopted in the preset): each of the tp ranks prefills up to half the budget, so
// a step takes tp x 4,096 tokens and one prompt at most 4,096; without data-parallel attention
// the flag changes nothing.
TEST(Engine, DpAttentionChunksEachRanksPrefillAtHalfTheBudget) {
  const Deployment d{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                     DType::kFp8, 8};
  Deployment dp = d;
  dp.dp_attention = true;
  const CostModel tp_cost(d, no_front_end());
  const CostModel dp_cost(dp, no_front_end());
  for (const bool halves : {false, true}) {
    for (const CostModel* c : {&tp_cost, &dp_cost}) {
      const bool on = halves && c == &dp_cost;
      SCOPED_TRACE(std::string(halves ? "flag on" : "flag off") +
                   (c == &dp_cost ? ", dp attention" : ", tp"));
      EngineConfig cfg;
      cfg.max_num_batched_tokens = 8192;
      cfg.dp_attention_halves_chunk_per_rank = halves;
      Engine one(*c, cfg);
      EXPECT_EQ(one.config().max_num_batched_tokens, on ? 8 * 4096 : 8192);
      ASSERT_TRUE(one.submit(req(1, 10000, 2)).ok());
      EXPECT_EQ(one.step(0).prefill_tokens, on ? 4096 : 8192);
      Engine many(*c, cfg);
      for (uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(many.submit(req(i, 3000, 2)).ok());
      EXPECT_EQ(many.step(0).prefill_tokens, on ? 8 * 4096 : 8192);
    }
  }
}

// vLLM's V0 engine without chunked prefill (presets vllm-v0 and vllm-v0.6) schedules waiting
// prompts first and runs such a step without the decodes (Scheduler._schedule_default); V1 (vllm)
// mixes them.
TEST(Engine, VllmV0PresetsRunPrefillStepsWithoutTheDecodes) {
  for (const char* name : {"vllm-v0", "vllm-v0.6", "vllm"}) {
    SCOPED_TRACE(name);
    const bool v0 = std::string(name) != "vllm";
    EngineConfig cfg = find_engine_preset(name).value().config;
    EXPECT_EQ(cfg.mixed_batches, !v0);
    Engine e(cost(), cfg);
    ASSERT_TRUE(e.submit(req(1, 100, 10)).ok());
    int64_t now = e.step(0).duration_ns;
    now += e.step(now).duration_ns;
    ASSERT_TRUE(e.submit(req(2, 300, 5)).ok());
    const StepResult& r = e.step(now);
    EXPECT_EQ(r.prefill_tokens, 300);
    EXPECT_EQ(r.num_seqs, v0 ? 1 : 2);
    drain(e, now + r.duration_ns);
  }
}

// Without chunked prefill vLLM V0's budget is max(max_model_len, 2048): the vllm-v0 preset leaves
// it to the model (0), so a 4,096-context model gets 4,096 and one without a context length 2,048;
// a budget the user gives stays. Eight 1,000-token prompts sent at once: 4 per step under 4,096.
TEST(Engine, VllmV0BudgetIsTheModelsMaxModelLen) {
  const EngineConfig v0 = find_engine_preset("vllm-v0").value().config;
  EXPECT_EQ(v0.max_num_batched_tokens, 0);
  ModelShape m = find_model("llama-2-7b").value();
  ASSERT_EQ(m.max_context, 4096);
  EXPECT_EQ(step_token_budget(v0, m), 4096);
  m.max_context = 0;
  EXPECT_EQ(step_token_budget(v0, m), 2048);
  EngineConfig given = v0;
  given.max_num_batched_tokens = 1000;
  EXPECT_EQ(step_token_budget(given, m), 1000);

  Engine e(cost(), v0);  // llama-2-7b
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(e.submit(req(i, 1000, 2)).ok());
  const StepResult& r = e.step(0);
  EXPECT_EQ(r.prefill_tokens, 4000);
  drain(e, r.duration_ns);
}

// When the next prompt cannot get KV blocks, an unmixed engine runs a decode batch instead of
// stalling, and admits the prompt once the decoder has finished and freed its blocks.
TEST(Engine, UnmixedBatchesDecodeWhenNoPrefillFits) {
  EngineConfig cfg;
  cfg.mixed_batches = false;
  cfg.num_blocks = 10;  // 160 tokens
  Engine e(cost(), cfg);
  ASSERT_TRUE(e.submit(req(1, 96, 40)).ok());  // 6 blocks now, up to 9
  int64_t now = e.step(0).duration_ns;
  ASSERT_TRUE(e.submit(req(2, 100, 10)).ok());  // needs 7 blocks to prefill; 4 are free
  const StepResult& r = e.step(now);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].request_id, 1u);
  EXPECT_EQ(r.prefill_tokens, 0);
  std::vector<SeqEvent> ev;
  drain(e, now + r.duration_ns, &ev);
  int finished = 0;
  for (const auto& x : ev) finished += x.kind == SeqEventKind::kFinished;
  EXPECT_EQ(finished, 2);
  EXPECT_EQ(e.stats().preemptions_total, 0);
}

TEST(Engine, MaxNumSeqsCapsTheBatch) {
  EngineConfig cfg;
  cfg.max_num_seqs = 2;
  Engine e(cost(), cfg);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(e.submit(req(i, 10, 5)).ok());
  int64_t now = 0;
  while (e.has_work()) {
    const StepResult& r = e.step(now);
    EXPECT_LE(r.num_seqs, 2);
    now += r.duration_ns;
  }
}

// llama.cpp's unified KV cache (EngineConfig::unified_kv_attention): a step's attention runs over
// the cells of every slot, padded to 32, and a slot keeps its cells after its request ends until
// it takes another; requests take the free slot released longest ago, never-used ones first.
TEST(Engine, UnifiedKvAttentionRunsOverEverySlotsCellsKeptUntilTheSlotIsReused) {
  EngineConfig cfg;
  cfg.max_num_seqs = 4;
  cfg.max_num_batched_tokens = 2048;
  cfg.enable_prefix_caching = false;
  cfg.unified_kv_attention = true;
  Engine e(cost(), cfg);
  // The prefill step of a 100-token prompt while the other slots hold `others` cells.
  auto prefill_ns = [](int64_t others) {
    StepShape s;
    s.add(100, 0, true, true);
    const int64_t n_kv = (others + 100 + 31) / 32 * 32;
    s.attention_pairs = 100.0 * static_cast<double>(n_kv);
    s.kv_tokens_read = static_cast<double>(n_kv);  // one ubatch
    return static_cast<int64_t>(std::llround(cost().step_time_s(s) * 1e9));
  };
  int64_t now = 0;
  // A (slot 0) leaves 1000 + 2 - 1 = 1001 cells: its last token was sampled, never computed.
  ASSERT_TRUE(e.submit(req(1, 1000, 2)).ok());
  now = drain(e, now);
  // B, C, D take the never-used slots 1-3, each beside A's cells and the ones before it.
  int64_t others = 1001;
  for (uint64_t id = 2; id <= 4; ++id) {
    ASSERT_TRUE(e.submit(req(id, 100, 2)).ok());
    const StepResult& r = e.step(now);
    EXPECT_EQ(r.duration_ns, prefill_ns(others)) << "request " << id;
    now = drain(e, now + r.duration_ns);
    others += 101;
  }
  // E takes slot 0, released first: A's cells go, B's, C's and D's stay.
  ASSERT_TRUE(e.submit(req(5, 100, 2)).ok());
  EXPECT_EQ(e.step(now).duration_ns, prefill_ns(3 * 101));

  // Without it, the same prefill attends to its own 100 tokens only.
  Engine plain(cost(), EngineConfig{});
  ASSERT_TRUE(plain.submit(req(1, 1000, 2)).ok());
  now = drain(plain, 0);
  ASSERT_TRUE(plain.submit(req(5, 100, 2)).ok());
  StepShape own;
  own.add(100, 0, true, true);
  const int64_t plain_ns = plain.step(now).duration_ns;
  EXPECT_EQ(plain_ns, static_cast<int64_t>(std::llround(cost().step_time_s(own) * 1e9)));
  EXPECT_LT(plain_ns, prefill_ns(3 * 101));
}

// Capacity 4 blocks of 16. Two 16-token prompts decode in lock step; each needs its third block
// when it computes token 33, i.e. in step 18 (step 1 prefills 16, steps 2.. add one token each).
// Until then 2 + 2 blocks fit exactly; in step 18 the newer request (id 2) must be preempted.
TEST(Engine, PreemptsTheNewestExactlyWhenBlocksRunOut) {
  EngineConfig cfg;
  cfg.num_blocks = 4;
  Engine e(cost(), cfg);
  ASSERT_TRUE(e.submit(req(1, 16, 40)).ok());
  ASSERT_TRUE(e.submit(req(2, 16, 40)).ok());
  int64_t now = 0;
  for (int step = 1; step <= 17; ++step) {
    const StepResult& r = e.step(now);
    ASSERT_EQ(r.num_preempted, 0) << "step " << step;
    now += r.duration_ns;
  }
  EXPECT_EQ(e.kv().num_used(), 4);
  const StepResult& r = e.step(now);
  ASSERT_EQ(r.num_preempted, 1);
  EXPECT_EQ(r.events[0].kind, SeqEventKind::kPreempted);
  EXPECT_EQ(r.events[0].request_id, 2u);
  EXPECT_EQ(e.stats().waiting, 1);
  // Both still finish with every token: the preempted one re-prefills its prompt and output.
  std::vector<SeqEvent> ev;
  drain(e, now + r.duration_ns, &ev);
  std::map<uint64_t, int64_t> finished;
  for (const auto& x : ev) {
    if (x.kind == SeqEventKind::kFinished) finished[x.request_id] = x.output_tokens;
  }
  EXPECT_EQ(finished[1], 40);
  EXPECT_EQ(finished[2], 40);
  EXPECT_EQ(e.kv().num_used(), 0);
}

// Property: over random workloads on a small cache, blocks in use never exceed capacity, every
// request ends with exactly its tokens, token counts only grow, and everything is freed at the end.
TEST(Engine, KvAccountingNeverOverCommitsOnRandomWorkloads) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    EngineConfig cfg;
    cfg.num_blocks = 8 + static_cast<int64_t>(rng() % 40);
    cfg.max_num_batched_tokens = 32 + static_cast<int64_t>(rng() % 200);
    cfg.max_num_seqs = 1 + static_cast<int64_t>(rng() % 16);
    Engine e(cost(), cfg);
    const int64_t cap_tokens = cfg.num_blocks * 16;
    std::map<uint64_t, int64_t> want, got, last;
    int64_t now = 0;
    uint64_t next_id = 0;
    for (int step = 0; step < 200000 && (next_id < 60 || e.has_work()); ++step) {
      if (next_id < 60 && rng() % 3 == 0) {
        SimRequest r = req(next_id, 1 + static_cast<int64_t>(rng() % (cap_tokens / 2)),
                           1 + static_cast<int64_t>(rng() % (cap_tokens / 2)));
        for (int64_t b = 0; b < r.prompt_tokens / 16; ++b)
          r.prefix_block_hashes.push_back(rng() % 3 * 100 + static_cast<uint64_t>(b));
        ASSERT_TRUE(e.submit(r).ok());
        want[next_id++] = r.max_tokens;
      }
      const StepResult& r = e.step(now);
      ASSERT_LE(e.kv().num_used(), e.kv().capacity());
      ASSERT_LE(r.new_tokens, cfg.max_num_batched_tokens);
      ASSERT_LE(r.num_seqs, cfg.max_num_seqs);
      for (const auto& ev : r.events) {
        if (ev.kind == SeqEventKind::kFinished) got[ev.request_id] = ev.output_tokens;
        if (ev.kind == SeqEventKind::kToken || ev.kind == SeqEventKind::kFirstToken) {
          ASSERT_EQ(ev.output_tokens, last[ev.request_id] + 1) << "seed " << seed;
          last[ev.request_id] = ev.output_tokens;
        }
      }
      now += std::max<int64_t>(r.duration_ns, 1000);
    }
    EXPECT_FALSE(e.has_work()) << "seed " << seed;
    EXPECT_EQ(got, want) << "seed " << seed;
    EXPECT_EQ(e.kv().num_used(), 0) << "seed " << seed;
    for (int32_t b = 0; b < e.kv().capacity(); ++b) ASSERT_EQ(e.kv().ref_count(b), 0);
  }
}

TEST(Engine, TtftRisesWithPromptLength) {
  auto ttft = [](int64_t prompt) {
    Engine e(cost(), EngineConfig{});
    const Status s = e.submit(req(1, prompt, 2));
    EXPECT_TRUE(s.ok()) << s.error();
    if (!s.ok()) return int64_t{-1};
    int64_t now = 0;
    while (true) {
      const StepResult& r = e.step(now);
      now += r.duration_ns;
      for (const auto& ev : r.events) {
        if (ev.kind == SeqEventKind::kFirstToken) return ev.t_ns;
      }
    }
  };
  EXPECT_LT(ttft(256), ttft(2048));
  EXPECT_LT(ttft(2048), ttft(4000));  // Llama-2-7B serves 4,096 tokens in all
}

TEST(Engine, ItlRisesWithBatchSize) {
  auto decode_step_ns = [](int batch) {
    Engine e(cost(), EngineConfig{});
    for (int i = 0; i < batch; ++i) EXPECT_TRUE(e.submit(req(i, 512, 10)).ok());
    int64_t now = 0;
    now += e.step(now).duration_ns;  // all prompts fit in one 8192-token step up to 16
    return e.step(now).duration_ns;  // a pure decode step
  };
  EXPECT_LT(decode_step_ns(1), decode_step_ns(8));
  EXPECT_LT(decode_step_ns(8), decode_step_ns(16));
}

TEST(Engine, PrefixCacheHitsSkipPrefill) {
  Engine e(cost(), EngineConfig{});
  SimRequest a = req(1, 160, 2);
  for (uint64_t b = 0; b < 10; ++b) a.prefix_block_hashes.push_back(1000 + b);
  ASSERT_TRUE(e.submit(a).ok());
  const int64_t a_first = e.step(0).duration_ns;
  const int64_t end = drain(e, a_first);
  SimRequest b = a;
  b.id = 2;
  ASSERT_TRUE(e.submit(b).ok());
  const StepResult& r = e.step(end);
  // 9 of 10 blocks come from the cache; the last is recomputed to produce logits.
  EXPECT_EQ(r.cached_tokens, 144);
  EXPECT_EQ(r.prefill_tokens, 16);
  EXPECT_LT(r.duration_ns, a_first);
  EXPECT_EQ(e.stats().prefix_hit_tokens, 144);
}

TEST(Engine, RejectsRequestsLargerThanTheCache) {
  EngineConfig cfg;
  cfg.num_blocks = 4;
  Engine e(cost(), cfg);
  const Status s = e.submit(req(9, 60, 10));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("exceed the KV cache (64 tokens)"), std::string::npos);
  EXPECT_FALSE(e.submit(req(9, 0, 10)).ok());
}

TEST(Engine, OutputLengthWithoutIgnoreEosIsSeededAndBounded) {
  auto lengths = [](uint64_t seed) {
    EngineConfig cfg;
    cfg.seed = seed;
    cfg.eos_mean_tokens = 20;
    Engine e(cost(), cfg);
    for (uint64_t i = 0; i < 50; ++i) {
      SimRequest r = req(i, 10, 64);
      r.ignore_eos = false;
      EXPECT_TRUE(e.submit(r).ok());
    }
    std::vector<SeqEvent> ev;
    drain(e, 0, &ev);
    std::vector<int64_t> out;
    for (const auto& x : ev) {
      if (x.kind == SeqEventKind::kFinished) out.push_back(x.output_tokens);
    }
    return out;
  };
  const auto a = lengths(5);
  EXPECT_EQ(a, lengths(5));
  EXPECT_NE(a, lengths(6));
  ASSERT_EQ(a.size(), 50u);
  for (int64_t n : a) {
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 64);
  }
}

}  // namespace
}  // namespace tokperf::sim

namespace tokperf::sim {
namespace {

// The test deployment with a serving front end: `set_up_s` of serial set-up per request,
// `per_output_s` per streamed token, `latency_s` on each request's way to the scheduler.
CostModel with_front_end(double set_up_s, double per_output_s = 0, double latency_s = 0) {
  CostKnobs k;
  k.request_overhead_s = set_up_s;
  k.request_overhead_per_token_s = 0;
  k.output_overhead_s = per_output_s;
  k.request_latency_s = latency_s;
  return CostModel(cost().deployment(), k);
}

TEST(Engine, FrontEndPassesABurstToTheSchedulerOneRequestAtATime) {
  const CostModel c = with_front_end(1e-3);
  Engine e(c, EngineConfig{});
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 100, 2)).ok());
  // Nothing is ready at 0: the engine waits for the front end, emitting nothing.
  const StepResult& wait = e.step(0);
  EXPECT_EQ(wait.duration_ns, 1'000'000);
  EXPECT_EQ(wait.num_seqs, 0);
  EXPECT_TRUE(wait.events.empty());
  // At 1 ms only the first request has been handed over.
  const StepResult& first = e.step(1'000'000);
  EXPECT_EQ(first.num_seqs, 1);
  EXPECT_EQ(first.prefill_tokens, 100);
}

// request_latency_s delays each request on its way to the scheduler without holding up the front
// end: three requests sent together are ready one serial cost apart, each a latency later.
TEST(Engine, RequestLatencyDelaysEachRequestWithoutHoldingUpTheNext) {
  const CostModel c = with_front_end(1e-3, 0, 10e-3);
  Engine e(c, EngineConfig{});
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 100, 2)).ok());
  const StepResult& wait = e.step(0);
  EXPECT_EQ(wait.duration_ns, 11'000'000);  // the first: 1 ms at the front end, 10 ms on its way
  EXPECT_EQ(wait.num_seqs, 0);
  const StepResult& first = e.step(11'000'000);
  EXPECT_EQ(first.num_seqs, 1);
  // The third was ready at 3 + 10 = 13 ms, not 3 x 11 = 33 ms: the next step, which starts when
  // the first one ends (after 13 ms, before 33), runs all three.
  const int64_t now = 11'000'000 + first.duration_ns;
  ASSERT_GT(now, 13'000'000);
  ASSERT_LT(now, 33'000'000);
  EXPECT_EQ(e.step(now).num_seqs, 3);
}

// output_overhead_s: the front end passes a step's outputs on one at a time after the step ends,
// so the k-th output of a step reaches the client k x the cost after it, a finish leaves with its
// last token, and a request that arrives after the step waits behind them.
TEST(Engine, FrontEndStampsEachOutputInTurnAfterTheStep) {
  const CostModel c = with_front_end(1e-3, 100e-6);
  Engine e(c, EngineConfig{});
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 16, 1)).ok());
  // The front end hands the three over 1 ms apart; at 3 ms all are ready.
  const StepResult& wait = e.step(0);
  ASSERT_EQ(wait.duration_ns, 1'000'000);
  const StepResult& r = e.step(3'000'000);
  ASSERT_EQ(r.num_seqs, 3);
  const int64_t end = 3'000'000 + r.duration_ns;
  std::vector<int64_t> first, finished;
  for (const SeqEvent& ev : r.events) {
    if (ev.kind == SeqEventKind::kFirstToken) first.push_back(ev.t_ns);
    if (ev.kind == SeqEventKind::kFinished) finished.push_back(ev.t_ns);
  }
  EXPECT_EQ(first, (std::vector<int64_t>{end + 100'000, end + 200'000, end + 300'000}));
  EXPECT_EQ(finished, first);  // max_tokens 1: each finishes with its only token
  for (size_t i = 1; i < r.events.size(); ++i) {
    EXPECT_LE(r.events[i - 1].t_ns, r.events[i].t_ns);  // in time order: drivers queue them
  }
  // A request arriving at the step's end waits for the three outputs, then its own 1 ms.
  SimRequest late = req(9, 16, 1);
  late.arrival_ns = end;
  ASSERT_TRUE(e.submit(late).ok());
  const StepResult& w2 = e.step(end);
  EXPECT_EQ(w2.num_seqs, 0);
  EXPECT_EQ(w2.duration_ns, 300'000 + 1'000'000);
  // Its busy time: four set-ups of 1 ms and three outputs of 100 us (how `sim run` tells a level
  // the front end bound).
  EXPECT_EQ(e.stats().frontend_busy_ns, 4 * 1'000'000 + 3 * 100'000);
}

// A request that reached the front end before a step's outputs did (drivers submit what arrives
// during a step before they see its end) is served first, not behind outputs it came before.
TEST(Engine, FrontEndServesARequestThatArrivedBeforeTheOutputsFirst) {
  const CostModel c = with_front_end(1e-3, 50e-3);  // outputs longer than a step: the order shows
  Engine e(c, EngineConfig{});
  ASSERT_TRUE(e.submit(req(0, 16, 4)).ok());
  ASSERT_EQ(e.step(0).duration_ns, 1'000'000);
  const StepResult& r = e.step(1'000'000);
  ASSERT_EQ(r.num_seqs, 1);
  const int64_t end = 1'000'000 + r.duration_ns;
  ASSERT_EQ(r.events.front().t_ns, end + 50'000'000);
  // Arrived during that step, submitted after it: ready 1 ms after its arrival, not behind the
  // output (end + 51 ms), so the step after next runs it.
  SimRequest early = req(1, 16, 1);
  early.arrival_ns = end - 10'000;
  ASSERT_TRUE(e.submit(early).ok());
  const StepResult& next = e.step(end);  // the first request's second decode step
  ASSERT_EQ(next.num_seqs, 1);
  const int64_t end2 = end + next.duration_ns;
  ASSERT_GT(end2, end - 10'000 + 1'000'000);
  ASSERT_LT(end2, end + 51'000'000);
  // Its 1 ms still counts: the second step's output waits for the first output's 50 ms and the
  // newcomer's 1 ms.
  EXPECT_EQ(next.events.front().t_ns, end + 51'000'000 + 50'000'000);
  EXPECT_EQ(e.step(end2).num_seqs, 2);
}

// outputs_before_setups: a step's outputs wait for the set-up in progress when the step ends,
// not for every set-up queued; the set-ups not yet begun move back by the outputs' time.
TEST(Engine, OutputsBeforeSetupsWaitOnlyForTheSetUpInProgress) {
  const CostModel c = with_front_end(10e-3, 1e-3);
  for (bool first : {false, true}) {
    EngineConfig cfg;
    cfg.outputs_before_setups = first;
    Engine e(c, cfg);
    // A burst of three: set-ups A [0, 10), B [10, 20), C [20, 30) ms.
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 16, 1)).ok());
    ASSERT_EQ(e.step(0).duration_ns, 10'000'000);
    const StepResult& a = e.step(10'000'000);
    ASSERT_EQ(a.num_seqs, 1);
    const int64_t end1 = 10'000'000 + a.duration_ns;
    ASSERT_LT(end1, 20'000'000) << "the test needs a step shorter than one set-up";
    ASSERT_EQ(a.events.front().kind, SeqEventKind::kFirstToken);
    if (!first) {
      // Behind B's and C's set-ups, queued before A's output was made.
      EXPECT_EQ(a.events.front().t_ns, 31'000'000);
      continue;
    }
    // Behind B's set-up (in progress at the step's end) only; C's moves to [21, 31).
    EXPECT_EQ(a.events.front().t_ns, 21'000'000);
    ASSERT_EQ(e.step(end1).duration_ns, 20'000'000 - end1);  // B is ready at 20 ms, as it was
    const StepResult& b = e.step(20'000'000);
    ASSERT_EQ(b.num_seqs, 1);
    const int64_t end2 = 20'000'000 + b.duration_ns;
    ASSERT_GT(end2, 21'000'000);
    ASSERT_LT(end2, 31'000'000);
    // C's set-up was in progress when B's step ended: B's output waits for it.
    EXPECT_EQ(b.events.front().t_ns, 32'000'000);
    EXPECT_EQ(e.step(end2).duration_ns, 31'000'000 - end2);  // C is ready 1 ms later than FIFO
    EXPECT_EQ(e.stats().frontend_busy_ns, 3 * 10'000'000 + 2 * 1'000'000);
  }
}

TEST(Engine, ReserveMaxTokensAdmitsOnlyWhatCanFinishWithoutPreemption) {
  for (bool reserve : {false, true}) {
    EngineConfig cfg;
    cfg.num_blocks = 10;  // 160 tokens
    cfg.reserve_max_tokens = reserve;
    Engine e(cost(), cfg);
    // Each needs 16 + 48 = 64 tokens = 4 blocks by the end; three need 12 of 10.
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 16, 48)).ok());
    const StepResult& s = e.step(0);
    EXPECT_EQ(s.num_seqs, reserve ? 2 : 3) << "reserve=" << reserve;
    int64_t now = s.duration_ns;
    int64_t preemptions = 0;
    while (e.has_work()) {
      const StepResult& r = e.step(now);
      preemptions += r.num_preempted;
      now += r.duration_ns;
    }
    if (reserve) {
      EXPECT_EQ(preemptions, 0);
    }
    EXPECT_EQ(e.stats().preemptions_total, preemptions);
  }
}

// SGLang's admission (EngineConfig::sglang_admission). With the prefix cache off, requests that
// ignore EOS are admitted only while every running one can still reach its last token: three
// requests of 16 + 48 tokens need 12 blocks of the 10, so two start and nothing is ever preempted,
// where admitting as prompt KV frees (vLLM's way) starts all three and has to preempt.
TEST(Engine, SglangAdmissionOfIgnoreEosRequestsNeverRunsTheCacheOut) {
  for (bool sglang : {false, true}) {
    EngineConfig cfg;
    cfg.num_blocks = 10;  // 160 tokens
    cfg.mixed_batches = false;
    cfg.enable_prefix_caching = false;
    cfg.sglang_admission = sglang;
    Engine e(cost(), cfg);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(e.submit(req(i, 16, 48)).ok());
    const StepResult& s = e.step(0);
    EXPECT_EQ(s.num_seqs, sglang ? 2 : 3) << "sglang=" << sglang;
    std::vector<SeqEvent> events;
    drain(e, s.duration_ns, &events);
    const auto finished = std::count_if(events.begin(), events.end(), [](const SeqEvent& ev) {
      return ev.kind == SeqEventKind::kFinished;
    });
    EXPECT_EQ(finished, 3);
    if (sglang) {
      EXPECT_EQ(e.stats().preemptions_total, 0);
    } else {
      EXPECT_GT(e.stats().preemptions_total, 0);
    }
  }
}

// With the prefix cache on, SGLang charges a new request its prompt + max_tokens and each running
// one its tokens left x the new-token ratio: 0.7 at first, falling by (0.7 - 0.098) / 600 with
// every decode step (a prefill step leaves it). Requests of 16 + 100 tokens in 320: two start
// (116 + 116; a third would need 116 of the 88 left), the third once their discounted
// reservation leaves room, the fourth not before they finish. When the cache then runs out and a
// decode step preempts, the ratio jumps back up (at most 1); an idle engine starts from 0.7.
TEST(Engine, SglangNewTokenRatioDecaysPerDecodeStepAndJumpsOnPreemption) {
  EngineConfig cfg;
  cfg.num_blocks = 20;  // 320 tokens
  cfg.mixed_batches = false;
  cfg.sglang_admission = true;
  Engine e(cost(), cfg);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(e.submit(req(i, 16, 100)).ok());
  const double init = Engine::kSglangInitNewTokenRatio;
  const double decay = (init - init * Engine::kSglangMinNewTokenRatioFactor) /
                       Engine::kSglangNewTokenRatioDecaySteps;
  int64_t now = 0;
  const StepResult& first = e.step(now);
  EXPECT_EQ(first.num_seqs, 2);
  EXPECT_EQ(e.new_token_ratio(), init);
  now += first.duration_ns;
  // Free 320 - 2 x 16 = 288, the two reserve 2 x 99 x 0.7 = 138.6: 149.4 left, room for 116.
  const StepResult& second = e.step(now);
  EXPECT_EQ(second.num_seqs, 1);
  EXPECT_EQ(second.prefill_tokens, 16);
  EXPECT_EQ(e.new_token_ratio(), init);
  now += second.duration_ns;
  // Free 272, the three reserve (99 + 99 + 100) x 0.7 = 208.6: 63.4 left, no room: a decode step.
  const StepResult& decode = e.step(now);
  EXPECT_EQ(decode.num_seqs, 3);
  EXPECT_EQ(decode.prefill_tokens, 0);
  EXPECT_DOUBLE_EQ(e.new_token_ratio(), init - decay);
  now += decode.duration_ns;
  double before = e.new_token_ratio();
  bool jumped = false;
  while (e.has_work()) {
    const StepResult& r = e.step(now);
    now += r.duration_ns;
    if (r.num_preempted > 0 && r.prefill_tokens == 0) {
      EXPECT_GT(e.new_token_ratio(), before);
      EXPECT_LE(e.new_token_ratio(), 1.0);
      jumped = true;
    }
    before = e.new_token_ratio();
  }
  EXPECT_TRUE(jumped) << "the ratio-discounted admission should have overcommitted the cache";
  ASSERT_TRUE(e.submit(req(9, 16, 4)).ok());
  e.step(now);
  EXPECT_EQ(e.new_token_ratio(), init);
}

}  // namespace
}  // namespace tokperf::sim

namespace tokperf::sim {
namespace {

// Issue 14: a freshly started server (EngineConfig::cold_start) pays CostKnobs::cold_start_s once,
// on its first step that prefills; decode steps and later prefills do not, and a warm engine never.
TEST(Engine, ColdStartCostIsPaidOnceOnTheFirstPrefillStep) {
  CostKnobs k = no_front_end();
  k.cold_start_s = 0.05;
  const CostModel c(cost().deployment(), k);
  auto first_two_steps = [&](bool cold) {
    EngineConfig cfg;
    cfg.cold_start = cold;
    Engine e(c, cfg);
    EXPECT_TRUE(e.submit(req(1, 100, 2)).ok());
    const int64_t a = e.step(0).duration_ns;  // prefill
    const int64_t b = e.step(a).duration_ns;  // decode
    EXPECT_TRUE(e.submit(req(2, 100, 2)).ok());
    const int64_t p2 = e.step(a + b).duration_ns;  // the second request's prefill
    return std::vector<int64_t>{a, b, p2};
  };
  const auto warm = first_two_steps(false);
  const auto cold = first_two_steps(true);
  EXPECT_EQ(cold[0] - warm[0], 50'000'000);
  EXPECT_EQ(cold[1], warm[1]);
  EXPECT_EQ(cold[2], warm[2]);
}

}  // namespace
}  // namespace tokperf::sim

namespace tokperf::sim {
namespace {

// The part of the cold cost that scales with the cold step (CostKnobs::cold_start_step_factor) is
// that fraction of the step's own modelled duration, on the same step only, and never when warm.
TEST(Engine, ColdStartStepFactorScalesWithTheColdStepOnly) {
  CostKnobs k = no_front_end();
  k.cold_start_s = 0.01;
  k.cold_start_step_factor = 0.5;
  const CostModel c(cost().deployment(), k);
  auto steps = [&](bool cold, int64_t prompt) {
    EngineConfig cfg;
    cfg.cold_start = cold;
    Engine e(c, cfg);
    EXPECT_TRUE(e.submit(req(1, prompt, 2)).ok());
    const int64_t a = e.step(0).duration_ns;
    const int64_t b = e.step(a).duration_ns;
    return std::pair<int64_t, int64_t>{a, b};
  };
  for (int64_t prompt : {100, 4000}) {
    const auto warm = steps(false, prompt);
    const auto cold = steps(true, prompt);
    const double expected = 10e6 + 0.5 * static_cast<double>(warm.first);
    EXPECT_NEAR(static_cast<double>(cold.first - warm.first), expected, 2.0) << prompt;
    EXPECT_EQ(cold.second, warm.second) << prompt;
  }
  // A larger first step pays a larger cold cost.
  EXPECT_GT(steps(true, 4000).first - steps(false, 4000).first,
            steps(true, 100).first - steps(false, 100).first);
}

}  // namespace
}  // namespace tokperf::sim
