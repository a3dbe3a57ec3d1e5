// The per-request timeline (what the client observed, on the monotonic clock) and the metrics derived
// from it. Exact definitions: docs/metrics.md. Record format on disk: docs/requests-schema.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tokperf {

enum class Phase : uint8_t { kWarmup, kMeasure, kCooldown };
const char* phase_name(Phase p);

// Why a request failed. Network and protocol failures are data: counted per kind, never fatal.
enum class ErrorKind : uint8_t {
  kNone,
  kConnect,       // could not connect / resolve / TLS
  kHttp,          // HTTP 4xx/5xx other than those below
  kAuth,          // 401/403: the key was refused
  kRateLimited,   // 429
  kIncomplete,    // connection dropped mid-stream, or the stream ended without [DONE]/finish
  kParse,         // malformed SSE or JSON
  kTimeout,       // --timeout elapsed
  kNotStreaming,  // a non-streaming reply to a streaming request
  kStreamError,   // the server sent an error object inside the stream
  kCancelled,     // stopped by Ctrl-C / end of run
  kOther,
};
const char* error_kind_name(ErrorKind k);

struct RequestError {
  ErrorKind kind = ErrorKind::kNone;
  int http_status = 0;  // 0 when no status was received
  std::string message;  // human-readable; body excerpts are cut to ~300 bytes
};

// One token-carrying stream event as the client saw it.
struct TokenEvent {
  int64_t t_ns;            // monotonic arrival time of the bytes that completed the event
  int32_t tokens = -1;     // tokens in this event when the server says (continuous usage), else -1
  bool visible = false;    // carries non-whitespace visible content
  int32_t chars = 0;       // visible content characters (code points) in this event
};

// What the server reported about this request, in its own clock, when the protocol carries it
// (docs/requests-schema.md, "server_*"). Every field is optional: -1 means "not reported". `source`
// names where the numbers came from ("" when none were reported):
//   "llamacpp.timings"  llama.cpp's `timings` object (native /completion, and the final chunk of
//   its
//                       OpenAI-compatible streams): prompt_ms, decode_ms (predicted_ms),
//                       decode_per_token_ms, prompt_tokens (prompt_n), cached_tokens (cache_n),
//                       predicted_tokens (predicted_n)
//   "ollama.durations"  Ollama's final NDJSON object (nanoseconds, converted to ms): prompt_ms
//                       (prompt_eval_duration), decode_ms (eval_duration), load_ms, total_ms,
//                       prompt_tokens (prompt_eval_count), predicted_tokens (eval_count)
//   "vllm.metrics"      vLLM's per-request `metrics` object (--enable-per-request-metrics): ttft_ms
//                       and prompt_ms (time_to_first_token_ms, measured from scheduling, so it is
//                       the prefill interval), queue_ms, decode_ms (generation_time_ms),
//                       decode_per_token_ms (mean_itl_ms)
// These are the server's intervals; the client's TTFT minus (queue_ms + prompt_ms) is network,
// HTTP and tokenization time (issue 11 decomposes TTFT this way).
struct ServerTimings {
  double prompt_ms = -1;            // prefill of the prompt (tokens not served from cache)
  double decode_ms = -1;            // generation after the first token (or all of it, per server)
  double decode_per_token_ms = -1;  // the server's own mean time per generated token
  double queue_ms = -1;             // waiting before being scheduled
  double ttft_ms = -1;              // the server's own time to first token
  double load_ms = -1;              // model load before the request ran (Ollama)
  double total_ms = -1;             // the whole request, per the server (Ollama)
  int64_t prompt_tokens = -1;       // prompt tokens the server evaluated (excluding cached)
  int64_t cached_tokens = -1;       // prompt tokens served from the prefix cache
  int64_t predicted_tokens = -1;    // tokens the server generated
  std::string source;               // see above; "" when the server reported nothing
  bool present() const { return !source.empty(); }
};

struct RequestTimeline {
  uint64_t seq = 0;            // order of creation within the run
  std::string request_id;      // also sent as X-Request-Id
  Phase phase = Phase::kMeasure;
  int level = 0;               // load level index (sweeps)
  int64_t intended_ns = 0;     // when the load profile meant to send it (monotonic)
  int64_t send_ns = 0;         // taken immediately before the transfer starts
  int64_t start_unix_us = 0;   // wall clock at send, label only
  double connect_ms = -1;      // from the transport; 0 for a reused connection; -1 unknown
  double ttfb_ms = -1;         // response headers received, from send; -1 unknown
  int64_t end_ns = 0;          // stream end (last byte / error), monotonic
  std::vector<TokenEvent> token_events;
  int64_t first_visible_ns = 0;  // 0: never
  int64_t last_event_ns = 0;     // last SSE event of any class
  int32_t chunks = 0;            // SSE data events received (all classes)
  int64_t usage_prompt_tokens = -1;
  int64_t usage_completion_tokens = -1;
  int64_t prompt_tokens_sent = -1;  // what the client built (exact with a tokenizer), -1 unknown
  // What the workload asked for (workload/request_spec.h): prompt tokens (an estimate unless a
  // tokenizer sized it) and max_tokens; -1 unknown. The shared-prefix group, -1: none.
  int64_t requested_input_tokens = -1;
  int64_t requested_output_tokens = -1;
  // How requested_input_tokens was obtained: a client/target_config.h length_method_name() (a
  // static string); null when unknown.
  const char* input_tokens_method = nullptr;
  int prefix_group = -1;
  // usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM, SGLang, the simulator); -1: absent.
  int64_t usage_cached_tokens = -1;
  bool saw_done = false;
  int http_status = 0;
  ServerTimings server;  // what the server reported about this request, if anything
  // Multi-turn sessions (--turns): the session's id within its level (-1: not a session request)
  // and the 1-based turn; requests.jsonl writes session_id as "<level>.<session>".
  int64_t session = -1;
  int32_t turn = 0;
  // Tool calls (--tools): tools were sent; when the streamed tool-call arguments first formed
  // complete, valid JSON (the stamp of the event that completed them; 0: never); whether any
  // tool-call argument fragment arrived.
  bool tools_sent = false;
  int64_t tool_call_ns = 0;
  bool tool_call_seen = false;
  RequestError error;
  bool ok() const { return error.kind == ErrorKind::kNone; }
  // Prompt tokens the server served from its prefix cache: usage's cached_tokens, else llama.cpp's
  // timings.cache_n; -1 when the server reported neither.
  int64_t cached_prompt_tokens() const {
    return usage_cached_tokens >= 0 ? usage_cached_tokens : server.cached_tokens;
  }
};

// Metrics of one request; NaN where undefined (e.g. TPOT with fewer than 2 tokens, TTFT of a request
// that produced no token).
struct RequestMetrics {
  double queue_ms;  // send - intended
  double ttft_ms;   // first token event - send
  double ttfo_ms;   // first visible content - send
  double tpot_ms;   // (last token - first token) / (N_out - 1)
  double e2e_ms;    // last token event - send
  double end_ms;    // stream end (end_ns) - send; NaN when end_ns was never set
  double ttft_from_intended_ms;  // first token - intended start ("response time")
  double e2e_from_intended_ms;
  std::vector<double> itl_ms;  // gaps between consecutive token events
  int64_t output_tokens;       // usage when reported, else counted token events
  bool output_tokens_from_usage;
  int64_t prompt_tokens;       // usage when reported, else prompt_tokens_sent, else -1
  double tool_call_ms;         // tool_call_ns - send; NaN when the arguments never completed
};

RequestMetrics compute_request_metrics(const RequestTimeline& t);

}  // namespace tokperf
