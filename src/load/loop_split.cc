#include "load/loop_split.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "load/open_loop_schedule.h"

namespace tokperf {

int default_loop_count() {
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hw), 1, kMaxDefaultLoops);
}

int level_share_count(const LoadConfig& load, size_t level, int loops) {
  if (loops <= 1) return 1;
  const LevelSpec& spec = load.plan.levels[level];
  const bool open_loop = spec.mode == LoadMode::kRate || !load.trace.empty();
  int64_t work = 0;
  if (!open_loop) {
    work = static_cast<int64_t>(std::floor(std::max(spec.start, spec.end) + 1e-9));
  } else {
    work = static_cast<int64_t>(plan_open_loop_schedule(load, level).arrivals.size());
    if (load.plan.max_concurrency > 0) work = std::min<int64_t>(work, load.plan.max_concurrency);
  }
  // A shard's loops split its own share: N*m combined shares, each of which needs some work.
  work /= std::max(1, load.share_count);
  return static_cast<int>(std::clamp<int64_t>(work, 1, loops));
}

LevelShare loop_share(const LoadConfig& load, int loop, int loops) {
  const int n = std::max(1, load.share_count);
  return LevelShare{load.share_index + n * loop, n * std::max(1, loops)};
}

int run_loop_count(const LoadConfig& load, int requested) {
  if (requested <= 1) return 1;
  int most = 1;
  for (size_t i = 0; i < load.plan.levels.size() && most < requested; ++i) {
    most = std::max(most, level_share_count(load, i, requested));
  }
  return most;
}

LevelRunInfo merge_level_shares(const std::vector<LevelRunInfo>& shares, const LevelRunInfo& whole,
                                double max_send_lag_p99_ms) {
  LevelRunInfo m = whole;
  m.start_ns = shares.front().start_ns;
  m.end_ns = shares.front().end_ns;
  m.measured_sent = 0;
  m.first_measured_send_ns = m.last_measured_send_ns = 0;
  m.achieved_rate_rps = 0;
  m.send_lag_ns.clear();
  m.stopped_early.reset();
  m.send_lag_exceeded = false;
  m.sessions_started = m.sessions_completed = m.sessions_failed = m.sessions_cut = 0;
  for (const LevelRunInfo& s : shares) {
    m.start_ns = std::min(m.start_ns, s.start_ns);
    m.end_ns = std::max(m.end_ns, s.end_ns);
    if (s.measured_sent > 0) {
      m.first_measured_send_ns = m.measured_sent == 0
                                     ? s.first_measured_send_ns
                                     : std::min(m.first_measured_send_ns, s.first_measured_send_ns);
      m.last_measured_send_ns = std::max(m.last_measured_send_ns, s.last_measured_send_ns);
    }
    m.measured_sent += s.measured_sent;
    m.send_lag_ns.insert(m.send_lag_ns.end(), s.send_lag_ns.begin(), s.send_lag_ns.end());
    if (!m.stopped_early && s.stopped_early) m.stopped_early = s.stopped_early;
    m.sessions_started += s.sessions_started;
    m.sessions_completed += s.sessions_completed;
    m.sessions_failed += s.sessions_failed;
    m.sessions_cut += s.sessions_cut;
  }
  if (m.open_loop) finish_open_loop_figures(m, max_send_lag_p99_ms);
  return m;
}

std::vector<RunnerSample> merge_loop_samples(const std::vector<std::vector<RunnerSample>>& loops) {
  size_t n = 0;
  for (const auto& l : loops) n = std::max(n, l.size());
  std::vector<RunnerSample> out(n);
  for (const auto& l : loops) {
    for (size_t i = 0; i < l.size(); ++i) {
      out[i].t_ns = std::max(out[i].t_ns, l[i].t_ns);
      out[i].loop_lag_ms = std::max(out[i].loop_lag_ms, l[i].loop_lag_ms);
      out[i].client_queue += l[i].client_queue;
    }
  }
  return out;
}

}  // namespace tokperf
