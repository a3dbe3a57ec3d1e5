// Parse + classify throughput of the stream parsing layer: a realistic OpenAI-style chat stream
// (role event, one token per event with `usage: null`, finish, usage, [DONE]) fed in 1-KiB reads,
// as the transport would deliver it. Reports events/s (items_per_second) and ns/event.
#include <string>

#include <benchmark/benchmark.h>

#include "client/openai_adapter.h"
#include "client/sse_parser.h"

namespace tokperf {
namespace {

constexpr int kTokens = 1000;

std::string chat_stream() {
  const std::string head =
      R"(data: {"id":"chatcmpl-9x8y7z","object":"chat.completion.chunk","created":1717000000,)"
      R"("model":"meta-llama/Llama-3.1-8B-Instruct","system_fingerprint":"fp_0001","choices":[{"index":0,)";
  std::string s =
      head + R"("delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})"
             "\n\n";
  for (int i = 0; i < kTokens; ++i) {
    s += head + R"("delta":{"content":" word)" + std::to_string(i % 10) +
         R"("},"logprobs":null,"finish_reason":null}],"usage":null})"
         "\n\n";
  }
  s += head + R"("delta":{},"finish_reason":"stop"}],"usage":null})"
              "\n\n";
  s += R"(data: {"id":"chatcmpl-9x8y7z","object":"chat.completion.chunk","choices":[],)"
       R"("usage":{"prompt_tokens":512,"completion_tokens":1000,"total_tokens":1512}})"
       "\n\n";
  s += "data: [DONE]\n\n";
  return s;
}

class ClassifySink : public SseSink {
 public:
  void on_event(const SseEvent& e) override {
    ChunkInfo c = classifier_.classify(e.data);
    content_bytes_ += c.content_bytes;
  }
  uint64_t content_bytes_ = 0;

 private:
  ChunkClassifier classifier_{ApiKind::kChat};
};

void BM_ParseAndClassifyChatStream(benchmark::State& state) {
  const std::string stream = chat_stream();
  const size_t read_bytes = static_cast<size_t>(state.range(0));
  ClassifySink sink;
  SseParser parser(&sink);
  uint64_t events = 0;
  for (auto _ : state) {
    parser.reset();
    for (size_t at = 0; at < stream.size(); at += read_bytes) {
      parser.feed(std::string_view(stream).substr(at, read_bytes));
    }
    events += parser.events_dispatched();
  }
  benchmark::DoNotOptimize(sink.content_bytes_);
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
  // A rate of events*1e-9 per second, inverted, is nanoseconds per event.
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(events) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ParseAndClassifyChatStream)->Arg(1024)->Arg(64);

void BM_ParseOnlyChatStream(benchmark::State& state) {
  struct Count : SseSink {
    void on_event(const SseEvent& e) override { bytes += e.data.size(); }
    uint64_t bytes = 0;
  } sink;
  const std::string stream = chat_stream();
  SseParser parser(&sink);
  uint64_t events = 0;
  for (auto _ : state) {
    parser.reset();
    for (size_t at = 0; at < stream.size(); at += 1024) {
      parser.feed(std::string_view(stream).substr(at, 1024));
    }
    events += parser.events_dispatched();
  }
  benchmark::DoNotOptimize(sink.bytes);
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_ParseOnlyChatStream);

}  // namespace
}  // namespace tokperf

BENCHMARK_MAIN();
