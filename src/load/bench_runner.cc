#include "load/bench_runner.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "client/http_fetch.h"
#include "client/openai_adapter.h"
#include "client/stream_recorder.h"
#include "client/transport.h"
#include "core/clock.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

constexpr int64_t kProbePeriodNs = 10'000'000;     // client loop-lag probe
constexpr int64_t kProgressPeriodNs = 250'000'000;
constexpr size_t kRecentTtfts = 256;
constexpr size_t kErrorBodyBytes = 4096;

double rusage_s(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

ErrorKind kind_for_curl(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return ErrorKind::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
      return ErrorKind::kConnect;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return ErrorKind::kIncomplete;
    default:
      return ErrorKind::kOther;
  }
}

}  // namespace

// One concurrent user: its request's timeline, stream recorder and the transport callbacks.
class BenchRunner::Slot final : public StreamHandler {
 public:
  Slot(BenchRunner* runner, ChunkClassifier* classifier) : runner_(runner), recorder_(classifier) {}

  void start(RequestTimeline timeline, const StreamRequest& request, Transport& transport) {
    tl_ = std::move(timeline);
    recorder_.begin(&tl_);
    error_body_.clear();
    content_type_.clear();
    status_ = 0;
    tl_.start_unix_us = wall_us();
    tl_.send_ns = mono_ns();  // immediately before the transfer starts
    transport.start(request, this);
  }

  void on_headers(int http_status, std::string_view content_type, int64_t t_ns) override {
    status_ = http_status;
    content_type_.assign(content_type);
    tl_.http_status = http_status;
  }

  bool on_body(std::string_view bytes, int64_t t_ns) override {
    if (status_ >= 200 && status_ < 300 && is_event_stream()) {
      recorder_.on_bytes(bytes, t_ns);
    } else if (error_body_.size() < kErrorBodyBytes) {
      error_body_.append(bytes.substr(0, kErrorBodyBytes - error_body_.size()));
    }
    return true;
  }

  void on_complete(const TransferResult& r, int64_t t_ns) override {
    tl_.end_ns = t_ns;
    tl_.connect_ms = r.connect_ms;
    tl_.ttfb_ms = r.ttfb_ms;
    if (tl_.http_status == 0) tl_.http_status = r.http_status;
    classify_outcome(r);
    runner_->self_.stream_events += recorder_.events();
    runner_->on_slot_done(this);
  }

  RequestTimeline& timeline() { return tl_; }

 private:
  bool is_event_stream() const {
    // Some servers send no content type on streams; only a declared non-SSE type is "not streaming".
    return content_type_.empty() || content_type_.find("text/event-stream") != std::string::npos ||
           content_type_.find("text/plain") != std::string::npos;
  }

  void fail(ErrorKind kind, std::string message) {
    tl_.error.kind = kind;
    tl_.error.http_status = tl_.http_status;
    tl_.error.message = std::move(message);
  }

  void classify_outcome(const TransferResult& r) {
    int status = tl_.http_status;
    if (r.cancelled) return fail(ErrorKind::kCancelled, "stopped before the response finished");
    if (status == 401 || status == 403) {
      return fail(ErrorKind::kAuth, fmt::format("HTTP {}: the API key was refused: {}", status,
                                                body_excerpt(error_body_)));
    }
    if (status == 429) {
      return fail(ErrorKind::kRateLimited,
                  fmt::format("HTTP 429 (rate limited): {}", body_excerpt(error_body_)));
    }
    if (status >= 300) {
      return fail(ErrorKind::kHttp, fmt::format("HTTP {}: {}", status, body_excerpt(error_body_)));
    }
    if (r.code != CURLE_OK) {
      ErrorKind k = kind_for_curl(r.code);
      std::string what = r.curl_error.empty() ? curl_easy_strerror(r.code) : r.curl_error;
      if (k == ErrorKind::kIncomplete) {
        what = fmt::format("connection dropped mid-stream after {} token events: {}",
                           tl_.token_events.size(), what);
      }
      return fail(k, what);
    }
    if (status >= 200 && !is_event_stream()) {
      return fail(ErrorKind::kNotStreaming,
                  fmt::format("the server answered '{}', not a text/event-stream, to a streaming "
                              "request: {}",
                              content_type_, body_excerpt(error_body_)));
    }
    if (recorder_.stream_errors() > 0) {
      return fail(ErrorKind::kStreamError,
                  fmt::format("the server sent an error in the stream: {}",
                              recorder_.first_stream_error()));
    }
    if (recorder_.parse_errors() > 0) {
      return fail(ErrorKind::kParse, fmt::format("{} malformed event(s); first: {}",
                                                 recorder_.parse_errors(),
                                                 recorder_.first_parse_error()));
    }
    if (!tl_.saw_done && !recorder_.saw_finish()) {
      return fail(ErrorKind::kIncomplete,
                  recorder_.truncated()
                      ? "the stream ended in the middle of an event"
                      : "the stream ended without a finish_reason or [DONE]");
    }
  }

  BenchRunner* runner_;
  StreamRecorder recorder_;
  RequestTimeline tl_;
  std::string error_body_;
  std::string content_type_;
  int status_ = 0;
};

BenchRunner::BenchRunner(const BenchConfig& config, RequestBuilder builder, RecordSink on_record)
    : config_(config), builder_(std::move(builder)), on_record_(std::move(on_record)) {
  TransportOptions topt;
  topt.http2 = config_.target.http2;
  topt.verify_tls = config_.target.verify_tls;
  topt.max_connections = *std::max_element(config_.load.concurrency.begin(),
                                           config_.load.concurrency.end());
  transport_ = std::make_unique<Transport>(loop_, topt);
  classifier_ = std::make_unique<ChunkClassifier>(
      config_.target.api == "chat" ? ApiKind::kChat : ApiKind::kCompletions);
  recent_ttft_ms_.reserve(kRecentTtfts);
}

BenchRunner::~BenchRunner() = default;

bool BenchRunner::run() {
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  int64_t t0 = mono_ns();
  // A probe timer measures the loop's own lag (how late it wakes) throughout the run.
  probe_deadline_ns_ = t0 + kProbePeriodNs;
  std::function<void()> probe = [this, &probe] {
    int64_t now = mono_ns();
    self_.loop_lag_ns.push_back(now - probe_deadline_ns_);
    probe_deadline_ns_ += kProbePeriodNs;
    if (probe_deadline_ns_ < now) probe_deadline_ns_ = now + kProbePeriodNs;
    if (!finished_) loop_.add_timer_at(probe_deadline_ns_, probe);
  };
  loop_.add_timer_at(probe_deadline_ns_, probe);
  std::function<void()> progress = [this, &progress] {
    tick_progress();
    if (!finished_) loop_.add_timer_after(kProgressPeriodNs, progress);
  };
  loop_.add_timer_after(kProgressPeriodNs, progress);
  // interrupt() may come from another thread; a short poll keeps it lock-free.
  std::function<void()> watch_interrupt = [this, &watch_interrupt] {
    if (interrupt_requested_.load() && !interrupting_) begin_interrupt();
    if (!finished_) loop_.add_timer_after(20'000'000, watch_interrupt);
  };
  loop_.add_timer_after(20'000'000, watch_interrupt);

  start_level(0);
  while (!finished_) loop_.run_once(-1);

  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  self_.wall_s = (mono_ns() - t0) / 1e9;
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
  if (in_flight_ == 0) {
    finished_ = true;
    return;
  }
  loop_.add_timer_after(config_.load.grace_ns, [this] { transport_->cancel_all(); });
}

void BenchRunner::start_level(size_t index) {
  level_ = index;
  int c = config_.load.concurrency[index];
  while (slots_.size() < static_cast<size_t>(c)) {
    slots_.push_back(std::make_unique<Slot>(this, classifier_.get()));
  }
  free_slots_.clear();
  for (int i = c - 1; i >= 0; --i) free_slots_.push_back(slots_[i].get());
  done_ = errors_ = output_tokens_ = 0;
  recent_ttft_ms_.clear();
  recent_next_ = 0;
  level_start_ns_ = mono_ns();
  int64_t warmup = config_.load.warmup < 0 ? c : config_.load.warmup;
  phase_ = warmup > 0 ? Phase::kWarmup : Phase::kMeasure;
  phase_target_ = warmup > 0 ? warmup : config_.load.requests;
  phase_started_ = 0;
  measure_deadline_ns_ =
      (phase_ == Phase::kMeasure && config_.load.duration_ns > 0) ? level_start_ns_ + config_.load.duration_ns : 0;
  fill_slots();
}

bool BenchRunner::may_start() const {
  if (interrupting_ || free_slots_.empty()) return false;
  if (phase_target_ > 0 && phase_started_ >= phase_target_) return false;
  if (phase_ == Phase::kMeasure && measure_deadline_ns_ > 0 && mono_ns() >= measure_deadline_ns_) {
    return false;
  }
  return true;
}

void BenchRunner::fill_slots() {
  while (may_start()) {
    Slot* slot = free_slots_.back();
    free_slots_.pop_back();
    RequestTimeline tl;
    tl.seq = seq_++;
    tl.request_id = fmt::format("{}-{}", config_.run_id, tl.seq);
    tl.phase = phase_;
    tl.level = static_cast<int>(level_);
    tl.prompt_tokens_sent = config_.prompt.input_tokens;
    StreamRequest req;
    req.url = builder_.url();
    req.headers = builder_.headers(tl.request_id);
    std::string prefix;
    if (config_.prompt.unique_prefix) prefix = unique_prefix(std::hash<std::string>{}(config_.run_id), tl.seq);
    req.body = builder_.body(prefix);
    req.timeout_ns = config_.load.timeout_ns;
    phase_started_++;
    in_flight_++;
    self_.peak_in_flight = std::max(self_.peak_in_flight, in_flight_);
    tl.intended_ns = mono_ns();  // closed loop: intended = when the slot came free
    slot->start(std::move(tl), req, *transport_);
  }
}

void BenchRunner::on_slot_done(Slot* slot) {
  in_flight_--;
  RequestTimeline& tl = slot->timeline();
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
    output_tokens_ += tl.usage_completion_tokens >= 0 ? tl.usage_completion_tokens
                                                       : static_cast<int64_t>(tl.token_events.size());
  }
  on_record_(tl);
  free_slots_.push_back(slot);
  if (interrupting_) {
    if (in_flight_ == 0) finished_ = true;
    return;
  }
  bool phase_exhausted = !may_start() && !free_slots_.empty();
  if (phase_exhausted && in_flight_ == 0) {
    if (phase_ == Phase::kWarmup) {
      // Warm-up is a barrier: measurement starts with every slot free, on a warm server.
      phase_ = Phase::kMeasure;
      phase_target_ = config_.load.requests;
      phase_started_ = 0;
      level_start_ns_ = mono_ns();
      measure_deadline_ns_ =
          config_.load.duration_ns > 0 ? level_start_ns_ + config_.load.duration_ns : 0;
    } else {
      finish_level();
      return;
    }
  }
  fill_slots();
}

void BenchRunner::finish_level() {
  tick_progress();
  if (level_ + 1 < config_.load.concurrency.size()) {
    start_level(level_ + 1);
  } else {
    finished_ = true;
  }
}

void BenchRunner::tick_progress() {
  if (!progress_) return;
  LevelProgress p;
  p.level = static_cast<int>(level_);
  p.concurrency = config_.load.concurrency[level_];
  p.done = done_;
  p.total = phase_ == Phase::kMeasure ? config_.load.requests : 0;
  p.errors = errors_;
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
volatile std::sig_atomic_t g_signal_count = 0;

void on_stop_signal(int) {
  if (++g_signal_count > 1) _exit(130);
  if (g_signal_runner != nullptr) g_signal_runner->interrupt();  // an atomic store: signal-safe
}

}  // namespace

std::shared_ptr<void> install_signal_stop(BenchRunner* runner) {
  g_signal_runner = runner;
  g_signal_count = 0;
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
