#include "load/bench_runner.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>

#include <fmt/format.h>

#include "client/openai_adapter.h"
#include "client/transport.h"
#include "core/clock.h"
#include "load/inflight_request.h"
#include "metrics/stats.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

constexpr int64_t kProbePeriodNs = 10'000'000;  // client loop-lag probe
constexpr int64_t kProgressPeriodNs = 250'000'000;
constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kOpenLoopLeadNs = 20'000'000;  // first arrival this far after the level starts
constexpr size_t kRecentTtfts = 256;

double rusage_s(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

}  // namespace

BenchRunner::BenchRunner(const BenchConfig& config, RequestBuilder builder, RecordSink on_record)
    : config_(config), builder_(std::move(builder)), on_record_(std::move(on_record)) {
  TransportOptions topt;
  topt.http2 = config_.target.http2;
  topt.verify_tls = config_.target.verify_tls;
  transport_ = std::make_unique<Transport>(loop_, topt);
  classifier_ = std::make_unique<ChunkClassifier>(builder_.api());
  recent_ttft_ms_.reserve(kRecentTtfts);
}

BenchRunner::~BenchRunner() {
  if (transport_) transport_->cancel_all();
}

bool BenchRunner::run() {
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  run_start_ns_ = mono_ns();
  probe_deadline_ns_ = run_start_ns_ + kProbePeriodNs;
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
  std::function<void()> progress = [this, &progress] {
    if (interrupt_requested_.load() && !interrupting_) begin_interrupt();
    tick_progress();
    if (!finished_) loop_.add_timer_after(kProgressPeriodNs, progress);
  };
  loop_.add_timer_after(kProgressPeriodNs, progress);
  int64_t next_second = run_start_ns_ + kSecondNs;
  std::function<void()> second = [this, &second, &next_second] {
    tick_second();
    next_second += kSecondNs;
    if (!finished_) loop_.add_timer_at(next_second, second);
  };
  loop_.add_timer_at(next_second, second);

  start_level(0);
  while (!finished_) {
    loop_.run_once(interrupting_ ? 50'000'000 : 100'000'000);
    if (interrupt_requested_.load() && !interrupting_) begin_interrupt();
  }
  run_end_ns_ = mono_ns();

  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  self_.wall_s = (run_end_ns_ - run_start_ns_) / 1e9;
  self_.cpu_user_s = rusage_s(ru1.ru_utime) - rusage_s(ru0.ru_utime);
  self_.cpu_system_s = rusage_s(ru1.ru_stime) - rusage_s(ru0.ru_stime);
  self_.body_reads = transport_->body_reads();
  self_.body_bytes = transport_->body_bytes();
  return !interrupted_;
}

void BenchRunner::interrupt() { interrupt_requested_.store(true); }

void BenchRunner::begin_interrupt() {
  interrupting_ = true;
  interrupted_ = true;
  if (waiting_level_) {
    finished_ = true;  // interrupted before the next level's start: nothing is in flight
    return;
  }
  if (driver_ && !driver_->level_done()) {
    driver_->stop(mono_ns(), "interrupted");
    if (driver_->in_flight() > 0) {
      loop_.add_timer_after(config_.load.grace_ns, [this] { transport_->cancel_all(); });
    }
    pump();
  }
}

void BenchRunner::start_level(size_t index) {
  // Lockstep shards: level k waits for its fixed wall-clock boundary (the event loop keeps
  // probing meanwhile); a shard whose previous level overran starts at once and says by how much.
  const LoadConfig& load = config_.load;
  if (load.start_at_unix_us > 0) {
    const int64_t boundary_us =
        load.start_at_unix_us + static_cast<int64_t>(index) * load.level_slot_ns / 1000;
    const int64_t wait_ns = (boundary_us - wall_us()) * 1000;
    if (late_start_ns_.size() <= index) late_start_ns_.resize(index + 1, 0);
    if (wait_ns > 0 && !interrupting_) {
      waiting_level_ = true;
      loop_.add_timer_at(mono_ns() + wait_ns, [this, index] {
        waiting_level_ = false;
        if (interrupting_) {
          finished_ = true;
          return;
        }
        begin_level(index);
      });
      return;
    }
    late_start_ns_[index] = -wait_ns;
  }
  begin_level(index);
}

void BenchRunner::begin_level(size_t index) {
  level_ = index;
  level_start_ns_ = mono_ns();
  done_ = errors_ = output_tokens_ = 0;
  recent_ttft_ms_.clear();
  recent_next_ = 0;
  sessions_.clear();
  const LevelShare share{config_.load.share_index, config_.load.share_count};
  driver_.emplace(make_level_plan(config_.load, index, share), level_start_ns_, kOpenLoopLeadNs);
  infos_.push_back(driver_->info());
  if (on_level_start_) on_level_start_(infos_.back());
  pump();
}

void BenchRunner::pump() {
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

void BenchRunner::send(const SendOrder& order) {
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
  RequestTimeline tl;
  tl.phase = order.phase;
  tl.intended_ns = order.intended_ns;
  // Shards number their requests k*count + index: unique across shards, and the workload's
  // seq-th request is the one a single process would send as its seq-th.
  tl.seq = seq_ * static_cast<uint64_t>(std::max(1, config_.load.share_count)) +
           static_cast<uint64_t>(config_.load.share_index);
  ++seq_;
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
  const bool keep_reply = tl.session >= 0;
  tl.tools_sent = builder_.sends_tools();
  r->start(std::move(tl), req, *transport_, keep_reply);
}

std::string BenchRunner::session_body(const SendOrder& order, RequestTimeline& tl) {
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

void BenchRunner::session_turn_done(InflightRequest* r) {
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

void BenchRunner::on_request_done(InflightRequest* r) {
  self_.stream_events += r->stream_events();
  RequestTimeline& tl = r->timeline();
  if (tl.phase == Phase::kMeasure) {
    done_++;
    if (!tl.ok()) errors_++;
    if (!tl.token_events.empty()) {
      double ttft = ns_to_ms(tl.token_events.front().t_ns - tl.send_ns);
      if (recent_ttft_ms_.size() < kRecentTtfts) {
        recent_ttft_ms_.push_back(ttft);
      } else {
        recent_ttft_ms_[recent_next_++ % kRecentTtfts] = ttft;
      }
    }
    output_tokens_ += tl.usage_completion_tokens >= 0
                          ? tl.usage_completion_tokens
                          : static_cast<int64_t>(tl.token_events.size());
  }
  on_record_(tl);
  active_.erase(r);
  idle_.push_back(r);
  if (driver_) driver_->on_finished(mono_ns(), tl.phase, tl.error.kind, tl.session);
  if (tl.session >= 0) session_turn_done(r);
  pump();
}

void BenchRunner::finish_level() {
  if (finished_ || !driver_) return;
  LevelDriver driver = std::move(*driver_);
  driver_.reset();
  if (wake_timer_at_ >= 0) loop_.cancel_timer(wake_timer_);
  wake_timer_at_ = -1;
  infos_.back() = driver.info();
  tick_progress();
  if (on_level_end_) on_level_end_(infos_.back());
  if (!interrupting_ && !driver.ends_sweep() && level_ + 1 < config_.load.plan.levels.size()) {
    start_level(level_ + 1);
  } else {
    finished_ = true;
  }
}

void BenchRunner::tick_second() {
  RunnerSample s;
  s.t_ns = mono_ns();
  s.loop_lag_ms = ns_to_ms(second_max_lag_ns_);
  s.client_queue = driver_ ? driver_->queued() : 0;
  samples_.push_back(s);
  second_max_lag_ns_ = 0;
}

void BenchRunner::tick_progress() {
  if (!progress_ || infos_.empty()) return;
  LevelProgress p;
  p.level = static_cast<int>(level_);
  p.label = config_.load.plan.levels[level_].label();
  p.done = done_;
  p.total = config_.load.plan.measure.requests;
  p.errors = errors_;
  p.in_flight = static_cast<int64_t>(active_.size());
  p.queued = driver_ ? driver_->queued() : 0;
  p.elapsed_s = (mono_ns() - level_start_ns_) / 1e9;
  if (!recent_ttft_ms_.empty()) p.ttft_p50_ms = percentile(recent_ttft_ms_, 50);
  p.output_tok_s = p.elapsed_s > 0 ? output_tokens_ / p.elapsed_s : 0;
  progress_(p);
}

namespace {

BenchRunner* g_signal_runner = nullptr;  // NOLINT: the one place a signal handler can reach
std::atomic<int> g_signal_count{0};      // lock-free: safe in a signal handler

void on_stop_signal(int) {
  if (g_signal_count.fetch_add(1) >= 1) _exit(130);
  if (g_signal_runner != nullptr) g_signal_runner->interrupt();  // an atomic store: signal-safe
}

}  // namespace

std::shared_ptr<void> install_signal_stop(BenchRunner* runner) {
  g_signal_runner = runner;
  g_signal_count.store(0);
  struct sigaction sa {};
  sa.sa_handler = &on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return std::shared_ptr<void>(nullptr, [](void*) {
    g_signal_runner = nullptr;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  });
}

}  // namespace tokperf
