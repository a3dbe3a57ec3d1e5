// A small asynchronous HTTP/1.1 server on one EventLoop: non-blocking sockets, no thread per
// connection, so one loop carries thousands of concurrent streaming responses. It backs the
// scripted test server and the simulated engine's HTTP front.
//
// Scope: requests with an optional Content-Length body (chunked request bodies get 501), keep-alive
// with requests served one after another per connection (a pipelined request waits in the input
// buffer until the response before it is finished), responses either with a Content-Length body or
// streamed with `Transfer-Encoding: chunked`.
//
// Thread rules: everything runs on the loop's thread. Construct/listen/close_all before run() or on
// the loop thread; handlers and HttpResponse methods are called on the loop thread only. stats() is
// readable from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.h"
#include "net/event_loop.h"

namespace tokperf {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;     // "GET", "POST", …
  std::string target;     // as sent: path plus optional "?query"
  std::string path;       // target up to '?'
  std::string query;      // after '?', without it; empty if none
  int version_minor = 1;  // HTTP/1.<minor>
  HttpHeaders headers;    // in arrival order, names as sent
  std::string body;
  int64_t received_ns = 0;  // mono_ns() when the request was complete in the input buffer
  uint64_t connection_id = 0;

  // Case-insensitive lookup of the first header with this name; nullptr if absent. The pointer
  // lives as long as the request.
  const std::string* header(std::string_view name) const;
};

// The outcome of reading one HTTP/1.x request from the front of an input buffer.
struct HttpParseResult {
  enum class Kind { kNeedMore, kError, kComplete };
  Kind kind = Kind::kNeedMore;
  int status = 0;       // kError: the status the server answers (400, 413, 431 or 501)
  size_t consumed = 0;  // kComplete: bytes of the buffer the request took (head and body)
};

// Parses the request at the start of `in` (request line, headers, Content-Length body) into req
// (method, target, path, query, version, headers, body; not received_ns or connection_id).
// kNeedMore while the head or body is incomplete. Pure: the server's only request parser, exposed
// so it can be tested and fuzzed without sockets.
HttpParseResult parse_http_request(std::string_view in, size_t max_header_bytes,
                                   size_t max_body_bytes, HttpRequest& req);

class HttpConnection;

// The answer to one request. Handlers receive it as a shared_ptr and may keep it to answer later
// from timers on the same loop. Dropping the last reference before finish() closes the connection,
// so a forgotten response can never hang a client. All methods: loop thread only.
class HttpResponse {
 public:
  enum class Mode { kContentLength, kChunked };

  explicit HttpResponse(std::weak_ptr<HttpConnection> conn) : conn_(std::move(conn)) {}
  ~HttpResponse();
  HttpResponse(const HttpResponse&) = delete;
  HttpResponse& operator=(const HttpResponse&) = delete;

  // Sends the status line and headers (Content-Length or Transfer-Encoding, and Connection, are
  // added here; don't pass them). kContentLength: `body` is the whole body and the response is
  // finished by this call. kChunked: `body` must be empty; follow with write()/finish().
  // Returns false if the peer is gone or start() was already called.
  bool start(int status, const HttpHeaders& headers, Mode mode, std::string_view body = {});
  // One chunk, sent with its own send() as soon as the socket allows (buffered otherwise).
  // Empty writes are skipped (an empty chunk would end the body). False once the peer is gone.
  bool write(std::string_view bytes);
  // Ends a chunked body (the zero-length chunk). The connection then serves its next request.
  bool finish();
  // Closes the connection at once with a TCP reset, discarding anything unsent: the client sees
  // a broken transfer.
  void abort();
  // Escape hatch for tests that need exact framing: bytes go to the socket unframed. Use with
  // finish_raw() (ends the exchange without adding any framing) or abort().
  bool write_raw(std::string_view bytes);
  void finish_raw(bool keep_alive);

  // Runs once if the connection closes before the response is finished (peer gone, abort(), server
  // shutdown); never after finish(). Called from the loop, not from inside write().
  void on_close(std::function<void()> cb) { on_close_ = std::move(cb); }

  bool alive() const;
  bool started() const { return started_; }
  bool finished() const { return finished_; }

  // Helpers. reply_json: a complete application/json response.
  bool reply_json(int status, std::string_view json, const HttpHeaders& extra = {});
  // start_sse: chunked text/event-stream with no-cache, ready for write().
  bool start_sse(int status = 200, const HttpHeaders& extra = {});

 private:
  friend class HttpConnection;
  std::weak_ptr<HttpConnection> conn_;
  std::function<void()> on_close_;
  bool started_ = false;
  bool chunked_ = false;
  bool finished_ = false;
  bool closed_ = false;  // on_close already ran (or will)
};

class HttpServer {
 public:
  using Handler = std::function<void(HttpRequest&, std::shared_ptr<HttpResponse>)>;

  struct Options {
    size_t max_header_bytes = 64 * 1024;       // request line + headers; more → 431
    size_t max_body_bytes = 16 * 1024 * 1024;  // more → 413
    int listen_backlog = 4096;
    // SO_REUSEPORT: several servers (one loop thread each) bind the same port and the kernel
    // spreads new connections over them (bench/stream_timestamp_bench --server-threads).
    bool reuse_port = false;
  };

  // Counters; relaxed atomics so another thread can read them while the loop runs.
  struct Stats {
    std::atomic<uint64_t> connections_accepted{0};
    std::atomic<uint64_t> connections_open{0};
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> bad_requests{0};  // answered 400/413/431/501 by the server itself
    // Connections closed on arrival because the process had no file descriptor left for them
    // (EMFILE/ENFILE): the peer sees the connection end instead of waiting in the backlog.
    std::atomic<uint64_t> connections_refused{0};
    std::atomic<uint64_t> bytes_received{0};
    std::atomic<uint64_t> bytes_sent{0};
  };

  // The loop must outlive the server.
  HttpServer(EventLoop& loop, Handler handler, Options options);
  HttpServer(EventLoop& loop, Handler handler) : HttpServer(loop, std::move(handler), Options{}) {}
  ~HttpServer();  // closes everything; loop thread (or when the loop no longer runs)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (IPv4 literal; port 0 picks an ephemeral port) and starts accepting.
  Status listen(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }
  // Stops accepting and closes every connection (pending responses see on_close).
  void close_all();

  const Stats& stats() const { return stats_; }

 private:
  friend class HttpConnection;
  void on_accept();
  void forget(int fd);

  EventLoop& loop_;
  Handler handler_;
  Options options_;
  int listen_fd_ = -1;
  // A descriptor held in reserve (/dev/null): when accept fails for want of descriptors it is
  // released to accept and close the waiting connection, so the level-triggered listen socket does
  // not keep the loop spinning and the peer is told at once.
  int spare_fd_ = -1;
  uint16_t port_ = 0;
  uint64_t next_connection_id_ = 1;
  std::unordered_map<int, std::shared_ptr<HttpConnection>> connections_;
  Stats stats_;
};

// Standard reason phrase ("OK", "Not Found", …); "Unknown" for others.
const char* http_reason(int status);

}  // namespace tokperf
