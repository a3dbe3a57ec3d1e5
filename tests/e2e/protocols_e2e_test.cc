// End-to-end per protocol: BenchRunner (transport, SSE or NDJSON framing, each protocol's
// classifier) against `sim serve`'s own path for that protocol, compared with the simulator's
// schedule (the offline runner on the same workload) and with the server's own timings. Then
// servers that answer in another protocol than --api: the first request fails naming what arrived
// and the --api that would fit. Bounds are loose on purpose (a busy 2-core CI machine): what is
// asserted is behaviour — counts, causality, and agreement with the schedule within a margin that
// only a wrong event (a token counted at the wrong time) could exceed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "net/event_loop.h"
#include "net/http_server.h"
#include "sim/offline_runner.h"
#include "sim/sim_server.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

std::unique_ptr<sim::SimServer> start_sim() {
  auto d = sim::resolve_deployment(sim::DeploymentFlags{});
  EXPECT_TRUE(d.ok());
  sim::SimServerOptions o;
  o.deployment = *d;
  o.served_model = "sim-model";
  auto s = sim::SimServer::create(o);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE((*s)->start().ok());
  return std::move(s).value();
}

BenchConfig config(const std::string& base_url, const std::string& api, int requests,
                   int64_t prompt_words, int64_t output_tokens) {
  BenchConfig c;
  c.target.base_url = base_url;
  c.target.api = api;
  c.target.model = "sim-model";
  c.target.ignore_eos = true;
  c.prompt.text = paragraph_words(prompt_words);
  c.prompt.output_tokens = output_tokens;
  c.prompt.unique_prefix = true;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1.0, 1.0, 0}};
  c.load.plan.measure = PhaseLimit{0, requests};
  c.load.default_warmup = false;
  c.load.stop_on_saturation = false;
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.run_id = "protocols";
  return c;
}

std::vector<RequestTimeline> run(const BenchConfig& c) {
  std::vector<RequestTimeline> out;
  auto builder = RequestBuilder::create(c.target, c.prompt);
  EXPECT_TRUE(builder.ok()) << builder.error();
  BenchRunner runner(c, *builder, [&](const RequestTimeline& t) {
    if (t.phase == Phase::kMeasure) out.push_back(t);
  });
  EXPECT_TRUE(runner.run());
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class ProtocolAgainstSim : public ::testing::TestWithParam<const char*> {};

TEST_P(ProtocolAgainstSim, TtftTpotTokensAndServerTimingsMatchTheSchedule) {
  const std::string api = GetParam();
  auto s = start_sim();
  constexpr int kRequests = 4;
  constexpr int64_t kOut = 24;
  std::vector<RequestTimeline> got = run(config(s->base_url(), api, kRequests, 1000, kOut));
  ASSERT_EQ(got.size(), static_cast<size_t>(kRequests));

  std::vector<double> ttft, tpot;
  for (const RequestTimeline& t : got) {
    ASSERT_TRUE(t.ok()) << api << ": " << t.error.message;
    const RequestMetrics m = compute_request_metrics(t);
    EXPECT_EQ(t.token_events.size(), static_cast<size_t>(kOut)) << api;
    EXPECT_EQ(m.output_tokens, kOut) << api;
    EXPECT_TRUE(m.output_tokens_from_usage) << api;  // every protocol reports a count
    EXPECT_EQ(m.prompt_tokens, 1006) << api;         // 1000 words + the 6-word unique prefix
    EXPECT_TRUE(t.saw_done) << api;
    EXPECT_GT(t.first_visible_ns, 0) << api;
    ttft.push_back(m.ttft_ms);
    tpot.push_back(m.tpot_ms);
    const bool timed = api == "llamacpp" || api == "ollama" || api == "ollama-generate";
    EXPECT_EQ(t.server.present(), timed) << api;
    if (timed) {
      // The server's prefill interval lies inside the client's TTFT (same monotonic clock).
      EXPECT_GT(t.server.prompt_ms, 0) << api;
      EXPECT_LE(t.server.prompt_ms, m.ttft_ms) << api;
      EXPECT_GT(t.server.decode_ms, 0) << api;
      EXPECT_EQ(t.server.predicted_tokens, kOut) << api;
      EXPECT_EQ(t.server.prompt_tokens, 1006) << api;
    }
  }

  sim::OfflineWorkload w;
  w.prompt_tokens = 1006;
  w.output_tokens = kOut;
  w.concurrency = 1;
  w.requests = kRequests;
  auto off = sim::run_offline(s->cost(), sim::EngineConfig{}, w);
  ASSERT_TRUE(off.ok());
  std::vector<double> off_ttft, off_tpot;
  for (const RequestTimeline& t : off->timelines) {
    const RequestMetrics m = compute_request_metrics(t);
    off_ttft.push_back(m.ttft_ms);
    off_tpot.push_back(m.tpot_ms);
  }
  const double lt = median(ttft), ot = median(off_ttft);
  const double lp = median(tpot), op = median(off_tpot);
  // Never earlier than the schedule (the client cannot see a token before it is made); later
  // only by loopback and scheduling noise, far less than a step or a prefill.
  EXPECT_GE(lt, ot * 0.95) << api << ": live TTFT " << lt << " ms vs schedule " << ot;
  EXPECT_LE(lt, ot * 1.5 + 25) << api << ": live TTFT " << lt << " ms vs schedule " << ot;
  EXPECT_GE(lp, op * 0.8) << api << ": live TPOT " << lp << " ms vs schedule " << op;
  EXPECT_LE(lp, op * 1.5 + 5) << api << ": live TPOT " << lp << " ms vs schedule " << op;
}

INSTANTIATE_TEST_SUITE_P(EveryProtocol, ProtocolAgainstSim,
                         ::testing::Values("chat", "completions", "anthropic", "responses",
                                           "ollama", "ollama-generate", "tgi", "llamacpp"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A server that answers every POST with the same content type and body.
class FixedServer {
 public:
  FixedServer(std::string content_type, std::string body, int status = 200)
      : content_type_(std::move(content_type)), body_(std::move(body)), status_(status) {
    http_ = std::make_unique<HttpServer>(loop_,
                                         [this](HttpRequest&, std::shared_ptr<HttpResponse> resp) {
                                           HttpHeaders h;
                                           if (!content_type_.empty())
                                             h.emplace_back("Content-Type", content_type_);
                                           resp->start(status_, h, HttpResponse::Mode::kChunked);
                                           resp->write(body_);
                                           resp->finish();
                                         });
    EXPECT_TRUE(http_->listen("127.0.0.1", 0).ok());
    thread_ = std::thread([this] { loop_.run(); });
  }
  ~FixedServer() {
    loop_.post([this] {
      http_->close_all();
      loop_.stop();
    });
    thread_.join();
  }
  std::string base_url() const {
    return "http://127.0.0.1:" + std::to_string(http_->port()) + "/v1";
  }

 private:
  std::string content_type_, body_;
  int status_;
  EventLoop loop_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
};

RequestTimeline one_request(const FixedServer& s, const std::string& api) {
  BenchConfig c = config(s.base_url(), api, 1, 8, 4);
  std::vector<RequestTimeline> got = run(c);
  EXPECT_EQ(got.size(), 1u);
  return got.empty() ? RequestTimeline{} : got.front();
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

TEST(ProtocolMismatch, NdjsonToAnSseClientFailsNamingOllama) {
  FixedServer s("application/x-ndjson",
                "{\"model\":\"m\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\","
                "\"content\":\"Hi\"},\"done\":false}\n{\"model\":\"m\",\"created_at\":\"t\","
                "\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n");
  RequestTimeline t = one_request(s, "chat");
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error.kind, ErrorKind::kNotStreaming);
  EXPECT_TRUE(has(t.error.message, "newline-delimited JSON")) << t.error.message;
  EXPECT_TRUE(has(t.error.message, "try --api ollama")) << t.error.message;
}

TEST(ProtocolMismatch, NdjsonWithoutAContentTypeStillFailsNamingIt) {
  FixedServer s("", "{\"model\":\"m\",\"response\":\"Hi\",\"done\":false}\n");
  RequestTimeline t = one_request(s, "completions");
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error.kind, ErrorKind::kParse);
  EXPECT_TRUE(has(t.error.message, "try --api ollama-generate")) << t.error.message;
}

TEST(ProtocolMismatch, AnthropicEventsToAChatClient) {
  FixedServer s("text/event-stream",
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"
                "\"m\",\"role\":\"assistant\"}}\n\nevent: message_stop\ndata: "
                "{\"type\":\"message_stop\"}\n\n");
  RequestTimeline t = one_request(s, "chat");
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error.kind, ErrorKind::kParse);
  EXPECT_TRUE(has(t.error.message, "try --api anthropic")) << t.error.message;
}

TEST(ProtocolMismatch, SseToAnOllamaClient) {
  FixedServer s("text/event-stream",
                "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n");
  RequestTimeline t = one_request(s, "ollama");
  EXPECT_FALSE(t.ok());
  EXPECT_TRUE(has(t.error.message, "server-sent events")) << t.error.message;
  EXPECT_TRUE(has(t.error.message, "try --api chat")) << t.error.message;
}

TEST(ProtocolMismatch, HtmlFromAProxy) {
  FixedServer s("text/html", "<html><body><h1>Welcome to nginx!</h1></body></html>");
  RequestTimeline t = one_request(s, "tgi");
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error.kind, ErrorKind::kNotStreaming);
  EXPECT_TRUE(has(t.error.message, "HTML page")) << t.error.message;
  EXPECT_TRUE(has(t.error.message, "Welcome to nginx")) << t.error.message;
}

TEST(ProtocolMismatch, AnErrorInTheProtocolsOwnFormIsAStreamError) {
  FixedServer s("application/x-ndjson", "{\"error\":\"model 'm' not found\"}\n");
  RequestTimeline t = one_request(s, "ollama");
  EXPECT_EQ(t.error.kind, ErrorKind::kStreamError);
  EXPECT_TRUE(has(t.error.message, "model 'm' not found")) << t.error.message;
}

TEST(ProtocolMismatch, NoEndpointForThisApiSuggestsProbing) {
  FixedServer s("application/json",
                R"({"error":{"code":404,"message":"File Not Found","type":"not_found_error"}})",
                404);
  RequestTimeline t = one_request(s, "ollama");
  EXPECT_EQ(t.error.kind, ErrorKind::kHttp);
  EXPECT_TRUE(has(t.error.message, "File Not Found")) << t.error.message;
  EXPECT_TRUE(has(t.error.message, "--api auto")) << t.error.message;
}

}  // namespace
}  // namespace tokperf
