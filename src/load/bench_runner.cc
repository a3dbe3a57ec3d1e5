#include "load/bench_runner.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include "core/clock.h"
#include "load/level_driver.h"
#include "load/loop_split.h"
#include "metrics/stats.h"

namespace tokperf {
namespace {

constexpr int64_t kProgressPeriodNs = 250'000'000;
// Several loops: how long the calling thread waits for news before it drains the loops' records
// anyway (loops never wake it per record: a futex wake per request would cost the loops more than
// the queue's uncontended lock).
constexpr auto kDrainPeriod = std::chrono::milliseconds(10);
constexpr size_t kRecentTtfts = 256;

double rusage_s(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

}  // namespace

BenchRunner::BenchRunner(const BenchConfig& config, RequestBuilder builder, RecordSink on_record)
    : config_(config), on_record_(std::move(on_record)), builder_(std::move(builder)) {
  recent_ttft_ms_.reserve(kRecentTtfts);
  const int loops = run_loop_count(config_.load, std::max(1, config_.load.threads));
  for (int k = 0; k < loops; ++k) mailboxes_.push_back(std::make_unique<LoopMailbox>());
  done_.resize(loops);
}

BenchRunner::~BenchRunner() = default;

bool BenchRunner::run() {
  const int loops = static_cast<int>(mailboxes_.size());
  for (int k = 0; k < loops; ++k) {
    LoopWorker::Hooks hooks;
    if (loops == 1) {
      hooks.on_record = [this](RequestTimeline& t) { deliver(t); };
      hooks.on_level_done = [this](int, const LevelRunInfo& info, bool ends_sweep) {
        end_level({info}, ends_sweep);
      };
      hooks.on_tick = [this] {
        if (waiting_level_ && shared_.interrupt_requested.load()) end_wait_interrupted();
        tick_progress();
      };
    } else {
      LoopMailbox* box = mailboxes_[k].get();
      hooks.on_record = [box](RequestTimeline& t) {
        std::lock_guard<std::mutex> lock(box->mu);
        box->records.push_back(std::move(t));
      };
      hooks.on_level_done = [this](int loop, const LevelRunInfo& info, bool ends_sweep) {
        std::lock_guard<std::mutex> lock(mu_);
        done_[loop] = info;
        done_ends_sweep_ = done_ends_sweep_ || ends_sweep;
        news_ = true;
        wake_.notify_one();
      };
      hooks.on_sweep_stop = [this](int loop, size_t level, const std::string& reason) {
        std::lock_guard<std::mutex> lock(mu_);
        sweep_stops_.push_back({loop, level, reason});
        news_ = true;
        wake_.notify_one();
      };
    }
    workers_.push_back(std::make_unique<LoopWorker>(k, config_, builder_, shared_,
                                                    std::move(hooks), session_text_));
  }
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  run_start_ns_ = mono_ns();
  if (loops == 1) {
    run_on_this_thread();
  } else {
    run_on_loop_threads();
  }
  run_end_ns_ = mono_ns();
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  self_.cpu_user_s = rusage_s(ru1.ru_utime) - rusage_s(ru0.ru_utime);
  self_.cpu_system_s = rusage_s(ru1.ru_stime) - rusage_s(ru0.ru_stime);
  collect_measures();
  if (loop_failure_) std::rethrow_exception(loop_failure_);
  return !interrupted_;
}

void BenchRunner::run_on_this_thread() {
  start_level(0, /*from_loop=*/false);
  workers_[0]->run(run_start_ns_);
}

void BenchRunner::run_on_loop_threads() {
  std::vector<std::thread> threads;
  for (auto& w : workers_) {
    LoopWorker* worker = w.get();
    threads.emplace_back([this, worker] {
      try {
        worker->run(run_start_ns_);
      } catch (...) {
        // A loop that cannot go on (epoll failed) stops the run; the others wind down.
        std::lock_guard<std::mutex> lock(mu_);
        if (!loop_failure_) loop_failure_ = std::current_exception();
        shared_.interrupt_requested.store(true);
        done_[worker->index()] = LevelRunInfo{};
        news_ = true;
        wake_.notify_one();
      }
    });
  }
  start_level(0, /*from_loop=*/false);
  int64_t next_progress = mono_ns() + kProgressPeriodNs;
  while (!finished_) {
    // Lockstep: the level waiting for its boundary starts on every loop once it has come.
    if (waiting_level_) {
      if (shared_.interrupt_requested.load()) {
        end_wait_interrupted();
        break;
      }
      if (mono_ns() >= waiting_until_ns_) {
        waiting_level_ = false;
        begin_level(waiting_index_, /*from_loop=*/false);
      }
    }
    std::chrono::nanoseconds timeout = kDrainPeriod;
    if (waiting_level_) {
      timeout = std::min(
          timeout, std::chrono::nanoseconds(std::max<int64_t>(0, waiting_until_ns_ - mono_ns())));
    }
    std::vector<SweepStop> stops;
    std::vector<LevelRunInfo> shares;
    bool ends_sweep = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, timeout, [this] { return news_; });
      news_ = false;
      stops.swap(sweep_stops_);
      const bool all_done = std::all_of(done_.begin(), done_.end(),
                                        [](const auto& d) { return d.has_value(); });
      if (all_done) {
        for (int k = 0; k < level_shares_; ++k) shares.push_back(*done_[k]);
        for (auto& d : done_) d.reset();
        ends_sweep = std::exchange(done_ends_sweep_, false);
      }
    }
    // One loop's share saturated: the level (and the sweep) stops on every loop.
    for (const SweepStop& s : stops) {
      for (auto& w : workers_) {
        if (w->index() == s.loop) continue;
        LoopWorker* other = w.get();
        other->loop().post([other, s] { other->stop_level(s.level, s.reason); });
      }
    }
    // Records queued before a loop reported its level done are in its mailbox by now.
    drain_mailboxes();
    if (mono_ns() >= next_progress) {
      tick_progress();
      next_progress = mono_ns() + kProgressPeriodNs;
    }
    if (!shares.empty()) end_level(std::move(shares), ends_sweep);
  }
  for (auto& w : workers_) {
    LoopWorker* worker = w.get();
    worker->loop().post([worker] { worker->finish(); });
  }
  for (auto& t : threads) t.join();
  drain_mailboxes();
}

void BenchRunner::start_level(size_t level, bool from_loop) {
  // Lockstep shards: level k waits for its fixed wall-clock boundary (the loops keep probing
  // meanwhile); a shard whose previous level overran starts at once and says by how much.
  const LoadConfig& load = config_.load;
  if (load.start_at_unix_us > 0) {
    const int64_t boundary_us =
        load.start_at_unix_us + static_cast<int64_t>(level) * load.level_slot_ns / 1000;
    const int64_t wait_ns = (boundary_us - wall_us()) * 1000;
    if (late_start_ns_.size() <= level) late_start_ns_.resize(level + 1, 0);
    if (wait_ns > 0) {
      waiting_level_ = true;
      waiting_index_ = level;
      waiting_until_ns_ = mono_ns() + wait_ns;
      if (workers_.size() > 1) return;  // run_on_loop_threads starts it when due
      // One loop: a timer on it (an interrupt meanwhile is seen by its tick hook).
      LoopWorker* worker = workers_[0].get();
      auto arm = [this, worker] {
        worker->loop().add_timer_at(waiting_until_ns_, [this] {
          if (!waiting_level_) return;  // interrupted meanwhile: the run has ended
          if (shared_.interrupt_requested.load()) {
            end_wait_interrupted();
            return;
          }
          waiting_level_ = false;
          begin_level(waiting_index_, /*from_loop=*/true);
        });
      };
      if (from_loop) {
        arm();
      } else {
        worker->loop().post(arm);
      }
      return;
    }
    late_start_ns_[level] = -wait_ns;
  }
  begin_level(level, from_loop);
}

void BenchRunner::end_wait_interrupted() {
  waiting_level_ = false;
  interrupted_ = true;
  finished_ = true;
  if (workers_.size() == 1) workers_[0]->finish();
}

void BenchRunner::begin_level(size_t level, bool from_loop) {
  level_ = level;
  level_shares_ = level_share_count(config_.load, level, static_cast<int>(workers_.size()));
  level_start_ns_ = mono_ns();
  done_count_ = errors_ = output_tokens_ = 0;
  recent_ttft_ms_.clear();
  recent_next_ = 0;
  // The schedule figures of this process's share of the level (a shard's, else the whole
  // level), as one driver pacing all of it has them at its start.
  const LevelShare process_share{config_.load.share_index, config_.load.share_count};
  level_whole_ = LevelDriver(make_level_plan(config_.load, level, process_share), level_start_ns_,
                             LoopWorker::kOpenLoopLeadNs)
                     .info();
  infos_.push_back(level_whole_);
  if (on_level_start_) on_level_start_(infos_.back());
  const int64_t start = level_start_ns_;
  const int shares = level_shares_;
  for (auto& w : workers_) {
    LoopWorker* worker = w.get();
    if (from_loop) {
      worker->start_level(level, shares, start);  // the one loop, on its own thread
    } else {
      worker->loop().post([worker, level, shares, start] {
        worker->start_level(level, shares, start);
      });
    }
  }
}

void BenchRunner::end_level(std::vector<LevelRunInfo> shares, bool ends_sweep) {
  if (finished_) return;
  infos_.back() = shares.size() == 1 ? std::move(shares.front())
                                     : merge_level_shares(shares, level_whole_,
                                                          config_.load.max_send_lag_p99_ms);
  tick_progress();
  if (on_level_end_) on_level_end_(infos_.back());
  const bool interrupted = shared_.interrupt_requested.load();
  if (!interrupted && !ends_sweep && level_ + 1 < config_.load.plan.levels.size()) {
    start_level(level_ + 1, /*from_loop=*/workers_.size() == 1);
    return;
  }
  interrupted_ = interrupted;
  finished_ = true;
  if (workers_.size() == 1) workers_[0]->finish();
}

void BenchRunner::deliver(const RequestTimeline& tl) {
  if (tl.phase == Phase::kMeasure && tl.level == static_cast<int>(level_)) {
    done_count_++;
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
}

void BenchRunner::drain_mailboxes() {
  std::vector<RequestTimeline> batch;
  for (auto& box : mailboxes_) {
    {
      std::lock_guard<std::mutex> lock(box->mu);
      batch.swap(box->records);
    }
    for (const RequestTimeline& t : batch) deliver(t);
    batch.clear();
  }
}

void BenchRunner::tick_progress() {
  if (!progress_ || infos_.empty()) return;
  LevelProgress p;
  p.level = static_cast<int>(level_);
  p.label = config_.load.plan.levels[level_].label();
  p.done = done_count_;
  p.total = config_.load.plan.measure.requests;
  p.errors = errors_;
  p.in_flight = shared_.in_flight.load(std::memory_order_relaxed);
  for (auto& w : workers_) p.queued += w->queued_now();
  p.elapsed_s = (mono_ns() - level_start_ns_) / 1e9;
  if (!recent_ttft_ms_.empty()) p.ttft_p50_ms = percentile(recent_ttft_ms_, 50);
  p.output_tok_s = p.elapsed_s > 0 ? output_tokens_ / p.elapsed_s : 0;
  if (workers_.size() > 1) {
    for (auto& w : workers_) p.in_flight_by_loop.push_back(w->in_flight_now());
  }
  progress_(p);
}

void BenchRunner::collect_measures() {
  self_.wall_s = (run_end_ns_ - run_start_ns_) / 1e9;
  self_.peak_in_flight = shared_.peak_in_flight.load();
  self_.loops.clear();
  loop_samples_.clear();
  for (auto& w : workers_) {
    const LoopSelfMeasure& m = w->self_measure();
    self_.loops.push_back(m);
    self_.loop_lag_ns.insert(self_.loop_lag_ns.end(), m.loop_lag_ns.begin(), m.loop_lag_ns.end());
    self_.stream_events += m.stream_events;
    self_.body_reads += m.body_reads;
    self_.body_bytes += m.body_bytes;
    loop_samples_.push_back(w->samples());
  }
  samples_ = loop_samples_.size() == 1 ? loop_samples_.front() : merge_loop_samples(loop_samples_);
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
