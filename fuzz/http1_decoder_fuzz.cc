// Fuzz target for the HTTP/1.1 response decoder (client/http1_decoder.h), the built-in client's
// framing, in memory (http_response_fuzz drives the same code through sockets, far slower).
// Input: byte 0: bits 0-2 = number of split points, bit 3 = the peer closes after the last byte
// (eof()); the next bytes place the split points, the rest is the reply.
// Invariants:
// - fed whole, in the pieces and one byte at a time, the decoder ends the same way: result,
//   status, content type, framing, keep-alive, error and message, body, and the byte at which
//   the response ended;
// - the head reaches the sink once, before any body byte; pieces are never empty; success means
//   a final status (200-999); the body is never longer than the reply, and body_bytes() counts it;
// - a Content-Length body is exactly the bytes before the response's end; an until-close body is
//   exactly the reply's tail;
// - after the response ended, more bytes change nothing; reset() then the same reply gives the
//   same outcome (buffers are reused);
// - a sink that refuses the first body piece stops the decoder exactly when the body would have
//   had a byte, and otherwise changes nothing.
// See docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/http1_decoder.h"

namespace {

using tokperf::Http1Decoder;
using Result = Http1Decoder::Result;

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "http1_decoder_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

struct Collect : Http1Decoder::Sink {
  bool refuse_body = false;
  int heads = 0;
  int status = 0;
  std::string content_type;
  std::string body;
  int refused = 0;
  void on_head(int s, std::string_view ct) override {
    check(heads == 0, "the head reached the sink twice");
    check(body.empty(), "body bytes before the head");
    heads++;
    status = s;
    content_type.assign(ct);
  }
  bool on_body(const char* data, size_t n) override {
    check(heads == 1, "a body piece before the head");
    check(n > 0, "an empty body piece");
    check(refused == 0, "a body piece after the sink refused one");
    if (refuse_body) {
      refused++;
      return false;
    }
    body.append(data, n);
    return true;
  }
};

struct Outcome {
  Result result = Result::kMore;
  int status = 0;
  std::string content_type;
  Http1Decoder::Framing framing = Http1Decoder::Framing::kClose;
  bool keep_alive = false;
  Http1Decoder::Error error = Http1Decoder::Error::kNone;
  std::string message;
  std::string body;
  size_t end = 0;  // reply bytes that belonged to the response (when it ended by kDone)
  bool operator==(const Outcome&) const = default;
};

Outcome run(Http1Decoder& d, const std::vector<std::string_view>& pieces, bool close,
            std::string_view reply, bool refuse_body = false) {
  Collect sink;
  sink.refuse_body = refuse_body;
  Outcome o;
  size_t at = 0;
  for (std::string_view p : pieces) {
    o.result = d.feed(p.data(), p.size(), sink);
    if (o.result != Result::kMore) {
      if (o.result == Result::kDone) {
        check(d.consumed() <= p.size(), "consumed more than it was given");
        o.end = at + d.consumed();
      }
      break;
    }
    at += p.size();
  }
  if (o.result == Result::kMore && close) {
    o.result = d.eof();
    if (o.result == Result::kDone) o.end = reply.size();
  }
  if (o.result == Result::kMore) o.end = reply.size();
  o.status = sink.status;
  o.content_type = sink.content_type;
  o.framing = d.framing();
  o.keep_alive = d.keep_alive();
  o.error = d.error();
  o.message = d.message();
  o.body = sink.body;

  check(sink.heads == (d.in_body() ? 1 : 0), "the head was parsed but not handed over, or vice versa");
  check((o.result == Result::kFailed) == (o.error != Http1Decoder::Error::kNone),
        "an error without a failure, or a failure without an error");
  if (o.result == Result::kFailed) check(!o.message.empty() && o.message.size() < 300, "error message");
  if (o.result == Result::kDone) {
    check(o.status >= 200 && o.status <= 999, "success without a final status");
    if (o.framing == Http1Decoder::Framing::kLength) {
      check(o.body.size() <= o.end && reply.substr(o.end - o.body.size(), o.body.size()) == o.body,
            "a Content-Length body is not the bytes before the response's end");
    }
    if (o.framing == Http1Decoder::Framing::kClose) {
      check(close && o.end == reply.size() && reply.ends_with(o.body),
            "an until-close body is not the reply's tail");
      check(!o.keep_alive, "until-close framing kept the connection");
    }
  }
  check(o.body.size() <= reply.size(), "more body than reply bytes");
  check(refuse_body || d.body_bytes() == o.body.size(), "body_bytes() is not the body handed over");
  if (o.result != Result::kMore) {
    // Ended: more bytes or a close change nothing.
    const char extra[] = "HTTP/1.1 200 OK\r\n\r\n";
    check(d.feed(extra, sizeof extra - 1, sink) == o.result, "fed after the end, it changed");
    check(d.eof() == o.result, "closed after the end, it changed");
    check(sink.body.size() == o.body.size() && sink.heads <= 1, "bytes after the end reached the sink");
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t splits = data[0] & 7;
  const bool close = (data[0] & 8) != 0;
  if (size < 1 + splits) return 0;
  std::string_view reply(reinterpret_cast<const char*>(data + 1 + splits), size - 1 - splits);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < splits; ++i) cuts.push_back(data[1 + i] % (reply.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string_view> pieces;
  size_t at = 0;
  for (size_t cut : cuts) {
    pieces.push_back(reply.substr(at, cut - at));
    at = cut;
  }
  pieces.push_back(reply.substr(at));
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < reply.size(); ++i) bytes.push_back(reply.substr(i, 1));

  static Http1Decoder reused;  // carries buffers from earlier inputs: reset() must clear state
  reused.reset();
  Outcome whole = run(reused, {reply}, close, reply);
  Http1Decoder fresh;
  check(run(fresh, pieces, close, reply) == whole, "whole and split replies end differently");
  fresh.reset();
  check(run(fresh, bytes, close, reply) == whole, "whole and byte-by-byte replies end differently");
  reused.reset();
  check(run(reused, {reply}, close, reply) == whole, "after reset() the same reply ends differently");

  fresh.reset();
  Outcome refusing = run(fresh, pieces, close, reply, true);
  if (whole.body.empty()) {
    check(refusing == whole, "a refusing sink changed a reply without body bytes");
  } else {
    check(refusing.result == Result::kStopped, "a refusing sink did not stop the decoder");
  }

  // What followed a complete response on a kept connection decodes as a response of its own.
  if (whole.result == Result::kDone && whole.keep_alive && whole.end < reply.size()) {
    std::string_view rest = reply.substr(whole.end);
    Http1Decoder next;
    run(next, {rest}, close, rest);
  }
  return 0;
}
