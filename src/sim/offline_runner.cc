#include "sim/offline_runner.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace tokperf::sim {
namespace {

// Why the server refuses a request of `prompt_tokens` + `max_tokens` (a 400 before scheduling, as
// vLLM's and SGLang's API servers check it; SimServer checks the same over HTTP): they exceed the
// served context (ModelShape::max_context: --max-model-len, else max_position_embeddings). Empty
// when they fit or the context is unknown (0).
std::string context_refusal(const ModelShape& m, int64_t prompt_tokens, int64_t max_tokens) {
  if (m.max_context <= 0 || prompt_tokens + max_tokens <= m.max_context) return {};
  return std::to_string(prompt_tokens) + " prompt + " + std::to_string(max_tokens) +
         " output tokens exceed the served context of " + std::to_string(m.max_context) +
         " tokens (--max-model-len, default the model's max_position_embeddings)";
}

// One generated token as a streaming client would have recorded it: one event, one token, visible.
void record_token(RequestTimeline& t, const SeqEvent& ev) {
  if (ev.kind == SeqEventKind::kFirstToken) t.first_visible_ns = ev.t_ns;
  t.token_events.push_back(TokenEvent{ev.t_ns, 1, true});
  t.last_event_ns = ev.t_ns;
  ++t.chunks;
}

// Plays the client (the driver's orders, timeouts, cancels) and the server (the engine) of one
// level in virtual time. Invariant: a timeline with end_ns == 0 is in flight.
class VirtualLevel {
 public:
  VirtualLevel(const CostModel& cost, const EngineConfig& config, const OfflineLevel& l)
      : l_(l),
        model_(cost.deployment().model),
        engine_(cost, config),
        driver_(l.plan, 0),
        block_size_(config.block_size) {}

  OfflineLevelRun run() {
    pump(0);
    while (!driver_.level_done()) {
      if (!engine_.has_work()) {
        const int64_t t = next_timer();
        if (t < 0) break;  // nothing runnable and nothing due (cannot happen with a sane driver)
        now_ = std::max(now_, t);
        deliver(now_);
        expire(now_, true);
        pump(now_);
        continue;
      }
      const StepResult& r = engine_.step(now_);
      const int64_t step_end = now_ + r.duration_ns;
      // What falls due during the step happens at its own time and meets the slots as they were
      // before the step's requests finished.
      for (int64_t t = next_timer(); t >= 0 && t < step_end; t = next_timer()) {
        deliver(t);
        expire(t, true);
        pump(t);
      }
      now_ = step_end;
      // Events reach the client at their own time: the step's end, or later when the engine's
      // front end passes outputs on one at a time (CostKnobs::output_overhead_s).
      outbox_.insert(outbox_.end(), r.events.begin(), r.events.end());
      deliver(now_);
      // A request still running when its timeout falls exactly at the step's end failed it.
      expire(now_, true);
      pump(now_);
    }
    OfflineLevelRun out;
    std::sort(done_.begin(), done_.end(),
              [](const RequestTimeline& a, const RequestTimeline& b) { return a.seq < b.seq; });
    out.timelines = std::move(done_);
    out.engine = engine_.stats();
    out.end_ns = driver_.level_done() ? driver_.info().end_ns : now_;
    out.info = driver_.info();
    out.ends_sweep = driver_.ends_sweep();
    return out;
  }

 private:
  using Deadline = std::pair<int64_t, uint64_t>;  // (virtual time, seq)

  // The earliest of the driver's wake-up, the next timeout and the next event still on its way;
  // -1: none.
  int64_t next_timer() {
    while (!deadlines_.empty() && !live_.contains(deadlines_.top().second)) deadlines_.pop();
    int64_t t = driver_.wake_at();
    if (!deadlines_.empty() && (t < 0 || deadlines_.top().first < t)) t = deadlines_.top().first;
    if (!outbox_.empty() && (t < 0 || outbox_.front().t_ns < t)) t = outbox_.front().t_ns;
    return t;
  }

  // Hands the client every event due by `now`. The engine stamps events in time order (its front
  // end is serial), so the outbox is a queue.
  void deliver(int64_t now) {
    while (!outbox_.empty() && outbox_.front().t_ns <= now) {
      const SeqEvent ev = outbox_.front();
      outbox_.pop_front();
      on_event(ev);
    }
  }

  // Fails every request whose timeout is before `now` (or at it, when `inclusive`: a request still
  // running at its deadline has passed it; one finishing at a step's end exactly on it has not).
  void expire(int64_t now, bool inclusive) {
    while (!deadlines_.empty()) {
      const auto [at, seq] = deadlines_.top();
      if (at > now || (!inclusive && at == now)) break;
      deadlines_.pop();
      auto it = live_.find(seq);
      if (it == live_.end()) continue;
      RequestTimeline& t = it->second;
      engine_.abort(seq);
      t.error = RequestError{ErrorKind::kTimeout, t.http_status,
                             fmt::format("Operation timed out after {} milliseconds (virtual time)",
                                         l_.timeout_ns / 1'000'000)};
      end(t, at);
    }
  }

  void pump(int64_t now) {
    while (std::optional<SendOrder> o = driver_.next_send(now)) send(*o, now);
    if (driver_.take_cancel_cooldown()) {
      // Cool-down requests still running once every measured one has finished have done their job.
      std::vector<uint64_t> cut;
      for (const auto& [seq, t] : live_) {
        if (t.phase == Phase::kCooldown) cut.push_back(seq);
      }
      std::sort(cut.begin(), cut.end());
      for (uint64_t seq : cut) {
        RequestTimeline& t = live_.at(seq);
        engine_.abort(seq);
        t.error = RequestError{ErrorKind::kCancelled, 0, "cool-down ended"};
        end(t, now);
      }
    }
  }

  void send(const SendOrder& o, int64_t now) {
    const uint64_t seq = next_seq_++;
    RequestTimeline& t = live_[seq];
    t.seq = seq;
    t.request_id = "sim-" + std::to_string(seq);
    t.phase = o.phase;
    t.intended_ns = o.intended_ns;
    t.send_ns = now;
    OfflineLengths len;
    if (l_.request_of) {
      len = l_.request_of(o);
    } else if (o.index >= 0 && static_cast<size_t>(o.index) < l_.lengths.size()) {
      len = l_.lengths[o.index];
    }
    t.prompt_tokens_sent = len.prompt_tokens > 0 ? len.prompt_tokens : l_.prompt_tokens;
    SimRequest r;
    r.id = seq;
    if (o.session >= 0) {
      // A session turn: the whole history (earlier prompts and generated replies) comes first, so
      // the previous turn's blocks are a prefix the engine's cache can serve.
      t.session = o.session;
      t.turn = static_cast<int32_t>(o.turn);
      auto it = session_tokens_.find(o.session);
      if (it != session_tokens_.end()) t.prompt_tokens_sent += it->second;
      r.prefix_block_hashes = session_block_hashes(o.session, t.prompt_tokens_sent);
    }
    r.prompt_tokens = t.prompt_tokens_sent;
    r.max_tokens = len.output_tokens > 0 ? len.output_tokens : l_.output_tokens;
    if (o.session < 0) r.prefix_block_hashes = std::move(len.prefix_block_hashes);
    t.requested_input_tokens = r.prompt_tokens;
    t.requested_output_tokens = r.max_tokens;
    t.prefix_group = len.prefix_group;
    r.ignore_eos = l_.ignore_eos;
    r.arrival_ns = now;
    if (std::string why = context_refusal(model_, r.prompt_tokens, r.max_tokens); !why.empty()) {
      // The server answers this request 400 and serves the others (a dataset's few long prompts);
      // a level that gets nothing but refusals stops, since a closed loop would resend at once,
      // forever, without virtual time passing.
      t.error = RequestError{ErrorKind::kHttp, 400, why};
      t.http_status = 400;
      if (++refused_in_a_row_ >= kRefusalsToStop) {
        driver_.stop(now, "the engine refused " + std::to_string(kRefusalsToStop) +
                              " requests in a row, the last because " + why);
      }
      end(t, now);
      return;
    }
    refused_in_a_row_ = 0;
    const Status s = engine_.submit(r);
    if (!s.ok()) {
      t.error = RequestError{ErrorKind::kHttp, 400, s.error()};
      t.http_status = 400;
      // A closed loop would resend at once, forever: stop the level and say why.
      driver_.stop(now, "the engine refused a request: " + s.error());
      end(t, now);
      return;
    }
    t.http_status = 200;
    t.token_events.reserve(static_cast<size_t>(r.max_tokens));
    if (l_.timeout_ns > 0) deadlines_.push({now + l_.timeout_ns, seq});
  }

  void on_event(const SeqEvent& ev) {
    auto it = live_.find(ev.request_id);
    if (it == live_.end()) return;  // timed out during the step that produced this
    RequestTimeline& t = it->second;
    switch (ev.kind) {
      case SeqEventKind::kFirstToken:
        t.usage_cached_tokens = ev.cached_tokens;  // reported in usage, as the HTTP front does
        record_token(t, ev);
        break;
      case SeqEventKind::kToken:
        record_token(t, ev);
        break;
      case SeqEventKind::kFinished:
        t.usage_prompt_tokens = t.prompt_tokens_sent;
        t.usage_completion_tokens = ev.output_tokens;
        t.saw_done = true;
        end(t, ev.t_ns);
        break;
      case SeqEventKind::kPreempted:
        break;
    }
  }

  // Ends an in-flight request (a reference into live_) and hands it over.
  void end(RequestTimeline& t, int64_t now) {
    t.end_ns = now;
    driver_.on_finished(now, t.phase, t.error.kind, t.session);
    if (t.session >= 0) {
      if (!driver_.session_open(t.session)) {
        session_tokens_.erase(t.session);
      } else {
        session_tokens_[t.session] = t.prompt_tokens_sent + t.usage_completion_tokens;
      }
    }
    const uint64_t seq = t.seq;
    if (l_.on_finished) {
      l_.on_finished(std::move(t));
    } else {
      done_.push_back(std::move(t));
    }
    live_.erase(seq);
  }

  // Block hashes of a session's first `tokens` tokens: a token's content is fixed by its session
  // and position (history only grows), so block i hashes (session, i).
  std::vector<uint64_t> session_block_hashes(int64_t session, int64_t tokens) const {
    std::vector<uint64_t> h;
    if (block_size_ < 1) return h;
    const int64_t blocks = tokens / block_size_;
    h.reserve(static_cast<size_t>(blocks));
    uint64_t x = 0x5e55'1017ULL ^ (static_cast<uint64_t>(session) * 0x9e3779b97f4a7c15ULL);
    for (int64_t b = 0; b < blocks; ++b) {
      x ^= static_cast<uint64_t>(b) + 0x632be59bd9b4e019ULL + (x << 6) + (x >> 2);
      x *= 0xbf58476d1ce4e5b9ULL;
      h.push_back(x ^ (x >> 31));
    }
    return h;
  }

  // Refusals in a row that stop the level (a workload none of whose requests fit).
  static constexpr int64_t kRefusalsToStop = 1000;

  const OfflineLevel& l_;
  const ModelShape& model_;
  Engine engine_;
  LevelDriver driver_;
  std::unordered_map<uint64_t, RequestTimeline> live_;  // in flight, by seq
  std::vector<RequestTimeline> done_;                   // ended (without on_finished)
  uint64_t next_seq_ = 0;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  std::deque<SeqEvent> outbox_;  // events stamped later than now (the front end's queue)
  int64_t now_ = 0;
  int64_t block_size_;
  int64_t refused_in_a_row_ = 0;
  // Sessions: prompt + output tokens of each open session's last finished turn.
  std::unordered_map<int64_t, int64_t> session_tokens_;
};

}  // namespace

Result<OfflineLevelRun> run_offline_level(const CostModel& cost, const EngineConfig& config,
                                          const OfflineLevel& level) {
  if (level.prompt_tokens < 1 || level.output_tokens < 1) {
    return Error{"input and output tokens must be >= 1"};
  }
  if (level.timeout_ns < 0) return Error{"timeout must be >= 0 (0: none)"};
  const LevelPlan& p = level.plan;
  if (!p.open_loop) {
    if (p.spec.mode != LoadMode::kConcurrency || !(p.spec.start >= 1)) {
      return Error{"a closed-loop level needs a concurrency of at least 1"};
    }
    if (p.measure.none()) return Error{"a closed-loop level needs a measure phase"};
  } else {
    if (p.max_concurrency < 0) return Error{"max_concurrency must be >= 0"};
    const auto by_time = [](const PlannedArrival& a, const PlannedArrival& b) {
      return a.offset_ns < b.offset_ns;
    };
    if (!std::is_sorted(p.arrivals.begin(), p.arrivals.end(), by_time)) {
      return Error{"open-loop arrival times must not decrease"};
    }
  }
  return VirtualLevel(cost, config, level).run();
}

Result<OfflineRun> run_offline(const CostModel& cost, const EngineConfig& config,
                               const OfflineWorkload& w) {
  if (w.prompt_tokens < 1 || w.output_tokens < 1) {
    return Error{"input and output tokens must be >= 1"};
  }
  OfflineLevel l;
  l.prompt_tokens = w.prompt_tokens;
  l.output_tokens = w.output_tokens;
  l.ignore_eos = w.ignore_eos;
  if (w.arrivals_ns.empty()) {
    if (w.concurrency < 1 || w.requests < 0 || w.warmup < 0) {
      return Error{"concurrency must be >= 1 and requests, warmup >= 0"};
    }
    const auto c = static_cast<double>(w.concurrency);
    l.plan.spec = LevelSpec{LoadMode::kConcurrency, c, c, 0};
    l.plan.warmup = PhaseLimit{0, w.warmup};
    l.plan.measure = PhaseLimit{0, w.requests};
    if (w.requests == 0) {
      return OfflineRun{};  // nothing measured, nothing to run
    }
  } else {
    if (!std::is_sorted(w.arrivals_ns.begin(), w.arrivals_ns.end())) {
      return Error{"open-loop arrival times must not decrease"};
    }
    l.plan.open_loop = true;
    l.plan.spec = LevelSpec{LoadMode::kRate, 1, 1, 0};
    for (size_t i = 0; i < w.arrivals_ns.size(); ++i) {
      l.plan.arrivals.push_back(
          PlannedArrival{w.arrivals_ns[i], Phase::kMeasure, static_cast<int64_t>(i)});
    }
  }
  auto level = run_offline_level(cost, config, l);
  if (!level) return Error{level.error()};
  OfflineRun run;
  run.timelines = std::move(level->timelines);
  run.engine = level->engine;
  run.end_ns = level->end_ns;
  run.stopped_early = level->info.stopped_early;
  for (const RequestTimeline& t : run.timelines) {
    if (t.ok()) run.total_output_tokens += t.usage_completion_tokens;
  }
  return run;
}

}  // namespace tokperf::sim
