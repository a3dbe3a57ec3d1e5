#include "sim/offline_runner.h"

#include <algorithm>
#include <string>

namespace tokperf::sim {

Result<OfflineRun> run_offline(const CostModel& cost, const EngineConfig& config,
                               const OfflineWorkload& w) {
  const bool open_loop = !w.arrivals_ns.empty();
  const int64_t total =
      open_loop ? static_cast<int64_t>(w.arrivals_ns.size()) : w.warmup + w.requests;
  if (w.prompt_tokens < 1 || w.output_tokens < 1) {
    return Error{"input and output tokens must be >= 1"};
  }
  if (!open_loop && (w.concurrency < 1 || w.requests < 0 || w.warmup < 0)) {
    return Error{"concurrency must be >= 1 and requests, warmup >= 0"};
  }
  if (open_loop && !std::is_sorted(w.arrivals_ns.begin(), w.arrivals_ns.end())) {
    return Error{"open-loop arrival times must not decrease"};
  }

  Engine engine(cost, config);
  OfflineRun run;
  run.timelines.resize(static_cast<size_t>(total));
  int64_t next = 0;  // next request to create
  int64_t done = 0;

  auto send = [&](int64_t at_ns) {
    RequestTimeline& t = run.timelines[static_cast<size_t>(next)];
    t.seq = static_cast<uint64_t>(next);
    t.request_id = "sim-" + std::to_string(next);
    t.phase = next < (open_loop ? 0 : w.warmup) ? Phase::kWarmup : Phase::kMeasure;
    t.intended_ns = t.send_ns = at_ns;
    t.prompt_tokens_sent = w.prompt_tokens;
    t.token_events.reserve(static_cast<size_t>(w.output_tokens));
    SimRequest r;
    r.id = static_cast<uint64_t>(next);
    r.prompt_tokens = w.prompt_tokens;
    r.max_tokens = w.output_tokens;
    r.ignore_eos = w.ignore_eos;
    r.arrival_ns = at_ns;
    ++next;
    const Status s = engine.submit(r);
    if (!s.ok()) {
      t.error = RequestError{ErrorKind::kHttp, 400, s.error()};
      t.http_status = 400;
      t.end_ns = at_ns;
      ++done;
      return false;
    }
    t.http_status = 200;
    return true;
  };

  int64_t now = 0;
  if (!open_loop) {
    // Closed-loop users whose request was refused send their next one at once.
    for (int64_t u = 0; u < w.concurrency && next < total; ++u) {
      while (next < total && !send(0)) {
      }
    }
  }
  while (done < total) {
    if (open_loop) {
      while (next < total && w.arrivals_ns[static_cast<size_t>(next)] <= now) {
        send(w.arrivals_ns[static_cast<size_t>(next)]);
      }
    }
    if (!engine.has_work()) {
      if (open_loop && next < total) {
        now = std::max(now, w.arrivals_ns[static_cast<size_t>(next)]);
        continue;
      }
      break;  // nothing left that can run
    }
    const StepResult& r = engine.step(now);
    now += r.duration_ns;
    for (const SeqEvent& ev : r.events) {
      RequestTimeline& t = run.timelines[ev.request_id];
      switch (ev.kind) {
        case SeqEventKind::kFirstToken:
          t.first_visible_ns = ev.t_ns;
          [[fallthrough]];
        case SeqEventKind::kToken:
          t.token_events.push_back(TokenEvent{ev.t_ns, 1, true});
          t.last_event_ns = ev.t_ns;
          ++t.chunks;
          break;
        case SeqEventKind::kFinished:
          t.end_ns = ev.t_ns;
          t.usage_prompt_tokens = w.prompt_tokens;
          t.usage_completion_tokens = ev.output_tokens;
          t.saw_done = true;
          run.total_output_tokens += ev.output_tokens;
          ++done;
          if (!open_loop) {
            while (next < total && !send(ev.t_ns)) {
            }
          }
          break;
        case SeqEventKind::kPreempted:
          break;
      }
    }
  }
  run.engine = engine.stats();
  run.end_ns = now;
  return run;
}

}  // namespace tokperf::sim
