// Golden streams, one or more per protocol, written here to each protocol's documented format
// (Anthropic Messages streaming, OpenAI Responses streaming events, Ollama /api/chat and
// /api/generate, TGI /generate_stream, llama.cpp /completion), replayed through the StreamRecorder
// whole, at every byte split, and one byte at a time. Whatever the split, the timeline must be the
// same; one byte at a time, every token event is stamped with the byte that completed it.
#include "client/protocol_adapters.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/stream_recorder.h"

namespace tokperf {
namespace {

struct Replay {
  RequestTimeline tl;
  bool finish = false;
  bool truncated = false;
  int parse_errors = 0;
  int stream_errors = 0;
  std::string first_stream_error;
  std::string first_parse_error;
};

// Feeds `stream` in pieces cut at `cuts`; piece k arrives at t = 1000 * (k + 1).
Replay replay(ApiKind api, std::string_view stream, const std::vector<size_t>& cuts) {
  ChunkClassifier classifier(api);
  StreamRecorder rec(&classifier);
  Replay r;
  rec.begin(&r.tl);
  size_t at = 0;
  int64_t t = 1000;
  for (size_t cut : cuts) {
    rec.on_bytes(stream.substr(at, cut - at), t);
    t += 1000;
    at = cut;
  }
  rec.on_bytes(stream.substr(at), t);
  r.finish = rec.saw_finish();
  r.truncated = rec.truncated();
  r.parse_errors = rec.parse_errors();
  r.stream_errors = rec.stream_errors();
  r.first_stream_error = rec.first_stream_error();
  r.first_parse_error = rec.first_parse_error();
  return r;
}

// Everything a replay found except the arrival times.
std::string summary(const Replay& r) {
  const RequestTimeline& t = r.tl;
  std::string s = fmt::format(
      "events={} chunks={} usage={}/{} done={} finish={} trunc={} "
      "perr={} serr={} '{}' first_visible={}",
      t.token_events.size(), t.chunks, t.usage_prompt_tokens, t.usage_completion_tokens, t.saw_done,
      r.finish, r.truncated, r.parse_errors, r.stream_errors, r.first_stream_error,
      t.first_visible_ns != 0);
  for (const TokenEvent& e : t.token_events) {
    s += fmt::format(" [{} {} {}]", e.tokens, e.visible, e.chars);
  }
  const ServerTimings& v = t.server;
  s += fmt::format(" server={} {} {} {} {} {} {} {} {} {} {}", v.source, v.prompt_ms, v.decode_ms,
                   v.decode_per_token_ms, v.queue_ms, v.ttft_ms, v.load_ms, v.total_ms,
                   v.prompt_tokens, v.cached_tokens, v.predicted_tokens);
  return s;
}

// Replays whole, at every single split and byte by byte; returns the whole replay after checking
// that every other one found the same, and that byte-by-byte stamps are strictly increasing (each
// event is stamped by the byte that completed it, which no two events share).
Replay golden(ApiKind api, const std::string& stream) {
  const Replay whole = replay(api, stream, {});
  const std::string want = summary(whole);
  for (size_t i = 1; i < stream.size(); ++i) {
    const Replay split = replay(api, stream, {i});
    EXPECT_EQ(summary(split), want) << "split at byte " << i;
    if (summary(split) != want) break;
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  const Replay bytes = replay(api, stream, every);
  EXPECT_EQ(summary(bytes), want) << "byte by byte";
  for (size_t i = 1; i < bytes.tl.token_events.size(); ++i) {
    EXPECT_LT(bytes.tl.token_events[i - 1].t_ns, bytes.tl.token_events[i].t_ns);
  }
  return whole;
}

std::string sse(std::string_view event, std::string_view data) {
  std::string out;
  if (!event.empty()) out += fmt::format("event: {}\n", event);
  out += fmt::format("data: {}\n\n", data);
  return out;
}

// ---- Anthropic Messages ----

std::string anthropic_text_stream() {
  return sse("message_start",
             R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}})") +
         sse("content_block_start",
             R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
         sse("ping", R"({"type": "ping"})") +
         sse("content_block_delta",
             R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}})") +
         sse("content_block_delta",
             R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" wörld!"}})") +
         sse("content_block_stop", R"({"type":"content_block_stop","index":0})") +
         sse("message_delta",
             R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}})") +
         sse("message_stop", R"({"type":"message_stop"})");
}

TEST(ProtocolGoldenTest, AnthropicText) {
  Replay r = golden(ApiKind::kAnthropic, anthropic_text_stream());
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 2u);
  EXPECT_TRUE(t.token_events[0].visible);
  EXPECT_EQ(t.token_events[1].chars, 7);  // " wörld!" in code points
  EXPECT_EQ(t.usage_prompt_tokens, 25);
  EXPECT_EQ(t.usage_completion_tokens, 15);  // message_delta's cumulative count
  EXPECT_TRUE(t.saw_done);
  EXPECT_TRUE(r.finish);
  EXPECT_EQ(t.chunks, 8);
  EXPECT_EQ(r.stream_errors, 0);
  EXPECT_FALSE(t.server.present());
  // TTFT starts at the first text delta, not at message_start or the empty block start.
  Replay bytes = replay(ApiKind::kAnthropic, anthropic_text_stream(), [] {
    std::vector<size_t> v;
    for (size_t i = 1; i < anthropic_text_stream().size(); ++i) v.push_back(i);
    return v;
  }());
  const std::string s = anthropic_text_stream();
  const size_t first_delta_end = s.find("\n\n", s.find("text_delta")) + 2;
  EXPECT_EQ(bytes.tl.token_events[0].t_ns, static_cast<int64_t>(first_delta_end) * 1000);
}

TEST(ProtocolGoldenTest, AnthropicThinkingAndToolUse) {
  const std::string s =
      sse("message_start",
          R"({"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"model":"claude-x","usage":{"input_tokens":40,"output_tokens":1}}})") +
      sse("content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})") +
      sse("content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}})") +
      sse("content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}})") +
      sse("content_block_stop", R"({"type":"content_block_stop","index":0})") +
      sse("content_block_start",
          R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}})") +
      sse("content_block_delta",
          R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Paris\"}"}})") +
      sse("content_block_stop", R"({"type":"content_block_stop","index":1})") +
      sse("message_delta",
          R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}})") +
      sse("message_stop", R"({"type":"message_stop"})");
  Replay r = golden(ApiKind::kAnthropic, s);
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 3u);  // thinking, tool name, tool input
  for (const TokenEvent& e : t.token_events) EXPECT_FALSE(e.visible);
  EXPECT_EQ(t.first_visible_ns, 0);
  EXPECT_EQ(t.usage_completion_tokens, 89);
  EXPECT_TRUE(t.saw_done);
}

TEST(ProtocolGoldenTest, AnthropicOverloadedErrorFailsTheStream) {
  const std::string s =
      sse("message_start",
          R"({"type":"message_start","message":{"id":"msg_3","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}})") +
      sse("content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
      sse("content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})") +
      sse("error",
          R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  Replay r = golden(ApiKind::kAnthropic, s);
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error, "overloaded_error: Overloaded");
  EXPECT_FALSE(r.tl.saw_done);
  EXPECT_FALSE(r.finish);
}

// ---- OpenAI Responses ----

TEST(ProtocolGoldenTest, ResponsesTextWithUsage) {
  const std::string s =
      sse("response.created",
          R"({"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}})") +
      sse("response.in_progress",
          R"({"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}})") +
      sse("response.output_item.added",
          R"({"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}})") +
      sse("response.content_part.added",
          R"({"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}})") +
      sse("response.output_text.delta",
          R"({"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"})") +
      sse("response.output_text.delta",
          R"({"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" there"})") +
      sse("response.output_text.done",
          R"({"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi there"})") +
      sse("response.completed",
          R"({"type":"response.completed","sequence_number":7,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Hi there"}]}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}}})");
  Replay r = golden(ApiKind::kResponses, s);
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 2u);  // output_text.done repeats the text: not a token
  EXPECT_TRUE(t.token_events[0].visible);
  EXPECT_EQ(t.usage_prompt_tokens, 12);
  EXPECT_EQ(t.usage_completion_tokens, 2);
  EXPECT_TRUE(t.saw_done);
  EXPECT_TRUE(r.finish);
}

TEST(ProtocolGoldenTest, ResponsesReasoningToolCallsAndIncomplete) {
  const std::string s =
      sse("response.reasoning_summary_text.delta",
          R"({"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Thinking"})") +
      sse("response.function_call_arguments.delta",
          R"({"type":"response.function_call_arguments.delta","sequence_number":4,"item_id":"fc_1","output_index":1,"delta":"{\"city\":"})") +
      sse("response.function_call_arguments.delta",
          R"({"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"\"Oslo\"}"})") +
      sse("response.incomplete",
          R"({"type":"response.incomplete","sequence_number":6,"response":{"id":"resp_2","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":30,"output_tokens":16,"total_tokens":46}}})");
  Replay r = golden(ApiKind::kResponses, s);
  ASSERT_EQ(r.tl.token_events.size(), 3u);
  EXPECT_EQ(r.tl.first_visible_ns, 0);
  EXPECT_EQ(r.tl.usage_completion_tokens, 16);
  EXPECT_TRUE(r.tl.saw_done);
}

TEST(ProtocolGoldenTest, ResponsesErrorsAndFailure) {
  Replay r = golden(
      ApiKind::kResponses,
      sse("error",
          R"({"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":1})"));
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error, "rate_limit_exceeded: Slow down");
  r = golden(
      ApiKind::kResponses,
      sse("response.output_text.delta",
          R"({"type":"response.output_text.delta","sequence_number":1,"delta":"a"})") +
          sse("response.failed",
              R"({"type":"response.failed","sequence_number":2,"response":{"id":"resp_3","status":"failed","error":{"code":"server_error","message":"The model failed"}}})"));
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error, "server_error: The model failed");
  EXPECT_FALSE(r.tl.saw_done);
}

// ---- Ollama (NDJSON) ----

TEST(ProtocolGoldenTest, OllamaChatWithDurations) {
  const std::string s =
      R"({"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The"},"done":false})"
      "\n"
      R"({"model":"llama3.2","created_at":"2023-08-04T08:52:19.405406455-07:00","message":{"role":"assistant","content":" sky"},"done":false})"
      "\n"
      R"({"model":"llama3.2","created_at":"2023-08-04T08:52:19.425406455-07:00","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000})"
      "\n";
  Replay r = golden(ApiKind::kOllamaChat, s);
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 2u);
  EXPECT_EQ(t.usage_prompt_tokens, 26);
  EXPECT_EQ(t.usage_completion_tokens, 282);
  EXPECT_TRUE(t.saw_done);
  EXPECT_TRUE(r.finish);
  EXPECT_EQ(t.server.source, "ollama.durations");
  EXPECT_DOUBLE_EQ(t.server.prompt_ms, 342.546);
  EXPECT_DOUBLE_EQ(t.server.decode_ms, 4535.599);
  EXPECT_DOUBLE_EQ(t.server.load_ms, 1.334875);
  EXPECT_DOUBLE_EQ(t.server.total_ms, 4883.583458);
  EXPECT_EQ(t.server.prompt_tokens, 26);
  EXPECT_EQ(t.server.predicted_tokens, 282);
  EXPECT_NEAR(t.server.decode_per_token_ms, 4535.599 / 282, 1e-9);
}

TEST(ProtocolGoldenTest, OllamaThinkingToolCallsGenerateAndErrors) {
  const std::string chat =
      R"({"model":"qwen3","created_at":"t","message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false})"
      "\n"
      R"({"model":"qwen3","created_at":"t","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false})"
      "\n"
      R"({"model":"qwen3","created_at":"t","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":9})"
      "\n";
  Replay r = golden(ApiKind::kOllamaChat, chat);
  ASSERT_EQ(r.tl.token_events.size(), 2u);
  EXPECT_EQ(r.tl.first_visible_ns, 0);
  EXPECT_TRUE(r.tl.saw_done);

  const std::string gen =
      R"({"model":"llama3.2","created_at":"t","response":"Hel","done":false})"
      "\n"
      R"({"model":"llama3.2","created_at":"t","response":"lo","done":false})"
      "\r\n"
      R"({"model":"llama3.2","created_at":"t","response":"","done":true,"done_reason":"length","context":[1,2,3],"total_duration":10000000,"prompt_eval_count":3,"prompt_eval_duration":2000000,"eval_count":2,"eval_duration":5000000})"
      "\n";
  r = golden(ApiKind::kOllamaGenerate, gen);
  ASSERT_EQ(r.tl.token_events.size(), 2u);
  EXPECT_EQ(r.tl.usage_completion_tokens, 2);
  EXPECT_DOUBLE_EQ(r.tl.server.prompt_ms, 2.0);
  EXPECT_DOUBLE_EQ(r.tl.server.decode_ms, 5.0);

  r = golden(ApiKind::kOllamaChat,
             "{\"error\":\"model 'nope' not found, try pulling it first\"}\n");
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error, "model 'nope' not found, try pulling it first");

  // Cut mid-record: truncated, no done.
  r = golden(ApiKind::kOllamaChat, chat.substr(0, chat.size() - 20));
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.tl.saw_done);
}

// ---- TGI ----

TEST(ProtocolGoldenTest, TgiTokensSpecialTokenAndDetails) {
  const std::string s =
      "data:"
      R"({"index":1,"token":{"id":4321,"text":"Deep","logprob":-0.9,"special":false},"generated_text":null,"details":null})"
      "\n\n"
      "data:"
      R"({"index":2,"token":{"id":4322,"text":" learning","logprob":-0.2,"special":false},"generated_text":null,"details":null})"
      "\n\n"
      "data:"
      R"({"index":3,"token":{"id":2,"text":"</s>","logprob":-0.1,"special":true},"generated_text":"Deep learning","details":{"finish_reason":"eos_token","generated_tokens":3,"seed":null}})"
      "\n\n";
  Replay r = golden(ApiKind::kTgi, s);
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 2u);  // the special </s> is not a token event
  EXPECT_EQ(t.token_events[0].tokens, -1);
  EXPECT_EQ(t.token_events[1].tokens, -1);
  EXPECT_EQ(t.usage_completion_tokens, 3);  // details.generated_tokens counts it
  EXPECT_TRUE(t.saw_done);
  EXPECT_TRUE(r.finish);

  // The final event may carry a real last token and the totals together.
  const std::string last =
      "data:"
      R"({"index":1,"token":{"id":7,"text":"A","logprob":-0.9,"special":false},"generated_text":null,"details":null})"
      "\n\n"
      "data:"
      R"({"index":2,"token":{"id":8,"text":"B","logprob":-0.9,"special":false},"generated_text":"AB","details":{"finish_reason":"length","generated_tokens":2,"seed":null}})"
      "\n\n";
  r = golden(ApiKind::kTgi, last);
  ASSERT_EQ(r.tl.token_events.size(), 2u);
  EXPECT_EQ(r.tl.token_events[1].tokens, -1);  // the total is not this event's share
  EXPECT_EQ(r.tl.usage_completion_tokens, 2);

  r = golden(
      ApiKind::kTgi,
      "data:"
      R"({"error":"Request failed during generation: Server error: CUDA OOM","error_type":"generation"})"
      "\n\n");
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error,
            "generation: Request failed during generation: Server error: CUDA OOM");
}

// ---- llama.cpp native /completion ----

TEST(ProtocolGoldenTest, LlamaCppCompletionWithTimings) {
  const std::string s =
      sse("",
          R"({"index":0,"content":" Once","tokens":[9038],"stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":5})") +
      sse("",
          R"({"index":0,"content":" upon","tokens":[2501],"stop":false,"id_slot":-1,"tokens_predicted":2,"tokens_evaluated":5})") +
      sse("",
          R"({"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m.gguf","tokens_predicted":2,"tokens_evaluated":5,"generation_settings":{"n_predict":2,"samplers":["top_k"]},"prompt":"<s> Hi","has_new_line":false,"truncated":false,"stop_type":"limit","stopping_word":"","tokens_cached":6,"timings":{"cache_n":1,"prompt_n":4,"prompt_ms":9.219,"prompt_per_token_ms":2.30475,"prompt_per_second":433.8,"predicted_n":2,"predicted_ms":14.1,"predicted_per_token_ms":7.05,"predicted_per_second":141.9}})");
  Replay r = golden(ApiKind::kLlamaCpp, s);
  const RequestTimeline& t = r.tl;
  ASSERT_EQ(t.token_events.size(), 2u);
  EXPECT_EQ(t.token_events[0].tokens, 1);  // tokens_predicted is a running count
  EXPECT_EQ(t.token_events[1].tokens, 1);
  EXPECT_EQ(t.usage_prompt_tokens, 5);
  EXPECT_EQ(t.usage_completion_tokens, 2);
  EXPECT_TRUE(t.saw_done);
  EXPECT_EQ(t.server.source, "llamacpp.timings");
  EXPECT_DOUBLE_EQ(t.server.prompt_ms, 9.219);
  EXPECT_DOUBLE_EQ(t.server.decode_ms, 14.1);
  EXPECT_DOUBLE_EQ(t.server.decode_per_token_ms, 7.05);
  EXPECT_EQ(t.server.prompt_tokens, 4);
  EXPECT_EQ(t.server.cached_tokens, 1);
  EXPECT_EQ(t.server.predicted_tokens, 2);

  r = golden(ApiKind::kLlamaCpp,
             sse("", R"({"error":{"code":500,"message":"Invalid UTF-8","type":"server_error"}})"));
  EXPECT_EQ(r.stream_errors, 1);
  EXPECT_EQ(r.first_stream_error, "server_error: Invalid UTF-8");
}

// ---- server timings in OpenAI-compatible streams ----

// Real llama.cpp captures (tests/data/real-streams/README.md).
std::string read_capture(const std::string& name) {
  const std::string path = std::string(TOKPERF_TEST_DATA).append("/real-streams/") + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read test data " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProtocolGoldenTest, LlamaCppChatStreamCarriesTimingsInItsLastChunk) {
  const std::string s = read_capture("llamacpp-chat-stream-with-timings.sse");
  if (s.empty()) GTEST_SKIP() << "shared data not present";
  Replay r = replay(ApiKind::kChat, s, {});
  EXPECT_EQ(r.tl.server.source, "llamacpp.timings");
  EXPECT_DOUBLE_EQ(r.tl.server.prompt_ms, 266.675);
  EXPECT_DOUBLE_EQ(r.tl.server.decode_ms, 3103.496);
  EXPECT_DOUBLE_EQ(r.tl.server.decode_per_token_ms, 193.9685);
  EXPECT_EQ(r.tl.server.prompt_tokens, 33);
  EXPECT_EQ(r.tl.server.cached_tokens, 0);
  EXPECT_EQ(r.tl.server.predicted_tokens, 16);
  EXPECT_EQ(r.tl.usage_completion_tokens, 16);
  EXPECT_TRUE(r.tl.saw_done);
  // And the native stream of the same server.
  r = replay(ApiKind::kLlamaCpp, read_capture("llamacpp-native-completion-stream.sse"), {});
  EXPECT_EQ(r.tl.server.source, "llamacpp.timings");
  EXPECT_EQ(r.tl.token_events.size(), 8u);
  EXPECT_TRUE(r.tl.saw_done);
}

TEST(ProtocolGoldenTest, VllmPerRequestMetricsObject) {
  const std::string s =
      sse("",
          R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]})") +
      sse("",
          R"({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1},"metrics":{"time_to_first_token_ms":12.5,"generation_time_ms":0.0,"queue_time_ms":1.5,"mean_itl_ms":0.0,"tokens_per_second":80.0}})") +
      "data: [DONE]\n\n";
  Replay r = golden(ApiKind::kChat, s);
  EXPECT_EQ(r.tl.server.source, "vllm.metrics");
  EXPECT_DOUBLE_EQ(r.tl.server.ttft_ms, 12.5);
  EXPECT_DOUBLE_EQ(r.tl.server.prompt_ms, 12.5);
  EXPECT_DOUBLE_EQ(r.tl.server.queue_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.tl.server.decode_ms, 0.0);
}

TEST(ProtocolGoldenTest, MergingTimingsKeepsWhatEachSourceGave) {
  ServerTimings a;
  a.prompt_ms = 3;
  a.source = "llamacpp.timings";
  ServerTimings b;
  b.queue_ms = 1;
  b.source = "vllm.metrics";
  ServerTimings into;
  merge_server_timings(a, into);
  merge_server_timings(b, into);
  merge_server_timings(a, into);
  EXPECT_EQ(into.prompt_ms, 3);
  EXPECT_EQ(into.queue_ms, 1);
  EXPECT_EQ(into.decode_ms, -1);
  EXPECT_EQ(into.source, "llamacpp.timings+vllm.metrics");
}

TEST(ProtocolGoldenTest, FieldsInAnyOrderAndMalformedEvents) {
  // Responses with `delta` before `type`.
  ChunkClassifier responses(ApiKind::kResponses);
  ChunkInfo c = responses.classify(R"({"delta":"hi","type":"response.output_text.delta"})");
  EXPECT_EQ(c.content_bytes, 2u);
  // Malformed JSON is a parse error in every protocol, never a token.
  for (ApiKind k : {ApiKind::kAnthropic, ApiKind::kResponses, ApiKind::kOllamaChat, ApiKind::kTgi,
                    ApiKind::kLlamaCpp}) {
    ChunkClassifier cl(k);
    ChunkInfo bad = cl.classify(R"({"content":"x","stop":true)");
    EXPECT_TRUE(bad.parse_error) << api_kind_name(k);
    EXPECT_FALSE(bad.carries_token());
    EXPECT_TRUE(cl.classify("[1,2]").parse_error);
  }
}

}  // namespace
}  // namespace tokperf
