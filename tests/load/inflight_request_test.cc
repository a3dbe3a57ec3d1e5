// One request on the wire (load/inflight_request.h): its timeline as the transport fills it, and
// how it ended, classified (docs/metrics.md, "errors"). Each case sends one request through a real
// Transport to the scripted server, whose X-Test-Script header picks the reply; the loop runs until
// the request's on_done. Behaviour only: kinds, counts and messages, never how long anything took.
#include "load/inflight_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/openai_adapter.h"
#include "client/transport.h"
#include "core/clock.h"
#include "net/event_loop.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::ScriptedServer;

// Every case runs on both HTTP clients: the built-in HTTP/1.1 one (kAuto on http://) and libcurl.
class InflightRequestTest : public ::testing::TestWithParam<HttpClientKind> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ScriptedServer>();
    ASSERT_TRUE(server_->start().ok());
  }

  // Sends one streaming chat request with this script and runs the loop until it is done.
  RequestTimeline send(const nlohmann::json& script, int64_t timeout_ns = 0,
                       std::string url = "") {
    StreamRequest r;
    r.url = url.empty() ? server_->base_url() + "/chat/completions" : url;
    r.body = R"({"model":"m","stream":true,"stream_options":{"include_usage":true},)"
             R"("max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
    r.headers = {"Content-Type: application/json", "X-Test-Script: " + script.dump()};
    r.timeout_ns = timeout_ns;
    return run(r);
  }

  RequestTimeline run(const StreamRequest& r) {
    int done = 0;
    request_.on_done = [&](InflightRequest*) { ++done; };
    RequestTimeline tl;
    tl.request_id = "req-" + std::to_string(++sent_);
    req_->start(tl, r, transport_);
    const int64_t give_up = mono_ns() + 30'000'000'000;
    while (done == 0 && mono_ns() < give_up) loop_.run_once(100'000'000);
    EXPECT_EQ(done, 1) << "on_done runs exactly once per request";
    return req_->timeline();
  }

  // The callback the request calls; replaced per send (the request keeps one function object).
  struct Done {
    std::function<void(InflightRequest*)> on_done;
  } request_;
  ChunkClassifier classifier_{ApiKind::kChat};
  EventLoop loop_;
  Transport transport_{loop_, [] {
    TransportOptions o;
    o.client = GetParam();
    return o;
  }()};
  std::unique_ptr<InflightRequest> req_ = std::make_unique<InflightRequest>(
      &classifier_, [this](InflightRequest* r) { request_.on_done(r); });
  std::unique_ptr<ScriptedServer> server_;
  int sent_ = 0;
};

TEST_P(InflightRequestTest, AStreamThatEndsWellHasItsTokensAndNoError) {
  const RequestTimeline tl = send({{"tokens", 4}, {"ttft_ms", 1}, {"itl_ms", 1}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kNone) << tl.error.message;
  EXPECT_EQ(tl.http_status, 200);
  ASSERT_EQ(tl.token_events.size(), 4u);
  EXPECT_TRUE(tl.saw_done);
  EXPECT_EQ(tl.usage_completion_tokens, 4);
  EXPECT_GT(tl.send_ns, 0);
  EXPECT_GE(tl.token_events.front().t_ns, tl.send_ns);
  EXPECT_GE(tl.end_ns, tl.token_events.back().t_ns);
  EXPECT_GT(tl.start_unix_us, 0);
}

TEST_P(InflightRequestTest, HttpRefusalsAreClassifiedWithTheServersWords) {
  RequestTimeline tl = send({{"fault", "http401"}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kAuth);
  EXPECT_EQ(tl.error.http_status, 401);
  EXPECT_NE(tl.error.message.find("API key was refused"), std::string::npos) << tl.error.message;
  tl = send({{"fault", "http429"}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kRateLimited);
  EXPECT_NE(tl.error.message.find("HTTP 429"), std::string::npos) << tl.error.message;
  tl = send({{"fault", "http500"}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kHttp);
  EXPECT_EQ(tl.error.http_status, 500);
  EXPECT_TRUE(tl.token_events.empty());
}

TEST_P(InflightRequestTest, AMissingEndpointSuggestsAnotherProtocol) {
  StreamRequest r;
  r.url = server_->base_url() + "/no/such/endpoint";
  r.body = "{}";
  r.headers = {"Content-Type: application/json"};
  const RequestTimeline tl = run(r);
  EXPECT_EQ(tl.error.kind, ErrorKind::kHttp);
  EXPECT_NE(tl.error.message.find("--api auto"), std::string::npos) << tl.error.message;
}

TEST_P(InflightRequestTest, ADroppedConnectionSaysHowFarTheStreamGot) {
  const RequestTimeline tl =
      send({{"tokens", 4}, {"fault", "disconnect"}, {"fault_at_token", 2}, {"itl_ms", 1}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kIncomplete) << tl.error.message;
  EXPECT_EQ(tl.token_events.size(), 2u);
  EXPECT_NE(tl.error.message.find("after 2 token events"), std::string::npos) << tl.error.message;
}

TEST_P(InflightRequestTest, MalformedEventsAndNonStreamingRepliesAreTheirOwnKinds) {
  RequestTimeline tl = send({{"tokens", 4}, {"fault", "malformed_json"}, {"fault_at_token", 1}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kParse) << tl.error.message;
  EXPECT_NE(tl.error.message.find("malformed event"), std::string::npos) << tl.error.message;
  tl = send({{"fault", "non_streaming"}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kNotStreaming) << tl.error.message;
  EXPECT_NE(tl.error.message.find("application/json"), std::string::npos) << tl.error.message;
}

TEST_P(InflightRequestTest, NoServerIsAConnectErrorAndAHangIsATimeout) {
  const uint16_t port = server_->port();
  server_->stop();
  RequestTimeline tl = send({}, 0, "http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions");
  EXPECT_EQ(tl.error.kind, ErrorKind::kConnect) << tl.error.message;
  server_ = std::make_unique<ScriptedServer>();
  ASSERT_TRUE(server_->start().ok());
  tl = send({{"fault", "hang"}}, 300'000'000);
  EXPECT_EQ(tl.error.kind, ErrorKind::kTimeout) << tl.error.message;
}

TEST_P(InflightRequestTest, AReusedRequestCarriesNothingOverFromTheLastOne) {
  RequestTimeline tl = send({{"fault", "http500"}});
  ASSERT_EQ(tl.error.kind, ErrorKind::kHttp);
  tl = send({{"tokens", 3}, {"ttft_ms", 1}, {"itl_ms", 1}});
  EXPECT_EQ(tl.error.kind, ErrorKind::kNone) << tl.error.message;
  EXPECT_TRUE(tl.error.message.empty());
  EXPECT_EQ(tl.http_status, 200);
  EXPECT_EQ(tl.token_events.size(), 3u);
  EXPECT_EQ(tl.request_id, "req-2");
}

TEST_P(InflightRequestTest, ACancelledTransferIsCancelledNotAnError) {
  int done = 0;
  request_.on_done = [&](InflightRequest*) { ++done; };
  StreamRequest r;
  r.url = server_->base_url() + "/chat/completions";
  r.body = R"({"model":"m","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
  r.headers = {"Content-Type: application/json", R"(X-Test-Script: {"fault":"hang"})"};
  req_->start(RequestTimeline{}, r, transport_);
  loop_.run_once(10'000'000);
  transport_.cancel(req_->transfer_id());
  EXPECT_EQ(done, 1);
  EXPECT_EQ(req_->timeline().error.kind, ErrorKind::kCancelled);
}

INSTANTIATE_TEST_SUITE_P(BothHttpClients, InflightRequestTest,
                         ::testing::Values(HttpClientKind::kAuto, HttpClientKind::kCurl),
                         [](const ::testing::TestParamInfo<HttpClientKind>& i) {
                           return i.param == HttpClientKind::kAuto ? std::string("builtin")
                                                                   : std::string("curl");
                         });

}  // namespace
}  // namespace tokperf
