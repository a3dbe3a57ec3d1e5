// ScriptedServer: an OpenAI-compatible streaming server on 127.0.0.1 whose every response follows a
// script with known timing and known faults, so end-to-end tests can compare what tokperf measures
// with what was sent. Runs its own EventLoop thread.
//
// Endpoints: POST /v1/chat/completions and /v1/completions (streaming or not), GET /v1/models,
// POST /tokenize (vLLM style; one token per whitespace-separated word), GET /health.
//
// Timing: a request's service starts when it is received (or, with queue_slots > 0, when a slot
// frees; waiting is FIFO). Token event k (0-based) is sent at start + ttft + k * itl (+ jitter,
// + stall if k is past the stall point), on absolute deadlines so errors do not accumulate.
//
// Thread rules: start()/stop() from one controlling thread; records(), record(), counts() from any
// thread at any time (they return copies).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace tokperf {

class EventLoop;
class HttpServer;

namespace testing_support {

enum class LineEnding { kLf, kCrlf, kCr };
enum class RoleEvent { kNone, kWithFirstToken, kEarly };  // chat only; kEarly: at service start
enum class Fault {
  kNone,
  kHttp500,        // 500 with a JSON error body
  kHttp429,        // 429 with Retry-After
  kHttp401,        // 401 with a JSON error body
  kDisconnect,     // connection reset after fault_at_token token events
  kMalformedJson,  // token event fault_at_token carries truncated JSON; the stream goes on
  kStall,          // stall_ms extra before token event fault_at_token
  kNonStreaming,   // a complete application/json reply although the client asked for a stream
  kHang,           // never answers; the connection stays open until the client goes
};
const char* fault_name(Fault f);
Result<Fault> parse_fault(const std::string& name);

struct Script {
  double ttft_ms = 20;   // service start → first token event
  double itl_ms = 5;     // between token events
  double jitter_ms = 0;  // each token event shifted by a seeded uniform draw in [-j, +j]
  int tokens = 8;        // output tokens when max_tokens does not cap them (ignore_eos: max_tokens)
  int tokens_per_chunk = 1;
  RoleEvent role = RoleEvent::kWithFirstToken;
  int reasoning_tokens = 0;  // of the output tokens, this many come first as reasoning_content
  bool tool_calls = false;   // content tokens become tool-call argument deltas
  // With tool_calls: the arguments form JSON {"q": "w0 w1 ... "} that opens with the first token
  // and closes with token tool_json_at (0-based; its event completes the JSON); tokens after it
  // come as plain content. -1: bare words, never JSON.
  int tool_json_at = -1;
  LineEnding line_ending = LineEnding::kLf;
  int comment_every = 0;      // ": keep-alive" comment before every k-th event; 0 = none
  bool split_writes = false;  // each event in 3 pieces, the last one at the event's deadline
  double split_gap_ms = 1;    // between pieces
  bool send_done = true;      // "data: [DONE]" at the end
  Fault fault = Fault::kNone;
  int fault_at_token = 0;  // for kDisconnect, kMalformedJson, kStall
  double stall_ms = 0;     // for kStall
  int retry_after_s = 1;   // for kHttp429

  // Overrides fields from a JSON object such as the X-Test-Script header carries; names as the
  // fields above ("line_ending": "lf"|"crlf"|"cr", "role": "none"|"with_first"|"early",
  // "fault": fault_name()). Unknown keys are an error.
  Status apply_json(const nlohmann::json& j);
};

struct ScriptedServerOptions {
  Script script;  // default for every request
  std::string model_id = "tokperf-test-model";
  bool tokenize_enabled = true;
  int max_model_len = 4096;
  int queue_slots = 0;  // K > 0: at most K requests in service, the rest wait FIFO
  // Drift: the request with arrival index i (from 0, every endpoint counted) gets a TTFT of
  // script.ttft_ms + i * this, so later requests are slower (a header override still wins).
  double ttft_growth_ms_per_request = 0;
  uint64_t seed = 1;
  // Fractions of chat/completions requests given each fault, chosen by request index from the seed
  // (overrides the script's fault; the per-request header still wins).
  std::map<Fault, double> fault_fractions;
  // The fault of the request with this arrival index (overrides the fractions; the header wins).
  std::map<uint64_t, Fault> fault_by_index;
  // Bind with SO_REUSEPORT, so that several servers started on one port share its connections
  // (each server keeps its own records).
  bool reuse_port = false;
};

// What the server did with one request.
struct ScriptedRecord {
  uint64_t index = 0;  // arrival order, from 0
  std::string method;
  std::string path;
  std::string request_id;     // X-Request-Id, "" if absent
  std::string authorization;  // Authorization, "" if absent
  nlohmann::json body;        // parsed body; null if absent or not JSON
  bool stream = false;
  int64_t received_ns = 0;                   // request complete (mono_ns)
  int64_t service_start_ns = 0;              // left the queue; 0 if it never did
  std::vector<int64_t> token_event_send_ns;  // before the send of the piece completing each event
  std::vector<int64_t> token_event_due_ns;   // when the script said each event should go out
  std::vector<int> tokens_per_event;
  int output_tokens = 0;  // planned
  Fault fault = Fault::kNone;
  int http_status = 0;
  std::string outcome;    // "ok", fault_name(), "peer_closed", "not_found", "bad_request"
  bool finished = false;  // the response ended (normally or by fault)
};

class ScriptedServer {
 public:
  explicit ScriptedServer(ScriptedServerOptions options = {});
  ~ScriptedServer();  // stop()s
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  Status start(uint16_t port = 0);  // binds 127.0.0.1:port, starts the loop thread
  void stop();                      // closes every connection, joins the thread; idempotent

  uint16_t port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:<port>/v1"

  std::vector<ScriptedRecord> records() const;
  size_t request_count() const;
  std::map<std::string, int> counts() const;  // by outcome
  // Waits until `n` requests are finished or the timeout passes; true if they are.
  bool wait_finished(size_t n, int64_t timeout_ms) const;

  struct Impl;

 private:
  ScriptedServerOptions options_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  uint16_t port_ = 0;
  bool running_ = false;
};

}  // namespace testing_support
}  // namespace tokperf
