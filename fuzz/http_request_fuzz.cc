// Fuzz target for the built-in server's request parser (parse_http_request in net/http_server.h).
// Invariants: a complete request never claims more bytes than it was given, its path is the target
// up to '?', an error is one of the statuses the server answers; every prefix of a complete request
// is "need more" (or 431 once it passes the header limit), so a request split across reads never
// parses differently; parsing the bytes after a complete request (pipelining) keeps the invariants.
// Input layout: byte 0 picks the small limits, the rest is the buffer. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "net/http_server.h"

namespace {

using tokperf::HttpParseResult;
using tokperf::HttpRequest;

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "http_request_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

HttpParseResult parse_checked(std::string_view in, size_t max_head, size_t max_body,
                              HttpRequest& req) {
  HttpParseResult r = tokperf::parse_http_request(in, max_head, max_body, req);
  switch (r.kind) {
    case HttpParseResult::Kind::kNeedMore:
      check(in.size() <= max_head || in.find("\r\n\r\n") != std::string_view::npos,
            "need more past the header limit");
      break;
    case HttpParseResult::Kind::kError:
      check(r.status == 400 || r.status == 413 || r.status == 431 || r.status == 501,
            "unexpected error status");
      break;
    case HttpParseResult::Kind::kComplete:
      check(r.consumed > 0 && r.consumed <= in.size(), "consumed out of range");
      check(!req.method.empty() && !req.target.empty(), "empty method or target");
      check(req.target.compare(0, req.path.size(), req.path) == 0, "path is not a prefix");
      check(req.version_minor == 0 || req.version_minor == 1, "bad version");
      check(req.body.size() <= max_body, "body over the limit");
      break;
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t max_head = 64 + (data[0] & 0x0f) * 64;  // 64..1024
  const size_t max_body = (data[0] >> 4) * 256;        // 0..3840
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  HttpRequest req;
  HttpParseResult r = parse_checked(in, max_head, max_body, req);
  if (r.kind != HttpParseResult::Kind::kComplete) return 0;
  // Every shorter prefix waits for more bytes (or hits the header limit); never a different
  // verdict.
  for (size_t cut : {size_t{0}, r.consumed / 2, r.consumed - 1}) {
    HttpRequest part;
    HttpParseResult p = tokperf::parse_http_request(in.substr(0, cut), max_head, max_body, part);
    check(p.kind == HttpParseResult::Kind::kNeedMore ||
              (p.kind == HttpParseResult::Kind::kError && p.status == 431 && cut > max_head),
          "a prefix of a complete request did not wait for more");
  }
  // The same bytes parse to the same request.
  HttpRequest again;
  HttpParseResult r2 = tokperf::parse_http_request(in, max_head, max_body, again);
  check(r2.consumed == r.consumed && again.target == req.target && again.body == req.body &&
            again.headers == req.headers,
        "parse is not deterministic");
  // Pipelined: whatever follows is parsed as the next request.
  HttpRequest next;
  parse_checked(in.substr(r.consumed), max_head, max_body, next);
  return 0;
}
