// Fuzz target for the built-in HTTP/1.1 client's response handling (client/plain_http.h), end to
// end over loopback TCP: the harness listens on 127.0.0.1, the client connects and sends a request,
// the harness writes the fuzz input as the server's reply and closes. Input: byte 0 mod 4 = number
// of split points, the next bytes place them, the rest is the reply. The reply is sent once whole
// and once in pieces (the client's loop running between pieces). Invariants: the transfer completes
// exactly once and nothing stays in flight; success means a final status (>= 200) was read; the
// body handed over is never longer than the reply; whole and split give the same code, status,
// content type and body (framing state carried across reads never changes the outcome).
// See docs/FUZZING.md.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/plain_http.h"
#include "core/clock.h"
#include "net/event_loop.h"

namespace {

using tokperf::EventLoop;
using tokperf::PlainHttpClient;
using tokperf::PlainHttpUrl;
using tokperf::StreamHandler;
using tokperf::StreamRequest;
using tokperf::TransferResult;

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "http_response_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

struct Collect : StreamHandler {
  int status = 0;
  std::string content_type;
  std::string body;
  int completes = 0;
  TransferResult result;
  void on_headers(int s, std::string_view ct, int64_t) override {
    status = s;
    content_type.assign(ct);
  }
  bool on_body(std::string_view b, int64_t) override {
    body.append(b);
    return true;
  }
  void on_complete(const TransferResult& r, int64_t) override {
    result = r;
    completes++;
  }
};

struct Harness {
  EventLoop loop;
  int listen_fd = -1;
  PlainHttpUrl url;
  Harness() {
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "bind");
    check(listen(listen_fd, 64) == 0, "listen");
    socklen_t len = sizeof a;
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    std::string u = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1/x";
    check(tokperf::parse_plain_http_url(u, &url), "url");
  }
};

Harness& harness() {
  static Harness* h = new Harness();  // lives for the process (libFuzzer never returns)
  return *h;
}

// One request; the reply goes out in `pieces`, then the server side closes.
Collect run(const std::vector<std::string_view>& pieces) {
  Harness& h = harness();
  Collect c;
  {
    PlainHttpClient client(h.loop, 2'000'000'000);
    StreamRequest req;
    req.body = "{}";
    req.headers = {"Content-Type: application/json"};
    client.start(req, h.url, &c);
    pollfd p{h.listen_fd, POLLIN, 0};
    check(poll(&p, 1, 2000) == 1, "the client never connected");
    int fd = accept4(h.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    check(fd >= 0, "accept");
    // Read the whole request (the client sends it once the connection is writable).
    std::string got;
    const int64_t give_up = tokperf::mono_ns() + 2'000'000'000;
    while (got.find("\r\n\r\n{}") == std::string::npos && tokperf::mono_ns() < give_up) {
      h.loop.run_once(1'000'000);
      char buf[4096];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
    }
    check(got.find("\r\n\r\n{}") != std::string::npos, "the request never arrived whole");
    for (std::string_view piece : pieces) {
      while (!piece.empty()) {
        ssize_t n = send(fd, piece.data(), piece.size(), MSG_NOSIGNAL);
        if (n <= 0) break;  // the client closed: it has decided already
        piece.remove_prefix(static_cast<size_t>(n));
      }
      for (int i = 0; i < 3 && c.completes == 0; ++i) h.loop.run_once(0);
    }
    close(fd);
    while (c.completes == 0 && tokperf::mono_ns() < give_up) h.loop.run_once(10'000'000);
    check(c.completes == 1, "the transfer did not complete exactly once");
    check(client.in_flight() == 0, "a transfer stayed in flight");
  }  // the client closes its idle connections here
  check(c.completes == 1, "on_complete ran again at teardown");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t splits = data[0] % 4;
  if (size < 1 + splits) return 0;
  std::string_view reply(reinterpret_cast<const char*>(data + 1 + splits), size - 1 - splits);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < splits; ++i) cuts.push_back(reply.empty() ? 0 : data[1 + i] % (reply.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string_view> pieces;
  size_t at = 0;
  for (size_t cut : cuts) {
    pieces.push_back(reply.substr(at, cut - at));
    at = cut;
  }
  pieces.push_back(reply.substr(at));

  Collect whole = run({reply});
  Collect split = run(pieces);
  for (const Collect* c : {&whole, &split}) {
    if (c->result.code == CURLE_OK) check(c->status >= 200, "success without a final status");
    check(c->body.size() <= reply.size(), "more body than reply bytes");
  }
  check(whole.result.code == split.result.code, "whole and split replies end differently");
  check(whole.status == split.status, "whole and split replies give other statuses");
  check(whole.content_type == split.content_type, "whole and split give other content types");
  check(whole.body == split.body, "whole and split replies give other bodies");
  return 0;
}
