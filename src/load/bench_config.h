// Everything one `tokperf bench` run needs, validated once by the CLI and passed explicitly.
// Secrets (the API key) live here only; config_json() redacts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/target_config.h"
#include "load/arrivals.h"
#include "load/load_plan.h"
#include "load/session.h"
#include "load/shard_spec.h"
#include "metrics/slo.h"
#include "tokenize/tokenizer.h"
#include "workload/workload.h"

namespace tokperf {

struct LoadConfig {
  LoadConfig() {
    plan.levels = {LevelSpec{}};
    plan.measure = PhaseLimit{0, 100};
  }
  // Levels (closed-loop concurrency or open-loop rate), phase limits per level, arrival process,
  // seed, and the open-loop concurrency cap. See docs/LOAD.md.
  LoadPlan plan;
  // plan.warmup is "none" and the user gave no --warmup: closed loop warms one request per slot,
  // open loop the first second of arrivals (at least one).
  bool default_warmup = true;
  // When non-empty: one open-loop level replaying these arrivals (with their own lengths).
  std::vector<TraceEntry> trace;
  // --turns: every request is a turn of a multi-turn session (load/session.h): closed loop counts
  // users, open-loop arrivals start sessions.
  SessionSpec sessions;
  int64_t timeout_ns = 600'000'000'000;
  int64_t grace_ns = 5'000'000'000;  // after Ctrl-C, how long in-flight requests may finish
  bool stop_on_saturation = true;    // end a level (and the sweep) when it is clearly saturated
  SaturationRules saturation;
  double max_send_lag_p99_ms = 1.0;  // open loop: warn and mark the level above this
  bool progress = true;              // live progress line (only on a terminal)
  // Event loops (threads) the live runner spreads the load over (load/loop_split.h); 1: one loop
  // on the calling thread. `bench --threads` resolves the default and caps it by what the levels
  // can share, so the value here is the count the run uses.
  int threads = 1;
  // Sharded runs (bench --shard, docs/DISTRIBUTED.md): the share of every level this process
  // paces (a LevelShare, load/level_driver.h); 0 of 1: the whole plan.
  int share_index = 0, share_count = 1;
  // Lockstep: level k starts at start_at_unix_us + k * level_slot_ns on the wall clock (or later,
  // when this process's level k-1 ran past that boundary). 0: start at once / when the previous
  // level ends.
  int64_t start_at_unix_us = 0;
  int64_t level_slot_ns = 0;
};

struct BenchConfig {
  TargetConfig target;
  PromptConfig prompt;
  // Per-request prompts and lengths (datasets, length distributions, shared prefixes; see
  // workload/workload.h). Null: every request sends `prompt` (and a trace its own lengths).
  std::shared_ptr<Workload> workload;
  // --tokenizer FILE: counts prompt tokens where the server has no /tokenize (null: none given).
  std::shared_ptr<const Tokenizer> tokenizer;
  // Without /tokenize or a tokenizer: size prompts by probe requests' usage.prompt_tokens
  // (--no-calibrate turns this off and approximates instead).
  bool calibrate_lengths = true;
  LoadConfig load;
  SloSpec slo;                 // empty: no objectives
  std::string out_dir;         // empty: no files
  bool record_history = true;  // record the run in the history store (needs out_dir)
  std::string history_store;   // empty: the default store (store/history_store.h)
  std::string run_id;          // prefix of request ids
  // What was measured, for the report's roofline (docs/REPORTS.md): the simulated deployment's
  // flags {"source", "model", "model_config", "gpu", "gpu_spec", "dtype", "kv_dtype", "tp"} when
  // bench ran the built-in engine; null otherwise. Written into summary.json's config as is.
  nlohmann::json deployment;
  // --server-metrics: scrape the engine's own /metrics while measuring (servermetrics/scraper.h,
  // docs/SERVER-METRICS.md); no URLs: the target's /metrics.
  bool server_metrics = false;
  std::vector<std::string> server_metrics_urls;
  int64_t server_metrics_interval_ns = 1'000'000'000;
  // --metrics-port: tokperf's own live metrics in Prometheus format (-1: off, 0: ephemeral).
  int metrics_port = -1;
  // --shard: which share this process runs and the facts merge checks and reports (host, clock);
  // inactive: a single-process run. config_json() writes it as "shard" (null when inactive).
  ShardSpec shard;
  std::string shard_host;
  ClockStatus shard_clock;
};

// The configuration as written into summary.json: the API key and Authorization-like headers are
// replaced by "<redacted>".
nlohmann::json config_json(const BenchConfig& c);

}  // namespace tokperf
