// `tokperf sim serve`: the simulated engine behind an OpenAI-compatible HTTP server on its own
// event-loop thread. Endpoints (vLLM's shapes):
//   GET  /v1/models                 the served model id, with max_model_len
//   POST /v1/chat/completions       streaming (SSE) or not; usage chunk with
//   POST /v1/completions            stream_options.include_usage; ignore_eos; max_tokens
//   POST /v1/messages               Anthropic Messages events (SSE), stream only
//   POST /v1/responses              OpenAI Responses events (SSE), stream only
//   POST /api/chat, /api/generate   Ollama NDJSON, with *_duration timings on the last line
//   POST /generate_stream           TGI token events with details on the last
//   POST /completion                llama.cpp native events with `timings` on the last
//   POST /tokenize                  {"prompt"|"messages"|"content"} -> {"count","tokens",...}
//   GET  /health                    200 once listening
//   GET  /metrics                   Prometheus text in vLLM's names (sim/serving_metrics.h)
// Prompts are sized by sim/sim_text.h's tokenizer (one token per word), the same count /tokenize
// reports and usage.prompt_tokens echoes. Tokens stream as the engine's steps end in real time
// (sim/realtime_driver.h). A client that disconnects has its request aborted (KV freed).
//
// Thread rules: start()/stop() and the accessors from one controlling thread; counters() from any
// thread; report() after stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/deployment.h"
#include "sim/engine.h"
#include "sim/realtime_driver.h"

namespace tokperf::sim {

struct SimServerOptions {
  Deployment deployment;
  CostKnobs knobs;
  EngineConfig engine;
  std::string served_model;  // id in /v1/models and responses; empty: the catalog model's name
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: ephemeral
  // Adds llama.cpp-style `timings` (prompt_ms = prefill, predicted_ms = decode, plus queue_ms) to
  // the usage chunk: the engine's exact per-request times (docs/SERVER-METRICS.md).
  bool emit_timings = false;
};

// Live counts, readable from any thread.
struct SimServerCounters {
  std::atomic<int64_t> generation_requests{0};  // accepted chat/completions requests
  std::atomic<int64_t> finished{0};             // answered to the end
  std::atomic<int64_t> aborted{0};              // client went away first
  std::atomic<int64_t> rejected{0};             // 4xx for a generation request
};

// What the server measured about itself; complete after stop().
struct SimServerReport {
  RealtimeDriver::Lag lag;
  EngineStats engine;
  int64_t tokens_emitted = 0;
  double loop_cpu_s = 0;  // CPU time of the server's loop thread (one core at most)
};

class SimServer {
 public:
  // Fails (naming why) when the deployment does not fit on the GPUs.
  static Result<std::unique_ptr<SimServer>> create(SimServerOptions options);
  ~SimServer();  // stop()s
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  Status start();  // binds host:port and starts the loop thread
  void stop();     // closes every connection (aborting their requests), joins; idempotent

  uint16_t port() const { return port_; }
  std::string base_url() const;  // "http://<host>:<port>/v1"
  const std::string& served_model() const { return served_model_; }
  const CostModel& cost() const { return *cost_; }
  int64_t max_model_len() const { return max_model_len_; }
  const EngineConfig& engine_config() const { return options_.engine; }
  const SimServerCounters& counters() const { return counters_; }
  SimServerReport report() const;

  struct Impl;

 private:
  explicit SimServer(SimServerOptions options);

  SimServerOptions options_;
  std::unique_ptr<CostModel> cost_;
  std::string served_model_;
  int64_t max_model_len_ = 0;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  uint16_t port_ = 0;
  bool running_ = false;
  SimServerCounters counters_;
};

// `tokperf bench` without --url: a started server on 127.0.0.1 (ephemeral port) for these
// deployment flags, with default engine settings. served_model empty: the --sim-model id (e.g.
// llama-2-7b).
Result<std::unique_ptr<SimServer>> start_sim_target(const DeploymentFlags& flags,
                                                    const std::string& served_model);

// One line saying what is simulated: model, dtype, GPUs, KV capacity, engine limits.
std::string describe_simulation(const SimServer& server);

}  // namespace tokperf::sim
