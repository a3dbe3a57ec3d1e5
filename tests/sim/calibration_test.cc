// sim calibrate's parts: a saved run read back into levels, each replayed through the engine at
// its measured arrivals, and the fit of the host's and serving stack's knobs. The "server" here is
// the simulator itself with known, changed knobs (sim run in virtual time, deterministic), so the
// fit has a right answer to find.
#include "sim/calibration.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "support/scratch_dir.h"

namespace tokperf::sim {
namespace {

using testing_support::scratch_dir;

// The costs of the "server" the runs below are measured on: a slower host and GPU than the
// vllm preset's (front end 12 ms per request and 300 us per streamed token, 2 ms per step, 70%
// of the memory bandwidth).
const char* const kServerKnobs =
    "--knob request_overhead_s=0.012 --knob output_overhead_s=0.0003 --knob step_overhead_s=0.002 "
    "--knob bandwidth_efficiency=0.7";
const std::vector<std::string> kServerKnobList = {
    "request_overhead_s=0.012", "output_overhead_s=0.0003", "step_overhead_s=0.002",
    "bandwidth_efficiency=0.7"};

int run_shell(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A run of the "server" (its --knob flags `knobs`, answers of `output_tokens`) at these
// concurrencies, saved in a scratch folder.
std::string measured_run(const std::string& name, const std::string& levels, int requests,
                         const std::string& knobs = kServerKnobs, int output_tokens = 64) {
  const std::string dir = scratch_dir(name);
  const std::string cmd = std::string(TOKPERF_BINARY) +
                          " sim run --model llama-3.1-8b --gpu h100 --engine vllm " + knobs +
                          " -c " + levels + " --requests " + std::to_string(requests) +
                          " --input-tokens 512 --output-tokens " + std::to_string(output_tokens) +
                          " --ignore-eos --no-history --out " + dir;
  EXPECT_EQ(run_shell(cmd), 0) << cmd;
  return dir;
}

CalibrationSetup setup_for(std::vector<std::string> knobs) {
  CalibrationSetup s;
  s.flags.model = "llama-3.1-8b";
  s.flags.gpu = "h100";
  s.flags.engine = "vllm";
  s.flags.knobs = std::move(knobs);
  return s;
}

double rel(double a, double b) { return std::fabs(a / b - 1.0); }

// The first level of the run in `dir`, measured and replayed with a fit's knobs and with the
// preset's (NaN figures, and a failure, where a replay fails).
struct HeldOutLevel {
  LevelFigures measured, fitted, preset;
};
HeldOutLevel held_out_level(const std::string& dir, const CalibrationFit& fit) {
  std::vector<std::string> notes;
  HeldOutLevel h{{NAN, NAN, NAN}, {NAN, NAN, NAN}, {NAN, NAN, NAN}};
  auto held = load_measured_levels(dir, notes);
  if (!held.ok()) {
    ADD_FAILURE() << held.error();
    return h;
  }
  auto with_fit = replay_levels(with_fitted_knobs(setup_for({}), fit), *held);
  auto preset = replay_levels(setup_for({}), *held);
  if (!with_fit.ok() || !preset.ok()) {
    ADD_FAILURE() << (with_fit.ok() ? preset.error() : with_fit.error());
    return h;
  }
  return HeldOutLevel{(*held)[0].measured, (*with_fit)[0], (*preset)[0]};
}

// The llama.cpp server of tests/data/calibration/ as the V1 stand-in describes it: the tiny
// model and this CPU, `slots` sequences, 2,048 tokens a step; `calibration` a saved fit or "".
// llama.cpp forms each batch when the last one ends, so the stand-in is vllm-0.13 (the `vllm`
// preset before it took vLLM 0.14's async scheduling, "Thirty-second change").
CalibrationSetup llamacpp_setup(int64_t slots, const std::string& calibration = "") {
  const std::string data = std::string(TOKPERF_TEST_DATA) + "/calibration/";
  CalibrationSetup setup;
  setup.flags.model_config = data + "llamacpp-tiny-cpu/model_config.json";
  setup.flags.gpu_spec = data + "llamacpp-tiny-cpu/cpu_spec.json";
  setup.flags.engine = "vllm-0.13";
  if (!calibration.empty()) setup.flags.calibration = data + calibration;
  setup.engine_flags.max_num_seqs = slots;
  setup.engine_flags.max_num_batched_tokens = 2048;
  setup.max_num_seqs_given = setup.max_num_batched_tokens_given = true;
  return setup;
}

TEST(Calibration, ReplayingASavedRunGivesItsOwnFiguresBack) {
  const std::string dir = measured_run("calib_replay", "1,8", 30);
  std::vector<std::string> notes;
  auto levels = load_measured_levels(dir, notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  ASSERT_EQ(levels->size(), 2u);
  EXPECT_EQ((*levels)[0].slots, 1);
  EXPECT_EQ((*levels)[1].slots, 8);
  EXPECT_TRUE(notes.empty());
  // The same engine and knobs at the same arrivals: the same figures, to rounding.
  auto same = replay_levels(setup_for(kServerKnobList), *levels);
  ASSERT_TRUE(same.ok()) << same.error();
  for (size_t i = 0; i < levels->size(); ++i) {
    const LevelFigures& m = (*levels)[i].measured;
    EXPECT_LT(rel((*same)[i].ttft_ms, m.ttft_ms), 1e-6) << i;
    EXPECT_LT(rel((*same)[i].tpot_ms, m.tpot_ms), 1e-6) << i;
    EXPECT_LT(rel((*same)[i].output_tok_s, m.output_tok_s), 1e-6) << i;
  }
  EXPECT_NEAR(calibration_objective(*same, *levels), 0.0, 1e-5);
  // The run was a sim run: run again as sim run runs a closed loop (users together after the
  // warm-up, not at the recorded times), it gives its own figures back too.
  auto as_sim_run = replay_levels(setup_for(kServerKnobList), *levels, /*as_sim_run=*/true);
  ASSERT_TRUE(as_sim_run.ok()) << as_sim_run.error();
  for (size_t i = 0; i < levels->size(); ++i) {
    EXPECT_TRUE((*levels)[i].closed_loop);
    const LevelFigures& m = (*levels)[i].measured;
    EXPECT_LT(rel((*as_sim_run)[i].ttft_ms, m.ttft_ms), 1e-6) << i;
    EXPECT_LT(rel((*as_sim_run)[i].tpot_ms, m.tpot_ms), 1e-6) << i;
    EXPECT_LT(rel((*as_sim_run)[i].output_tok_s, m.output_tok_s), 1e-6) << i;
  }
  // The preset's faster host and GPU: both TTFT and TPOT come out well below.
  auto preset = replay_levels(setup_for({}), *levels);
  ASSERT_TRUE(preset.ok()) << preset.error();
  EXPECT_LT((*preset)[0].tpot_ms, 0.9 * (*levels)[0].measured.tpot_ms);
  EXPECT_LT((*preset)[0].ttft_ms, 0.9 * (*levels)[0].measured.ttft_ms);
  EXPECT_GT(calibration_objective(*preset, *levels), 0.3);
}

TEST(Calibration, TheFitFindsTheServersCostsAndPredictsALoadItWasNotFittedOn) {
  // Loads that tell the costs apart: one user (latency and step), 8 and 32 (the front end's share
  // of each streamed token grows with the streams until it saturates at 32), and 8 and 32 again
  // with 16-token answers: at one output length a cost per request and one per streamed token
  // scale together, and a fit from some starts put the front end's time in the wrong one.
  const std::string dir = measured_run("calib_fit", "1,8,32", 40);
  const std::string short_answers = measured_run("calib_fit_short", "8,32", 40, kServerKnobs, 16);
  std::vector<std::string> notes;
  auto levels = load_measured_levels(dir, notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  EXPECT_NE(one_output_length_note(*levels).find("answers of about 64 tokens"), std::string::npos);
  auto more = load_measured_levels(short_answers, notes);
  ASSERT_TRUE(more.ok()) << more.error();
  levels->insert(levels->end(), more->begin(), more->end());
  EXPECT_EQ(one_output_length_note(*levels), "");
  auto fit = fit_calibration(setup_for({}), *levels, default_calibration_knobs(), 1);
  ASSERT_TRUE(fit.ok()) << fit.error();
  EXPECT_LT(fit->objective, 0.25 * fit->objective_start)
      << fit->objective << " from " << fit->objective_start << ": " << fit->flags();
  // The streamed-token and per-request costs of the front end are found within a factor of 1.5
  // (the step overhead and the bandwidth trade against each other and are not checked alone).
  for (const FittedKnob& k : fit->knobs) {
    if (k.name == "request_overhead_s") {
      EXPECT_NEAR(std::log(k.value / 0.012), 0, std::log(1.5)) << k.value;
    }
    if (k.name == "output_overhead_s") {
      EXPECT_NEAR(std::log(k.value / 0.0003), 0, std::log(1.5)) << k.value;
    }
  }
  // A load it was not fitted on (16 users): the fitted knobs predict it, the preset does not.
  const HeldOutLevel h = held_out_level(measured_run("calib_other", "16", 40), *fit);
  const LevelFigures& m = h.measured;
  EXPECT_LT(rel(h.fitted.ttft_ms, m.ttft_ms), 0.15) << h.fitted.ttft_ms << " vs " << m.ttft_ms;
  EXPECT_LT(rel(h.fitted.tpot_ms, m.tpot_ms), 0.05) << h.fitted.tpot_ms << " vs " << m.tpot_ms;
  EXPECT_GT(rel(h.preset.ttft_ms, m.ttft_ms), 0.15);
  EXPECT_GT(rel(h.preset.tpot_ms, m.tpot_ms), 0.1);
}

// A host whose CPU is three times slower than the preset's hosts, GPU as the preset's: the one
// factor (--fit host_cpu_factor) is found from two loads and predicts a third, where the preset's
// host costs do not.
TEST(Calibration, OneHostFactorIsFoundAndCarriesToALoadItWasNotFittedOn) {
  const std::string slow_host = "--knob host_cpu_factor=3";
  std::vector<std::string> notes;
  auto levels = load_measured_levels(measured_run("calib_host", "1,32", 40, slow_host), notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  auto fit = fit_calibration(setup_for({}), *levels, {"host_cpu_factor"}, 1);
  ASSERT_TRUE(fit.ok()) << fit.error();
  ASSERT_EQ(fit->knobs.size(), 1u);
  EXPECT_NEAR(std::log(fit->knobs[0].value / 3.0), 0, std::log(1.15)) << fit->flags();
  EXPECT_LT(fit->objective, 0.1 * fit->objective_start) << fit->flags();
  const HeldOutLevel h =
      held_out_level(measured_run("calib_host_other", "8", 40, slow_host), *fit);
  const LevelFigures& m = h.measured;
  EXPECT_LT(rel(h.fitted.ttft_ms, m.ttft_ms), 0.1) << h.fitted.ttft_ms << " vs " << m.ttft_ms;
  EXPECT_LT(rel(h.fitted.tpot_ms, m.tpot_ms), 0.1) << h.fitted.tpot_ms << " vs " << m.tpot_ms;
  EXPECT_GT(rel(h.preset.ttft_ms, m.ttft_ms), 0.2);
}

// --steps: the server's steps read from the token arrivals, one definition for the measured and
// the replayed requests (sim/step_timeline.h). A "server" whose front end spends 200 us on each
// streamed token and whose steps cost 60 us a sequence: its run's step figures are what a replay
// with its own costs gives and not what the preset gives, and a fit on them finds both costs.
TEST(Calibration, StepsReadFromTheTokenArrivalsFindTheFrontEndAndThePerSequenceCost) {
  const std::vector<std::string> server = {"output_overhead_s=0.0002", "per_seq_overhead_s=6e-05"};
  const std::string dir =
      measured_run("calib_steps", "8,32", 40, "--knob " + server[0] + " --knob " + server[1]);
  std::vector<std::string> notes;
  auto plain = load_measured_levels(dir, notes);
  auto levels = load_measured_levels(dir, notes, /*steps=*/true);
  ASSERT_TRUE(plain.ok() && levels.ok());
  ASSERT_EQ(levels->size(), 2u);
  for (size_t i = 0; i < levels->size(); ++i) {
    EXPECT_TRUE(std::isnan((*plain)[i].measured.decode_step_ms));  // read only when asked
    const LevelFigures& m = (*levels)[i].measured;
    EXPECT_TRUE(std::isfinite(m.decode_step_ms)) << i;
    EXPECT_NEAR(m.token_spacing_us, 200.0, 10.0) << i;
  }
  auto same = replay_levels(setup_for(server), *levels);
  auto preset = replay_levels(setup_for({}), *levels);
  ASSERT_TRUE(same.ok() && preset.ok());
  for (size_t i = 0; i < levels->size(); ++i) {
    const LevelFigures& m = (*levels)[i].measured;
    EXPECT_LT(rel((*same)[i].decode_step_ms, m.decode_step_ms), 1e-6) << i;
    EXPECT_LT(rel((*same)[i].token_spacing_us, m.token_spacing_us), 1e-6) << i;
    EXPECT_GT(rel((*preset)[i].token_spacing_us, m.token_spacing_us), 0.5) << i;
  }
  EXPECT_GT(rel((*preset)[1].decode_step_ms, (*levels)[1].measured.decode_step_ms), 0.05);
  auto fit = fit_calibration(setup_for({}), *levels, {"output_overhead_s", "per_seq_overhead_s"}, 1);
  ASSERT_TRUE(fit.ok()) << fit.error();
  for (const FittedKnob& k : fit->knobs) {
    const double truth = k.name == "output_overhead_s" ? 2e-4 : 6e-5;
    EXPECT_NEAR(std::log(k.value / truth), 0, std::log(1.2)) << fit->flags();
  }
}

// The same reading on the real llama.cpp server of tests/data/calibration/: its decode-only steps
// grow with the slots in use (5.5 ms at 2 users, 11.5 at 8) and one step's tokens reach the
// client ~0.1-0.16 ms apart; one user has no step that streams share.
TEST(Calibration, OnARealLlamaCppServerTheStepsAreRead) {
  const std::string dir = std::string(TOKPERF_TEST_DATA) + "/calibration/llamacpp-tiny-cpu";
  std::vector<std::string> notes;
  auto levels = load_measured_levels(dir, notes, /*steps=*/true);
  ASSERT_TRUE(levels.ok()) << levels.error();
  ASSERT_EQ(levels->size(), 6u);  // c = 1, 2, 4, 8, 12, 16
  EXPECT_TRUE(std::isnan((*levels)[0].measured.decode_step_ms));
  EXPECT_NE(std::find_if(notes.begin(), notes.end(),
                         [](const std::string& n) {
                           return n.find("c=1: no step figures") != std::string::npos;
                         }),
            notes.end());
  EXPECT_NEAR((*levels)[1].measured.decode_step_ms, 5.5, 0.5);
  EXPECT_NEAR((*levels)[3].measured.decode_step_ms, 11.5, 1.0);
  for (size_t i = 2; i < levels->size(); ++i) {
    EXPECT_GT((*levels)[i].measured.token_spacing_us, 90) << i;
    EXPECT_LT((*levels)[i].measured.token_spacing_us, 200) << i;
  }
}

// A real server: llama.cpp on this project's CPU, measured by bench at 1-16 users
// (tests/data/calibration/llamacpp-tiny-cpu/README.md). The simulator has no llama.cpp preset and
// the CPU's figures are rough, so the preset is far off; fitted on levels 1, 3 and 5 (1, 4 and 12
// users), the levels it did not see (2, 8 and 16 users) come out close.
TEST(Calibration, FittedOnHalfARealLlamaCppRunItPredictsTheOtherHalf) {
  std::string dir = TOKPERF_TEST_DATA;
  dir.append("/calibration/llamacpp-tiny-cpu");
  std::vector<std::string> notes;
  auto levels = load_measured_levels(dir, notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  ASSERT_EQ(levels->size(), 6u);
  std::vector<MeasuredLevel> fit_on, held_out;
  for (size_t i = 0; i < levels->size(); ++i) {
    (i % 2 == 0 ? fit_on : held_out).push_back((*levels)[i]);
  }
  const CalibrationSetup setup = llamacpp_setup(8);
  auto fit = fit_calibration(setup, fit_on, default_calibration_knobs(), 1);
  ASSERT_TRUE(fit.ok()) << fit.error();
  auto preset = replay_levels(setup, held_out);
  auto with_fit = replay_levels(with_fitted_knobs(setup, *fit), held_out);
  ASSERT_TRUE(preset.ok() && with_fit.ok());
  auto median_error = [&](const std::vector<LevelFigures>& sim, double LevelFigures::*field) {
    std::vector<double> e;
    for (size_t i = 0; i < held_out.size(); ++i)
      e.push_back(rel(sim[i].*field, held_out[i].measured.*field));
    std::sort(e.begin(), e.end());
    return e[e.size() / 2];
  };
  const double ttft_preset = median_error(*preset, &LevelFigures::ttft_ms),
               ttft_fit = median_error(*with_fit, &LevelFigures::ttft_ms),
               tpot_preset = median_error(*preset, &LevelFigures::tpot_ms),
               tpot_fit = median_error(*with_fit, &LevelFigures::tpot_ms);
  EXPECT_GT(ttft_preset, 0.5);
  EXPECT_GT(tpot_preset, 0.5);
  EXPECT_LT(ttft_fit, 0.25) << fit->flags();
  EXPECT_LT(tpot_fit, 0.15) << fit->flags();
}

// A what-if on the real server: the same llama.cpp with 2 slots instead of 8
// (tests/data/calibration/llamacpp-tiny-cpu-slots/README.md). Two calibrations fitted on the
// 8-slot runs (128-, 256- and 512-token prompts) and saved by sim calibrate --out: the vllm
// stand-in, and the same with llama.cpp's unified KV cache (EngineConfig::unified_kv_attention,
// which --calibration carries). With 2 slots every token attends over 2 slots' cells, not 8, and
// the server got faster; only the second calibration knows why. Replayed at the 2-slot run's
// measured arrivals. (Bounds set after the measurement: docs/SIMULATOR.md.)
TEST(Calibration, LlamaCppsUnifiedKvCachePredictsASlotChangeTheStandInCannot) {
  std::string data = TOKPERF_TEST_DATA;
  data.append("/calibration/");
  std::vector<std::string> notes;
  auto levels = load_measured_levels(data + "llamacpp-tiny-cpu-slots/np2-prompt384", notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  ASSERT_EQ(levels->size(), 4u);
  auto median_errors = [&](const std::string& calibration) {
    auto sim = replay_levels(llamacpp_setup(2, "llamacpp-tiny-cpu-slots/" + calibration), *levels);
    EXPECT_TRUE(sim.ok()) << sim.error();
    std::vector<double> ttft, tpot;
    for (size_t i = 0; sim.ok() && i < levels->size(); ++i) {
      ttft.push_back(rel((*sim)[i].ttft_ms, (*levels)[i].measured.ttft_ms));
      tpot.push_back(rel((*sim)[i].tpot_ms, (*levels)[i].measured.tpot_ms));
    }
    std::sort(ttft.begin(), ttft.end());
    std::sort(tpot.begin(), tpot.end());
    // The median of four: the mean of the middle two.
    return std::make_pair(ttft.empty() ? 0 : (ttft[1] + ttft[2]) / 2,
                          tpot.empty() ? 0 : (tpot[1] + tpot[2]) / 2);
  };
  const auto [ttft_standin, tpot_standin] = median_errors("fit-np8-standin.json");
  const auto [ttft_unified, tpot_unified] = median_errors("fit-np8-unified.json");
  EXPECT_GT(ttft_standin, 1.0) << ttft_standin;  // more than 2x off
  EXPECT_LT(ttft_unified, 0.5) << ttft_unified;
  EXPECT_LT(tpot_unified, tpot_standin) << tpot_unified << " vs " << tpot_standin;
}

// The same server at 2-4 users (tests/data/calibration/llamacpp-tiny-cpu-fewusers): a request
// replayed at its measured time carries the real clients' drift, sim run's closed loop does not.
// With the stand-in calibration (fitted on the 8-slot runs, no serial front-end time) the 2-user
// level replayed comes out close on TPOT, while run as sim run both users share every step and its
// TPOT comes out far below the measured (one user's tokens really wait behind the other's
// prompt). Open-loop levels have no sim-run figures. (Bounds set after the measurement:
// docs/SIMULATOR.md, "Calibrating to your own server".)
TEST(Calibration, SimRunsClosedLoopMissesWhatTheReplayCarries) {
  std::string data = TOKPERF_TEST_DATA;
  data.append("/calibration/");
  std::vector<std::string> notes;
  auto levels = load_measured_levels(data + "llamacpp-tiny-cpu-fewusers/prompt768", notes);
  ASSERT_TRUE(levels.ok()) << levels.error();
  ASSERT_EQ(levels->size(), 4u);
  const CalibrationSetup setup = llamacpp_setup(8, "llamacpp-tiny-cpu-slots/fit-np8-standin.json");
  auto replayed = replay_levels(setup, *levels);
  auto as_sim_run = replay_levels(setup, *levels, /*as_sim_run=*/true);
  ASSERT_TRUE(replayed.ok() && as_sim_run.ok());
  const LevelFigures& m = (*levels)[1].measured;  // 2 users
  EXPECT_LT(rel((*replayed)[1].tpot_ms, m.tpot_ms), 0.3)
      << (*replayed)[1].tpot_ms << " vs " << m.tpot_ms;
  EXPECT_LT((*as_sim_run)[1].tpot_ms, 0.6 * m.tpot_ms)
      << (*as_sim_run)[1].tpot_ms << " vs " << m.tpot_ms;
  MeasuredLevel open = (*levels)[1];
  open.closed_loop = false;
  auto none = replay_levels(setup, {open}, /*as_sim_run=*/true);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(std::isnan((*none)[0].ttft_ms) && std::isnan((*none)[0].tpot_ms));
}

// One prompt length cannot separate attention from the linear layers: sim calibrate says so when
// every level it fits on has about the same prompts, and not once another length is among them.
TEST(Calibration, ItSaysWhenEveryLevelHasOnePromptLength) {
  std::string data = TOKPERF_TEST_DATA;
  data.append("/calibration/");
  std::vector<std::string> notes;
  auto one = load_measured_levels(data + "llamacpp-tiny-cpu", notes);
  auto other = load_measured_levels(data + "llamacpp-tiny-cpu-lengths/prompt512", notes);
  ASSERT_TRUE(one.ok() && other.ok());
  const std::string note = one_prompt_length_note(*one);
  EXPECT_NE(note.find("prompts of about 156 tokens"), std::string::npos) << note;
  std::vector<MeasuredLevel> both = *one;
  both.insert(both.end(), other->begin(), other->end());
  EXPECT_EQ(one_prompt_length_note(both), "");
}

TEST(Calibration, AFolderThatIsNotARunIsNamed) {
  std::vector<std::string> notes;
  const std::string dir = scratch_dir("calib_missing");
  auto r = load_measured_levels(dir, notes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(dir), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("not a run folder"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace tokperf::sim
