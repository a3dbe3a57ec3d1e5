// HTTP/1.1 response framing as a pure, incremental decoder: status line and headers (1xx interim
// responses skipped), then a body framed by Content-Length, chunked transfer coding (extensions and
// trailers) or the end of the connection. No sockets, clocks or allocation per response once warm
// (its buffers are reused across reset()), so the built-in client (client/plain_http.h) drives it
// from its reads and the fuzzer (fuzz/http1_decoder_fuzz.cc) drives it from memory.
//
// Bytes go in through feed(), in pieces of any size; the head and the body come out through a
// Sink, in order. A response ends when feed() says kDone (framing complete; consumed() tells how
// many of the last call's bytes belonged to it, so a caller can tell whether the connection
// carried more than one response), when eof() is called (the peer closed), or with kFailed and an
// Error saying what was wrong. After kDone or kFailed nothing more is accepted until reset().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tokperf {

class Http1Decoder {
 public:
  static constexpr size_t kMaxHeadBytes = 64 * 1024;  // status line and headers
  static constexpr size_t kMaxLineBytes = 4096;       // a chunk-size or trailer line
  static constexpr uint64_t kMaxChunkSize = uint64_t{1} << 48;

  class Sink {
   public:
    virtual ~Sink() = default;
    // The final (non-1xx) response's head; called once, before any body byte.
    virtual void on_head(int status, std::string_view content_type) = 0;
    // A piece of the body, in order. Return false to stop: feed() then returns kStopped.
    virtual bool on_body(const char* data, size_t n) = 0;
  };

  enum class Result { kMore, kDone, kFailed, kStopped };
  enum class Framing { kNone, kLength, kChunked, kClose };
  enum class Error {
    kNone,
    kBadStatusLine,     // not "HTTP/1.x DDD"
    kSwitchedProtocols, // 101, never asked for
    kBadContentLength,  // not digits, or two different values
    kHeadTooLarge,      // no end of head within kMaxHeadBytes
    kBadChunkSize,      // a chunk-size line without hex digits, or an oversized chunk
    kChunkLineTooLong,  // a chunk-size or trailer line over kMaxLineBytes
    kBadChunkEnd,       // a chunk's data not followed by CRLF
    kEmptyReply,        // the peer closed before sending a byte
    kClosedInHead,      // the peer closed in the middle of the head
    kClosedInBody,      // the peer closed before a Content-Length or chunked body ended
  };

  Http1Decoder() { reset(); }

  // Ready for the next response (on the same connection or another); keeps buffer capacity.
  void reset();

  // Feeds the next bytes of the response. kMore: all consumed, more wanted. kDone: the response is
  // complete after consumed() of these bytes. kFailed: error()/message() say why. kStopped: the
  // sink's on_body returned false. After anything but kMore, feed() and eof() return that again.
  Result feed(const char* data, size_t n, Sink& sink);

  // The peer closed the connection: kDone when that ends the response (until-close framing, or a
  // head-only response), kFailed otherwise.
  Result eof();

  bool got_bytes() const { return got_bytes_; }  // any byte fed since reset()
  bool in_body() const { return in_body_; }     // the final head has been parsed
  int status() const { return status_; }
  const std::string& content_type() const { return content_type_; }
  // Whether the connection may carry another response after this one (HTTP/1.1 without
  // "Connection: close", or "Connection: keep-alive"; never for until-close framing).
  bool keep_alive() const { return keep_alive_; }
  Framing framing() const { return framing_; }
  // Bytes of the last feed() call that belonged to the response when it returned kDone.
  size_t consumed() const { return consumed_; }
  // Content-Length bytes left, or the current chunk's.
  uint64_t remaining() const { return remaining_; }
  uint64_t body_bytes() const { return body_bytes_; }
  Error error() const { return error_; }
  const std::string& message() const { return message_; }

 private:
  enum class Chunk { kSize, kData, kDataCr, kDataLf, kTrailer };
  Result fail(Error e, std::string message);
  // Parses head_[0, end): 1 a final response, 0 an interim 1xx, -1 failed.
  int parse_head(size_t end, Sink& sink);
  Result feed_body(const char* data, size_t n, size_t base, Sink& sink);
  bool deliver(const char* data, size_t n, Sink& sink);

  bool got_bytes_ = false;
  bool in_body_ = false;
  Result final_ = Result::kMore;  // how the response ended; kMore while it has not
  std::string head_;  // head bytes so far
  size_t head_scan_ = 0;
  int status_ = 0;
  std::string content_type_;
  bool keep_alive_ = true;
  Framing framing_ = Framing::kClose;
  uint64_t remaining_ = 0;
  Chunk chunk_ = Chunk::kSize;
  std::string line_;  // a chunk-size or trailer line split across feeds
  size_t consumed_ = 0;
  uint64_t body_bytes_ = 0;
  Error error_ = Error::kNone;
  std::string message_;
};

}  // namespace tokperf
