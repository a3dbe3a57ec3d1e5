// The bytes of the simulated server's answers in the non-OpenAI streaming protocols, each on its
// own path (sim/sim_server.h): Anthropic Messages events, OpenAI Responses events, Ollama NDJSON
// (/api/chat, /api/generate), TGI /generate_stream and llama.cpp /completion, in the shapes their
// documentation gives (and the client's golden tests check). Each method appends complete events
// (SSE "event:"/"data:" blocks, or NDJSON lines) to out. The end carries the server's own timings
// where the protocol has them (llama.cpp `timings`, Ollama `*_duration`), from the simulator's
// clock: prompt = arrival to first token, decode = first to last token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tokperf::sim {

enum class SimProtocol { kAnthropic, kResponses, kOllamaChat, kOllamaGenerate, kTgi, kLlamaCpp };

// What the end of a stream reports.
struct StreamTotals {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  bool length = false;   // stopped at the token limit (else a natural stop)
  double prompt_ms = 0;  // prefill: scheduled -> first token, on the server's clock
  double decode_ms = 0;  // first -> last token
  double total_ms = 0;   // arrival -> end
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

class ProtocolChunks {
 public:
  ProtocolChunks(SimProtocol protocol, std::string_view model, uint64_t request_id);

  // Content type of the stream ("text/event-stream" or "application/x-ndjson").
  const char* content_type() const;
  // Events before the first token (Anthropic message_start + content_block_start, Responses
  // response.created); nothing for the others.
  void begin(std::string& out, int64_t prompt_tokens) const;
  // One generated token; index counts from 0.
  void token(std::string& out, std::string_view text, int64_t index, int64_t prompt_tokens) const;
  // The end of the stream (finish, usage, timings, terminal event).
  void end(std::string& out, const StreamTotals& t) const;

 private:
  void sse(std::string& out, std::string_view event, std::string_view json) const;

  SimProtocol protocol_;
  std::string model_escaped_;
  std::string id_;
};

}  // namespace tokperf::sim
