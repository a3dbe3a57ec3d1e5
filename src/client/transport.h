// Streaming HTTP transfers over libcurl's multi-socket interface, driven by an EventLoop: one loop
// thread carries thousands of concurrent streams. Body bytes read because epoll reported their socket
// readable are stamped with the moment the loop counted the socket's pending bytes right after
// epoll_wait (EventLoop::wake_readable_ns): they had arrived by then, and the stamp does not grow
// with the work done for other sockets in the same round (a server step sends a token to every
// stream of its batch at once). Bytes read on any other path (a transfer
// just started, a timer) are stamped when curl hands them over. See docs/metrics.md.
//
// Thread rules: construct, start() and cancel() on the loop's thread only; handler callbacks run on
// that thread. The Transport must outlive its transfers (cancel_all() before destroying it).
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/event_loop.h"

namespace tokperf {

// Which HTTP client carries a transfer. kAuto: the built-in HTTP/1.1 client (client/plain_http.h)
// for http:// URLs when no proxy is configured and HTTP/2 is not asked for; libcurl for the rest
// (https, HTTP/2, proxies). kCurl: libcurl for everything (--http-client curl).
enum class HttpClientKind { kAuto, kCurl };

struct TransportOptions {
  HttpClientKind client = HttpClientKind::kAuto;
  int max_connections = 0;   // connection-cache size; 0: sized from the first start() calls
  bool http2 = false;        // ask for HTTP/2 (h2c prior knowledge for http://, ALPN for https://)
  bool verify_tls = true;
  int64_t connect_timeout_ns = 10'000'000'000;
};

struct StreamRequest {
  std::string url;
  std::string body;                  // POST body; empty with method GET
  std::vector<std::string> headers;  // "Name: value"
  int64_t timeout_ns = 0;            // whole transfer; 0: none
};

// How a transfer ended, from the transport's point of view.
struct TransferResult {
  CURLcode code = CURLE_OK;       // CURLE_OK, or why it failed (timeout, connect, recv error…)
  std::string curl_error;         // curl's error buffer, when it has one
  int http_status = 0;
  double connect_ms = -1;         // TCP(+TLS) connect, 0 for a reused connection
  double pretransfer_ms = -1;     // until the request was about to go out
  double ttfb_ms = -1;            // until the first response byte (curl's starttransfer)
  bool cancelled = false;         // stopped by cancel()/cancel_all()
};

// Receives one transfer's events, on the loop thread. Must stay valid until on_complete returns.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  // Called once when the response headers are complete (status, content type, when).
  virtual void on_headers(int http_status, std::string_view content_type, int64_t t_ns) = 0;
  // Called for every piece of the body, in order, with the time it was received. Return false to
  // abort the transfer (it then completes with CURLE_WRITE_ERROR); never call cancel() from here.
  virtual bool on_body(std::string_view bytes, int64_t t_ns) = 0;
  // Called once at the end; the handler may start another transfer from here.
  virtual void on_complete(const TransferResult& result, int64_t t_ns) = 0;
};

class PlainHttpClient;
struct PlainHttpUrl;

class Transport {
 public:
  Transport(EventLoop& loop, TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Starts a transfer; returns its id. The send time a caller records should be taken right before
  // this call: the request is handed to curl and the sockets are driven at once, so on a reused
  // connection the request bytes leave inside this call.
  uint64_t start(const StreamRequest& request, StreamHandler* handler);
  // Stops a transfer; its handler gets on_complete with cancelled=true before this returns.
  void cancel(uint64_t id);
  void cancel_all();
  size_t in_flight() const;
  // Total body bytes and body callbacks seen, for the client's health figures.
  uint64_t body_bytes() const;
  uint64_t body_reads() const;
  // Transfers started on each path.
  uint64_t builtin_transfers() const { return builtin_transfers_; }
  uint64_t curl_transfers() const { return curl_transfers_; }

 private:
  struct Transfer;
  static int on_socket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* userp);
  static size_t on_write(char* data, size_t size, size_t n, void* userp);
  static size_t on_header(char* data, size_t size, size_t n, void* userp);
  void drive(curl_socket_t s, int ev_bitmask);
  void arm_timer(int64_t deadline_ns);
  void reap_finished();
  void finish(Transfer* t, CURLcode code, bool cancelled);
  uint64_t start_curl(const StreamRequest& request, StreamHandler* handler);
  // The built-in client's view of url, or null when libcurl must carry it.
  const PlainHttpUrl* builtin_url(const std::string& url);

  EventLoop& loop_;
  TransportOptions options_;
  CURLM* multi_ = nullptr;
  uint64_t timer_id_ = 0;
  bool timer_armed_ = false;
  int64_t timer_at_ns_ = 0;         // when the armed loop timer fires
  int64_t curl_deadline_ns_ = -1;   // when curl wants its timeout action (-1: none)
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Transfer>> transfers_;
  std::vector<CURL*> idle_easy_;  // reused handles (keep their buffers warm)
  long connection_cache_ = 0;
  curl_socket_t io_stamp_socket_ = CURL_SOCKET_BAD;  // the socket io_stamp_ns_ belongs to
  int64_t io_stamp_ns_ = 0;  // while driving a ready socket: when the loop saw it ready
  uint64_t body_bytes_ = 0;
  uint64_t body_reads_ = 0;
  bool builtin_allowed_ = false;  // kAuto, no HTTP/2, no proxy in the environment
  std::unique_ptr<PlainHttpClient> plain_;
  std::string plain_url_text_;    // the last URL looked at, and what it gave
  std::unique_ptr<PlainHttpUrl> plain_url_;
  bool plain_url_ok_ = false;
  uint64_t builtin_transfers_ = 0;
  uint64_t curl_transfers_ = 0;
};

// Whether the environment names a proxy libcurl would use for http:// URLs (http_proxy,
// all_proxy, ALL_PROXY): then every transfer goes through libcurl, which applies it and no_proxy.
bool http_proxy_configured();

// Human-readable reason for a curl failure, naming the URL.
std::string describe_curl_failure(CURLcode code, std::string_view curl_error, std::string_view url);

}  // namespace tokperf
