// The simulator fitted to one's own server: `tokperf sim calibrate RUN_DIR...` reads runs that
// bench measured against a real endpoint, replays each level's requests through the simulated
// engine (the same arrivals, slots and token counts) and moves a few preset knobs until the
// simulated TTFT, TPOT and output rate match the measured ones. The costs it fits are those of
// the host and the serving stack (front-end set-up and per-token work, per-step CPU time) and the
// achieved compute and bandwidth, which the presets can only take from the hosts of published
// runs (docs/SIMULATOR.md, "Calibrating to your own server"). With three levels or more, every
// second level is held out of a first fit and its error reported, so the user sees how well the
// fitted model predicts loads it was not fitted on before using it for what-ifs.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "load/open_loop_schedule.h"
#include "sim/deployment.h"
#include "sim/engine.h"
#include "sim/offline_runner.h"

namespace tokperf::sim {

// The three statistics compared, each over a level's measured (not warm-up or cool-down)
// requests that succeeded: median TTFT, median TPOT (requests with 2 tokens or more) and output
// tokens per second over the span from the first send to the last end. NaN where undefined.
// With `sim calibrate --steps`, two more from every successful request's token arrivals, warm-up
// and cool-down included (sim/step_timeline.h): the median decode-only step and how far apart one
// step's tokens arrive. NaN where not read or not measurable.
struct LevelFigures {
  double ttft_ms = 0, tpot_ms = 0, output_tok_s = 0;
  double decode_step_ms = NAN, token_spacing_us = NAN;
};
// The figures of these timelines (measured or simulated: one definition for both); `steps` adds
// the step figures.
LevelFigures level_figures(const std::vector<RequestTimeline>& timelines, bool steps = false);

// One measured level, ready to replay.
struct MeasuredLevel {
  std::string label;  // "<run dir> c=8", "<run dir> 4 req/s"
  // Closed loop: its users; open loop: the run's --max-concurrency (0: none).
  int64_t slots = 0;
  bool closed_loop = false;
  // Every request that succeeded, in intended-send order: when the load meant to send it (from
  // the level's first) and its phase; index = position in `lengths`.
  std::vector<PlannedArrival> arrivals;
  std::vector<OfflineLengths> lengths;  // prompt and output tokens as the server counted them
  LevelFigures measured;
  int64_t failed = 0;         // requests that failed (left out of the replay)
  int64_t cached_tokens = 0;  // prompt tokens the server reported from its prefix cache
};

// The levels of a saved run (summary.json for the load, requests.jsonl for the requests), in
// order. Errors name the folder and what is missing. A level without a measured request that
// succeeded is left out with a line in `notes`. `steps`: read the step figures too.
Result<std::vector<MeasuredLevel>> load_measured_levels(const std::string& dir,
                                                        std::vector<std::string>& notes,
                                                        bool steps = false);

// The level's requests through the engine, every one at its measured time with its measured
// lengths (EOS ignored), behind the same slots. The step figures are computed where the measured
// level has them.
Result<LevelFigures> replay_level(const CostModel& cost, const EngineConfig& config,
                                  const MeasuredLevel& level);

// A closed-loop level as `sim run` runs one (bench's load rules, sim/offline_runner.h): the same
// users, warm-up, measured and cool-down counts and each request's measured lengths, but the users
// start together after the warm-up barrier and each sends its next request the moment the last
// ends, not at the measured times. A replay carries the measured timing of the real client and
// server; this does not, so its error is the one a what-if by `sim run` can expect.
// Open-loop levels get NaN figures (sim run would draw other arrival times).
Result<LevelFigures> run_level_as_sim_run(const CostModel& cost, const EngineConfig& config,
                                          const MeasuredLevel& level);

// |ln(simulated / measured)| summed over the levels' defined figures (TTFT, TPOT, output rate,
// and the step figures where measured):
// an error of +x% and one of -x/(1+x)% weigh the same. Infinity when a replay failed.
double calibration_objective(const std::vector<LevelFigures>& simulated,
                             const std::vector<MeasuredLevel>& levels);

// What one fit needs to build the engine for a set of knob values: the deployment flags as the
// user gave them (their --knob items first, the fitted ones after) and the engine flags.
struct CalibrationSetup {
  DeploymentFlags flags;
  EngineConfig engine_flags;
  bool max_num_seqs_given = false, max_num_batched_tokens_given = false;
};

struct FittedKnob {
  std::string name;
  double start = 0, value = 0;
};
struct CalibrationFit {
  std::vector<FittedKnob> knobs;
  double objective_start = 0, objective = 0;
  std::vector<LevelFigures> start, fitted;  // per level, before and after
  // "--knob NAME=VALUE ..." to pass to sim run, sim serve or estimate.
  std::string flags() const;
};

// `setup` with a fit's values appended as --knob items (as its flags() print them).
CalibrationSetup with_fitted_knobs(const CalibrationSetup& setup, const CalibrationFit& fit);

// Coordinate descent over multiplicative grids on each knob (a knob at 0 tries small absolute
// values), `rounds` passes, then a finer pass; every trial builds the engine as sim run would
// with the trial's values as --knob items. Fails when a knob name is not a continuous one or the
// deployment cannot be built.
Result<CalibrationFit> fit_calibration(const CalibrationSetup& setup,
                                       const std::vector<MeasuredLevel>& levels,
                                       const std::vector<std::string>& knob_names, int rounds = 3);

// The figures of every level under the given setup (the preset, or a fit's values as knobs):
// replayed at the measured arrivals, or `as_sim_run` (run_level_as_sim_run).
Result<std::vector<LevelFigures>> replay_levels(const CalibrationSetup& setup,
                                                const std::vector<MeasuredLevel>& levels,
                                                bool as_sim_run = false);

// The knobs fitted when the user names none: the achieved rates of the linear layers (16-bit:
// compute_efficiency and weight_stream_efficiency; W8A8 weights, `w8a8`: their own pair), of
// attention and of the KV reads, and the host's and serving stack's costs (per step, per request,
// per streamed token, latency).
std::vector<std::string> default_calibration_knobs(bool w8a8 = false);

// A note when the levels a fit uses all have prompts of about one length (each level's median
// within 1.5x of the others'): attention's cost cannot be told from the linear layers' there, so
// a fit says little about other prompt lengths. Empty otherwise.
std::string one_prompt_length_note(const std::vector<MeasuredLevel>& levels);

// The same for output lengths (each level's median answer within 1.5x of the others'): a serial
// cost per request and one per streamed token scale together at one length, so a fit cannot tell
// them apart and may put the front end's time in the wrong one. Empty otherwise.
std::string one_output_length_note(const std::vector<MeasuredLevel>& levels);

}  // namespace tokperf::sim
