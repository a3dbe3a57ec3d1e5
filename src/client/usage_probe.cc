#include "client/usage_probe.h"

#include <fmt/format.h>

#include "client/http_fetch.h"
#include "client/request_builder.h"
#include "client/stream_recorder.h"

namespace tokperf {

Result<UsageCounter> UsageCounter::probe(const TargetConfig& target) {
  auto api = parse_api_kind(target.api);
  if (!api) return Error{api.error()};
  if (*api == ApiKind::kOllamaChat || *api == ApiKind::kOllamaGenerate) {
    // Ollama's prompt_eval_count leaves out what its cache served, and the probes share prefixes.
    return Error{"Ollama's prompt_eval_count leaves out cached tokens, so it cannot calibrate"};
  }
  TargetConfig t = target;
  t.include_usage = true;  // the probe needs it even under --no-usage (a rejecting server fails it)
  t.tools_json.clear();
  PromptConfig p;
  p.text = "x";
  p.output_tokens = 1;
  auto b = RequestBuilder::create(t, p);
  if (!b) return Error{b.error()};
  UsageCounter c;
  c.builder_ = std::make_shared<const RequestBuilder>(std::move(*b));
  c.requests_ = std::make_shared<int64_t>(0);
  auto n = c.count("hello world");
  if (!n) return Error{n.error()};
  return c;
}

Result<int64_t> UsageCounter::count(const std::string& text) const {
  const RequestBuilder& b = *builder_;
  ++*requests_;
  auto reply =
      http_fetch("POST", b.url(), b.headers(fmt::format("tokperf-calibrate-{}", *requests_)),
                 b.body_for("", text, 1), 60'000'000'000);
  if (!reply) return Error{reply.error()};
  if (reply->status != 200) {
    return Error{
        fmt::format("{} answered HTTP {}: {}", b.url(), reply->status, body_excerpt(reply->body))};
  }
  ChunkClassifier classifier(b.api());
  StreamRecorder recorder(&classifier);
  RequestTimeline tl;
  recorder.begin(&tl);
  recorder.on_bytes(reply->body, 0);
  if (tl.usage_prompt_tokens < 0) {
    return Error{fmt::format("{} reported no usage.prompt_tokens for the probe request", b.url())};
  }
  return tl.usage_prompt_tokens;
}

}  // namespace tokperf
