// The simulator's command-line edges: `tokperf bench` without --url measures the built-in engine;
// `tokperf sim serve` starts, says where, and stops on --max-seconds; bad flags name themselves.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/accuracy_figures.h"
#include "support/scratch_dir.h"

namespace {

struct Ran {
  int rc = -1;
  std::string out;  // stdout and stderr
};

// A shell command line, stdout and stderr together.
Ran run_shell(const std::string& command) {
  Ran r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Ran run(const std::string& args) {
  return run_shell(std::string(TOKPERF_BINARY).append(" ") + args);
}

// `tokperf estimate ARGS --json`, parsed (null when it did not print JSON).
nlohmann::json estimate_json(const std::string& args) {
  const Ran r = run("estimate " + args + " --json");
  EXPECT_EQ(r.rc, 0) << r.out;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

// The first level of `tokperf sim run ARGS --json`; null with a failed expectation when it printed
// no JSON.
nlohmann::json sim_run_level(const std::string& args) {
  const Ran r = run_shell(std::string(TOKPERF_BINARY) + " sim run " + args +
                          " --no-save --no-history --json 2>/dev/null | cat");
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << r.out;
  return j.is_object() ? j["levels"][0] : nlohmann::json();
}

// One sim run level's throughput figure `key` (output_tokens_per_s, requests_per_s); 0 when the
// run printed no JSON.
double sim_run_throughput(const std::string& args, const char* key) {
  const nlohmann::json level = sim_run_level(args);
  return level.is_object() ? level["throughput"][key].get<double>() : 0.0;
}

TEST(SimCli, BenchWithoutUrlMeasuresTheBuiltInEngine) {
  Ran r =
      run("bench -n 3 --warmup 0 --input-tokens 64 --output-tokens 4 --ignore-eos --no-progress "
          "--no-save --no-history --sim-model llama-3.1-8b --gpu h100 --dtype fp8");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("built-in simulated engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Llama-3.1-8B (8.0B params) in fp8 on 1 x NVIDIA H100"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("model llama-3.1-8b"), std::string::npos) << r.out;
}

TEST(SimCli, BadFlagsAreNamed) {
  Ran r = run("bench --url http://127.0.0.1:1 --gpu h100");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cannot be combined with --url"), std::string::npos) << r.out;
  r = run("bench --sim-model gpt-5");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--sim-model 'gpt-5'"), std::string::npos) << r.out;
  r = run("sim serve --port 70000");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--port 70000"), std::string::npos) << r.out;
  r = run("sim serve --model llama-2-70b --gpu rtx4090");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cannot hold it"), std::string::npos) << r.out;
}

// --dp-attention (SGLang's data-parallel attention) on the deployment flags: estimate says so and
// each GPU caches only its own requests, so the KV capacity grows; it needs --tp 2 or more.
TEST(SimCli, DpAttentionFlagSplitsTheKvCacheOverTheGpus) {
  const std::string base = "--model deepseek-v3 --gpu h200 --dtype fp8 --tp 8";
  const nlohmann::json t = estimate_json(base), d = estimate_json(base + " --dp-attention");
  EXPECT_EQ(d["dp_attention"], true);
  EXPECT_EQ(t["dp_attention"], false);
  EXPECT_GT(d["kv_capacity_tokens"].get<double>(), 6 * t["kv_capacity_tokens"].get<double>());
  EXPECT_GT(d["weight_bytes_per_gpu"].get<double>(), t["weight_bytes_per_gpu"].get<double>());
  Ran text = run("estimate --model deepseek-v3 --gpu h200 --dtype fp8 --tp 8 --dp-attention");
  EXPECT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("data-parallel attention"), std::string::npos) << text.out;
  Ran one = run("estimate --model llama-3.1-8b --gpu h100 --dp-attention");
  EXPECT_EQ(one.rc, 2) << one.out;
  EXPECT_NE(one.out.find("--dp-attention"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("--tp 2 or more"), std::string::npos) << one.out;
}

// --cuda-graph-max-batch 0 (vLLM --enforce-eager, SGLang --disable-cuda-graph): every step pays at
// least the host's launch time, so a small model's decode gets slower; estimate says so.
TEST(SimCli, CudaGraphsOffMakeSmallBatchDecodeHostBound) {
  const std::string base = "--model llama-3.1-8b --gpu h100";
  const nlohmann::json g = estimate_json(base),
                       e = estimate_json(base + " --cuda-graph-max-batch 0");
  EXPECT_EQ(g["cuda_graph_max_batch"], -1);
  EXPECT_EQ(e["cuda_graph_max_batch"], 0);
  EXPECT_GT(e["expected_tpot_s"].get<double>(), 2 * g["expected_tpot_s"].get<double>());
  Ran text = run("estimate --model llama-3.1-8b --gpu h100 --cuda-graph-max-batch 0");
  EXPECT_NE(text.out.find("CUDA graphs off"), std::string::npos) << text.out;
  Ran sim =
      run("sim run --model llama-3.1-8b --gpu h100 -c 4 -n 20 --input-tokens 64 --output-tokens 16 "
          "--ignore-eos --no-save --no-history --json --cuda-graph-max-batch 2");
  EXPECT_EQ(sim.rc, 0) << sim.out;
  Ran bad = run("estimate --model llama-3.1-8b --gpu h100 --cuda-graph-max-batch -2");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--cuda-graph-max-batch"), std::string::npos) << bad.out;
}

// --kv-cache-tokens: the KV size the engine logged replaces the computed one; estimate says which
// it used, and a fuller cache admits fewer sequences in sim run's waiting queue.
TEST(SimCli, TheEnginesLoggedKvSizeReplacesTheComputedOne) {
  const std::string base = "--model llama-3.1-8b --gpu h100 --prompt-tokens 999 --output-tokens 1";
  const nlohmann::json computed = estimate_json(base),
                       given = estimate_json(base + " --kv-cache-tokens 4096");
  EXPECT_TRUE(computed["kv_cache_tokens_given"].is_null());
  EXPECT_EQ(given["kv_cache_tokens_given"], 4096);
  EXPECT_EQ(given["kv_capacity_tokens"], 4096);
  EXPECT_EQ(given["kv_capacity_sequences"], 4);
  EXPECT_GT(computed["kv_capacity_tokens"].get<int64_t>(), 100'000);
  Ran text = run("estimate " + base + " --kv-cache-tokens 4096");
  EXPECT_NE(text.out.find("the engine's own figure, --kv-cache-tokens 4096"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("held-out engine starts"), std::string::npos) << text.out;
  const std::string load =
      "sim run --model llama-3.1-8b --gpu h100 -c 16 -n 32 --input-tokens 900 --output-tokens 100 "
      "--ignore-eos --no-save --no-history --json";
  const auto ttft = [](const std::string& args) {  // stdout alone: the notes go to stderr
    const Ran r = run_shell(std::string(TOKPERF_BINARY) + " " + args + " 2>/dev/null | cat");
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j.is_object() ? j["levels"][0]["ttft_ms"]["p50"].get<double>() : 0.0;
  };
  // Two 1,000-token sequences at a time instead of all sixteen: the rest wait.
  EXPECT_GT(ttft(load + " --kv-cache-tokens 2048"), 2 * ttft(load));
  Ran bad = run("estimate --model llama-3.1-8b --gpu h100 --kv-cache-tokens 0");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--kv-cache-tokens"), std::string::npos) << bad.out;
}

// --frontend-us-per-token replaces the preset's front-end time per streamed token: estimate
// reports it and the cap it puts on streamed tokens, and with many streams sim run's output rate
// is capped by it (0 lifts the cap).
TEST(SimCli, TheFrontEndsTimePerStreamedTokenCanBeGiven) {
  const std::string base = "--model llama-3.1-8b --gpu h100";
  const nlohmann::json vllm = estimate_json(base),
                       sglang = estimate_json(base + " --engine sglang"),
                       off = estimate_json(base + " --frontend-us-per-token 0"),
                       given = estimate_json(base + " --frontend-us-per-token 400");
  EXPECT_GT(vllm["frontend_us_per_token"].get<double>(), 0);
  EXPECT_EQ(sglang["frontend_us_per_token"].get<double>(), 0);
  EXPECT_EQ(off["frontend_us_per_token"].get<double>(), 0);
  EXPECT_NEAR(given["frontend_us_per_token"].get<double>(), 400, 1e-6);
  // One request: its first token passes the front end once.
  EXPECT_NEAR(given["expected_ttft_s"].get<double>() - off["expected_ttft_s"].get<double>(), 400e-6,
              1e-9);
  Ran text = run("estimate " + base + " --frontend-us-per-token 400");
  EXPECT_NE(text.out.find("at most 2500 tokens/s streamed"), std::string::npos) << text.out;
  const auto out_rate = [](const std::string& extra) {
    return sim_run_throughput(
        "--model llama-3.1-8b --gpu h100 -c 128 -n 256 --input-tokens 128 --output-tokens 64 "
        "--ignore-eos " +
            extra,
        "output_tokens_per_s");
  };
  // 400 us a token: at most 2,500 tokens/s however many streams; without it, far more.
  const double capped = out_rate("--frontend-us-per-token 400"),
               free = out_rate("--frontend-us-per-token 0");
  EXPECT_LE(capped, 2500);
  EXPECT_GT(free, 2 * capped);
  Ran bad = run("estimate " + base + " --frontend-us-per-token -1");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--frontend-us-per-token"), std::string::npos) << bad.out;
}

// --knob unified_kv_attention=1 (llama.cpp's one KV cache for all slots): one user's requests
// rotate through the 8 slots and attend over what each left behind, so a single user is served
// slower than without it; estimate, which times one request alone, says it leaves that out.
TEST(SimCli, UnifiedKvAttentionSlowsOneUserAsTheSlotsFill) {
  const auto rate = [](const std::string& extra) {
    return sim_run_throughput(
        "--model llama-3.1-8b --gpu l4 --max-num-seqs 8 -c 1 -n 24 --input-tokens 4000 "
        "--output-tokens 16 --ignore-eos " +
            extra,
        "output_tokens_per_s");
  };
  const double plain = rate(""), unified = rate("--knob unified_kv_attention=1");
  EXPECT_LT(unified, 0.9 * plain) << unified << " vs " << plain;
  Ran e = run("estimate --model llama-3.1-8b --gpu l4 --knob unified_kv_attention=1");
  EXPECT_EQ(e.rc, 0) << e.out;
  EXPECT_NE(e.out.find("sim run and sim serve add the cells the other slots hold"),
            std::string::npos)
      << e.out;
}

// --knob outputs_before_setups=1: in a burst, the first request's tokens pass the front end while
// the others are still being set up (as a real vLLM's did), instead of after all 100 set-ups.
TEST(SimCli, OutputsBeforeSetupsLetTheFirstTokenOfABurstThrough) {
  const auto first_ttft = [](const std::string& extra) {
    const nlohmann::json level = sim_run_level(
        "--model llama-3.1-8b --gpu h100 -r inf --max-concurrency 100 -n 100 --input-tokens 128 "
        "--output-tokens 32 --ignore-eos " +
        extra);
    return level.is_object() ? level["ttft_ms"]["min"].get<double>() : 0.0;
  };
  const double fifo = first_ttft(""), first = first_ttft("--knob outputs_before_setups=1");
  EXPECT_GT(fifo, 100 * 5.52) << "behind every set-up of the burst";
  EXPECT_GT(first, 5.52);
  EXPECT_LT(first, 0.25 * fifo) << first << " vs " << fifo;
}

// A calibration's constants belong to the preset it was fitted on: vllm and vllm-0.13 share their
// constants and differ in scheduling, so a fit is refused on the other, with the flag to give.
TEST(SimCli, ACalibrationRunsOnlyOnThePresetItWasFittedOn) {
  const std::string data = std::string(TOKPERF_TEST_DATA) + "/calibration/";
  const std::string base = "sim run --model-config " + data +
                           "llamacpp-tiny-cpu/model_config.json --gpu-spec " + data +
                           "llamacpp-tiny-cpu/cpu_spec.json --dtype fp16 --max-num-seqs 8 "
                           "--max-num-batched-tokens 2048 -c 2 -n 8 --input-tokens 128 "
                           "--output-tokens 16 --ignore-eos --no-save --no-history --calibration " +
                           data + "llamacpp-tiny-cpu-slots/fit-np8-standin.json";
  const Ran wrong = run(base + " --engine vllm");
  EXPECT_EQ(wrong.rc, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("was fitted with --engine vllm-0.13"), std::string::npos) << wrong.out;
  EXPECT_NE(wrong.out.find("give --engine vllm-0.13"), std::string::npos) << wrong.out;
  const Ran right = run(base + " --engine vllm-0.13");
  EXPECT_EQ(right.rc, 0) << right.out;
}

// --frontend-ms-per-request: the front end's serial set-up per request, a host property the
// presets fitted on small hosts. estimate records it and the cap it implies; one request pays it
// once; sim run's request rate stays under 1 / set-up however many users, and far above without.
TEST(SimCli, TheFrontEndsSetUpTimePerRequestCanBeGiven) {
  const std::string base = "--model llama-3.1-8b --gpu h100";
  const nlohmann::json preset = estimate_json(base),
                       given = estimate_json(base + " --frontend-ms-per-request 20");
  EXPECT_NEAR(preset["frontend_ms_per_request"].get<double>(), 5.52, 1e-9);
  EXPECT_NEAR(given["frontend_ms_per_request"].get<double>(), 20, 1e-9);
  EXPECT_NEAR(given["expected_ttft_s"].get<double>() - preset["expected_ttft_s"].get<double>(),
              20e-3 - 5.52e-3, 1e-9);
  Ran text = run("estimate " + base + " --frontend-ms-per-request 20");
  EXPECT_NE(text.out.find("so at most 50 requests/s"), std::string::npos) << text.out;
  const auto req_rate = [](const std::string& extra) {
    return sim_run_throughput(
        "--model llama-3.1-8b --gpu h100 -c 64 -n 300 --input-tokens 64 --output-tokens 4 "
        "--ignore-eos " +
            extra,
        "requests_per_s");
  };
  const double capped = req_rate("--frontend-ms-per-request 20"),
               free = req_rate("--frontend-ms-per-request 0");
  EXPECT_LE(capped, 50);
  EXPECT_GT(free, 2 * capped);
  Ran bad = run("estimate " + base + " --frontend-ms-per-request -1");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--frontend-ms-per-request"), std::string::npos) << bad.out;
}

// sim calibrate on a run of the simulator with changed knobs (the "server"): with 3 levels it
// holds the middle one out, says how the fit does there, and prints the --knob flags; the JSON
// carries the same. Refusals name the input and exit 2.
TEST(SimCli, CalibrateChecksOnAHeldOutLevelAndPrintsTheFlags) {
  const std::string dir =
      tokperf::testing_support::scratch_dir("cli_calibrate") + "/run-of-the-simulated-server";
  Ran made =
      run("sim run --model llama-3.1-8b --gpu h100 --knob request_overhead_s=0.012 "
          "--knob step_overhead_s=0.002 -c 1,4,16 --requests 20 --input-tokens 256 "
          "--output-tokens 32 --ignore-eos --no-history --out " +
          dir);
  ASSERT_EQ(made.rc, 0) << made.out;
  const std::string deployment = " --model llama-3.1-8b --gpu h100 --engine vllm";
  Ran text = run("sim calibrate " + dir + deployment +
                 " --fit request_overhead_s,step_overhead_s --rounds 1");
  EXPECT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("3 levels from 1 run"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("held-out levels 2 the median |error|"), std::string::npos) << text.out;
  // The held-out closed loop run as sim run runs one too (what a what-if by sim run can expect).
  EXPECT_NE(text.out.find("as sim run runs them"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the fit on the 1 closed-loop level:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--knob request_overhead_s="), std::string::npos) << text.out;
  // A row names its run by the folder when the whole path does not fit.
  EXPECT_NE(text.out.find("\nrun-of-the-simulated-server c=1 "), std::string::npos) << text.out;
  Ran js = run_shell(std::string(TOKPERF_BINARY) + " sim calibrate " + dir + deployment +
                     " --fit request_overhead_s,step_overhead_s --rounds 1 --json 2>/dev/null");
  const nlohmann::json j = nlohmann::json::parse(js.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << js.out;
  EXPECT_LT(j["objective_fitted"].get<double>(), j["objective_preset"].get<double>());
  ASSERT_EQ(j["levels"].size(), 3u);
  ASSERT_EQ(j["check"]["held_out"].size(), 1u);
  EXPECT_NE(j["check"]["held_out"][0].get<std::string>().find("c=4"), std::string::npos);
  EXPECT_EQ(j["check"]["closed_loop_levels"], 1);
  EXPECT_TRUE(j["check"]["fitted_as_sim_run_median_abs_pct"]["tpot"].is_number()) << j["check"];
  // The fitted per-request cost moved toward the server's 12 ms.
  for (const auto& k : j["knobs"]) {
    if (k["name"] == "request_overhead_s") {
      EXPECT_GT(k["fitted"].get<double>(), 0.008) << k;
    }
  }

  // --steps: the step figures of each level, measured / preset / fitted, and in the JSON; the
  // one-user level has none (no step that streams share).
  Ran steps = run("sim calibrate " + dir + deployment +
                  " --fit request_overhead_s,step_overhead_s --rounds 1 --no-check --steps");
  EXPECT_EQ(steps.rc, 0) << steps.out;
  EXPECT_NE(steps.out.find("decode-only step"), std::string::npos) << steps.out;
  EXPECT_NE(steps.out.find("c=1: no step figures"), std::string::npos) << steps.out;
  EXPECT_EQ(text.out.find("decode-only step"), std::string::npos) << text.out;  // only if asked
  Ran steps_js = run_shell(std::string(TOKPERF_BINARY) + " sim calibrate " + dir + deployment +
                           " --fit step_overhead_s --rounds 1 --no-check --steps --json 2>/dev/null");
  const nlohmann::json sj = nlohmann::json::parse(steps_js.out, nullptr, false);
  ASSERT_TRUE(sj.is_object()) << steps_js.out;
  EXPECT_TRUE(sj["levels"][2]["measured"]["decode_step_p50_ms"].is_number()) << sj["levels"];
  EXPECT_FALSE(j["levels"][2]["measured"].contains("decode_step_p50_ms"));
  // With --steps and no --fit, the default knobs take the cost a sequence adds to a step too.
  Ran steps_default = run_shell(std::string(TOKPERF_BINARY) + " sim calibrate " + dir +
                                deployment + " --rounds 1 --no-check --steps --json 2>/dev/null");
  const nlohmann::json dj = nlohmann::json::parse(steps_default.out, nullptr, false);
  ASSERT_TRUE(dj.is_object()) << steps_default.out;
  bool per_seq = false;
  for (const auto& k : dj["knobs"]) per_seq = per_seq || k["name"] == "per_seq_overhead_s";
  EXPECT_TRUE(per_seq) << dj["knobs"];
  for (const auto& k : j["knobs"]) EXPECT_NE(k["name"], "per_seq_overhead_s");

  // --check: another run's levels are compared, never fitted on (here the same run again).
  Ran checked = run("sim calibrate " + dir + " --check " + dir + deployment +
                    " --fit request_overhead_s --rounds 1");
  EXPECT_EQ(checked.rc, 0) << checked.out;
  EXPECT_NE(checked.out.find("on the 3 levels of the --check runs"), std::string::npos)
      << checked.out;
  EXPECT_NE(checked.out.find("(check) "), std::string::npos) << checked.out;
  Ran bad_check = run("sim calibrate " + dir + " --check " + dir + "-nothing" + deployment);
  EXPECT_EQ(bad_check.rc, 2) << bad_check.out;
  EXPECT_NE(bad_check.out.find("--check: "), std::string::npos) << bad_check.out;

  // --out FILE, then --calibration FILE: the fitted constants replace the preset's, with the
  // --knob flags the fit was made with, and the run says how the fit did on its check; a file
  // that is not one is refused.
  const std::string file = dir + "/calibration.json";
  Ran saved =
      run("sim calibrate " + dir + deployment +
          " --knob step_overhead_s=0.00321 --fit request_overhead_s --rounds 1 --out " + file);
  EXPECT_EQ(saved.rc, 0) << saved.out;
  EXPECT_NE(saved.out.find("--calibration " + file), std::string::npos) << saved.out;
  Ran used = run("sim run --model llama-3.1-8b --gpu h100 --calibration " + file +
                 " -c 4 --requests 8 --input-tokens 256 --output-tokens 32 --ignore-eos "
                 "--no-save --no-history");
  EXPECT_EQ(used.rc, 0) << used.out;
  EXPECT_NE(used.out.find("fitted on 3 measured levels with --knob step_overhead_s=0.00321 (its "
                          "check, on 1 level it was not fitted on: TTFT within"),
            std::string::npos)
      << used.out;
  EXPECT_NE(used.out.find("; run as sim run runs a closed loop, its closed-loop levels: TTFT "),
            std::string::npos)
      << used.out;
  // (A subshell: run_shell adds 2>&1, and the note goes to stderr beside JSON.)
  Ran used_json = run_shell("(" + std::string(TOKPERF_BINARY) +
                            " estimate --model llama-3.1-8b --gpu h100 --json --calibration " +
                            file + " 2>/dev/null)");
  const nlohmann::json e = nlohmann::json::parse(used_json.out, nullptr, false);
  ASSERT_TRUE(e.is_object()) << used_json.out;
  EXPECT_DOUBLE_EQ(e["knobs"]["step_overhead_s"].get<double>(), 0.00321) << used_json.out;
  Ran elsewhere = run("estimate --model llama-3.1-70b --gpu h100 --tp 2 --calibration " + file);
  EXPECT_EQ(elsewhere.rc, 0) << elsewhere.out;
  EXPECT_NE(elsewhere.out.find("fitted for another deployment (model, tp differ)"),
            std::string::npos)
      << elsewhere.out;
  Ran unreadable = run("estimate --model llama-3.1-8b --gpu h100 --calibration " + dir + "/none");
  EXPECT_EQ(unreadable.rc, 2) << unreadable.out;
  EXPECT_NE(unreadable.out.find("cannot be read"), std::string::npos) << unreadable.out;

  Ran missing = run("sim calibrate " + dir + "-nothing" + deployment);
  EXPECT_EQ(missing.rc, 2) << missing.out;
  EXPECT_NE(missing.out.find("is not a run folder"), std::string::npos) << missing.out;
  Ran no_deployment = run("sim calibrate " + dir);
  EXPECT_EQ(no_deployment.rc, 2) << no_deployment.out;
  EXPECT_NE(no_deployment.out.find("say what the server runs"), std::string::npos)
      << no_deployment.out;
  Ran bad_knob = run("sim calibrate " + dir + deployment + " --fit max_num_seqs");
  EXPECT_EQ(bad_knob.rc, 2) << bad_knob.out;
  EXPECT_NE(bad_knob.out.find("accepted: "), std::string::npos) << bad_knob.out;
  Ran both = run("sim calibrate " + dir + deployment + " --frontend-ms-per-request 3");
  EXPECT_EQ(both.rc, 2) << both.out;
  EXPECT_NE(both.out.find("give one"), std::string::npos) << both.out;
}

// --max-model-len on the simulator commands: estimate records the served context; a length above
// the model's, or none, is refused naming the flag and the limit (exit 2). A run whose requests
// do not fit the served context is refused by the simulated server, as a real one answers 400: it
// fails (exit 1) saying why, instead of printing an empty table.
TEST(SimCli, TheServedContextLengthCanBeGiven) {
  const std::string base = "--model llama-3.1-8b --gpu h100";
  EXPECT_EQ(estimate_json(base)["max_model_len"], 131072);
  EXPECT_EQ(estimate_json(base + " --max-model-len 4096")["max_model_len"], 4096);
  EXPECT_EQ(estimate_json(base + " --context-length 8192")["max_model_len"], 8192);  // SGLang's
  Ran above = run("estimate " + base + " --max-model-len 200000");
  EXPECT_EQ(above.rc, 2) << above.out;
  EXPECT_NE(above.out.find("accepted: 1 to 131072"), std::string::npos) << above.out;
  Ran zero = run("estimate " + base + " --max-model-len 0");
  EXPECT_EQ(zero.rc, 2) << zero.out;
  EXPECT_NE(zero.out.find("--max-model-len"), std::string::npos) << zero.out;
  const std::string sim =
      "sim run " + base + " -c 2 -n 4 --output-tokens 16 --no-save --no-history";
  Ran too_long = run(sim + " --max-model-len 1024 --input-tokens 2000");
  EXPECT_EQ(too_long.rc, 1) << too_long.out;
  EXPECT_NE(too_long.out.find("2000 prompt + 16 output tokens exceed the served context of 1024"),
            std::string::npos)
      << too_long.out;
  EXPECT_EQ(run(sim + " --max-model-len 4096 --input-tokens 2000").rc, 0);
}

// More concurrent streams than descriptors (the built-in target's server shares the process, so
// two a stream): bench says so before the run, naming the limit, instead of leaving only connect
// errors to explain it; within the limit it says nothing.
TEST(SimCli, BenchWarnsWhenTheDescriptorLimitCannotHoldTheStreams) {
  const std::string bench = std::string(TOKPERF_BINARY)
                                .append(
                                    " bench -n 40 --warmup 0 --input-tokens 16 --output-tokens 2 "
                                    "--ignore-eos --no-progress "
                                    "--no-save --no-history");
  Ran tight = run_shell("ulimit -n 128; " + bench + " -c 100");
  EXPECT_NE(tight.out.find("warning: 100 concurrent streams need about 264 file descriptors"),
            std::string::npos)
      << tight.out;
  EXPECT_NE(tight.out.find("may open 128 (ulimit -n"), std::string::npos) << tight.out;
  Ran roomy = run_shell("ulimit -n 128; " + bench + " -c 2");
  EXPECT_EQ(roomy.rc, 0) << roomy.out;
  EXPECT_EQ(roomy.out.find("file descriptors"), std::string::npos) << roomy.out;
}

// `sim validate --kv`: every vLLM startup log beside the model's capacity, and the summary per
// half; it takes no --write-figures.
TEST(SimCli, ValidateKvPrintsEveryLogAndTheHalves) {
  Ran r = run("sim validate --kv --data " +
              std::string(TOKPERF_TEST_DATA).append("/../../data/validation"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("grpocredit-rho1b-h200-v064"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held-out    KV capacity n=7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibration KV capacity n=7"), std::string::npos) << r.out;
  Ran bad = run("sim validate --kv --write-figures /tmp/x.h");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--kv takes"), std::string::npos) << bad.out;
}

// `sim validate`: the summary per half for all points and then per model class, whose held-out
// lines are the figures estimate and sim run print; the same in --json's summary_by_class.
TEST(SimCli, ValidateSummarisesEachHalfPerModelClass) {
  const std::string data = std::string(TOKPERF_TEST_DATA).append("/../../data/validation");
  Ran r = run("sim validate --split held-out --data " + data);
  EXPECT_EQ(r.rc, 0) << r.out;
  // The counts are the generated header's (the figures the CLI prints come from the same replay).
  auto line = [](const char* cls, int n) {
    return fmt::format("held-out    {:<5} TTFT         n={:<3}", cls, n);
  };
  EXPECT_NE(r.out.find(line("all", tokperf::sim::accuracy::kAll.ttft_n)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(line("dense", tokperf::sim::accuracy::kDense.ttft_n)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(line("moe", tokperf::sim::accuracy::kMoe.ttft_n)), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("calibration "), std::string::npos) << r.out;  // no calibration point ran
  Ran j = run("sim validate --split held-out --json --data " + data);
  ASSERT_EQ(j.rc, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  int dense_ttft = -1;
  for (const auto& s : doc["summary_by_class"]) {
    EXPECT_EQ(s["split"], "held-out");
    if (s["class"] == "dense" && s["metric"] == "TTFT") dense_ttft = s["n"].get<int>();
  }
  EXPECT_EQ(dense_ttft, tokperf::sim::accuracy::kDense.ttft_n);
}

// `sim validate --batch`: the points of one batch only (each batch was split on its own, so its
// halves can be read apart from the rest); a name the set lacks is refused with the set's names.
TEST(SimCli, ValidateTakesOneBatchAndNamesTheBatchesOnATypo) {
  const std::string data = std::string(TOKPERF_TEST_DATA).append("/../../data/validation");
  Ran j = run("sim validate --batch fresh-2026-12-07 --json --data " + data);
  ASSERT_EQ(j.rc, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  std::set<std::string> ids;
  for (const auto& row : doc["rows"]) ids.insert(row["id"].get<std::string>());
  EXPECT_EQ(ids.size(), 50u);
  for (const auto& id : ids) {
    EXPECT_TRUE(id.rfind("scicom-", 0) == 0 || id.rfind("gpustack-", 0) == 0) << id;
  }
  Ran first = run("sim validate --batch first --split held-out --data " + data);
  EXPECT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("lambda-h100-llama3-8b-tp1"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("scicom-"), std::string::npos) << first.out;
  Ran typo = run("sim validate --batch fresh --data " + data);
  EXPECT_EQ(typo.rc, 2) << typo.out;
  EXPECT_NE(typo.out.find("--batch 'fresh' is not in"), std::string::npos) << typo.out;
  EXPECT_NE(typo.out.find("fresh-2026-12-07"), std::string::npos) << typo.out;
  Ran figures =
      run("sim validate --batch first --write-figures /tmp/never-written.h --data " + data);
  EXPECT_EQ(figures.rc, 2) << figures.out;
  EXPECT_NE(figures.out.find("--write-figures needs the whole set"), std::string::npos)
      << figures.out;
}

TEST(SimCli, ServeSaysWhereAndStopsOnMaxSeconds) {
  Ran r = run("sim serve --port 0 --max-seconds 0.2");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("listening on http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped (--max-seconds reached): 0 requests finished"), std::string::npos)
      << r.out;
}

}  // namespace
