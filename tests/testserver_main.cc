// tokperf-testserver: the scripted server standalone, for trying tokperf by hand and for bench/.
// Prints its base URL, then serves until SIGINT/SIGTERM, --max-requests or --max-seconds.
#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/clock.h"
#include "support/scripted_server.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;  // NOLINT: written by the signal handler only
void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  using namespace tokperf::testing_support;
  ScriptedServerOptions opts;
  Script& s = opts.script;
  std::string line_ending = "lf", role = "with_first", fault = "none";
  std::map<std::string, double> fractions;
  int port = 0;
  uint64_t max_requests = 0;
  double max_seconds = 0;

  CLI::App app{"tokperf-testserver: an OpenAI-compatible server with scripted timing and faults"};
  app.add_option("--port", port, "Port on 127.0.0.1 (0: ephemeral)")->capture_default_str();
  app.add_option("--seed", opts.seed, "Seed for jitter and fault fractions")->capture_default_str();
  app.add_option("--model", opts.model_id, "Model id served by /v1/models")->capture_default_str();
  app.add_option("--max-model-len", opts.max_model_len)->capture_default_str();
  app.add_flag("!--no-tokenize", opts.tokenize_enabled, "Answer 404 on /tokenize");
  app.add_option("--queue-slots", opts.queue_slots, "Requests served at once (0: unlimited)")
      ->capture_default_str();
  app.add_option("--ttft-ms", s.ttft_ms)->capture_default_str();
  app.add_option("--itl-ms", s.itl_ms)->capture_default_str();
  app.add_option("--jitter-ms", s.jitter_ms)->capture_default_str();
  app.add_option("--tokens", s.tokens, "Output tokens unless max_tokens caps them")
      ->capture_default_str();
  app.add_option("--tokens-per-chunk", s.tokens_per_chunk)->capture_default_str();
  app.add_option("--role", role, "Role-only chat event: none|with_first|early")
      ->capture_default_str();
  app.add_option("--reasoning-tokens", s.reasoning_tokens)->capture_default_str();
  app.add_flag("--tool-calls", s.tool_calls, "Stream tool-call argument deltas");
  app.add_option("--line-ending", line_ending, "lf|crlf|cr")->capture_default_str();
  app.add_option("--comment-every", s.comment_every, "Keep-alive comment every k events")
      ->capture_default_str();
  app.add_flag("--split-writes", s.split_writes, "Write each event in 3 pieces");
  app.add_option("--split-gap-ms", s.split_gap_ms)->capture_default_str();
  app.add_flag("!--no-done", s.send_done, "Omit data: [DONE]");
  app.add_option("--fault", fault, "Fault for every request (see --fault-fraction)")
      ->capture_default_str();
  app.add_option("--fault-at-token", s.fault_at_token)->capture_default_str();
  app.add_option("--stall-ms", s.stall_ms)->capture_default_str();
  app.add_option("--fault-fraction", fractions, "FAULT=FRACTION, repeatable (e.g. http500=0.1)");
  app.add_option("--max-requests", max_requests, "Exit after this many requests (0: no limit)");
  app.add_option("--max-seconds", max_seconds, "Exit after this long (0: no limit)");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json j = {{"line_ending", line_ending}, {"role", role}, {"fault", fault}};
  tokperf::Status st = s.apply_json(j);
  if (!st.ok()) {
    std::fprintf(stderr, "tokperf-testserver: %s\n", st.error().c_str());
    return 2;
  }
  for (const auto& [name, fraction] : fractions) {
    auto f = parse_fault(name);
    if (!f.ok()) {
      std::fprintf(stderr, "tokperf-testserver: --fault-fraction: %s\n", f.error().c_str());
      return 2;
    }
    opts.fault_fractions[*f] = fraction;
  }

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  ScriptedServer server(opts);
  st = server.start(static_cast<uint16_t>(port));
  if (!st.ok()) {
    std::fprintf(stderr, "tokperf-testserver: %s\n", st.error().c_str());
    return 1;
  }
  std::printf("%s\n", server.base_url().c_str());
  std::fflush(stdout);
  int64_t start_ns = tokperf::mono_ns();
  while (!g_stop) {
    if (max_requests > 0 && server.request_count() >= max_requests &&
        server.wait_finished(max_requests, 0)) {
      break;
    }
    if (max_seconds > 0 &&
        tokperf::mono_ns() - start_ns > static_cast<int64_t>(max_seconds * 1e9)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server.stop();
  for (const auto& [outcome, n] : server.counts())
    std::fprintf(stderr, "%s: %d\n", outcome.c_str(), n);
  return 0;
}
