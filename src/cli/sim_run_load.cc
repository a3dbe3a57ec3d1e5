#include "cli/sim_run_load.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "load/level_driver.h"
#include "sim/offline_runner.h"
#include "sim/sim_text.h"

namespace tokperf {
namespace {

constexpr int64_t kCharsPerToken = 4;  // rough English text; only for trace lines giving a prompt
// A level whose serial front end was busy this much of its length is bound by the front end's
// costs (docs/SIMULATOR.md, "Fifth batch": 200 streams of vLLM on an 8xH100 host).
constexpr double kFrontEndBoundShare = 0.9;

}  // namespace

Result<RunOutcome> simulate_load(const sim::CostModel& cost, const BenchConfig& config,
                                 const SimLoadOptions& o, std::vector<std::string>& notes,
                                 const std::function<void(const RequestTimeline&)>& sink) {
  const LoadConfig& load = config.load;
  const LoadPlan& plan = load.plan;
  RunOutcome out;
  out.started_unix_us = o.started_unix_us;
  int64_t level_start_ns = 0;
  bool prompt_estimated = false;
  uint64_t workload_seq = 0;                 // the run's request counter, as bench's seq
  uint64_t next_seq = 0;                     // records' seq: the run's order of ending
  std::vector<std::string> front_end_bound;  // "c=200 (97%)" for levels it bound
  for (size_t i = 0; i < plan.levels.size(); ++i) {
    const LevelSpec& spec = plan.levels[i];
    sim::OfflineLevel l;
    l.prompt_tokens = o.input_tokens;
    l.output_tokens = o.output_tokens;
    l.ignore_eos = o.ignore_eos;
    l.timeout_ns = load.timeout_ns;
    l.plan = make_level_plan(load, i);
    for (const TraceEntry& e : load.trace) {
      sim::OfflineLengths x;
      x.prompt_tokens = e.input_tokens;
      x.output_tokens = e.output_tokens;
      if (e.input_tokens <= 0) {
        x.prompt_tokens =
            std::max<int64_t>(1, static_cast<int64_t>(e.prompt.size()) / kCharsPerToken);
        prompt_estimated = true;
      }
      l.lengths.push_back(x);
    }
    sim::EngineConfig engine = o.engine;
    engine.seed = plan.seed + i;
    if (config.workload) {
      // The workload's prompts, sized and hashed by the simulator's own tokenizer, so equal
      // prompt prefixes meet in the engine's prefix cache as they would over HTTP.
      const Workload& w = *config.workload;
      const Tokenizer* tok = config.tokenizer.get();
      l.request_of = [&w, &workload_seq, &engine, tok](const SendOrder& order) {
        const RequestSpec s = order.index >= 0 && w.timed_count() > 0
                                  ? w.timed_at(static_cast<size_t>(order.index))
                                  : w.at(workload_seq);
        ++workload_seq;
        const std::string text = flat_prompt(s);
        sim::OfflineLengths x;
        // With --tokenizer the simulated model counts with it; text it cannot count (invalid
        // UTF-8 from a dataset) falls back to the simulator's own count.
        int64_t n = -1;
        if (tok != nullptr) {
          if (auto c = tok->count(text); c) n = *c;
        }
        x.prompt_tokens = std::max<int64_t>(1, n >= 0 ? n : sim::count_tokens(text));
        x.output_tokens = s.output_tokens;
        if (engine.enable_prefix_caching) {
          x.prefix_block_hashes = sim::prefix_block_hashes(text, engine.block_size);
        }
        x.prefix_group = s.prefix_group;
        return x;
      };
    }
    // Each record onto the run's virtual clock (0 stays "never" for first_visible_ns), numbered
    // in the run's order, then to the sink (or kept).
    const auto shift = [&](int64_t& ns) { ns += level_start_ns; };
    l.on_finished = [&](RequestTimeline&& t) {
      t.input_tokens_method = length_method_name(config.prompt.input_tokens_method);
      t.level = static_cast<int>(i);
      t.seq = next_seq++;
      t.request_id = fmt::format("{}-{}", config.run_id.empty() ? "sim" : config.run_id, t.seq);
      for (int64_t* ns : {&t.intended_ns, &t.send_ns, &t.end_ns, &t.last_event_ns}) shift(*ns);
      if (t.first_visible_ns != 0) shift(t.first_visible_ns);
      for (TokenEvent& e : t.token_events) shift(e.t_ns);
      t.start_unix_us = o.started_unix_us + t.send_ns / 1000;
      if (sink) {
        sink(t);
      } else {
        out.records.push_back(std::move(t));
      }
    };
    auto run = sim::run_offline_level(cost, engine, l);
    if (!run) return Error{fmt::format("level {} ({}): {}", i + 1, spec.label(), run.error())};
    LevelRunInfo info = run->info;
    if (const int64_t span = info.end_ns - info.start_ns; span > 0) {
      const double busy = static_cast<double>(run->engine.frontend_busy_ns) / span;
      if (busy >= kFrontEndBoundShare) {
        front_end_bound.push_back(fmt::format("{} ({:.0f}%)", spec.label(), 100 * busy));
      }
    }
    shift(info.start_ns);
    shift(info.end_ns);
    if (info.measured_sent > 0) {
      shift(info.first_measured_send_ns);
      shift(info.last_measured_send_ns);
    }
    level_start_ns = info.end_ns;
    out.levels.push_back(std::move(info));
    if (run->ends_sweep) break;  // as bench: a saturated level ends the sweep
  }
  out.start_ns = 0;
  out.end_ns = level_start_ns;
  // The run's length in virtual time; no client CPU or loop lag exists to report.
  out.self.wall_s = static_cast<double>(level_start_ns) / 1e9;
  if (!front_end_bound.empty()) {
    const sim::CostKnobs& k = cost.knobs();
    notes.push_back(fmt::format(
        "front end bound: the serial front end (API server: {:.3g} ms to set each request up, "
        "{:.3g} us per streamed token) was busy for most of level {}, so its costs set that "
        "level's latencies; they belong to the host's CPU (the vllm preset's set-up cost was fitted "
        "on small hosts, its cost per token measured on one 8xH100 host: docs/SIMULATOR.md, "
        "\"Thirtieth change\"): give your host's with --frontend-us-per-token and --frontend-ms-per-request (or scale every host-side "
        "cost with --knob host_cpu_factor=N), or fit them with sim calibrate",
        1e3 * k.request_overhead_s, 1e6 * k.output_overhead_s, fmt::join(front_end_bound, ", ")));
  }
  if (prompt_estimated) {
    notes.push_back(fmt::format(
        "trace lines giving a prompt were sized at one token per {} characters", kCharsPerToken));
  }
  return out;
}

}  // namespace tokperf
