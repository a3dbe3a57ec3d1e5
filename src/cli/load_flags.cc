#include "cli/load_flags.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/units.h"
#include "load/arrivals.h"
#include "load/load_plan.h"

namespace tokperf {

void add_load_flags(CLI::App* sub, LoadFlags& f) {
  const char* g = "Load";
  sub->add_option("--concurrency,-c", f.concurrency,
                  "Closed loop: requests in flight; a list runs one level each (1,4,8,16)")
      ->group(g);
  sub->add_flag("--sweep", f.sweep, "Closed-loop sweep over 1,4,8,16,32,64 (or the given list)")
      ->group(g);
  sub->add_option("--request-rate,-r", f.request_rate,
                  "Open loop: arrivals per second; a list runs one level each (10,20,40). 'inf' "
                  "(alone), as vLLM bench: every request at once (with --max-concurrency C, a "
                  "closed loop of C)")
      ->group(g);
  sub->add_option("--ramp", f.ramp,
                  "rate|concurrency:FROM..TO:step=S|x=F|linear=DUR (e.g. rate:10..100:step=10)")
      ->group(g);
  sub->add_option("--arrivals", f.arrivals, "Open-loop arrivals: constant, poisson or gamma")
      ->capture_default_str()
      ->each([&f](const std::string&) { f.arrivals_given = true; })
      ->group(g);
  sub->add_option("--burstiness", f.burstiness,
                  "Gamma shape: 1 = Poisson, < 1 burstier (alone, it makes --arrivals gamma)")
      ->capture_default_str()->group(g);
  sub->add_option("--seed", f.seed, "Seed of the arrival schedule (same seed, same schedule)")
      ->capture_default_str()->group(g);
  sub->add_option("--max-concurrency", f.max_concurrency,
                  "Open loop: cap on requests in flight; later arrivals wait in a client queue. "
                  "Alone (no rate or concurrency): a closed loop of this many, as vLLM bench")
      ->group(g);
  sub->add_option("--requests,-n,--num-prompts", f.requests,
                  "Measured requests per level (default 100)")
      ->group(g);
  sub->add_option("--duration", f.duration,
                  "Measure each level for this long instead of a count (e.g. 30s, 5m)")
      ->group(g);
  sub->add_option("--warmup", f.warmup,
                  "Warm-up per level, a count or a duration, excluded from statistics (default: "
                  "one per slot; open loop: 1 s of arrivals)")
      ->group(g);
  sub->add_option("--cooldown", f.cooldown,
                  "Cool-down per level (count or duration): load kept up while measured requests "
                  "finish, excluded from statistics")
      ->group(g);
  sub->add_option("--timeout", f.timeout, "Per-request timeout")->capture_default_str()->group(g);
  sub->add_option("--slo", f.slo,
                  "Objectives, e.g. 'ttft:p95<=2s,tpot:p95<=100ms,e2e:p99<=30s' (goodput, "
                  "attainment, pass/fail)")
      ->group(g);
  sub->add_option("--trace", f.trace,
                  "Replay a JSONL trace of {timestamp, input_tokens|prompt, output_tokens}")
      ->group(g);
  sub->add_option("--trace-speed", f.trace_speed, "Time scale of the trace (2 = twice as fast)")
      ->capture_default_str()->group(g);
  sub->add_flag("--no-early-stop", f.no_early_stop,
                "Run every level to its end even when it is clearly over-saturated")
      ->group(g);
  sub->add_option("--max-error-rate", f.max_error_rate,
                  "Stop a level when errors exceed this fraction of finished requests")
      ->capture_default_str()->group(g);
  sub->add_option("--turns", f.turns,
                  "Multi-turn sessions: turns per session, N or A..B; each turn resends the whole "
                  "history (earlier prompts and the generated replies); closed loop counts users")
      ->group(g);
  sub->add_option("--think-time", f.think_time,
                  "Sessions: pause between a reply and the next turn: 2s, 1s..5s (uniform) or "
                  "exp:2s (exponential mean); seeded by --seed (default 0)")
      ->group(g);
  sub->add_option("--max-send-lag", f.max_send_lag_ms,
                  "Open loop: warn and mark a level whose send-lag P99 exceeds this many ms")
      ->capture_default_str()->group(g);
}

namespace {

// vLLM bench's "--request-rate inf": every request is created at the start.
bool is_infinite_rate(const std::string& text) {
  std::string t;
  for (char ch : text) {
    if (ch != ' ') t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return t == "inf" || t == "infinity";
}

PhaseLimit phase_flag(const char* name, const std::string& text) {
  auto p = parse_phase_limit(name, text);
  if (!p) throw UsageError(p.error());
  return *p;
}

}  // namespace

LoadConfig make_load_config(const LoadFlags& f) {
  LoadConfig c;
  LoadPlan& plan = c.plan;
  int shapes = !f.concurrency.empty() + !f.request_rate.empty() + !f.ramp.empty() + !f.trace.empty();
  if (shapes > 1) {
    throw UsageError("give one of --concurrency, --request-rate, --ramp and --trace");
  }
  if (f.sweep && (!f.request_rate.empty() || !f.ramp.empty() || !f.trace.empty())) {
    throw UsageError("--sweep is a concurrency sweep; it cannot be combined with --request-rate, "
                     "--ramp or --trace");
  }
  Result<std::vector<LevelSpec>> levels = std::vector<LevelSpec>{LevelSpec{}};
  // --request-rate inf without --max-concurrency: one burst of the measured requests, set below
  // once --requests is known.
  const bool rate_inf = is_infinite_rate(f.request_rate);
  const bool burst = rate_inf && f.max_concurrency <= 0;
  if (f.max_concurrency > 0 && (shapes == 0 || rate_inf) && !f.sweep) {
    // vLLM bench's meaning without a rate: every request at once, at most C in flight = a closed
    // loop of C.
    levels = parse_concurrency_list(std::to_string(f.max_concurrency));
  } else if (!f.concurrency.empty()) {
    levels = parse_concurrency_list(f.concurrency);
  } else if (f.sweep) {
    levels = parse_concurrency_list(kDefaultConcurrencySweep);
  } else if (!f.request_rate.empty() && !burst) {
    levels = parse_rate_list(f.request_rate);
  } else if (!f.ramp.empty()) {
    levels = parse_ramp(f.ramp);
  }
  if (!levels) throw UsageError(levels.error());
  plan.levels = *levels;

  auto kind = parse_arrival_kind(f.arrivals);
  if (!kind) throw UsageError(kind.error());
  plan.arrivals = *kind;
  // vLLM bench's meaning: --burstiness alone makes the arrivals gamma (1 stays Poisson).
  if (!f.arrivals_given && f.burstiness != 1 && plan.arrivals == ArrivalKind::kPoisson) {
    plan.arrivals = ArrivalKind::kGamma;
  }
  if (!(f.burstiness > 0)) throw UsageError("--burstiness must be above 0 (1 = Poisson)");
  plan.burstiness = f.burstiness;
  plan.seed = f.seed;
  if (f.max_concurrency < 0) throw UsageError("--max-concurrency must be 0 (no cap) or more");
  plan.max_concurrency = f.max_concurrency;

  if (!f.requests.empty() && !f.duration.empty()) {
    throw UsageError("give --requests or --duration, not both");
  }
  plan.measure = PhaseLimit{0, 100};
  if (!f.requests.empty()) {
    auto n = parse_count(f.requests);
    if (!n || *n < 1) {
      throw UsageError(fmt::format("--requests '{}' is not a whole number of at least 1", f.requests));
    }
    plan.measure = PhaseLimit{0, *n};
  }
  if (!f.duration.empty()) {
    auto d = parse_duration_ns(f.duration);
    if (!d || *d <= 0) {
      throw UsageError(fmt::format("--duration: {}", d ? "must be above zero" : d.error()));
    }
    plan.measure = PhaseLimit{*d, 0};
  }
  if (!f.warmup.empty()) {
    plan.warmup = phase_flag("--warmup", f.warmup);
    c.default_warmup = false;
  }
  if (!f.cooldown.empty()) plan.cooldown = phase_flag("--cooldown", f.cooldown);
  if (burst) {
    // Every measured request sent at once and nothing else: a closed loop as wide as the count,
    // no default warm-up (vLLM bench measures all of its prompts).
    if (plan.measure.requests == 0) {
      throw UsageError(
          "--request-rate inf sends every request at once: give a count with --requests N "
          "(default 100), not --duration, or cap it with --max-concurrency C");
    }
    plan.levels = {LevelSpec{LoadMode::kConcurrency, static_cast<double>(plan.measure.requests),
                             static_cast<double>(plan.measure.requests), 0}};
    if (f.warmup.empty()) {
      plan.warmup = PhaseLimit{};
      c.default_warmup = false;
    }
  }

  auto timeout = parse_duration_ns(f.timeout);
  if (!timeout || *timeout <= 0) {
    throw UsageError(fmt::format("--timeout: {}", timeout ? "must be above zero" : timeout.error()));
  }
  c.timeout_ns = *timeout;
  if (!f.trace.empty()) {
    if (!(f.trace_speed > 0)) throw UsageError("--trace-speed must be above 0");
    auto t = load_trace_jsonl(f.trace, f.trace_speed);
    if (!t) throw UsageError(fmt::format("--trace: {}", t.error()));
    if (t->empty()) throw UsageError(fmt::format("--trace '{}' has no entries", f.trace));
    c.trace = std::move(*t);
    plan.levels = {LevelSpec{LoadMode::kRate, 0, 0, 0}};
  }
  c.stop_on_saturation = !f.no_early_stop;
  if (!(f.max_error_rate > 0 && f.max_error_rate <= 1)) {
    throw UsageError("--max-error-rate must be in (0, 1]");
  }
  c.saturation.max_error_rate = f.max_error_rate;
  c.max_send_lag_p99_ms = f.max_send_lag_ms;
  if (!f.turns.empty()) {
    if (!f.trace.empty()) {
      throw UsageError(
          "--turns cannot be combined with --trace (a trace gives every request's "
          "own arrival and lengths)");
    }
    auto s = parse_turns(f.turns);
    if (!s) throw UsageError(s.error());
    c.sessions = *s;
  }
  if (!f.think_time.empty()) {
    if (f.turns.empty()) throw UsageError("--think-time needs --turns (multi-turn sessions)");
    auto t = parse_think_time(f.think_time);
    if (!t) throw UsageError(t.error());
    c.sessions.think = *t;
  }
  return c;
}

SloSpec make_slo(const LoadFlags& f) {
  if (f.slo.empty()) return {};
  auto s = parse_slo(f.slo);
  if (!s) throw UsageError(s.error());
  return *s;
}

}  // namespace tokperf
