// Fuzz target for the stream parsing layer: SseParser fed in pieces, every event classified by both
// OpenAI adapters. Invariant: splitting the bytes differently never changes what the parser
// reports. Input layout: byte 0 picks how many split points follow (0-7), the next bytes place
// them, the rest is the stream. See docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/openai_adapter.h"
#include "client/sse_parser.h"

namespace {

using tokperf::ApiKind;
using tokperf::ChunkClassifier;
using tokperf::ChunkInfo;
using tokperf::SseEvent;
using tokperf::SseParser;

struct Outcome {
  std::vector<std::string> events;  // type, data and id joined with NULs
  uint64_t dispatched = 0, comments = 0, bytes = 0;
  int64_t retry_ms = -1;
  std::string last_id;
  bool partial = false;
  bool operator==(const Outcome& o) const {
    return events == o.events && dispatched == o.dispatched && comments == o.comments &&
           bytes == o.bytes && retry_ms == o.retry_ms && last_id == o.last_id &&
           partial == o.partial;
  }
};

void check_chunk(const ChunkInfo& c) {
  if (c.error_message.size() > ChunkClassifier::kMaxErrorMessageBytes) abort();
  if (c.parse_error && (c.carries_token() || c.done || c.role)) abort();
}

class Recorder : public tokperf::SseSink {
 public:
  Recorder(Outcome* out, ChunkClassifier* chat, ChunkClassifier* completions)
      : out_(out), chat_(chat), completions_(completions) {}
  void on_event(const SseEvent& e) override {
    std::string joined(e.type);
    joined.push_back('\0');
    joined.append(e.data);
    joined.push_back('\0');
    joined.append(e.id);
    out_->events.push_back(std::move(joined));
    if (chat_ != nullptr) {
      check_chunk(chat_->classify(e.data));
      check_chunk(completions_->classify(e.data));
    }
  }

 private:
  Outcome* out_;
  ChunkClassifier* chat_;
  ChunkClassifier* completions_;
};

Outcome run(std::string_view stream, const std::vector<size_t>& cuts, ChunkClassifier* chat,
            ChunkClassifier* completions) {
  Outcome out;
  Recorder sink(&out, chat, completions);
  SseParser parser(&sink);
  size_t at = 0;
  for (size_t cut : cuts) {
    parser.feed(stream.substr(at, cut - at));
    at = cut;
  }
  parser.feed(stream.substr(at));
  out.dispatched = parser.events_dispatched();
  out.comments = parser.comments();
  out.bytes = parser.bytes_fed();
  out.retry_ms = parser.retry_ms();
  out.last_id = std::string(parser.last_event_id());
  out.partial = parser.has_partial_event();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t n_cuts = std::min<size_t>(data[0] % 8, size - 1);
  std::string_view stream(reinterpret_cast<const char*>(data) + 1 + n_cuts, size - 1 - n_cuts);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < n_cuts; ++i) {
    cuts.push_back(stream.empty() ? 0 : data[1 + i] * stream.size() / 255);
  }
  std::sort(cuts.begin(), cuts.end());

  static ChunkClassifier chat(ApiKind::kChat);
  static ChunkClassifier completions(ApiKind::kCompletions);
  const Outcome whole = run(stream, {}, &chat, &completions);
  const Outcome pieces = run(stream, cuts, nullptr, nullptr);
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
  const Outcome bytes = run(stream, every_byte, nullptr, nullptr);
  if (!(whole == pieces) || !(whole == bytes)) {
    fprintf(stderr, "SseParser: split feeding changed the outcome (%zu events whole, %zu split)\n",
            whole.events.size(), pieces.events.size());
    abort();
  }
  return 0;
}
