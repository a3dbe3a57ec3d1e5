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
#include "load/arrivals.h"
#include "load/inflight_request.h"
#include "load/open_loop_schedule.h"
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
  classifier_ = std::make_unique<ChunkClassifier>(config_.target.api == "chat" ? ApiKind::kChat
                                                                               : ApiKind::kCompletions);
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
  sending_done_ = true;
  if (arrival_timer_armed_) loop_.cancel_timer(arrival_timer_);
  arrival_timer_armed_ = false;
  client_queue_.clear();
  if (!infos_.empty()) infos_.back().stopped_early = "interrupted";
  if (in_flight_ == 0) {
    finish_level();
    return;
  }
  loop_.add_timer_after(config_.load.grace_ns, [this] { transport_->cancel_all(); });
}

size_t BenchRunner::slot_limit(int64_t now) const {
  const LevelSpec& spec = config_.load.plan.levels[level_];
  if (open_loop_) {
    int cap = config_.load.plan.max_concurrency;
    return cap > 0 ? static_cast<size_t>(cap) : SIZE_MAX;
  }
  double c = spec.target_at(now - level_start_ns_);
  return static_cast<size_t>(std::max(1.0, std::floor(c + 1e-9)));
}

void BenchRunner::start_level(size_t index) {
  level_ = index;
  const LevelSpec& spec = config_.load.plan.levels[index];
  open_loop_ = spec.mode == LoadMode::kRate || !config_.load.trace.empty();
  level_start_ns_ = mono_ns();
  phase_start_ns_ = level_start_ns_;
  phase_started_ = 0;
  sending_done_ = false;
  done_ = errors_ = output_tokens_ = 0;
  recent_ttft_ms_.clear();
  recent_next_ = 0;
  measured_in_flight_ = 0;
  saturation_ = std::make_unique<SaturationDetector>(config_.load.saturation);
  second_completed_ = second_errors_ = 0;

  LevelRunInfo info;
  info.level = static_cast<int>(index);
  info.spec = spec;
  info.open_loop = open_loop_;
  info.start_ns = level_start_ns_;
  infos_.push_back(std::move(info));

  if (open_loop_) {
    plan_open_loop(infos_.back());
    on_arrival_timer();
    return;
  }
  phase_ = Phase::kWarmup;
  fill_closed_loop();
}

void BenchRunner::plan_open_loop(LevelRunInfo& info) {
  OpenLoopSchedule plan = plan_open_loop_schedule(config_.load, level_);
  info.target_rate_rps = plan.target_rate_rps;
  info.schedule_fingerprint = plan.fingerprint;
  info.scheduled_arrivals = static_cast<int64_t>(plan.arrivals.size());
  schedule_.clear();
  client_queue_.clear();
  next_arrival_ = 0;
  int64_t t0 = level_start_ns_ + kOpenLoopLeadNs;
  for (const PlannedArrival& a : plan.arrivals) {
    schedule_.push_back(Arrival{t0 + a.offset_ns, a.phase, a.index});
  }
  if (schedule_.empty()) sending_done_ = true;
}

void BenchRunner::on_arrival_timer() {
  arrival_timer_armed_ = false;
  if (sending_done_) return;
  int64_t now = mono_ns();
  while (next_arrival_ < schedule_.size() && schedule_[next_arrival_].intended_ns <= now) {
    dispatch(schedule_[next_arrival_++], now);
  }
  if (next_arrival_ < schedule_.size()) {
    arrival_timer_ = loop_.add_timer_at(schedule_[next_arrival_].intended_ns,
                                        [this] { on_arrival_timer(); });
    arrival_timer_armed_ = true;
  } else {
    sending_done_ = true;
    if (level_done()) finish_level();
  }
}

void BenchRunner::dispatch(const Arrival& a, int64_t now) {
  if (a.phase == Phase::kMeasure) infos_.back().send_lag_ns.push_back(now - a.intended_ns);
  if (static_cast<size_t>(in_flight_) >= slot_limit(now)) {
    client_queue_.push_back(a);
    return;
  }
  RequestTimeline tl;
  tl.phase = a.phase;
  tl.intended_ns = a.intended_ns;
  send(nullptr, std::move(tl), a.index);
}

PhaseLimit BenchRunner::closed_loop_limit(int64_t now) const {
  if (phase_ == Phase::kWarmup) {
    // Default: one warm-up request per slot.
    return config_.load.default_warmup
               ? PhaseLimit{0, static_cast<int64_t>(slot_limit(level_start_ns_))}
               : config_.load.plan.warmup;
  }
  if (phase_ == Phase::kMeasure) return config_.load.plan.measure;
  // Cool-down only keeps the load up while measured requests finish.
  return measured_in_flight_ > 0 ? config_.load.plan.cooldown : PhaseLimit{};
}

std::optional<Phase> BenchRunner::next_closed_loop_phase(int64_t now) {
  for (;;) {
    PhaseLimit limit = closed_loop_limit(now);
    bool exhausted = limit.none() || (limit.requests > 0 && phase_started_ >= limit.requests) ||
                     (limit.duration_ns > 0 && now - phase_start_ns_ >= limit.duration_ns);
    if (!exhausted) return phase_;
    if (phase_ == Phase::kCooldown) {
      sending_done_ = true;
      return std::nullopt;
    }
    // A count-based warm-up is a barrier: measurement starts when it has drained.
    if (phase_ == Phase::kWarmup && limit.requests > 0 && in_flight_ > 0) return std::nullopt;
    phase_ = phase_ == Phase::kWarmup ? Phase::kMeasure : Phase::kCooldown;
    phase_started_ = 0;
    phase_start_ns_ = now;
  }
}

void BenchRunner::fill_closed_loop() {
  while (!sending_done_ && !interrupting_) {
    int64_t now = mono_ns();
    if (static_cast<size_t>(in_flight_) >= slot_limit(now)) break;
    std::optional<Phase> p = next_closed_loop_phase(now);
    if (!p) break;
    RequestTimeline tl;
    tl.phase = *p;
    tl.intended_ns = now;  // closed loop: the slot came free now
    phase_started_++;
    send(nullptr, std::move(tl), -1);
  }
  if (sending_done_) cancel_cooldown_if_measured_done();
  if (level_done()) finish_level();
}

void BenchRunner::cancel_cooldown_if_measured_done() {
  if (measured_in_flight_ > 0) return;
  std::vector<uint64_t> ids;
  for (InflightRequest* r : active_) {
    if (r->timeline().phase == Phase::kCooldown) ids.push_back(r->transfer_id());
  }
  for (uint64_t id : ids) transport_->cancel(id);
}

void BenchRunner::send(InflightRequest* r, RequestTimeline tl, int64_t trace_index) {
  if (r == nullptr) {
    if (idle_.empty()) {
      pool_.push_back(std::make_unique<InflightRequest>(
          classifier_.get(), [this](InflightRequest* done) { on_request_done(done); }));
      idle_.push_back(pool_.back().get());
    }
    r = idle_.back();
    idle_.pop_back();
  }
  active_.insert(r);
  tl.seq = seq_++;
  tl.request_id = fmt::format("{}-{}", config_.run_id, tl.seq);
  tl.level = static_cast<int>(level_);
  tl.prompt_tokens_sent = config_.prompt.input_tokens;
  StreamRequest req;
  req.url = builder_.url();
  req.headers = builder_.headers(tl.request_id);
  std::string prefix;
  if (config_.prompt.unique_prefix) {
    prefix = unique_prefix(std::hash<std::string>{}(config_.run_id), tl.seq);
  }
  if (trace_index >= 0 && !config_.load.trace.empty()) {
    const TraceEntry& e = config_.load.trace[static_cast<size_t>(trace_index)];
    int64_t max_tokens = e.output_tokens > 0 ? e.output_tokens : config_.prompt.output_tokens;
    req.body = builder_.body_for(prefix, e.prompt, max_tokens);
    tl.prompt_tokens_sent = e.input_tokens;
  } else {
    req.body = builder_.body(prefix);
  }
  req.timeout_ns = config_.load.timeout_ns;
  in_flight_++;
  if (tl.phase == Phase::kMeasure) {
    measured_in_flight_++;
    LevelRunInfo& info = infos_.back();
    info.measured_sent++;
    int64_t now = mono_ns();
    if (info.first_measured_send_ns == 0) info.first_measured_send_ns = now;
    info.last_measured_send_ns = now;
  }
  self_.peak_in_flight = std::max(self_.peak_in_flight, in_flight_);
  r->start(std::move(tl), req, *transport_);
}

bool BenchRunner::level_done() const { return sending_done_ && in_flight_ == 0; }

void BenchRunner::on_request_done(InflightRequest* r) {
  in_flight_--;
  self_.stream_events += r->stream_events();
  RequestTimeline& tl = r->timeline();
  if (tl.phase == Phase::kMeasure) {
    measured_in_flight_--;
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
    output_tokens_ += tl.usage_completion_tokens >= 0 ? tl.usage_completion_tokens
                                                       : static_cast<int64_t>(tl.token_events.size());
  }
  if (tl.ok()) {
    second_completed_++;
  } else if (tl.error.kind != ErrorKind::kCancelled) {
    second_errors_++;
  }
  on_record_(tl);
  active_.erase(r);
  idle_.push_back(r);
  if (interrupting_) {
    if (in_flight_ == 0) finish_level();
    return;
  }
  if (open_loop_) {
    int64_t now = mono_ns();
    while (!client_queue_.empty() && static_cast<size_t>(in_flight_) < slot_limit(now)) {
      Arrival a = client_queue_.front();
      client_queue_.pop_front();
      RequestTimeline next;
      next.phase = a.phase;
      next.intended_ns = a.intended_ns;
      send(nullptr, std::move(next), a.index);
    }
    // Once every measured request has finished, cool-down arrivals have done their job.
    bool measured_left = false;
    for (size_t i = next_arrival_; i < schedule_.size() && !measured_left; ++i) {
      measured_left = schedule_[i].phase == Phase::kMeasure;
    }
    for (const Arrival& a : client_queue_) measured_left |= a.phase == Phase::kMeasure;
    if (measured_in_flight_ == 0 && !measured_left && !sending_done_) {
      sending_done_ = true;
      if (arrival_timer_armed_) loop_.cancel_timer(arrival_timer_);
      arrival_timer_armed_ = false;
      client_queue_.clear();
      cancel_cooldown_if_measured_done();
    }
    if (sending_done_ && client_queue_.empty() && level_done()) finish_level();
    return;
  }
  fill_closed_loop();
}

void BenchRunner::finish_level() {
  if (infos_.empty() || finished_) return;
  LevelRunInfo& info = infos_.back();
  if (info.end_ns != 0) return;  // already finished
  info.end_ns = mono_ns();
  if (level_end_) level_end_(info.level);
  if (info.open_loop) {
    // Achieved rate: measured sends over the span of their intended starts, so that a schedule of
    // N arrivals over T seconds reads N/T when kept.
    int64_t first = INT64_MAX, last = INT64_MIN, n = 0;
    for (const auto& a : schedule_) {
      if (a.phase != Phase::kMeasure) continue;
      first = std::min(first, a.intended_ns);
      last = std::max(last, a.intended_ns);
      n++;
    }
    // The schedule is a random sample of the target rate; the client's pacing is judged by how
    // closely the actual sends reproduce the schedule's own rate (n-1 gaps over each span).
    if (n > 1 && last > first) {
      info.measured_span_s = (last - first) / 1e9;
      info.scheduled_rate_rps = (n - 1) / info.measured_span_s;
    }
    if (info.measured_sent > 1 && info.last_measured_send_ns > info.first_measured_send_ns) {
      info.achieved_rate_rps = (info.measured_sent - 1) /
                               ((info.last_measured_send_ns - info.first_measured_send_ns) / 1e9);
    }
    std::vector<double> lag_ms;
    for (int64_t ns : info.send_lag_ns) lag_ms.push_back(ns_to_ms(ns));
    if (!lag_ms.empty() && percentile(lag_ms, 99) > config_.load.max_send_lag_p99_ms) {
      info.send_lag_exceeded = true;
    }
  }
  tick_progress();
  bool saturated = info.stopped_early.has_value() && !interrupting_;
  if (!interrupting_ && !saturated && level_ + 1 < config_.load.plan.levels.size()) {
    start_level(level_ + 1);
  } else {
    finished_ = true;
  }
}

void BenchRunner::tick_second() {
  int64_t now = mono_ns();
  RunnerSample s;
  s.t_ns = now;
  s.loop_lag_ms = ns_to_ms(second_max_lag_ns_);
  s.client_queue = static_cast<int64_t>(client_queue_.size());
  samples_.push_back(s);
  second_max_lag_ns_ = 0;
  if (!finished_ && saturation_ && config_.load.stop_on_saturation && !interrupting_) {
    LoadSample ls;
    ls.in_flight = in_flight_;
    ls.client_queue = static_cast<int64_t>(client_queue_.size());
    ls.completed = second_completed_;
    ls.errors = second_errors_;
    saturation_->add(ls);
    if (saturation_->stop_reason() && !infos_.empty() && !infos_.back().stopped_early) {
      infos_.back().stopped_early = *saturation_->stop_reason();
      // Stop sending; let what is in flight finish (bounded by --timeout).
      sending_done_ = true;
      if (arrival_timer_armed_) loop_.cancel_timer(arrival_timer_);
      arrival_timer_armed_ = false;
      client_queue_.clear();
      if (level_done()) finish_level();
    }
  }
  second_completed_ = second_errors_ = 0;
}

void BenchRunner::tick_progress() {
  if (!progress_ || infos_.empty()) return;
  LevelProgress p;
  p.level = static_cast<int>(level_);
  p.label = config_.load.plan.levels[level_].label();
  p.done = done_;
  p.total = config_.load.plan.measure.requests;
  p.errors = errors_;
  p.in_flight = in_flight_;
  p.queued = static_cast<int64_t>(client_queue_.size());
  p.elapsed_s = (mono_ns() - level_start_ns_) / 1e9;
  if (!recent_ttft_ms_.empty()) {
    std::vector<double> v = recent_ttft_ms_;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    p.ttft_p50_ms = v[v.size() / 2];
  }
  p.output_tok_s = p.elapsed_s > 0 ? output_tokens_ / p.elapsed_s : 0;
  progress_(p);
}

namespace {

BenchRunner* g_signal_runner = nullptr;  // NOLINT: the one place a signal handler can reach
std::atomic<int> g_signal_count{0};  // lock-free: safe in a signal handler

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
