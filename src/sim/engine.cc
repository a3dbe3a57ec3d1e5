#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tokperf::sim {
namespace {

int64_t blocks_for(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

}  // namespace

int64_t step_token_budget(const EngineConfig& c, const ModelShape& m) {
  if (c.max_num_batched_tokens != 0) return c.max_num_batched_tokens;
  return std::max<int64_t>(m.max_context, 2048);
}

Engine::Engine(const CostModel& cost, EngineConfig config)
    : cost_(cost),
      cfg_(config),
      kv_(config.num_blocks > 0
              ? config.num_blocks
              : cost.kv_capacity_tokens() / std::max<int64_t>(1, config.block_size)),
      rng_(config.seed) {
  if (cfg_.block_size < 1) cfg_.block_size = 16;
  cfg_.max_num_batched_tokens = step_token_budget(cfg_, cost.deployment().model);
  if (cfg_.max_num_batched_tokens < 1) cfg_.max_num_batched_tokens = 1;
  if (cfg_.max_num_seqs == 0) cfg_.max_num_seqs = sglang_max_running_requests(cost);
  if (cfg_.max_num_seqs < 1) cfg_.max_num_seqs = 1;
  if (cfg_.unified_kv_attention) {
    const auto slots = static_cast<size_t>(cfg_.max_num_seqs);
    slot_cells_.assign(slots, 0);
    slot_released_.assign(slots, -1);
    slot_busy_.assign(slots, false);
  }
  if (cfg_.dp_attention_disables_overlap && cost.dp_attention()) cfg_.overlap_schedule = false;
  if (cfg_.dp_attention_halves_chunk_per_rank && cost.dp_attention()) {
    max_tokens_per_seq_ = std::max<int64_t>(1, cfg_.max_num_batched_tokens / 2);
    cfg_.max_num_batched_tokens = max_tokens_per_seq_ * cost.deployment().tp;
  }
}

int64_t Engine::sglang_max_running_requests(const CostModel& cost) {
  // SGLang (tp_worker.py, model_runner.py, 0.4.x): without --max-running-requests a scheduler
  // admits min(max_total_num_tokens / 2, its request pool), the pool holding
  // clamp(max_total_num_tokens / context_len x 512, 2048, 4096) requests. Under data-parallel
  // attention every rank runs its own scheduler over its own KV share.
  const int64_t ranks = cost.dp_attention() ? cost.deployment().tp : 1;
  const int64_t tokens = cost.kv_capacity_tokens() / ranks;
  const int64_t context = std::max<int64_t>(1, cost.deployment().model.max_context);
  const int64_t pool = std::clamp<int64_t>(
      static_cast<int64_t>(static_cast<double>(tokens) / context * 512), 2048, 4096);
  return ranks * std::max<int64_t>(1, std::min(tokens / 2, pool));
}

int64_t Engine::draw_output_length(int64_t max_tokens) {
  if (cfg_.eos_mean_tokens <= 0) return max_tokens;
  std::exponential_distribution<double> dist(1.0 / cfg_.eos_mean_tokens);
  const auto n = static_cast<int64_t>(std::ceil(dist(rng_)));
  return std::clamp<int64_t>(n, 1, max_tokens);
}

int64_t Engine::reserved_blocks(const Seq& s) const {
  return blocks_for(s.prompt + std::max(s.max_tokens, s.generated), cfg_.block_size);
}

int32_t Engine::new_seq() {
  if (!free_seqs_.empty()) {
    const int32_t i = free_seqs_.back();
    free_seqs_.pop_back();
    return i;
  }
  seqs_.emplace_back();
  return static_cast<int32_t>(seqs_.size() - 1);
}

Status Engine::submit(const SimRequest& r) {
  if (r.prompt_tokens < 1 || r.max_tokens < 1) {
    return Error{"request " + std::to_string(r.id) + ": prompt_tokens and max_tokens must be >= 1"};
  }
  const int64_t need = blocks_for(r.prompt_tokens + r.max_tokens, cfg_.block_size);
  if (need > kv_.capacity()) {
    return Error{"request " + std::to_string(r.id) + ": " +
                 std::to_string(r.prompt_tokens + r.max_tokens) + " tokens exceed the KV cache (" +
                 std::to_string(kv_.capacity() * cfg_.block_size) + " tokens)"};
  }
  const int32_t i = new_seq();
  Seq& s = seqs_[static_cast<size_t>(i)];
  s = Seq{};
  s.id = r.id;
  s.prompt = r.prompt_tokens;
  s.max_tokens = r.max_tokens;
  s.ignore_eos = r.ignore_eos;
  // The front end (HTTP, tokenisation, request setup) handles one request at a time before the
  // scheduler sees it, so a burst reaches the engine spread out, and the first step starts with
  // the first request only.
  const CostKnobs& k = cost_.knobs();
  const double front_s =
      k.request_overhead_s + k.request_overhead_per_token_s * static_cast<double>(r.prompt_tokens);
  const int64_t front_ns = std::llround(front_s * 1e9);
  stats_.frontend_busy_ns += front_ns;
  if (cfg_.outputs_before_setups) {
    // What ended before it arrived can neither delay it nor be in progress when a later step ends.
    while (!setups_.empty() && setups_.front().end_ns <= r.arrival_ns) setups_.pop_front();
    while (!output_blocks_.empty() && output_blocks_.front().end_ns <= r.arrival_ns) {
      output_blocks_.pop_front();
    }
    // Its set-up starts when the set-ups before it are done and no step's outputs are waiting.
    const int64_t start = after_output_blocks(std::max(r.arrival_ns, setup_free_ns_));
    s.ready_ns = start + front_ns;
    setup_free_ns_ = s.ready_ns;
    setups_.push_back(Setup{i, r.id, r.arrival_ns, start, s.ready_ns});
  } else if (r.arrival_ns < outputs_start_ns_) {
    // It reached the front end before the last step's outputs did (a driver submits what arrives
    // during a step before the step's end): served first, and whatever follows the outputs
    // starts that much later.
    s.ready_ns = std::max(r.arrival_ns, free_before_outputs_ns_) + front_ns;
    free_before_outputs_ns_ = s.ready_ns;
    frontend_free_ns_ += front_ns;
  } else {
    s.ready_ns = std::max(r.arrival_ns, frontend_free_ns_) + front_ns;
    frontend_free_ns_ = s.ready_ns;
  }
  s.ready_ns += std::llround(k.request_latency_s * 1e9);  // on its way, not holding the front end
  s.target_out = r.ignore_eos ? r.max_tokens : draw_output_length(r.max_tokens);
  s.hashes = r.prefix_block_hashes;
  waiting_.push_back(i);
  return Status::Ok();
}

bool Engine::ensure_blocks(Seq& s, int64_t tokens) {
  const int64_t need = blocks_for(tokens, cfg_.block_size) - static_cast<int64_t>(s.blocks.size());
  if (need <= 0) return true;
  if (need > kv_.num_free()) return false;
  for (int64_t k = 0; k < need; ++k) s.blocks.push_back(kv_.allocate());
  return true;
}

void Engine::free_blocks(Seq& s) {
  // Tail first, so the free list evicts a sequence's last (least shareable) blocks first.
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) kv_.release(*it);
  s.blocks.clear();
}

void Engine::take_slot(Seq& s) {
  if (!cfg_.unified_kv_attention || s.slot >= 0) return;
  // llama.cpp's get_available_slot without a similar cached prompt: the free slot released
  // longest ago (never-used ones first, lowest index on ties). A running sequence holds one and
  // admission keeps running ones within the slots, so one is free.
  size_t pick = slot_busy_.size();
  for (size_t i = 0; i < slot_busy_.size(); ++i) {
    if (!slot_busy_[i] && (pick == slot_busy_.size() || slot_released_[i] < slot_released_[pick])) {
      pick = i;
    }
  }
  if (pick == slot_busy_.size()) return;
  slot_busy_[pick] = true;
  slot_cells_total_ -= slot_cells_[pick];  // the new prompt replaces what the slot held
  slot_cells_[pick] = 0;
  s.slot = static_cast<int32_t>(pick);
}

void Engine::release_slot(Seq& s) {
  if (s.slot < 0) return;
  const auto i = static_cast<size_t>(s.slot);
  slot_busy_[i] = false;
  slot_released_[i] = ++slot_clock_;
  s.slot = -1;
}

void Engine::count_unified_attention(StepShape& shape) {
  for (const auto& sc : scheduled_) {
    const Seq& s = seqs_[static_cast<size_t>(sc.seq)];
    if (s.slot < 0) continue;
    int64_t& cells = slot_cells_[static_cast<size_t>(s.slot)];
    const int64_t now = sc.computed_before + sc.num_new;
    slot_cells_total_ += now - cells;
    cells = now;
  }
  const int64_t pad = kLlamaCellPadding;
  const int64_t n_kv = (slot_cells_total_ + pad - 1) / pad * pad;
  const int64_t ubatches = (shape.new_tokens + kLlamaUbatchTokens - 1) / kLlamaUbatchTokens;
  shape.attention_pairs = static_cast<double>(shape.new_tokens) * static_cast<double>(n_kv);
  shape.kv_tokens_read = static_cast<double>(ubatches) * static_cast<double>(n_kv);
}

void Engine::preempt(int32_t idx, int64_t now_ns) {
  Seq& s = seqs_[static_cast<size_t>(idx)];
  free_blocks(s);
  if (s.slot >= 0) {  // its cells are gone with its blocks
    slot_cells_total_ -= slot_cells_[static_cast<size_t>(s.slot)];
    slot_cells_[static_cast<size_t>(s.slot)] = 0;
    release_slot(s);
  }
  s.computed = 0;  // recompute: prompt and generated tokens are prefilled again
  waiting_.push_front(idx);
  ++stats_.preemptions_total;
  ++result_.num_preempted;
  result_.events.push_back({SeqEventKind::kPreempted, s.id, now_ns, s.generated});
}

bool Engine::abort(uint64_t request_id) {
  auto drop = [&](auto& list) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      Seq& s = seqs_[static_cast<size_t>(*it)];
      if (s.id != request_id) continue;
      free_blocks(s);
      release_slot(s);  // a cancelled task's slot keeps its cells, as a finished one's
      free_seqs_.push_back(*it);
      list.erase(it);
      ++stats_.aborted_total;
      return true;
    }
    return false;
  };
  return drop(running_) || drop(waiting_);
}

int64_t Engine::reuse_cached_prefix(Seq& s) {
  if (!cfg_.enable_prefix_caching || s.computed > 0 || s.hashes.empty()) return 0;
  // At least one token must be computed to produce logits, so a full hit leaves the last block.
  const int64_t max_blocks =
      std::min<int64_t>(static_cast<int64_t>(s.hashes.size()), (s.tokens() - 1) / cfg_.block_size);
  int64_t hit = 0;
  while (hit < max_blocks) {
    const int32_t b = kv_.acquire_cached(s.hashes[static_cast<size_t>(hit)]);
    if (b < 0) break;
    s.blocks.push_back(b);
    ++hit;
  }
  s.computed = hit * cfg_.block_size;
  return s.computed;
}

void Engine::schedule_batch(int64_t now_ns, int64_t admit_by_ns, bool prefill_only) {
  int64_t budget = cfg_.max_num_batched_tokens;
  // 1. Running sequences, oldest first; when blocks run out, the newest running one is preempted.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const int32_t idx = running_[i];
    if (prefill_only && !in_prefill(idx)) continue;  // decoders wait for the prefill batch
    Seq& s = seqs_[static_cast<size_t>(idx)];
    const int64_t num_new = std::min({s.tokens() - s.computed, budget, max_tokens_per_seq_});
    bool self_preempted = false;
    while (!ensure_blocks(s, s.computed + num_new)) {
      const int32_t victim = running_.back();
      running_.pop_back();
      preempt(victim, now_ns);
      if (victim == idx) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    scheduled_.push_back({idx, num_new, s.computed});
    budget -= num_new;
  }

  // Blocks running sequences may still claim, when admission reserves them up front.
  int64_t outstanding = 0;
  if (cfg_.reserve_max_tokens) {
    for (int32_t idx : running_) {
      const Seq& s = seqs_[static_cast<size_t>(idx)];
      outstanding +=
          std::max<int64_t>(0, reserved_blocks(s) - static_cast<int64_t>(s.blocks.size()));
    }
  }

  // SGLang's budget: the free KV less what the running requests are expected to still claim
  // (rem_total), and the free KV itself (cur_rem); both shrink by what each admitted prompt takes.
  double rem_total = 0, cur_rem = 0;
  std::vector<TokensLeft> eos_states;  // ignore-EOS check: every running request, by tokens left
  bool eos_states_built = false;
  if (cfg_.sglang_admission) {
    cur_rem = static_cast<double>(kv_.num_free() * cfg_.block_size);
    rem_total = cur_rem;
    for (int32_t idx : running_) {
      const Seq& s = seqs_[static_cast<size_t>(idx)];
      rem_total -= static_cast<double>(std::min(std::max<int64_t>(0, s.max_tokens - s.generated),
                                                kSglangClipMaxNewTokens)) *
                   new_token_ratio_;
    }
  }

  // 2. Waiting prompts (FCFS) in what is left, unless this step had to preempt (or is an unmixed
  // decode batch).
  if (result_.num_preempted == 0 && (cfg_.mixed_batches || prefill_only)) {
    while (!waiting_.empty() && budget > 0 &&
           static_cast<int64_t>(running_.size()) < cfg_.max_num_seqs) {
      const int32_t idx = waiting_.front();
      Seq& s = seqs_[static_cast<size_t>(idx)];
      if (s.ready_ns > admit_by_ns) break;  // still in the front end, or after the batch formed
      if (cfg_.reserve_max_tokens && s.computed == 0 &&
          reserved_blocks(s) + outstanding > kv_.num_free()) {
        break;  // its whole sequence would not fit beside what running ones may still claim
      }
      const int64_t clip_new =  // SGLang charges a new request at most this much output
          cfg_.sglang_admission ? std::min(s.max_tokens, kSglangClipMaxNewTokens) : 0;
      if (cfg_.sglang_admission) {
        if (rem_total <= 0 || cur_rem <= 0) break;
        if (s.ignore_eos && !cfg_.enable_prefix_caching) {
          if (!eos_states_built) {
            for (int32_t r : running_) {
              const TokensLeft t = tokens_left(seqs_[static_cast<size_t>(r)]);
              if (t.left > 0) eos_states.push_back(t);
            }
            std::sort(eos_states.begin(), eos_states.end(), fewer_tokens_left);
            eos_states_built = true;
          }
          if (!sglang_ignore_eos_fits(eos_states, tokens_left(s), cur_rem, s.prompt)) break;
        } else if (static_cast<double>(s.tokens() - s.computed + clip_new) >= rem_total) {
          break;
        }
      }
      const bool looked_up = cfg_.enable_prefix_caching && s.computed == 0 && !s.hashes.empty();
      const int64_t cached = reuse_cached_prefix(s);
      const int64_t need = s.tokens() - s.computed;
      const int64_t num_new = std::min({need, budget, max_tokens_per_seq_});
      if ((!cfg_.enable_chunked_prefill && num_new < need) ||
          !ensure_blocks(s, s.computed + num_new)) {
        free_blocks(s);  // give back the prefix hits; retried next step
        s.computed = 0;
        break;
      }
      waiting_.pop_front();
      running_.push_back(idx);
      take_slot(s);
      s.scheduled_ns = now_ns;
      result_.cached_tokens += cached;
      if (looked_up && s.generated == 0) s.cached = cached;
      if (looked_up) {
        stats_.prefix_queries_tokens += s.prompt;
        stats_.prefix_hit_tokens += cached;
      }
      scheduled_.push_back({idx, num_new, s.computed});
      budget -= num_new;
      if (cfg_.sglang_admission) {
        // A prompt cut by the chunk budget reserves no output yet (SGLang: its last chunk will).
        rem_total -= static_cast<double>(num_new + (num_new < need ? 0 : clip_new));
        cur_rem -= static_cast<double>(num_new);
        if (eos_states_built) {
          const TokensLeft t = tokens_left(s);
          if (t.left > 0) {
            eos_states.insert(
                std::upper_bound(eos_states.begin(), eos_states.end(), t, fewer_tokens_left), t);
          }
        }
      }
      if (cfg_.reserve_max_tokens) {
        outstanding +=
            std::max<int64_t>(0, reserved_blocks(s) - static_cast<int64_t>(s.blocks.size()));
      }
    }
  }
}

Engine::TokensLeft Engine::tokens_left(const Seq& s) const {
  const double ratio = s.ignore_eos ? 1.0 : new_token_ratio_;
  return {static_cast<double>(s.max_tokens) * ratio - static_cast<double>(s.generated),
          s.prompt + s.generated};
}

bool Engine::sglang_ignore_eos_fits(const std::vector<TokensLeft>& sorted,
                                    const TokensLeft& candidate, double cur_rem_tokens,
                                    int64_t prompt) const {
  // SGLang (PrefillAdder.add_one_req_ignore_eos): with the candidate among them, walk the requests
  // in order of tokens left; before the i-th finishes, the bs = n - i still running each need up
  // to the next one's tokens left, and every finished one has given back what it occupied. The
  // candidate is merged in place as the walk passes its position, not copied into the list.
  const bool with = candidate.left > 0;
  const size_t at = with ? static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(),
                                                                candidate, fewer_tokens_left) -
                                               sorted.begin())
                         : sorted.size();
  const size_t n = sorted.size() + (with ? 1 : 0);
  auto state = [&](size_t i) -> const TokensLeft& {
    if (!with || i < at) return sorted[i];
    return i == at ? candidate : sorted[i - 1];
  };
  const double cur = cur_rem_tokens - static_cast<double>(prompt);
  double freed = 0;
  for (size_t i = 0; i < n; ++i) {
    const double decode_steps = i + 1 < n ? state(i + 1).left : state(i).left;
    const auto bs = static_cast<double>(n - i);
    if (cur + freed - decode_steps * bs <= 0) return false;
    freed += static_cast<double>(state(i).occupied);
  }
  return true;
}

void Engine::update_new_token_ratio(bool decode_step) {
  const double init = kSglangInitNewTokenRatio;
  const double floor = std::min(init * kSglangMinNewTokenRatioFactor, 1.0);
  if (!decode_step) return;
  if (result_.num_preempted > 0) {
    // SGLang's retract_decode: the ratio the remaining requests' progress implies, with room for
    // kSglangRetractDecodeSteps more tokens each.
    double decoded = 0, max_new = 0;
    for (int32_t idx : running_) {
      const Seq& s = seqs_[static_cast<size_t>(idx)];
      decoded += static_cast<double>(s.generated);
      max_new += static_cast<double>(s.max_tokens);
    }
    decoded += static_cast<double>(kSglangRetractDecodeSteps * std::ssize(running_));
    new_token_ratio_ = max_new > 0 ? std::min(1.0, decoded / max_new) : init;
  } else {
    new_token_ratio_ =
        std::max(new_token_ratio_ - (init - floor) / kSglangNewTokenRatioDecaySteps, floor);
  }
}

const StepResult& Engine::step(int64_t now_ns) {
  result_.start_ns = now_ns;
  result_.duration_ns = 0;
  result_.num_seqs = result_.new_tokens = result_.prefill_tokens = result_.cached_tokens = 0;
  result_.num_preempted = 0;
  result_.events.clear();
  scheduled_.clear();
  // Unmixed batches (SGLang): a prefill batch when a prompt is part-way through its prefill or the
  // next waiting one could be admitted, else a decode batch. Computed before anything is scheduled.
  // The overlap scheduler formed this batch when the step now ending began.
  const int64_t admit_by_ns = cfg_.overlap_schedule && !running_.empty() && last_step_start_ns_ >= 0
                                  ? last_step_start_ns_
                                  : now_ns;
  bool prefill_only = false;
  if (!cfg_.mixed_batches) {
    prefill_only = std::any_of(running_.begin(), running_.end(),
                               [this](int32_t idx) { return in_prefill(idx); });
    if (!prefill_only && !waiting_.empty() &&
        static_cast<int64_t>(running_.size()) < cfg_.max_num_seqs) {
      prefill_only = seqs_[static_cast<size_t>(waiting_.front())].ready_ns <= admit_by_ns;
    }
  }

  if (cfg_.sglang_admission && running_.empty()) new_token_ratio_ = kSglangInitNewTokenRatio;
  schedule_batch(now_ns, admit_by_ns, prefill_only);
  if (prefill_only && scheduled_.empty() && !running_.empty()) {
    prefill_only = false;
    schedule_batch(now_ns, admit_by_ns, false);  // no prefill batch (no KV blocks): decode
  }
  if (cfg_.sglang_admission) update_new_token_ratio(!prefill_only && !scheduled_.empty());
  last_step_start_ns_ = scheduled_.empty() ? -1 : now_ns;
  if (scheduled_.empty()) {
    // Nothing runnable yet because the next request is still in the front end: wait for it.
    if (running_.empty() && !waiting_.empty()) {
      const int64_t ready = seqs_[static_cast<size_t>(waiting_.front())].ready_ns;
      if (ready > now_ns) result_.duration_ns = ready - now_ns;
    }
    return result_;
  }

  // 3. Time the batch, then advance every scheduled sequence to the end of the step.
  StepShape shape;
  for (const auto& sc : scheduled_) {
    const Seq& s = seqs_[static_cast<size_t>(sc.seq)];
    const bool samples = sc.computed_before + sc.num_new == s.tokens();
    // A decode computes the one token it sampled last step; anything else (a prompt chunk, a
    // preempted sequence recomputing) is an extend.
    const bool decode = s.generated > 0 && sc.num_new == 1 && sc.computed_before + 1 == s.tokens();
    shape.add(sc.num_new, sc.computed_before, samples, !decode);
    if (sc.computed_before < s.prompt) {
      result_.prefill_tokens += std::min(sc.num_new, s.prompt - sc.computed_before);
    }
  }
  if (cfg_.unified_kv_attention) count_unified_attention(shape);
  double step_s = cost_.step_time_s(shape);
  if (cfg_.cold_start && !cold_paid_ && result_.prefill_tokens > 0) {
    step_s += cost_.knobs().cold_start_s + cost_.knobs().cold_start_step_factor * step_s;
    cold_paid_ = true;
  }
  result_.duration_ns = std::max<int64_t>(1, static_cast<int64_t>(std::llround(step_s * 1e9)));
  const int64_t end_ns = now_ns + result_.duration_ns;
  result_.num_seqs = shape.num_seqs;
  result_.new_tokens = shape.new_tokens;

  bool any_finished = false;
  for (const auto& sc : scheduled_) {
    Seq& s = seqs_[static_cast<size_t>(sc.seq)];
    const bool samples = sc.computed_before + sc.num_new == s.tokens();
    s.computed += sc.num_new;
    if (cfg_.enable_prefix_caching) {
      const int64_t full_before = sc.computed_before / cfg_.block_size;
      const int64_t full_now =
          std::min<int64_t>(s.computed / cfg_.block_size, static_cast<int64_t>(s.hashes.size()));
      for (int64_t b = full_before; b < full_now; ++b) {
        kv_.register_hash(s.blocks[static_cast<size_t>(b)], s.hashes[static_cast<size_t>(b)]);
      }
    }
    if (!samples) continue;
    ++s.generated;
    result_.events.push_back({s.generated == 1 ? SeqEventKind::kFirstToken : SeqEventKind::kToken,
                              s.id, end_ns, s.generated, s.scheduled_ns, s.cached});
    if (s.generated >= s.target_out) {
      result_.events.push_back({SeqEventKind::kFinished, s.id, end_ns, s.generated});
      free_blocks(s);
      release_slot(s);
      s.target_out = -1;  // marks it for removal below
      any_finished = true;
    }
  }
  // The front end hands the step's outputs to their streams one at a time (output_overhead_s).
  if (const double per_out = cost_.knobs().output_overhead_s;
      per_out > 0 && cfg_.outputs_before_setups) {
    book_outputs_first(end_ns, std::llround(per_out * 1e9));
  } else if (per_out > 0) {
    const auto each_ns = std::llround(per_out * 1e9);
    free_before_outputs_ns_ = frontend_free_ns_;
    outputs_start_ns_ = std::max(frontend_free_ns_, end_ns);
    frontend_free_ns_ = stamp_outputs(outputs_start_ns_, each_ns);
  }
  if (any_finished) {
    auto done = [this](int32_t idx) {
      if (seqs_[static_cast<size_t>(idx)].target_out != -1) return false;
      free_seqs_.push_back(idx);
      return true;
    };
    running_.erase(std::remove_if(running_.begin(), running_.end(), done), running_.end());
  }
  ++stats_.steps_total;
  return result_;
}

int64_t Engine::stamp_outputs(int64_t start_ns, int64_t each_ns) {
  int64_t t = start_ns;
  for (SeqEvent& ev : result_.events) {
    if (ev.kind != SeqEventKind::kFinished) t += each_ns;
    ev.t_ns = t;
  }
  stats_.frontend_busy_ns += t - start_ns;
  return t;
}

int64_t Engine::after_output_blocks(int64_t t) const {
  for (const OutputBlock& b : output_blocks_) {
    if (t >= b.ready_ns && t < b.end_ns) t = b.end_ns;
  }
  return t;
}

void Engine::book_outputs_first(int64_t end_ns, int64_t each_ns) {
  if (result_.events.empty()) return;  // a prefill chunk that sampled nothing: no outputs
  // Set-ups that began before the step ended keep their times; drop those done by then.
  while (!setups_.empty() && setups_.front().end_ns <= end_ns &&
         setups_.front().start_ns < end_ns) {
    setups_.pop_front();
  }
  // Requests sent during this step are submitted after it: keep what they may still meet.
  while (!output_blocks_.empty() && output_blocks_.front().end_ns <= result_.start_ns) {
    output_blocks_.pop_front();
  }
  int64_t busy_until = end_ns;  // the set-up in progress (started before the step ended)
  size_t moved = 0;             // setups_[moved..] had not begun: they move back
  while (moved < setups_.size() && setups_[moved].start_ns < end_ns) {
    busy_until = std::max(busy_until, setups_[moved].end_ns);
    ++moved;
  }
  const int64_t t = stamp_outputs(std::max({end_ns, outputs_free_ns_, busy_until}), each_ns);
  outputs_free_ns_ = t;
  output_blocks_.push_back(OutputBlock{end_ns, t});
  // Re-chain the set-ups not yet begun behind the outputs, each as long as it was. None of them
  // has reached the scheduler (each would have been ready after the step began).
  const int64_t latency = std::llround(cost_.knobs().request_latency_s * 1e9);
  int64_t chain = busy_until;
  for (size_t k = moved; k < setups_.size(); ++k) {
    Setup& u = setups_[k];
    const int64_t len = u.end_ns - u.start_ns;
    u.start_ns = after_output_blocks(std::max(u.arrival_ns, chain));
    u.end_ns = u.start_ns + len;
    chain = u.end_ns;
    Seq& q = seqs_[static_cast<size_t>(u.seq)];
    if (q.id == u.id) q.ready_ns = u.end_ns + latency;  // unless it was aborted
  }
  if (!setups_.empty()) setup_free_ns_ = setups_.back().end_ns;
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.running = static_cast<int64_t>(running_.size());
  s.waiting = static_cast<int64_t>(waiting_.size());
  s.kv_blocks_total = kv_.capacity();
  s.kv_blocks_used = kv_.num_used();
  return s;
}

}  // namespace tokperf::sim
