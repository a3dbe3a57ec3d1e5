#include "load/loop_worker.h"

#include <time.h>

#include <algorithm>

#include <fmt/format.h>

#include "client/openai_adapter.h"
#include "client/transport.h"
#include "core/clock.h"
#include "load/inflight_request.h"
#include "load/loop_split.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

constexpr int64_t kProbePeriodNs = 10'000'000;  // client loop-lag probe
constexpr int64_t kTickPeriodNs = 250'000'000;
constexpr int64_t kSecondNs = 1'000'000'000;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

LoopWorker::LoopWorker(int index, const BenchConfig& config, RequestBuilder builder,
                       LoopShared& shared, Hooks hooks, SessionTextSource session_text)
    : index_(index),
      config_(config),
      builder_(std::move(builder)),
      shared_(shared),
      hooks_(std::move(hooks)),
      session_text_(std::move(session_text)) {
  classifier_ = std::make_unique<ChunkClassifier>(builder_.api());
  self_.loop = index;
}

LoopWorker::~LoopWorker() {
  if (transport_) transport_->cancel_all();
}

void LoopWorker::run(int64_t run_start_ns) {
  TransportOptions topt;
  topt.http2 = config_.target.http2;
  topt.client = config_.target.http_client == "curl" ? HttpClientKind::kCurl : HttpClientKind::kAuto;
  topt.verify_tls = config_.target.verify_tls;
  transport_ = std::make_unique<Transport>(loop_, topt);
  const double cpu0 = thread_cpu_s();
  const int64_t wall0 = mono_ns();

  probe_deadline_ns_ = run_start_ns + kProbePeriodNs;
  std::function<void()> probe = [this, &probe] {
    int64_t now = mono_ns();
    int64_t lag = now - probe_deadline_ns_;
    self_.loop_lag_ns.push_back(lag);
    second_max_lag_ns_ = std::max(second_max_lag_ns_, lag);
    probe_deadline_ns_ += kProbePeriodNs;
    if (probe_deadline_ns_ < now) probe_deadline_ns_ = now + kProbePeriodNs;
    if (!finished_) loop_.add_timer_at(probe_deadline_ns_, probe);
  };
  loop_.add_timer_at(probe_deadline_ns_, probe);
  std::function<void()> tick = [this, &tick] {
    if (shared_.interrupt_requested.load() && !interrupting_) begin_interrupt();
    if (hooks_.on_tick) hooks_.on_tick();
    if (!finished_) loop_.add_timer_after(kTickPeriodNs, tick);
  };
  loop_.add_timer_after(kTickPeriodNs, tick);
  int64_t next_second = run_start_ns + kSecondNs;
  std::function<void()> second = [this, &second, &next_second] {
    tick_second();
    next_second += kSecondNs;
    if (!finished_) loop_.add_timer_at(next_second, second);
  };
  loop_.add_timer_at(next_second, second);

  while (!finished_) {
    loop_.run_once(interrupting_ ? 50'000'000 : 100'000'000);
    if (shared_.interrupt_requested.load() && !interrupting_) begin_interrupt();
  }
  self_.wall_s = static_cast<double>(mono_ns() - wall0) / 1e9;
  self_.cpu_s = thread_cpu_s() - cpu0;
  self_.body_reads = transport_->body_reads();
  self_.body_bytes = transport_->body_bytes();
  // The transport belongs to this thread: its transfers end and its handles go here.
  transport_->cancel_all();
  transport_.reset();
}

void LoopWorker::begin_interrupt() {
  interrupting_ = true;
  if (driver_ && !driver_->level_done()) {
    driver_->stop(mono_ns(), "interrupted");
    if (driver_->in_flight() > 0) {
      loop_.add_timer_after(config_.load.grace_ns, [this] { transport_->cancel_all(); });
    }
    pump();
  }
}

void LoopWorker::start_level(size_t level, int shares, int64_t start_ns) {
  level_ = level;
  sessions_.clear();
  sweep_stop_reported_ = false;
  if (index_ >= shares) {
    LevelRunInfo idle;
    idle.level = static_cast<int>(level);
    idle.start_ns = idle.end_ns = start_ns;
    hooks_.on_level_done(index_, idle, false);
    return;
  }
  driver_.emplace(make_level_plan(config_.load, level, loop_share(config_.load, index_, shares)),
                  start_ns, kOpenLoopLeadNs);
  if (interrupting_) driver_->stop(mono_ns(), "interrupted");
  pump();
}

void LoopWorker::stop_level(size_t level, const std::string& reason) {
  if (!driver_ || level != level_ || driver_->level_done()) return;
  driver_->stop(mono_ns(), reason);
  pump();
}

void LoopWorker::pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    if (!driver_ || driver_->level_done()) break;
    while (std::optional<SendOrder> order = driver_->next_send(mono_ns())) send(*order);
    if (driver_->take_cancel_cooldown()) {
      // Cool-down requests still running once every measured one has finished have done their job.
      std::vector<uint64_t> ids;
      for (InflightRequest* r : active_) {
        if (r->timeline().phase == Phase::kCooldown) ids.push_back(r->transfer_id());
      }
      for (uint64_t id : ids) transport_->cancel(id);  // each finishes at once: pump_again_
    }
  } while (pump_again_);
  pumping_ = false;
  if (!driver_) return;
  queued_.store(driver_->queued(), std::memory_order_relaxed);
  if (driver_->ends_sweep() && !sweep_stop_reported_) {
    sweep_stop_reported_ = true;
    if (hooks_.on_sweep_stop) {
      hooks_.on_sweep_stop(index_, level_, driver_->info().stopped_early.value_or("saturated"));
    }
  }
  const int64_t wake = driver_->wake_at();
  if (wake != wake_timer_at_) {
    if (wake_timer_at_ >= 0) loop_.cancel_timer(wake_timer_);
    wake_timer_at_ = wake;
    if (wake >= 0) {
      wake_timer_ = loop_.add_timer_at(wake, [this] {
        wake_timer_at_ = -1;
        pump();
      });
    }
  }
  if (driver_->level_done()) finish_level();
}

void LoopWorker::send(const SendOrder& order) {
  InflightRequest* r;
  if (idle_.empty()) {
    pool_.push_back(std::make_unique<InflightRequest>(
        classifier_.get(), [this](InflightRequest* done) { on_request_done(done); }));
    r = pool_.back().get();
  } else {
    r = idle_.back();
    idle_.pop_back();
  }
  active_.insert(r);
  in_flight_.store(static_cast<int64_t>(active_.size()), std::memory_order_relaxed);
  RequestTimeline tl;
  tl.phase = order.phase;
  tl.intended_ns = order.intended_ns;
  // Shards number their requests c*count + index (c: this process's counter, shared by its
  // loops): unique across shards, and the workload's seq-th request is the one a single process
  // would send as its seq-th.
  tl.seq = shared_.next_seq.fetch_add(1, std::memory_order_relaxed) *
               static_cast<uint64_t>(std::max(1, config_.load.share_count)) +
           static_cast<uint64_t>(config_.load.share_index);
  tl.request_id = fmt::format("{}-{}", config_.run_id, tl.seq);
  tl.level = static_cast<int>(level_);
  tl.prompt_tokens_sent = config_.prompt.input_tokens;
  StreamRequest req;
  req.url = builder_.url();
  req.headers = builder_.headers(tl.request_id);
  tl.requested_input_tokens = config_.prompt.input_tokens;
  tl.requested_output_tokens = config_.prompt.output_tokens;
  tl.input_tokens_method = length_method_name(config_.prompt.input_tokens_method);
  std::string prefix;
  if (config_.prompt.unique_prefix && !config_.workload) {
    prefix = unique_prefix(std::hash<std::string>{}(config_.run_id), tl.seq);
  }
  if (order.session >= 0) {
    req.body = session_body(order, tl);
  } else if (config_.workload) {
    // The workload's own request: a replayed entry by its schedule index, else the seq-th.
    const Workload& w = *config_.workload;
    const RequestSpec s = order.index >= 0 && w.timed_count() > 0
                              ? w.timed_at(static_cast<size_t>(order.index))
                              : w.at(tl.seq);
    const int64_t max_tokens = s.output_tokens > 0 ? s.output_tokens : config_.prompt.output_tokens;
    req.body = s.messages.empty() ? builder_.body_for("", s.prompt, max_tokens)
                                  : builder_.body_messages(s.messages, max_tokens);
    tl.prompt_tokens_sent = s.input_tokens;
    tl.requested_input_tokens = s.input_tokens;
    tl.requested_output_tokens = max_tokens;
    if (s.input_tokens_method != nullptr) tl.input_tokens_method = s.input_tokens_method;
    tl.prefix_group = s.prefix_group;
  } else if (order.index >= 0 && !config_.load.trace.empty()) {
    const TraceEntry& e = config_.load.trace[static_cast<size_t>(order.index)];
    int64_t max_tokens = e.output_tokens > 0 ? e.output_tokens : config_.prompt.output_tokens;
    req.body = builder_.body_for(prefix, e.prompt, max_tokens);
    tl.prompt_tokens_sent = e.input_tokens;
    tl.requested_input_tokens = e.input_tokens;
    tl.requested_output_tokens = max_tokens;
  } else {
    req.body = builder_.body(prefix);
  }
  req.timeout_ns = config_.load.timeout_ns;
  self_.peak_in_flight = std::max(self_.peak_in_flight, static_cast<int64_t>(active_.size()));
  const int64_t in_flight = shared_.in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t peak = shared_.peak_in_flight.load(std::memory_order_relaxed);
  while (in_flight > peak &&
         !shared_.peak_in_flight.compare_exchange_weak(peak, in_flight, std::memory_order_relaxed)) {
  }
  const bool keep_reply = tl.session >= 0;
  tl.tools_sent = builder_.sends_tools();
  r->start(std::move(tl), req, *transport_, keep_reply);
}

std::string LoopWorker::session_body(const SendOrder& order, RequestTimeline& tl) {
  SessionHistory& h = sessions_[order.session];
  tl.session = order.session;
  tl.turn = static_cast<int32_t>(order.turn);
  int64_t max_tokens = -1;
  int64_t turn_tokens = config_.prompt.input_tokens;  // this turn's own prompt (without history)
  if (session_text_) {
    h.pending_user = session_text_(static_cast<int>(level_), order.session, order.turn);
  } else if (config_.workload) {
    // Each turn's user text and output length come from the workload (dataset or synthetic
    // lengths), the request's seq-th spec as for single requests; the history still grows.
    const RequestSpec s = config_.workload->at(tl.seq);
    // The first turn opens with the spec's whole conversation (a system prompt, earlier
    // exchanges); later turns add its last message as the user's next prompt.
    h.pending_user = s.messages.empty() ? s.prompt : s.messages.back().content;
    if (order.turn == 1 && s.messages.size() > 1) {
      h.messages.assign(s.messages.begin(), s.messages.end() - 1);
    }
    max_tokens = s.output_tokens > 0 ? s.output_tokens : config_.prompt.output_tokens;
    turn_tokens = order.turn == 1 || s.messages.size() <= 1 ? s.input_tokens : -1;
    tl.requested_output_tokens = max_tokens;
    tl.requested_input_tokens = s.input_tokens;
    if (s.input_tokens_method != nullptr) tl.input_tokens_method = s.input_tokens_method;
    tl.prefix_group = s.prefix_group;
  } else {
    h.pending_user.clear();
    if (order.turn == 1 && config_.prompt.unique_prefix) {
      h.pending_user = unique_prefix(std::hash<std::string>{}(config_.run_id), tl.seq);
    }
    h.pending_user += config_.prompt.text;
  }
  // The prompt grows by the history: earlier prompts plus the replies actually generated.
  tl.prompt_tokens_sent = -1;
  if (order.turn == 1) {
    tl.prompt_tokens_sent = turn_tokens;
  } else if (h.tokens_known && turn_tokens > 0 && !session_text_) {
    tl.prompt_tokens_sent = h.tokens + turn_tokens;
  }
  std::vector<ChatMessage> messages = h.messages;
  messages.push_back(ChatMessage{"user", h.pending_user});
  return builder_.body_messages(messages, max_tokens);
}

void LoopWorker::session_turn_done(InflightRequest* r) {
  const RequestTimeline& tl = r->timeline();
  auto it = sessions_.find(tl.session);
  if (it == sessions_.end()) return;
  if (!driver_ || !driver_->session_open(tl.session)) {
    sessions_.erase(it);  // ended (last turn, failure) or cut
    return;
  }
  SessionHistory& h = it->second;
  const RequestMetrics m = compute_request_metrics(tl);
  h.tokens_known = m.prompt_tokens >= 0;
  h.tokens = m.prompt_tokens + m.output_tokens;
  h.messages.push_back(ChatMessage{"user", std::move(h.pending_user)});
  h.messages.push_back(ChatMessage{"assistant", r->reply_text()});
  h.pending_user.clear();
}

void LoopWorker::on_request_done(InflightRequest* r) {
  self_.stream_events += r->stream_events();
  shared_.in_flight.fetch_sub(1, std::memory_order_relaxed);
  RequestTimeline& tl = r->timeline();
  active_.erase(r);
  in_flight_.store(static_cast<int64_t>(active_.size()), std::memory_order_relaxed);
  idle_.push_back(r);
  if (driver_) driver_->on_finished(mono_ns(), tl.phase, tl.error.kind, tl.session);
  if (tl.session >= 0) session_turn_done(r);
  // Last: the hook may move the timeline out (r is not reused before the pump below).
  hooks_.on_record(tl);
  pump();
}

void LoopWorker::finish_level() {
  if (!driver_) return;
  LevelDriver driver = std::move(*driver_);
  driver_.reset();
  if (wake_timer_at_ >= 0) loop_.cancel_timer(wake_timer_);
  wake_timer_at_ = -1;
  queued_.store(0, std::memory_order_relaxed);
  hooks_.on_level_done(index_, driver.info(), driver.ends_sweep());
}

void LoopWorker::tick_second() {
  RunnerSample s;
  s.t_ns = mono_ns();
  s.loop_lag_ms = ns_to_ms(second_max_lag_ns_);
  s.client_queue = driver_ ? driver_->queued() : 0;
  samples_.push_back(s);
  second_max_lag_ns_ = 0;
}

}  // namespace tokperf
