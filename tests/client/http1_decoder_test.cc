// The HTTP/1.1 response decoder on its own, in memory (client/http1_decoder.h). The built-in
// client's socket behaviour around it is tests/client/plain_http_test.cc.
#include "client/http1_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace tokperf {
namespace {

using Result = Http1Decoder::Result;
using Error = Http1Decoder::Error;
using Framing = Http1Decoder::Framing;

struct Collect : Http1Decoder::Sink {
  int heads = 0;
  int status = 0;
  std::string content_type;
  std::string body;
  std::vector<size_t> pieces;
  size_t refuse_after = std::string::npos;  // body bytes accepted before refusing
  void on_head(int s, std::string_view ct) override {
    heads++;
    status = s;
    content_type.assign(ct);
  }
  bool on_body(const char* data, size_t n) override {
    if (body.size() >= refuse_after) return false;
    body.append(data, n);
    pieces.push_back(n);
    return true;
  }
};

struct Fed {
  Result result = Result::kMore;
  size_t end = 0;  // reply bytes that belonged to the response, when it ended by kDone
};

// Feeds `reply` cut into pieces of `step` bytes (0: whole); closes at the end when `close`.
Fed feed(Http1Decoder& d, Collect& c, std::string_view reply, size_t step = 0, bool close = false) {
  Fed f;
  size_t at = 0;
  while (at < reply.size() || (at == 0 && reply.empty())) {
    size_t n = step == 0 ? reply.size() - at : std::min(step, reply.size() - at);
    f.result = d.feed(reply.data() + at, n, c);
    if (f.result != Result::kMore) {
      if (f.result == Result::kDone) f.end = at + d.consumed();
      return f;
    }
    at += n;
    if (reply.empty()) break;
  }
  if (close) {
    f.result = d.eof();
    f.end = reply.size();
  }
  return f;
}

TEST(Http1Decoder, ContentLengthBodyEndsTheResponseAtItsLastByte) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 11\r\n\r\ndata: x\n\n!!";
  for (size_t step : {0, 1, 2, 7, 64}) {
    Http1Decoder d;
    Collect c;
    Fed f = feed(d, c, reply, step);
    EXPECT_EQ(f.result, Result::kDone) << step;
    EXPECT_EQ(c.heads, 1);
    EXPECT_EQ(c.status, 200);
    EXPECT_EQ(c.content_type, "text/event-stream");
    EXPECT_EQ(c.body, "data: x\n\n!!");
    EXPECT_EQ(f.end, reply.size());
    EXPECT_TRUE(d.keep_alive());
    EXPECT_EQ(d.framing(), Framing::kLength);
    EXPECT_EQ(d.body_bytes(), 11u);
  }
}

TEST(Http1Decoder, ChunkedBodyWithExtensionsAndTrailersSplitAtEveryByte) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n1A \r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Checksum: 1\r\n\r\n";
  for (size_t step = 0; step <= reply.size(); ++step) {
    Http1Decoder d;
    Collect c;
    Fed f = feed(d, c, reply, step);
    ASSERT_EQ(f.result, Result::kDone) << "step " << step;
    EXPECT_EQ(c.body, "helloabcdefghijklmnopqrstuvwxyz") << "step " << step;
    EXPECT_EQ(f.end, reply.size());
    EXPECT_EQ(d.framing(), Framing::kChunked);
  }
}

TEST(Http1Decoder, InterimResponsesAreSkippedAndTheFinalHeadArrivesOnce) {
  const std::string reply =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
      "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\n\r\nno";
  for (size_t step : {0, 1, 3, 30}) {
    Http1Decoder d;
    Collect c;
    EXPECT_EQ(feed(d, c, reply, step).result, Result::kDone);
    EXPECT_EQ(c.heads, 1);
    EXPECT_EQ(c.status, 429);
    EXPECT_EQ(c.body, "no");
  }
}

TEST(Http1Decoder, UntilCloseBodyEndsAtEofAndNeverKeepsTheConnection) {
  const std::string reply = "HTTP/1.0 200 OK\nContent-Type: application/json\n\n{\"a\":1}";
  Http1Decoder d;
  Collect c;
  Fed f = feed(d, c, reply, 4, /*close=*/false);
  EXPECT_EQ(f.result, Result::kMore);
  EXPECT_EQ(d.eof(), Result::kDone);
  EXPECT_EQ(c.body, "{\"a\":1}");
  EXPECT_FALSE(d.keep_alive());
  EXPECT_EQ(d.framing(), Framing::kClose);
}

TEST(Http1Decoder, ConnectionHeadersDecideKeepAlive) {
  struct Case {
    std::string head;
    bool keep;
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
      {"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
      {"HTTP/1.0 200 OK\r\nConnection: foo, keep-alive\r\nContent-Length: 0\r\n\r\n", true},
  };
  for (const Case& k : cases) {
    Http1Decoder d;
    Collect c;
    EXPECT_EQ(feed(d, c, k.head).result, Result::kDone) << k.head;
    EXPECT_EQ(d.keep_alive(), k.keep) << k.head;
  }
}

TEST(Http1Decoder, BytesAfterTheResponseAreLeftUnconsumed) {
  // 204 has no body whatever Content-Length says; what follows is not this response's.
  const std::string reply = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello";
  Http1Decoder d;
  Collect c;
  Fed f = feed(d, c, reply);
  EXPECT_EQ(f.result, Result::kDone);
  EXPECT_EQ(f.end, reply.size() - 5);
  EXPECT_TRUE(c.body.empty());
  EXPECT_EQ(d.framing(), Framing::kNone);
  // Ended: further bytes and a close change nothing and reach no sink.
  EXPECT_EQ(d.feed("xyz", 3, c), Result::kDone);
  EXPECT_EQ(d.eof(), Result::kDone);
  EXPECT_TRUE(c.body.empty());
}

TEST(Http1Decoder, ResetReadiesItForTheNextResponseOnTheSameConnection) {
  const std::string first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  const std::string second = "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy";
  Http1Decoder d;
  Collect a, b;
  EXPECT_EQ(feed(d, a, first, 5).result, Result::kDone);
  d.reset();
  EXPECT_FALSE(d.got_bytes());
  EXPECT_EQ(d.status(), 0);
  EXPECT_EQ(feed(d, b, second, 5).result, Result::kDone);
  EXPECT_EQ(b.status, 503);
  EXPECT_EQ(b.body, "busy");
  EXPECT_EQ(d.body_bytes(), 4u);
}

TEST(Http1Decoder, ARefusingSinkStopsTheDecoder) {
  const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
  Http1Decoder d;
  Collect c;
  c.refuse_after = 4;
  EXPECT_EQ(feed(d, c, reply, 4).result, Result::kStopped);
  // It took pieces until it held 4 bytes, refused the next, and heard of nothing after that.
  EXPECT_GE(c.body.size(), 4u);
  EXPECT_LT(c.body.size(), 10u);
  EXPECT_EQ(d.feed("x", 1, c), Result::kStopped);
  EXPECT_LT(c.body.size(), 10u);
}

TEST(Http1Decoder, EachFaultHasItsErrorAndAMessage) {
  struct Case {
    std::string reply;
    bool close;
    Error error;
    std::string message_part;
  } cases[] = {
      {"", true, Error::kEmptyReply, "Empty reply"},
      {"HTTP/1.1 200 OK\r\nContent-", true, Error::kClosedInHead, "middle of the response headers"},
      {"SSH-2.0-OpenSSH\r\n\r\n", false, Error::kBadStatusLine, "began 'SSH-2.0-OpenSSH'"},
      {"HTTP/2 200\r\n\r\n", false, Error::kBadStatusLine, "not an HTTP/1.x response"},
      {"HTTP/1.1 101 Switching Protocols\r\n\r\n", false, Error::kSwitchedProtocols, "101"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", false, Error::kBadContentLength,
       "invalid Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", false,
       Error::kBadContentLength, "two different"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, Error::kBadChunkSize,
       "hexadecimal"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000\r\n", false,
       Error::kBadChunkSize, "hexadecimal"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(5000, '1'), false,
       Error::kChunkLineTooLong, "exceeds 4 KiB"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX", false, Error::kBadChunkEnd,
       "not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", true, Error::kClosedInBody,
       "6 bytes remaining"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", true,
       Error::kClosedInBody, "outstanding read data"},
      {"HTTP/1.1 200 OK\r\n" + std::string(70 * 1024, 'h'), false, Error::kHeadTooLarge,
       "exceed 64 KiB"},
  };
  for (const Case& k : cases) {
    for (size_t step : {0, 1, 9}) {
      Http1Decoder d;
      Collect c;
      Fed f = feed(d, c, k.reply, step, k.close);
      EXPECT_EQ(f.result, Result::kFailed) << k.message_part << " step " << step;
      EXPECT_EQ(d.error(), k.error) << k.message_part << " step " << step;
      EXPECT_NE(d.message().find(k.message_part), std::string::npos) << d.message();
    }
  }
}

TEST(Http1Decoder, TheHeadLimitHoldsHoweverTheBytesAreSplit) {
  // A head that ends just past the limit fails whole as well as byte by byte; one that ends
  // within it passes either way.
  for (size_t pad : {Http1Decoder::kMaxHeadBytes - 64, Http1Decoder::kMaxHeadBytes + 64}) {
    const std::string head = "HTTP/1.1 200 OK\r\nX: " + std::string(pad, 'a') + "\r\n\r\n";
    const bool fits = head.size() <= Http1Decoder::kMaxHeadBytes;
    for (size_t step : {0, 1, 1000}) {
      Http1Decoder d;
      Collect c;
      Result r = feed(d, c, head + "", step, /*close=*/true).result;
      EXPECT_EQ(r, fits ? Result::kDone : Result::kFailed) << pad << " step " << step;
    }
  }
}

}  // namespace
}  // namespace tokperf
