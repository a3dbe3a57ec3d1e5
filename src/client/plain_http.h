// The transport's fast path: a plain-HTTP/1.1 client on the EventLoop, for http:// URLs without a
// proxy (libcurl keeps TLS, HTTP/2 and proxies; client/transport.h picks the path per request).
// One request at a time per connection, keep-alive connections reused; the response's framing
// (Content-Length, chunked transfer coding or the end of the connection) is client/http1_decoder.h.
//
// Why it exists: under request churn libcurl's per-transfer set-up and per-read work was half of a
// minimal epoll client's whole cost per event (docs/BENCHMARKS.md, issue 12). This client makes one
// recv per readiness report, no allocation per request or per event once warm (transfers,
// connections and buffers are recycled), and builds the request head in one reused buffer.
//
// Stamps: the bytes the loop counted on the socket right after epoll_wait (EventLoop::wake_readable)
// are read first and stamped with the moment they were counted (EventLoop::wake_readable_ns);
// anything read after them arrived later and is stamped when it is read. So a stamp is never earlier
// than the bytes' arrival (docs/ARCHITECTURE.md).
//
// Failures carry the CURLcode libcurl would give for the same event (connect refused, timeout,
// empty reply, transfer closed with bytes remaining…), so the rest of tokperf classifies both paths
// alike. A request that fails on a reused connection before any response byte arrived (the server
// closed the idle connection) is retried once on a fresh connection, as libcurl does.
//
// Thread rules: as Transport: the loop's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/transport.h"
#include "net/event_loop.h"

struct addrinfo;

namespace tokperf {

// The parts of an http:// URL the fast path needs.
struct PlainHttpUrl {
  std::string host;         // for name resolution (no brackets around an IPv6 literal)
  uint16_t port = 80;
  std::string host_header;  // Host: value as written in the URL ("[::1]:8000", "example.com")
  std::string target;       // origin-form request target: path and query, "/" when absent
};

// Parses "http://host[:port][/path][?query][#fragment]". Returns false when the URL is not plain
// HTTP or holds something the fast path leaves to libcurl (user info, whitespace or control
// characters, a bad port): the caller then uses libcurl, which accepts or refuses it itself.
bool parse_plain_http_url(std::string_view url, PlainHttpUrl* out);

class PlainHttpClient {
 public:
  PlainHttpClient(EventLoop& loop, int64_t connect_timeout_ns);
  ~PlainHttpClient();
  PlainHttpClient(const PlainHttpClient&) = delete;
  PlainHttpClient& operator=(const PlainHttpClient&) = delete;

  // Starts a transfer of `request` to `url` (parsed from request.url); returns its id, which has
  // kIdBit set (Transport tells the two paths' ids apart by it).
  static constexpr uint64_t kIdBit = uint64_t{1} << 63;
  uint64_t start(const StreamRequest& request, const PlainHttpUrl& url, StreamHandler* handler);
  // Stops a transfer (on_complete with cancelled=true before it returns); false if id is unknown.
  bool cancel(uint64_t id);
  void cancel_all();
  size_t in_flight() const { return in_flight_; }
  size_t idle_connections() const;
  uint64_t body_bytes() const { return body_bytes_; }
  uint64_t body_reads() const { return body_reads_; }
  uint64_t connections_opened() const { return connections_opened_; }

 private:
  struct Conn;
  struct Xfer;
  struct Endpoint;

  Endpoint* endpoint_for(const PlainHttpUrl& url);
  void begin(Xfer* x);
  void open_connection(Xfer* x);
  void try_connect(Xfer* x);
  void on_event(Conn* c, uint32_t events);
  void on_connected(Xfer* x);
  // Sends what is left of the request; false when the transfer ended or moved inside.
  bool send_more(Xfer* x);
  void read_ready(Conn* c);
  // Feeds response bytes; returns false when the transfer ended inside (x is gone then).
  bool feed(Xfer* x, const char* data, size_t n, int64_t t_ns);
  void on_eof(Xfer* x);
  // A reused connection that failed before any response byte: retry once on a fresh one.
  bool retry_fresh(Xfer* x);
  void set_watch(Conn* c, uint32_t events);
  void arm_timer(Xfer* x);  // at the transfer's next deadline (connect or whole), or none
  void schedule_timer(Xfer* x, int64_t deadline_ns);  // on_timer(x) then; replaces an armed one
  void on_timer(Xfer* x);
  // Ends x: parks or closes its connection, frees its slot, then calls on_complete. t_ns: the
  // stamp of the bytes that ended it, 0 for now.
  void complete(Xfer* x, int code, std::string message, bool keep_connection, bool cancelled,
                int64_t t_ns);
  void close_conn(Conn* c);
  void park(Conn* c);
  Xfer* find(uint64_t id) const;

  EventLoop& loop_;
  int64_t connect_timeout_ns_;
  std::vector<std::unique_ptr<Xfer>> xfers_;  // slots; an id is kIdBit | generation << 24 | slot
  std::vector<uint32_t> free_xfers_;
  std::vector<std::unique_ptr<Conn>> conn_store_;  // recycled Conn objects
  std::vector<Conn*> free_conns_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::string read_buf_;
  bool starting_ = false;   // inside start(): failures are reported on the next loop turn
  size_t in_flight_ = 0;
  uint64_t body_bytes_ = 0;
  uint64_t body_reads_ = 0;
  uint64_t connections_opened_ = 0;
};

}  // namespace tokperf
