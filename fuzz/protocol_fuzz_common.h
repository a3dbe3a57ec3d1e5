// Shared body of the per-protocol fuzz targets (anthropic_, responses_, ollama_, tgi_, llamacpp_
// adapter_fuzz.cc): the input is a stream in that protocol's framing, replayed through the
// StreamRecorder (framing + the protocol's classifier) whole, split at the points the first bytes
// pick, and one byte at a time. Aborts when the splits change anything the recorder found, when a
// classification breaks its contract (error excerpt over the limit, a parse error carrying tokens
// or a done), or when token events are stamped out of order. The same bytes are also classified as
// one payload and described by the protocol detector (client/protocol_detect.h), which must not
// crash or return an unbounded message. Input layout as sse_parser_fuzz: byte 0 mod 8 = number of
// split points, the next bytes place them, the rest is the stream.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/openai_adapter.h"
#include "client/protocol_detect.h"
#include "client/stream_recorder.h"

namespace tokperf_fuzz {

struct Seen {
  std::string summary;
  std::vector<int64_t> stamps;
};

inline Seen replay(tokperf::ApiKind api, std::string_view stream, const std::vector<size_t>& cuts) {
  static tokperf::ChunkClassifier* classifiers[8] = {};
  auto*& classifier = classifiers[static_cast<int>(api)];
  if (classifier == nullptr) classifier = new tokperf::ChunkClassifier(api);
  tokperf::StreamRecorder rec(classifier);
  tokperf::RequestTimeline tl;
  rec.begin(&tl);
  size_t at = 0;
  int64_t t = 1;
  for (size_t cut : cuts) {
    rec.on_bytes(stream.substr(at, cut - at), t++);
    at = cut;
  }
  rec.on_bytes(stream.substr(at), t);
  Seen s;
  s.summary = std::to_string(tl.token_events.size()) + "|" + std::to_string(tl.chunks) + "|" +
              std::to_string(tl.usage_prompt_tokens) + "|" +
              std::to_string(tl.usage_completion_tokens) + "|" + std::to_string(tl.saw_done) +
              std::to_string(rec.saw_finish()) + std::to_string(rec.truncated()) + "|" +
              std::to_string(rec.parse_errors()) + "|" + std::to_string(rec.stream_errors()) + "|" +
              rec.first_stream_error() + "|" + rec.first_parse_error() + "|" + tl.server.source +
              std::to_string(tl.server.prompt_ms) + std::to_string(tl.server.decode_ms) +
              std::to_string(tl.server.predicted_tokens);
  for (const auto& e : tl.token_events) {
    s.summary +=
        "[" + std::to_string(e.tokens) + std::to_string(e.visible) + std::to_string(e.chars) + "]";
    s.stamps.push_back(e.t_ns);
  }
  return s;
}

inline int run_protocol_fuzz(tokperf::ApiKind api, const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t n_cuts = std::min<size_t>(data[0] % 8, size - 1);
  std::string_view stream(reinterpret_cast<const char*>(data) + 1 + n_cuts, size - 1 - n_cuts);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < n_cuts; ++i) {
    cuts.push_back(stream.empty() ? 0 : data[1 + i] * stream.size() / 255);
  }
  std::sort(cuts.begin(), cuts.end());

  static tokperf::ChunkClassifier* single = nullptr;
  if (single == nullptr || single->kind() != api) single = new tokperf::ChunkClassifier(api);
  const tokperf::ChunkInfo c = single->classify(stream);
  if (c.error_message.size() > tokperf::ChunkClassifier::kMaxErrorMessageBytes) abort();
  if (c.parse_error && (c.carries_token() || c.done || c.role || c.server.present())) abort();

  const Seen whole = replay(api, stream, {});
  const Seen pieces = replay(api, stream, cuts);
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  const Seen bytes = replay(api, stream, every);
  if (whole.summary != pieces.summary || whole.summary != bytes.summary) {
    fprintf(stderr, "%s: split feeding changed the outcome:\n  %s\n  %s\n  %s\n",
            tokperf::api_kind_name(api), whole.summary.c_str(), pieces.summary.c_str(),
            bytes.summary.c_str());
    abort();
  }
  for (size_t i = 1; i < bytes.stamps.size(); ++i) {
    if (bytes.stamps[i - 1] >= bytes.stamps[i]) abort();  // one byte completes one event at most
  }
  const std::string d = tokperf::describe_foreign_stream(api, "", stream.substr(0, 512));
  if (d.size() > 2000) abort();
  return 0;
}

}  // namespace tokperf_fuzz
