// Tests for tests/support/scripted_server.h (kept here: the test glob only takes
// tests/*/*_test.cc).
#include "support/scripted_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace tokperf::testing_support {
namespace {

struct RawReply {
  int status = 0;
  std::string head;
  std::vector<std::string> chunks;  // chunked body pieces, in order
  std::string body;                 // all chunks joined (or the Content-Length body)
  bool complete = false;            // terminating chunk / full length seen
};

// One request with "Connection: close", read until EOF, reset or timeout_ms.
RawReply request(uint16_t port, const std::string& method, const std::string& path,
                 const std::string& body, const std::string& extra_headers = "",
                 int timeout_ms = 3000) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  RawReply r;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return r;
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" +
                    extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                    body;
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string raw;
  char buf[8192];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = raw.substr(0, end + 2);
  r.status = std::stoi(raw.substr(9, 3));
  std::string rest = raw.substr(end + 4);
  if (r.head.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = rest;
    r.complete = true;
    return r;
  }
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t eol = rest.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t len = std::stoul(rest.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) {
      r.complete = true;
      break;
    }
    if (eol + 2 + len + 2 > rest.size()) break;
    r.chunks.push_back(rest.substr(eol + 2, len));
    r.body += r.chunks.back();
    pos = eol + 2 + len + 2;
  }
  return r;
}

RawReply chat(uint16_t port, const std::string& body_json, const std::string& script = "",
              int timeout_ms = 3000) {
  std::string h = "X-Request-Id: req-1\r\nAuthorization: Bearer sk-test\r\n";
  if (!script.empty()) h += "X-Test-Script: " + script + "\r\n";
  return request(port, "POST", "/v1/chat/completions", body_json, h, timeout_ms);
}

const char* kStreamBody =
    R"({"model":"m","messages":[{"role":"user","content":"one two three"}],"stream":true})";

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(ScriptedServerTest, TokenEventsFollowTheScheduleAtConcurrencyOne) {
  ScriptedServerOptions opts;
  opts.script.ttft_ms = 30;
  opts.script.itl_ms = 10;
  opts.script.tokens = 5;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply r = chat(server.port(), kStreamBody);
  server.stop();
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_NE(r.head.find("Content-Type: text/event-stream"), std::string::npos);
  EXPECT_EQ(count(r.body, "\"content\":\"w"), 5);
  EXPECT_EQ(count(r.body, "\"role\":\"assistant\""), 1);
  EXPECT_NE(r.body.find("\"finish_reason\":\"stop\""), std::string::npos);
  EXPECT_NE(r.body.find("data: [DONE]\n\n"), std::string::npos);

  auto recs = server.records();
  ASSERT_EQ(recs.size(), 1u);
  const auto& rec = recs[0];
  EXPECT_EQ(rec.request_id, "req-1");
  EXPECT_EQ(rec.authorization, "Bearer sk-test");
  EXPECT_EQ(rec.body["messages"][0]["content"], "one two three");
  EXPECT_EQ(rec.outcome, "ok");
  ASSERT_EQ(rec.token_event_send_ns.size(), 5u);
  ASSERT_EQ(rec.token_event_due_ns.size(), 5u);
  // The schedule itself is exact: due_k = service start + 30 ms + k * 10 ms.
  EXPECT_EQ(rec.service_start_ns, rec.received_ns);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_NEAR(rec.token_event_due_ns[k] - rec.service_start_ns, (30 + 10 * k) * 1'000'000, 1000)
        << "event " << k;
  }
  // Sends follow it: never early, in order. How late they are depends on the machine's load, so
  // it is measured by bench/stream_timestamp_bench (docs/BENCHMARKS.md), not asserted here.
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_GE(rec.token_event_send_ns[k], rec.token_event_due_ns[k]) << "event " << k;
    if (k > 0) {
      EXPECT_GE(rec.token_event_send_ns[k], rec.token_event_send_ns[k - 1]) << k;
    }
  }
}

TEST(ScriptedServerTest, MaxTokensCapsAndIgnoreEosExtends) {
  ScriptedServerOptions opts;
  opts.script.ttft_ms = 1;
  opts.script.itl_ms = 0;
  opts.script.tokens = 6;
  opts.script.tokens_per_chunk = 2;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply capped = chat(server.port(),
                         R"({"messages":[],"stream":true,"max_tokens":3,
                             "stream_options":{"include_usage":true}})");
  RawReply extended =
      chat(server.port(), R"({"messages":[],"stream":true,"max_tokens":9,"ignore_eos":true})");
  server.stop();
  // 3 tokens in chunks of 2: "w0 w1 " then "w2 "; finish "length"; usage in a choices:[] chunk.
  EXPECT_NE(capped.body.find("\"content\":\"w0 w1 \""), std::string::npos);
  EXPECT_NE(capped.body.find("\"content\":\"w2 \""), std::string::npos);
  EXPECT_EQ(count(capped.body, "\"content\":\"w"), 2);
  EXPECT_NE(capped.body.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_NE(capped.body.find(R"("choices":[],"usage":{"prompt_tokens":0,"completion_tokens":3)"),
            std::string::npos);
  EXPECT_EQ(count(extended.body, "\"content\":\"w"), 5);  // 9 tokens, 2 per chunk
  EXPECT_EQ(extended.body.find("usage"), std::string::npos);
  auto recs = server.records();
  EXPECT_EQ(recs[0].output_tokens, 3);
  EXPECT_EQ(recs[1].output_tokens, 9);
  EXPECT_EQ(recs[1].tokens_per_event, (std::vector<int>{2, 2, 2, 2, 1}));
}

TEST(ScriptedServerTest, HttpFaultsAnswerWithTheirStatus) {
  ScriptedServer server;
  ASSERT_TRUE(server.start().ok());
  RawReply r500 = chat(server.port(), kStreamBody, R"({"fault":"http500"})");
  RawReply r429 = chat(server.port(), kStreamBody, R"({"fault":"http429","retry_after_s":7})");
  RawReply r401 = chat(server.port(), kStreamBody, R"({"fault":"http401"})");
  RawReply bad = chat(server.port(), kStreamBody, R"({"no_such_key":1})");
  server.stop();
  EXPECT_EQ(r500.status, 500);
  EXPECT_NE(r500.body.find("\"error\""), std::string::npos);
  EXPECT_EQ(r429.status, 429);
  EXPECT_NE(r429.head.find("Retry-After: 7\r\n"), std::string::npos);
  EXPECT_EQ(r401.status, 401);
  EXPECT_EQ(bad.status, 400);
  auto c = server.counts();
  EXPECT_EQ(c["http500"], 1);
  EXPECT_EQ(c["http429"], 1);
  EXPECT_EQ(c["http401"], 1);
  EXPECT_EQ(c["bad_request"], 1);
}

TEST(ScriptedServerTest, StreamFaultsBreakTheStreamAsScripted) {
  ScriptedServerOptions opts;
  opts.script.ttft_ms = 2;
  opts.script.itl_ms = 2;
  opts.script.tokens = 4;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply cut = chat(server.port(), kStreamBody, R"({"fault":"disconnect","fault_at_token":2})");
  RawReply bad =
      chat(server.port(), kStreamBody, R"({"fault":"malformed_json","fault_at_token":1})");
  RawReply stall =
      chat(server.port(), kStreamBody, R"({"fault":"stall","fault_at_token":2,"stall_ms":40})");
  RawReply whole = chat(server.port(), kStreamBody, R"({"fault":"non_streaming"})");
  RawReply hang = chat(server.port(), kStreamBody, R"({"fault":"hang"})", 200);
  server.stop();

  EXPECT_FALSE(cut.complete);
  EXPECT_EQ(count(cut.body, "\"content\":\"w"), 2);
  EXPECT_EQ(cut.body.find("[DONE]"), std::string::npos);

  EXPECT_TRUE(bad.complete);
  EXPECT_NE(bad.body.find("\"delta\":{\"content\":\"w1\n\n"), std::string::npos) << bad.body;
  EXPECT_EQ(count(bad.body, "\"content\":\"w"), 4);  // three well-formed + the broken one

  EXPECT_TRUE(stall.complete);
  EXPECT_EQ(whole.status, 200);
  EXPECT_NE(whole.head.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(whole.body.find("\"content\":\"w0 w1 w2 w3 \""), std::string::npos);
  EXPECT_EQ(hang.status, 0);  // nothing at all within the client's 200 ms

  auto recs = server.records();
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[0].outcome, "disconnect");
  EXPECT_EQ(recs[0].token_event_send_ns.size(), 2u);
  EXPECT_EQ(recs[1].outcome, "malformed_json");
  const auto& st = recs[2].token_event_send_ns;
  ASSERT_EQ(st.size(), 4u);
  const auto& due = recs[2].token_event_due_ns;
  for (size_t k = 0; k < st.size(); ++k) EXPECT_GE(st[k], due[k]) << k;  // never early
  EXPECT_NEAR((due[2] - due[1]) / 1e6, 42.0, 0.01);
  EXPECT_NEAR((due[3] - due[2]) / 1e6, 2.0, 0.01);
  EXPECT_EQ(recs[3].outcome, "non_streaming");
  EXPECT_EQ(recs[4].outcome, "hang");
}

TEST(ScriptedServerTest, LineEndingsAndComments) {
  ScriptedServerOptions opts;
  opts.script.ttft_ms = 1;
  opts.script.itl_ms = 1;
  opts.script.tokens = 3;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply crlf = chat(server.port(), kStreamBody, R"({"line_ending":"crlf","comment_every":2})");
  RawReply cr = chat(server.port(), kStreamBody, R"({"line_ending":"cr"})");
  server.stop();
  // role, 3 tokens, finish, [DONE] = 6 events → comments before the 2nd, 4th and 6th.
  EXPECT_EQ(count(crlf.body, ": keep-alive\r\n"), 3);
  EXPECT_EQ(count(crlf.body, "\r\n\r\n"), 6);
  EXPECT_EQ(count(crlf.body, "\n"), count(crlf.body, "\r\n"));
  EXPECT_EQ(cr.body.find('\n'), std::string::npos);
  EXPECT_NE(cr.body.find("data: [DONE]\r\r"), std::string::npos);
}

TEST(ScriptedServerTest, SplitWritesCutMidFieldAndMidLineEnding) {
  ScriptedServerOptions opts;
  opts.script.ttft_ms = 10;
  opts.script.itl_ms = 10;
  opts.script.tokens = 2;
  opts.script.role = RoleEvent::kNone;
  opts.script.split_writes = true;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply lf = chat(server.port(), kStreamBody);
  RawReply crlf = chat(server.port(), kStreamBody, R"({"line_ending":"crlf"})");
  server.stop();
  // 2 tokens + finish + [DONE], 3 pieces each, one HTTP chunk per write.
  ASSERT_EQ(lf.chunks.size(), 12u);
  EXPECT_EQ(lf.chunks[0], "dat");
  EXPECT_EQ(lf.chunks[2], "\n");
  EXPECT_EQ(lf.chunks[1].substr(0, 3), "a: ");
  ASSERT_EQ(crlf.chunks.size(), 12u);
  EXPECT_EQ(crlf.chunks[2], "\n\r\n");  // the cut falls between CR and LF
  auto recs = server.records();
  ASSERT_EQ(recs[0].token_event_send_ns.size(), 2u);
  // The piece completing each event is the one sent at the event's deadline.
  EXPECT_NEAR((recs[0].token_event_due_ns[0] - recs[0].received_ns) / 1e6, 10.0, 0.01);
  EXPECT_GE(recs[0].token_event_send_ns[0], recs[0].token_event_due_ns[0]);
  EXPECT_GE(recs[0].token_event_send_ns[1], recs[0].token_event_due_ns[1]);
}

TEST(ScriptedServerTest, QueueModelMakesLaterRequestsWaitForASlot) {
  ScriptedServerOptions opts;
  opts.queue_slots = 2;
  opts.script.ttft_ms = 40;
  opts.script.itl_ms = 10;
  opts.script.tokens = 3;  // service time 40 + 2 * 10 = 60 ms
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  std::vector<std::thread> clients;
  std::vector<RawReply> replies(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] { replies[i] = chat(server.port(), kStreamBody); });
  }
  for (auto& t : clients) t.join();
  server.stop();
  for (const auto& r : replies) EXPECT_TRUE(r.complete);
  auto recs = server.records();
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& r : recs) {
    // TTFT counts from leaving the queue.
    EXPECT_NEAR((r.token_event_due_ns[0] - r.service_start_ns) / 1e6, 40.0, 0.01);
  }
  // The queue's rules, whatever the machine's speed (how the four arrivals spread in time is up
  // to the scheduler): never more than two in service at once (a slot is held for the 60 ms
  // schedule at least); the first two to start never waited; one that waited started only once a
  // slot's 60 ms had run out.
  constexpr int64_t kServiceNs = 60'000'000;
  std::sort(recs.begin(), recs.end(),
            [](const auto& a, const auto& b) { return a.service_start_ns < b.service_start_ns; });
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_GE(recs[i].service_start_ns, recs[i].received_ns) << i;
    int in_service = 0;
    for (size_t j = 0; j < i; ++j) {
      in_service += recs[i].service_start_ns < recs[j].service_start_ns + kServiceNs;
    }
    EXPECT_LE(in_service, 1) << "request " << i << " started while two were in service";
    if (i < 2) {
      EXPECT_EQ(recs[i].service_start_ns, recs[i].received_ns) << i;
    }
    if (recs[i].service_start_ns > recs[i].received_ns) {
      EXPECT_GE(recs[i].service_start_ns, recs[0].service_start_ns + kServiceNs) << i;
    }
  }
}

TEST(ScriptedServerTest, ModelsTokenizeHealthAndCompletionsShape) {
  ScriptedServerOptions opts;
  opts.model_id = "my-model";
  opts.max_model_len = 2048;
  opts.script.ttft_ms = 1;
  opts.script.itl_ms = 1;
  opts.script.tokens = 2;
  ScriptedServer server(opts);
  ASSERT_TRUE(server.start().ok());
  RawReply models = request(server.port(), "GET", "/v1/models", "");
  RawReply tok = request(server.port(), "POST", "/tokenize", R"({"prompt":"a b  c a"})");
  RawReply health = request(server.port(), "GET", "/health", "");
  RawReply comp =
      request(server.port(), "POST", "/v1/completions",
              R"({"prompt":"x y","stream":true,"stream_options":{"include_usage":true}})");
  server.stop();
  auto m = nlohmann::json::parse(models.body);
  EXPECT_EQ(m["data"][0]["id"], "my-model");
  auto t = nlohmann::json::parse(tok.body);
  EXPECT_EQ(t["count"], 4);
  EXPECT_EQ(t["tokens"][0], t["tokens"][3]);  // same word, same id
  EXPECT_EQ(t["max_model_len"], 2048);
  EXPECT_EQ(health.status, 200);
  EXPECT_NE(comp.body.find(R"("choices":[{"index":0,"text":"w0 ","finish_reason":null}])"),
            std::string::npos);
  EXPECT_NE(comp.body.find(R"("prompt_tokens":2,"completion_tokens":2)"), std::string::npos);
  EXPECT_EQ(comp.body.find("role"), std::string::npos);

  ScriptedServerOptions off;
  off.tokenize_enabled = false;
  ScriptedServer no_tok(off);
  ASSERT_TRUE(no_tok.start().ok());
  EXPECT_EQ(request(no_tok.port(), "POST", "/tokenize", R"({"prompt":"a"})").status, 404);
}

TEST(ScriptedServerTest, FaultFractionsAreSeededAndDeterministic) {
  auto run = [](uint64_t seed) {
    ScriptedServerOptions opts;
    opts.seed = seed;
    opts.script.ttft_ms = 0;
    opts.script.itl_ms = 0;
    opts.script.tokens = 1;
    opts.fault_fractions[Fault::kHttp500] = 0.5;
    ScriptedServer server(opts);
    EXPECT_TRUE(server.start().ok());
    std::vector<int> statuses;
    for (int i = 0; i < 16; ++i) statuses.push_back(chat(server.port(), kStreamBody).status);
    return statuses;
  };
  auto a = run(7), b = run(7);
  EXPECT_EQ(a, b);
  int n500 = static_cast<int>(std::count(a.begin(), a.end(), 500));
  EXPECT_GT(n500, 2);
  EXPECT_LT(n500, 14);
  EXPECT_EQ(static_cast<int>(std::count(a.begin(), a.end(), 200)), 16 - n500);
}

}  // namespace
}  // namespace tokperf::testing_support
