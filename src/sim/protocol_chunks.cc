#include "sim/protocol_chunks.h"

#include <fmt/format.h>

#include "sim/openai_chunks.h"

namespace tokperf::sim {
namespace {

constexpr std::string_view kCreatedAt = "2023-11-14T22:13:20Z";  // fixed: repeatable bytes

}  // namespace

ProtocolChunks::ProtocolChunks(SimProtocol protocol, std::string_view model, uint64_t request_id)
    : protocol_(protocol),
      model_escaped_(json_escape_text(model)),
      id_(fmt::format("sim{}", request_id)) {}

const char* ProtocolChunks::content_type() const {
  return protocol_ == SimProtocol::kOllamaChat || protocol_ == SimProtocol::kOllamaGenerate
             ? "application/x-ndjson"
             : "text/event-stream";
}

void ProtocolChunks::sse(std::string& out, std::string_view event, std::string_view json) const {
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  out += "data: ";
  out += json;
  out += "\n\n";
}

void ProtocolChunks::begin(std::string& out, int64_t prompt_tokens) const {
  switch (protocol_) {
    case SimProtocol::kAnthropic:
      sse(out, "message_start",
          fmt::format(R"({{"type":"message_start","message":{{"id":"msg_{}","type":"message",)"
                      R"("role":"assistant","content":[],"model":"{}","stop_reason":null,)"
                      R"("stop_sequence":null,"usage":{{"input_tokens":{},"output_tokens":1}}}}}})",
                      id_, model_escaped_, prompt_tokens));
      sse(out, "content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
      sse(out, "ping", R"({"type": "ping"})");
      return;
    case SimProtocol::kResponses:
      sse(out, "response.created",
          fmt::format(R"({{"type":"response.created","sequence_number":0,"response":{{"id":)"
                      R"("resp_{}","object":"response","status":"in_progress","model":"{}",)"
                      R"("output":[],"usage":null}}}})",
                      id_, model_escaped_));
      return;
    default:
      return;
  }
}

void ProtocolChunks::token(std::string& out, std::string_view text, int64_t index,
                           int64_t prompt_tokens) const {
  const std::string t = json_escape_text(text);
  switch (protocol_) {
    case SimProtocol::kAnthropic:
      sse(out, "content_block_delta",
          fmt::format(R"({{"type":"content_block_delta","index":0,)"
                      R"("delta":{{"type":"text_delta","text":"{}"}}}})",
                      t));
      return;
    case SimProtocol::kResponses:
      sse(out, "response.output_text.delta",
          fmt::format(R"({{"type":"response.output_text.delta","sequence_number":{},)"
                      R"("item_id":"msg_{}","output_index":0,"content_index":0,"delta":"{}"}})",
                      index + 1, id_, t));
      return;
    case SimProtocol::kOllamaChat:
      fmt::format_to(std::back_inserter(out),
                     R"({{"model":"{}","created_at":"{}","message":{{"role":"assistant",)"
                     R"("content":"{}"}},"done":false}})"
                     "\n",
                     model_escaped_, kCreatedAt, t);
      return;
    case SimProtocol::kOllamaGenerate:
      fmt::format_to(std::back_inserter(out),
                     R"({{"model":"{}","created_at":"{}","response":"{}","done":false}})"
                     "\n",
                     model_escaped_, kCreatedAt, t);
      return;
    case SimProtocol::kTgi:
      sse(out, "",
          fmt::format(R"({{"index":{},"token":{{"id":{},"text":"{}","logprob":-0.5,)"
                      R"("special":false}},"generated_text":null,"details":null}})",
                      index, 1000 + index, t));
      return;
    case SimProtocol::kLlamaCpp:
      sse(out, "",
          fmt::format(R"({{"index":0,"content":"{}","tokens":[{}],"stop":false,"id_slot":0,)"
                      R"("tokens_predicted":{},"tokens_evaluated":{}}})",
                      t, 1000 + index, index + 1, prompt_tokens));
      return;
  }
}

void ProtocolChunks::end(std::string& out, const StreamTotals& t) const {
  auto to_ns = [](double ms) { return static_cast<int64_t>(ms * 1e6); };
  switch (protocol_) {
    case SimProtocol::kAnthropic:
      sse(out, "content_block_stop", R"({"type":"content_block_stop","index":0})");
      sse(out, "message_delta",
          fmt::format(R"({{"type":"message_delta","delta":{{"stop_reason":"{}",)"
                      R"("stop_sequence":null}},"usage":{{"output_tokens":{}}}}})",
                      t.length ? "max_tokens" : "end_turn", t.output_tokens));
      sse(out, "message_stop", R"({"type":"message_stop"})");
      return;
    case SimProtocol::kResponses:
      sse(out, "response.output_text.done",
          fmt::format(R"({{"type":"response.output_text.done","sequence_number":{},)"
                      R"("item_id":"msg_{}","output_index":0,"content_index":0}})",
                      t.output_tokens + 1, id_));
      sse(out, t.length ? "response.incomplete" : "response.completed",
          fmt::format(R"({{"type":"{}","sequence_number":{},"response":{{"id":"resp_{}",)"
                      R"("object":"response","status":"{}","model":"{}",{})"
                      R"("usage":{{"input_tokens":{},"output_tokens":{},"total_tokens":{}}}}}}})",
                      t.length ? "response.incomplete" : "response.completed", t.output_tokens + 2,
                      id_, t.length ? "incomplete" : "completed", model_escaped_,
                      t.length ? R"("incomplete_details":{"reason":"max_output_tokens"},)" : "",
                      t.prompt_tokens, t.output_tokens, t.prompt_tokens + t.output_tokens));
      return;
    case SimProtocol::kOllamaChat:
    case SimProtocol::kOllamaGenerate:
      fmt::format_to(std::back_inserter(out),
                     R"({{"model":"{}","created_at":"{}",{}"done":true,"done_reason":"{}",)"
                     R"("total_duration":{},"load_duration":0,"prompt_eval_count":{},)"
                     R"("prompt_eval_duration":{},"eval_count":{},"eval_duration":{}}})"
                     "\n",
                     model_escaped_, kCreatedAt,
                     protocol_ == SimProtocol::kOllamaChat
                         ? R"("message":{"role":"assistant","content":""},)"
                         : R"("response":"",)",
                     t.length ? "length" : "stop", to_ns(t.total_ms), t.prompt_tokens,
                     to_ns(t.prompt_ms), t.output_tokens, to_ns(t.decode_ms));
      return;
    case SimProtocol::kTgi:
      // TGI puts the last token and the details in one final event; the simulator's last token
      // went out already, so the final event repeats none and carries only the summary.
      sse(out, "",
          fmt::format(R"({{"index":{},"token":{{"id":2,"text":"</s>","logprob":0.0,)"
                      R"("special":true}},"generated_text":"","details":{{"finish_reason":"{}",)"
                      R"("generated_tokens":{},"input_length":{},"seed":null}}}})",
                      t.output_tokens, t.length ? "length" : "eos_token", t.output_tokens,
                      t.prompt_tokens));
      return;
    case SimProtocol::kLlamaCpp: {
      const double per_token = t.output_tokens > 1 ? t.decode_ms / (t.output_tokens - 1) : 0.0;
      sse(out, "",
          fmt::format(R"({{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,)"
                      R"("model":"{}","tokens_predicted":{},"tokens_evaluated":{},)"
                      R"("stop_type":"{}","stopping_word":"","tokens_cached":{},)"
                      R"("timings":{{"cache_n":{},"prompt_n":{},"prompt_ms":{:.3f},)"
                      R"("prompt_per_token_ms":{:.3f},"predicted_n":{},"predicted_ms":{:.3f},)"
                      R"("predicted_per_token_ms":{:.3f}}}}})",
                      model_escaped_, t.output_tokens, t.prompt_tokens, t.length ? "limit" : "eos",
                      t.prompt_tokens + t.output_tokens, t.cached_tokens,
                      t.prompt_tokens - t.cached_tokens, t.prompt_ms,
                      t.prompt_tokens > t.cached_tokens
                          ? t.prompt_ms / static_cast<double>(t.prompt_tokens - t.cached_tokens)
                          : 0.0,
                      t.output_tokens,
                      t.decode_ms, per_token));
      return;
    }
  }
}

}  // namespace tokperf::sim
