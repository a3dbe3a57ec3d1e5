// The simulated inference engine: an iteration-level scheduler modelled on vLLM V1 (continuous
// batching, chunked prefill under a per-step token budget, max_num_seqs, a paged KV cache with
// preemption by recompute, prefix caching by full-block hashes), timed by the CostModel.
//
// Pure virtual time: no threads, sockets or sleeping. A driver (the offline runner, or the HTTP
// front) calls submit() when a request arrives and step(now) whenever the engine is idle; step
// returns how long the iteration takes and what each sequence emitted at its end. Deterministic for
// a given seed and call sequence. Not thread-safe: one driver owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/kv_block_pool.h"

namespace tokperf::sim {

struct EngineConfig {
  // vLLM V1 defaults for online serving on a data-centre GPU (docs/SIMULATOR.md).
  // 0: vLLM V0's budget without chunked prefill, max(the model's max_model_len, 2048)
  // (step_token_budget).
  int64_t max_num_batched_tokens = 8192;
  // 0: SGLang's default, sized from memory (Engine::sglang_max_running_requests).
  int64_t max_num_seqs = 256;
  int64_t block_size = 16;
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  // true (vLLM): one step carries decode tokens and prefill chunks together. false (SGLang's
  // default, `--enable-mixed-chunk` off): a step is either a prefill batch (the unfinished chunked
  // prompt first, then new prompts admitted FCFS) or a decode batch; a prefill batch runs whenever
  // one can be formed, and running decoders wait for it.
  bool mixed_batches = true;
  // Admission: false (vLLM, SGLang) allocates KV blocks as tokens arrive and preempts when they
  // run out; true (TensorRT-LLM's GUARANTEED_NO_EVICT, NIM) admits a request only when the blocks
  // for its prompt + max_tokens are free after what running requests may still claim.
  bool reserve_max_tokens = false;
  // SGLang's admission (its scheduler's PrefillAdder, 0.4.x on): a waiting prompt is admitted only
  // while it fits beside what the running requests are expected to still need. Each running
  // request is charged min(max_tokens - generated, 4096) x an adaptive new-token ratio, each new
  // one prompt + min(max_tokens, 4096). The ratio starts at 0.7, falls by (0.7 - 0.098) / 600 each
  // decode step to 0.098, is reset from the running requests' progress ((generated + 20 each) /
  // max_tokens) when a decode step has to preempt, and starts again at 0.7 when the engine idles.
  // With the prefix cache off, a request that ignores EOS is admitted only when, as the running
  // requests finish in order of the tokens they have left, the KV cache never runs out.
  bool sglang_admission = false;
  // vLLM's async scheduling (on by default since vLLM 0.14.0, --no-async-scheduling; on in the
  // vllm preset, docs/SIMULATOR.md "Thirty-second change") and SGLang's overlap scheduler (on in
  // SGLang by default since 0.4.0, --disable-overlap-schedule; off in the sglang presets,
  // "Twenty-fourth change, not adopted"): the CPU
  // forms the next batch and launches it while the GPU runs the current one, so while the engine
  // is busy the batch that runs next was formed when the current step began, and a request that
  // reaches the scheduler during a step waits for that step and the next one. An idle engine
  // starts a request at once. The CPU time it hides is not modelled apart (the fitted per-step
  // costs stand for what is left).
  bool overlap_schedule = false;
  // SGLang 0.4.x turns the overlap scheduler off under data-parallel attention (server_args:
  // enable_dp_attention sets disable_overlap_schedule).
  bool dp_attention_disables_overlap = false;
  // SGLang 0.4.x under data-parallel attention halves chunked_prefill_size ("to avoid MoE kernel
  // issues", server_args.py) and every rank runs its own scheduler with it: a step (the ranks run
  // in lockstep) prefills up to tp x max_num_batched_tokens / 2 tokens, at most
  // max_num_batched_tokens / 2 of them from one prompt.
  bool dp_attention_halves_chunk_per_rank = false;
  // llama.cpp's server (llama-server as of 2025-02, c392e50: one KV cache for all slots): the
  // cache is one pool of cells that max_num_seqs slots share, and every ubatch's attention runs
  // over all occupied cells, masked to each token's own sequence (llama_decode_impl: kv_self.n is
  // the highest occupied cell, padded to 32 without flash attention). So a step's attention costs
  // its new tokens x the cells every slot holds, and the cache is read once per ubatch of
  // kLlamaUbatchTokens. A slot keeps its cells after its request ends, until it takes its next
  // request, and a request takes the least recently released free slot (server.cpp:
  // get_available_slot, release). Fragmentation is not modelled: the cells counted are the sum
  // over slots, a lower bound on the highest occupied one. Off in every preset, opt-in as `--knob
  // unified_kv_attention=1`: fitted to a real llama.cpp server on a CPU, it predicted a change of
  // slots far better than without it and prompt lengths at the fitted slot count worse
  // (docs/SIMULATOR.md, "Twenty-eighth change, not adopted").
  bool unified_kv_attention = false;
  // The front end (CostKnobs::output_overhead_s) passes a finished step's outputs on before it
  // starts setting up any request still queued for it: a step's outputs wait for the set-up in
  // progress when the step ends, not for every set-up queued (off: they wait behind every request
  // that reached the front end first). Set-ups not yet begun move back by the outputs' time. A
  // request submitted after a step's outputs were booked but sent before the step ended (a
  // driver's order) starts its set-up before them if the front end was free then, and the two
  // overlap by at most that set-up. Off in every preset; `--knob outputs_before_setups=1`
  // (docs/SIMULATOR.md, "Thirty-first change").
  bool outputs_before_setups = false;
  int64_t num_blocks = 0;  // 0: sized from the cost model's KV capacity
  // A freshly started server that has not served a request yet: the first step with prefill tokens
  // also pays CostKnobs::cold_start_s. Off for every CLI path (they model a warmed server).
  bool cold_start = false;
  // Output length when a request does not set ignore_eos: exponential with this mean, in
  // [1, max_tokens]. Seeded, so runs repeat.
  double eos_mean_tokens = 256;
  uint64_t seed = 1;
};

// The per-step token budget `c` gives a model: c.max_num_batched_tokens, or where that is 0,
// max(max_model_len, 2048) with max_model_len the model's max_position_embeddings (2048 where the
// config has none), as vLLM's SchedulerConfig sets it when chunked prefill is off.
int64_t step_token_budget(const EngineConfig& c, const ModelShape& m);

struct SimRequest {
  uint64_t id = 0;  // the caller's id, echoed in events
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
  bool ignore_eos = true;  // true: generate exactly max_tokens
  // Optional chained hashes of the prompt's full blocks (hash i covers tokens [0, 16 (i+1))); equal
  // hashes mean equal prefixes. Empty: no prefix sharing.
  std::vector<uint64_t> prefix_block_hashes;
  int64_t arrival_ns = 0;
};

enum class SeqEventKind : uint8_t { kFirstToken, kToken, kFinished, kPreempted };

struct SeqEvent {
  SeqEventKind kind;
  uint64_t request_id;
  int64_t t_ns;               // end of the step (start of the step for kPreempted)
  int64_t output_tokens;      // generated so far
  int64_t scheduled_ns = 0;   // kFirstToken/kToken: start of the step that last took it from the
                              // waiting queue (vLLM's "scheduled"; queue = arrival -> this)
  int64_t cached_tokens = 0;  // kFirstToken/kToken: prompt tokens its first scheduling found in
                              // the prefix cache
};

struct StepResult {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;  // 0: nothing was runnable
  int64_t num_seqs = 0;
  int64_t new_tokens = 0;      // prefill + decode tokens computed
  int64_t prefill_tokens = 0;  // of which prompt (or recompute) tokens
  int64_t cached_tokens = 0;   // prompt tokens served from the prefix cache this step
  int64_t num_preempted = 0;
  std::vector<SeqEvent> events;  // kFinished follows that sequence's last token event
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;
  int64_t preemptions_total = 0;
  int64_t aborted_total = 0;
  int64_t prefix_queries_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;
  int64_t steps_total = 0;
  // Time the serial front end spent on requests' set-up and streamed outputs (request_overhead_s,
  // request_overhead_per_token_s, output_overhead_s): over a level's length, how busy it was.
  int64_t frontend_busy_ns = 0;
};

class Engine {
 public:
  // SGLang's constants (global_config.py, schedule_policy.py): the initial new-token ratio, its
  // floor as a fraction of it, the decode steps over which it decays, the tokens a retraction
  // leaves room for per request, and the cap on the max_tokens an estimate counts.
  static constexpr double kSglangInitNewTokenRatio = 0.7;
  static constexpr double kSglangMinNewTokenRatioFactor = 0.14;
  static constexpr double kSglangNewTokenRatioDecaySteps = 600;
  static constexpr int64_t kSglangRetractDecodeSteps = 20;
  static constexpr int64_t kSglangClipMaxNewTokens = 4096;
  // llama.cpp (EngineConfig::unified_kv_attention): its default n_ubatch, and the padding of the
  // cells attention runs over when flash attention is off (llama_kv_cache_get_padding).
  static constexpr int64_t kLlamaUbatchTokens = 512;
  static constexpr int64_t kLlamaCellPadding = 32;

  // SGLang's default running-request limit for this deployment (EngineConfig::max_num_seqs 0).
  static int64_t sglang_max_running_requests(const CostModel& cost);
  // `cost` must outlive the engine.
  Engine(const CostModel& cost, EngineConfig config);

  // Queues a request. Fails (naming why) when it could never run: no tokens, or prompt + max
  // tokens exceed the whole KV cache.
  Status submit(const SimRequest& r);

  // Drops a queued or running request and frees its KV blocks (a client that went away). Returns
  // false when the engine does not hold it (never submitted, or already finished). O(sequences):
  // meant for the rare disconnect, not the hot path. Call between steps.
  bool abort(uint64_t request_id);

  // Runs one iteration starting at now_ns. The result is valid until the next call.
  const StepResult& step(int64_t now_ns);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  EngineStats stats() const;
  const KvBlockPool& kv() const { return kv_; }
  const EngineConfig& config() const { return cfg_; }
  // EngineConfig::sglang_admission: the new-token ratio the next admission will charge.
  double new_token_ratio() const { return new_token_ratio_; }

 private:
  struct Seq {
    uint64_t id = 0;
    int64_t prompt = 0;
    int64_t target_out = 0;
    int64_t generated = 0;
    int64_t computed = 0;      // tokens whose KV is in the cache
    int64_t scheduled_ns = 0;  // last taken from the waiting queue
    int64_t cached = 0;        // prompt tokens served from the prefix cache when first scheduled
    int64_t max_tokens = 0;
    bool ignore_eos = true;
    int64_t ready_ns = 0;  // when the serving front end hands it to the scheduler
    int32_t slot = -1;     // unified_kv_attention: the slot it holds while running
    std::vector<int32_t> blocks;
    std::vector<uint64_t> hashes;
    int64_t tokens() const { return prompt + generated; }
  };
  struct Scheduled {
    int32_t seq;
    int64_t num_new;
    int64_t computed_before;
  };

  int32_t new_seq();
  bool ensure_blocks(Seq& s, int64_t tokens);
  void free_blocks(Seq& s);
  void preempt(int32_t idx, int64_t now_ns);
  int64_t reuse_cached_prefix(Seq& s);
  int64_t draw_output_length(int64_t max_tokens);
  int64_t reserved_blocks(const Seq& s) const;  // blocks for prompt + max_tokens
  // True while a sequence still has prompt (or recompute) tokens to prefill.
  bool in_prefill(int32_t idx) const {
    const Seq& s = seqs_[static_cast<size_t>(idx)];
    return s.tokens() - s.computed > 1;
  }
  // Steps 1-2 of an iteration into scheduled_: running sequences (only those in prefill when
  // `prefill_only`), then waiting prompts that reached the scheduler by `admit_by_ns` (none in an
  // unmixed decode batch).
  void schedule_batch(int64_t now_ns, int64_t admit_by_ns, bool prefill_only);
  // SGLang's admission (EngineConfig::sglang_admission): the KV tokens it still counts free once
  // running requests' expected growth is set aside, and its check for a request that ignores EOS.
  struct TokensLeft {
    double left;       // tokens it may still generate
    int64_t occupied;  // prompt + generated: freed when it finishes
  };
  static bool fewer_tokens_left(const TokensLeft& a, const TokensLeft& b) {
    return a.left < b.left;
  }
  TokensLeft tokens_left(const Seq& s) const;
  bool sglang_ignore_eos_fits(const std::vector<TokensLeft>& sorted, const TokensLeft& candidate,
                              double cur_rem_tokens, int64_t prompt) const;
  void update_new_token_ratio(bool decode_step);
  // unified_kv_attention: a running sequence takes the least recently released free slot and
  // empties it; on release the slot keeps its cells. Attention of a step: `shape` re-counted over
  // every slot's cells once the scheduled sequences' new cells are in.
  void take_slot(Seq& s);
  void release_slot(Seq& s);
  void count_unified_attention(StepShape& shape);

  const CostModel& cost_;
  EngineConfig cfg_;
  KvBlockPool kv_;
  std::mt19937_64 rng_;
  std::vector<Seq> seqs_;
  std::vector<int32_t> free_seqs_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;  // oldest scheduled first; preemption takes from the back
  std::vector<Scheduled> scheduled_;
  StepResult result_;
  EngineStats stats_;
  int64_t frontend_free_ns_ = 0;  // the serial front end (API server, tokenizer) is busy until then
  // output_overhead_s: when the front end starts on the last step's outputs, and when it was free
  // before them (for requests that arrive before that start but are submitted after the step).
  int64_t outputs_start_ns_ = 0;
  int64_t free_before_outputs_ns_ = 0;
  // outputs_before_setups: the set-ups the next step's outputs may still move (FIFO, by when they
  // were sent), the output batches booked (from when each step ended to when its last output left)
  // and when the front end's set-up chain and output chain end.
  struct Setup {
    int32_t seq;
    uint64_t id;
    int64_t arrival_ns, start_ns, end_ns;
  };
  struct OutputBlock {
    int64_t ready_ns, end_ns;
  };
  std::deque<Setup> setups_;
  std::deque<OutputBlock> output_blocks_;
  int64_t setup_free_ns_ = 0;
  int64_t outputs_free_ns_ = 0;
  // The front end passes the step's outputs on one at a time from `start_ns`, each_ns apart (a
  // request's finish with its last token); returns when the last left, and counts the time busy.
  int64_t stamp_outputs(int64_t start_ns, int64_t each_ns);
  // outputs_before_setups: the earliest time at or after `t` when no booked output batch is
  // waiting or being passed on.
  int64_t after_output_blocks(int64_t t) const;
  // outputs_before_setups: books a step's outputs (ready at `end_ns`) and stamps `events`.
  void book_outputs_first(int64_t end_ns, int64_t each_ns);
  bool cold_paid_ = false;  // cold_start: the first prefill step has paid cold_start_s
  // overlap_schedule: when the last step that ran began (-1: the engine was idle since).
  int64_t last_step_start_ns_ = -1;
  // The most tokens one sequence computes in a step (dp_attention_halves_chunk_per_rank).
  int64_t max_tokens_per_seq_ = std::numeric_limits<int64_t>::max();
  double new_token_ratio_ = kSglangInitNewTokenRatio;  // sglang_admission
  // unified_kv_attention: each slot's cells, when it was last released (-1: never; a counter),
  // whether a sequence holds it, and the cells of all slots together.
  std::vector<int64_t> slot_cells_;
  std::vector<int64_t> slot_released_;
  std::vector<bool> slot_busy_;
  int64_t slot_clock_ = 0;
  int64_t slot_cells_total_ = 0;
};

}  // namespace tokperf::sim
