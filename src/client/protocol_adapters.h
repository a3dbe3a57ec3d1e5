// Classifiers for the non-OpenAI streaming protocols, onto the same ChunkInfo as the OpenAI ones
// (client/openai_adapter.h calls them; nothing else should). Field names follow each protocol's
// documentation; docs/metrics.md has the table of which field starts TTFT, which ends the stream
// and where token counts come from. Fields may come in any order; unknown fields are skipped.
//
// Anthropic Messages (SSE; the JSON `type` mirrors the `event:` line):
//   content_block_delta: delta.text (text_delta) -> content; delta.thinking (thinking_delta) ->
//   reasoning; delta.partial_json (input_json_delta) -> tool call; content_block_start of a
//   tool_use block: its name -> tool call; message_start: message.role -> role,
//   message.usage.input_tokens -> prompt tokens; message_delta: delta.stop_reason -> finish,
//   usage.output_tokens (cumulative) -> completion tokens; message_stop -> done;
//   error / {"type":"error","error":{type,message}} -> error "overloaded_error: Overloaded".
// OpenAI Responses (SSE): response.output_text.delta and response.refusal.delta -> content;
//   response.reasoning_text.delta / response.reasoning_summary_text.delta -> reasoning;
//   response.function_call_arguments.delta -> tool call; response.completed and
//   response.incomplete -> finish + done, response.usage input_tokens / output_tokens;
//   response.failed -> error (response.error.message); error -> error (code: message).
// Ollama (NDJSON) /api/chat: message.content -> content, message.thinking -> reasoning,
//   message.tool_calls[].function (name + raw arguments) -> tool call; /api/generate: response ->
//   content, thinking -> reasoning; both: done:true -> finish + done, prompt_eval_count /
//   eval_count
//   -> usage, *_duration (ns) -> server timings ("ollama.durations"); {"error": "..."} -> error.
// TGI /generate_stream (SSE): token.text -> content unless token.special (special tokens such as
//   </s> are not token events, as OpenAI-compatible servers do not stream them either);
//   details.finish_reason -> finish; generated_text non-null -> done; details.generated_tokens ->
//   completion tokens, details.input_length -> prompt tokens; {"error","error_type"} -> error.
// llama.cpp /completion (SSE): content -> content; stop:true -> finish + done; tokens_predicted
//   (cumulative on every chunk) -> completion tokens, tokens_evaluated -> prompt tokens; timings ->
//   server timings ("llamacpp.timings"); {"error":{code,message,type}} -> error.
#pragma once

#include <string_view>

#include <simdjson.h>

#include "client/openai_adapter.h"
#include "client/stream_event.h"

namespace tokperf::protocol {

// Each reads one event object's fields into out; returns the first JSON error.
simdjson::error_code classify_anthropic(simdjson::ondemand::object obj, ChunkInfo& out);
simdjson::error_code classify_responses(simdjson::ondemand::object obj, ChunkInfo& out);
simdjson::error_code classify_ollama(simdjson::ondemand::object obj, ChunkInfo& out);
simdjson::error_code classify_tgi(simdjson::ondemand::object obj, ChunkInfo& out);
simdjson::error_code classify_llamacpp(simdjson::ondemand::object obj, ChunkInfo& out);

}  // namespace tokperf::protocol
