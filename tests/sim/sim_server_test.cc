// The simulated engine's HTTP front against 127.0.0.1:0: endpoints and response shapes, usage,
// /metrics in vLLM's names and consistent with what was served, disconnects freeing KV, many
// streams, and agreement with the offline (virtual-time) runner on the same workload.
#include "sim/sim_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "client/http_fetch.h"
#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "sim/offline_runner.h"
#include "workload/prompt.h"

namespace tokperf::sim {
namespace {

std::unique_ptr<SimServer> start_server(EngineConfig engine = {}, DeploymentFlags f = {}) {
  auto d = resolve_deployment(f);
  EXPECT_TRUE(d.ok());
  SimServerOptions o;
  o.deployment = *d;
  o.engine = engine;
  o.served_model = "sim-model";
  auto s = SimServer::create(o);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE((*s)->start().ok());
  return std::move(s).value();
}

std::string root(const SimServer& s) { return server_root(s.base_url()); }

HttpReply post(const std::string& url, const nlohmann::json& body) {
  auto r = http_fetch("POST", url, {"Content-Type: application/json"}, body.dump());
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : HttpReply{};
}

// The JSON payloads of an SSE body, in order ("[DONE]" kept as a string).
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

// Prometheus text -> {"name{labels}": value}; fails the test on a line that is not a sample.
std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

std::map<std::string, double> scrape(const SimServer& s) {
  auto r = http_fetch("GET", root(s) + "/metrics", {});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  return parse_prometheus(r->body);
}

const std::string kLabel = "{model_name=\"sim-model\"}";

TEST(SimServer, ModelsTokenizeHealthAndErrors) {
  auto s = start_server();
  auto models = http_fetch("GET", s->base_url() + "/models", {});
  ASSERT_TRUE(models.ok());
  auto mj = nlohmann::json::parse(models->body);
  EXPECT_EQ(mj["data"][0]["id"], "sim-model");
  EXPECT_EQ(mj["data"][0]["max_model_len"], 4096);  // Llama-2-7B's context; the KV cache holds more
  DeploymentFlags served;
  served.max_model_len = 1024;  // --max-model-len: the limit the server states and applies
  auto short_ctx = start_server({}, served);
  auto smj = nlohmann::json::parse(http_fetch("GET", short_ctx->base_url() + "/models", {})->body);
  EXPECT_EQ(smj["data"][0]["max_model_len"], 1024);
  EXPECT_EQ(
      post(short_ctx->base_url() + "/completions", {{"prompt", "a b c"}, {"max_tokens", 1022}})
          .status,
      400);

  auto tok = post(root(*s) + "/tokenize", {{"model", "sim-model"}, {"prompt", " one two\nthree "}});
  EXPECT_EQ(tok.status, 200);
  EXPECT_EQ(nlohmann::json::parse(tok.body)["count"], 3);
  EXPECT_EQ(http_fetch("GET", root(*s) + "/health", {})->status, 200);

  auto wrong_model = post(s->base_url() + "/completions", {{"model", "gpt-4"}, {"prompt", "a"}});
  EXPECT_EQ(wrong_model.status, 404);
  auto too_long = post(s->base_url() + "/completions", {{"prompt", "a b c"}, {"max_tokens", 4094}});
  EXPECT_EQ(too_long.status, 400);
  EXPECT_NE(too_long.body.find("maximum context length is 4096"), std::string::npos);
  EXPECT_EQ(post(s->base_url() + "/completions", {{"prompt", "a b"}, {"max_tokens", 4094}}).status,
            200);
  EXPECT_EQ(s->counters().rejected.load(), 2);
}

TEST(SimServer, ChatStreamHasRoleContentFinishUsageAndDone) {
  auto s = start_server();
  auto r = post(s->base_url() + "/chat/completions",
                {{"model", "sim-model"},
                 {"messages", {{{"role", "user"}, {"content", "one two three four five"}}}},
                 {"max_tokens", 3},
                 {"ignore_eos", true},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200);
  auto p = sse_payloads(r.body);
  ASSERT_EQ(p.size(), 7u);  // role, 3 tokens, finish, usage, [DONE]
  EXPECT_EQ(nlohmann::json::parse(p[0])["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (int i = 1; i <= 3; ++i) {
    auto j = nlohmann::json::parse(p[i]);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
    text += j["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "The simulated engine ");
  EXPECT_EQ(nlohmann::json::parse(p[4])["choices"][0]["finish_reason"], "length");
  auto usage = nlohmann::json::parse(p[5])["usage"];
  EXPECT_EQ(usage["prompt_tokens"], 5);
  EXPECT_EQ(usage["completion_tokens"], 3);
  EXPECT_EQ(usage["total_tokens"], 8);
  EXPECT_EQ(p[6], "[DONE]");
}

TEST(SimServer, NonStreamingOutputLengthComesFromTheEngineDistribution) {
  EngineConfig e;
  e.eos_mean_tokens = 4;  // exponential mean 4, so 40 max tokens are almost never reached
  auto s = start_server(e);
  int64_t total = 0, stops = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = post(s->base_url() + "/completions", {{"prompt", "x y"}, {"max_tokens", 40}});
    ASSERT_EQ(r.status, 200);
    auto j = nlohmann::json::parse(r.body);
    const int64_t n = j["usage"]["completion_tokens"];
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 40);
    EXPECT_EQ(j["choices"][0]["finish_reason"], n == 40 ? "length" : "stop");
    // The filler text counts back to the completion length.
    std::istringstream words(j["choices"][0]["text"].get<std::string>());
    std::string w;
    int64_t count = 0;
    while (words >> w) ++count;
    EXPECT_EQ(count, n);
    total += n;
    stops += n < 40;
  }
  EXPECT_GE(stops, 4);
  auto m = scrape(*s);
  EXPECT_EQ(m["vllm:generation_tokens_total" + kLabel], total);
  EXPECT_EQ(m["vllm:prompt_tokens_total" + kLabel], 10);
}

TEST(SimServer, MetricsAreConsistentWithWhatWasServed) {
  auto s = start_server();
  for (int i = 0; i < 3; ++i) {
    auto r =
        post(s->base_url() + "/completions",
             {{"prompt", "a b c d"}, {"max_tokens", 5}, {"ignore_eos", true}, {"stream", true}});
    ASSERT_EQ(r.status, 200);
  }
  auto m = scrape(*s);
  EXPECT_EQ(m["vllm:num_requests_running" + kLabel], 0);
  EXPECT_EQ(m["vllm:num_requests_waiting" + kLabel], 0);
  EXPECT_EQ(m["vllm:generation_tokens_total" + kLabel], 15);
  EXPECT_EQ(m["vllm:prompt_tokens_total" + kLabel], 12);
  EXPECT_EQ(m["vllm:request_success_total{model_name=\"sim-model\",finished_reason=\"length\"}"],
            3);
  EXPECT_EQ(m["vllm:time_to_first_token_seconds_count" + kLabel], 3);
  EXPECT_EQ(m["vllm:inter_token_latency_seconds_count" + kLabel], 12);  // 4 gaps x 3
  EXPECT_EQ(m["vllm:e2e_request_latency_seconds_count" + kLabel], 3);
  // Histograms: cumulative buckets never decrease and +Inf equals the count.
  for (const std::string h :
       {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds"}) {
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
    const std::string prefix = h + "_bucket{model_name=\"sim-model\",le=\"";
    for (const auto& [key, v] : m) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string le = key.substr(prefix.size(), key.size() - prefix.size() - 2);
      buckets.emplace_back(le == "+Inf" ? INFINITY : std::stod(le), v);
    }
    std::sort(buckets.begin(), buckets.end());
    ASSERT_GT(buckets.size(), 10u) << h;
    for (size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_GE(buckets[i].second, buckets[i - 1].second) << h << " le=" << buckets[i].first;
    }
    EXPECT_EQ(buckets.back().second, m[h + "_count" + kLabel]) << h;
  }
  // A 4-token prefill of Llama-2-7B on an A100 is one weight pass, ~8-9 ms, after the 4 ms serving
  // front end: no TTFT at or below 10 ms (never faster than the model); a busy machine only makes
  // them later, so only "never faster" is asserted.
  const std::string ttft = "vllm:time_to_first_token_seconds_bucket{model_name=\"sim-model\",le=";
  EXPECT_EQ(m[ttft + "\"0.01\"}"], 0);
  // ITL sum: 12 decode steps of ~8.6 ms each, never shorter than the model's step (a loaded
  // machine only stretches them).
  EXPECT_GE(m["vllm:inter_token_latency_seconds_sum" + kLabel] / 12, 0.0087 - 0.0015);
}

// Opens a streaming request on a raw socket, reads until the first token, then closes.
void stream_then_disconnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string body =
      R"({"prompt":"a b c d e f g h i j k l m n o p q r s t u v w x y z","max_tokens":2000,)"
      R"("ignore_eos":true,"stream":true})";
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[4096];
  while (got.find("\"text\":\"The \"") == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
}

TEST(SimServer, ClientDisconnectAbortsTheRequestAndFreesItsKv) {
  auto s = start_server();
  stream_then_disconnect(s->port());
  const int64_t deadline = mono_ns() + 5'000'000'000;
  while (s->counters().aborted.load() < 1 && mono_ns() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(s->counters().aborted.load(), 1);
  EXPECT_EQ(s->counters().finished.load(), 0);
  auto m = scrape(*s);
  EXPECT_EQ(m["vllm:num_requests_running" + kLabel], 0);
  EXPECT_EQ(m["vllm:kv_cache_usage_perc" + kLabel], 0);
  EXPECT_EQ(m["vllm:request_success_total{model_name=\"sim-model\",finished_reason=\"abort\"}"], 1);
  s->stop();
  EXPECT_EQ(s->report().engine.aborted_total, 1);
  EXPECT_EQ(s->report().engine.kv_blocks_used, 0);
}

RequestTimeline median_by(std::vector<RequestTimeline>& v, double (*key)(const RequestTimeline&)) {
  std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return v[v.size() / 2];
}
double ttft_ms(const RequestTimeline& t) {
  return ns_to_ms(t.token_events.front().t_ns - t.send_ns);
}
double tpot_ms(const RequestTimeline& t) {
  const auto& e = t.token_events;
  return ns_to_ms(e.back().t_ns - e.front().t_ns) / static_cast<double>(e.size() - 1);
}

struct Measured {
  std::vector<RequestTimeline> ok;
  int64_t failed = 0;
};

Measured bench(const SimServer& s, int concurrency, int requests, int64_t prompt_words,
               int64_t output_tokens, bool unique) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = "completions";
  c.target.model = s.served_model();
  c.target.ignore_eos = true;
  c.prompt.text = paragraph_words(prompt_words);
  c.prompt.output_tokens = output_tokens;
  c.prompt.unique_prefix = unique;
  c.load.plan.levels = {
      LevelSpec{LoadMode::kConcurrency, double(concurrency), double(concurrency), 0}};
  c.load.plan.measure = PhaseLimit{0, requests};
  c.load.default_warmup = false;  // no warm-up: every request is measured
  c.load.stop_on_saturation = false;
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.run_id = "simserve";
  Measured out;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt), [&](const RequestTimeline& t) {
    if (t.phase != Phase::kMeasure) return;
    if (t.ok() && t.token_events.size() == static_cast<size_t>(output_tokens)) {
      out.ok.push_back(t);
    } else {
      ++out.failed;
    }
  });
  EXPECT_TRUE(runner.run());
  return out;
}

TEST(SimServer, BenchAgreesWithTheOfflineRunnerOnTheSameWorkload) {
  auto s = start_server();
  // Unique prompts: the offline runner shares no prefixes, so neither may the server.
  Measured live = bench(*s, 1, 6, 1000, 24, true);
  ASSERT_EQ(live.failed, 0);
  ASSERT_EQ(live.ok.size(), 6u);
  const int64_t prompt_tokens = live.ok.front().usage_prompt_tokens;
  EXPECT_EQ(prompt_tokens, 1006);  // 1000 words + the 6-word unique prefix

  OfflineWorkload w;
  w.prompt_tokens = prompt_tokens;
  w.output_tokens = 24;
  w.concurrency = 1;
  w.requests = 6;
  auto run = run_offline(s->cost(), EngineConfig{}, w);
  ASSERT_TRUE(run.ok());
  std::vector<RequestTimeline> offline = run->timelines;
  const double off_ttft = ttft_ms(median_by(offline, ttft_ms));
  const double off_tpot = tpot_ms(median_by(offline, tpot_ms));
  const double live_ttft = ttft_ms(median_by(live.ok, ttft_ms));
  const double live_tpot = tpot_ms(median_by(live.ok, tpot_ms));
  // Same engine, same workload: the live server is the offline run in real time. It can never be
  // faster than the model (a step's tokens go out no earlier than the step ends), and it stays
  // within a bound that holds on a loaded machine and under ASan (3x; the 5%/3% agreement on a
  // quiet machine is a precision goal for bench/, docs/BENCHMARKS.md).
  EXPECT_GE(live_ttft, 0.98 * off_ttft) << live_ttft << " vs " << off_ttft << " ms";
  EXPECT_LT(live_ttft, 3.0 * off_ttft) << live_ttft << " vs " << off_ttft << " ms";
  EXPECT_GT(live_tpot, 0.5 * off_tpot) << live_tpot << " vs " << off_tpot << " ms";
  EXPECT_LT(live_tpot, 3.0 * off_tpot) << live_tpot << " vs " << off_tpot << " ms";
}

TEST(SimServer, CarriesManyConcurrentStreams) {
  EngineConfig e;
  e.max_num_seqs = 1024;
  auto s = start_server(e);
  Measured live = bench(*s, 600, 600, 8, 8, false);
  EXPECT_EQ(live.failed, 0);
  EXPECT_EQ(live.ok.size(), 600u);
  s->stop();
  const SimServerReport r = s->report();
  EXPECT_EQ(r.tokens_emitted, 600 * 8);
  // Steps carried the streams in large batches rather than one by one.
  EXPECT_LT(r.engine.steps_total, 600);
}

// Sessions through the HTTP serving path: the prompt text of turn k starts with turn k-1's, so the
// server's text-derived block hashes hit its prefix cache without any help from the client.
BenchConfig chat_config(const SimServer& s, int requests) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = "chat";
  c.target.model = s.served_model();
  c.target.ignore_eos = true;
  c.prompt.text = paragraph_words(300);
  c.prompt.output_tokens = 12;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1, 1, 0}};
  c.load.plan.measure = PhaseLimit{0, requests};
  c.load.default_warmup = false;
  c.load.stop_on_saturation = false;
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.run_id = "simchat";
  return c;
}

std::vector<RequestTimeline> run_chat(const BenchConfig& c) {
  std::vector<RequestTimeline> got;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { got.push_back(t); });
  EXPECT_TRUE(runner.run());
  return got;
}

TEST(SimServer, SessionTurnsGrowByTheRepliesAndHitThePrefixCache) {
  auto s = start_server();
  BenchConfig c = chat_config(*s, 3);
  c.load.sessions = parse_turns("3").value();
  std::vector<RequestTimeline> got = run_chat(c);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].error.message;
    EXPECT_EQ(got[i].turn, static_cast<int32_t>(i + 1));
  }
  // Turn k's prompt: turn k-1's, its 12-token reply and the 300 new words.
  EXPECT_EQ(got[0].usage_prompt_tokens, 300);
  EXPECT_EQ(got[1].usage_prompt_tokens, 300 + 12 + 300);
  EXPECT_EQ(got[2].usage_prompt_tokens, 2 * (300 + 12) + 300);
  s->stop();
  EXPECT_GT(s->report().engine.prefix_hit_tokens, 0);
}

TEST(SimServer, RequestsWithToolsGetAToolCallWhoseArgumentsCloseWithTheLastToken) {
  auto s = start_server();
  BenchConfig c = chat_config(*s, 2);
  c.prompt.text = paragraph_words(50);
  c.target.tools_json = R"([{"type":"function","function":{"name":"search"}}])";
  std::vector<RequestTimeline> got = run_chat(c);
  ASSERT_EQ(got.size(), 2u);
  for (const RequestTimeline& t : got) {
    ASSERT_TRUE(t.ok()) << t.error.message;
    ASSERT_EQ(t.token_events.size(), 12u);  // every argument fragment is a token event
    EXPECT_TRUE(t.tool_call_seen);
    EXPECT_EQ(t.tool_call_ns, t.token_events.back().t_ns);
    EXPECT_TRUE(std::isnan(compute_request_metrics(t).ttfo_ms));  // no visible content
  }
}

}  // namespace
}  // namespace tokperf::sim
