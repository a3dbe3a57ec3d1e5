#include "client/plain_http.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <cerrno>
#include <cstring>

#include <curl/curl.h>
#include <fmt/format.h>

#include "client/http1_decoder.h"
#include "core/clock.h"

namespace tokperf {
namespace {

constexpr size_t kReadBufBytes = 64 * 1024;
constexpr uint64_t kSlotMask = (uint64_t{1} << 24) - 1;
constexpr uint32_t kReadEvents = EPOLLIN;  // active and idle alike: no epoll_ctl per request

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

double ms_since(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

}  // namespace

bool parse_plain_http_url(std::string_view url, PlainHttpUrl* out) {
  if (!istarts_with(url, "http://")) return false;
  for (char ch : url) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return false;
  }
  std::string_view rest = url.substr(7);
  size_t auth_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, auth_end);
  std::string_view tail = auth_end == std::string_view::npos ? "" : rest.substr(auth_end);
  if (authority.empty() || authority.find('@') != std::string_view::npos) return false;
  std::string_view host = authority;
  std::string_view port;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return false;
      port = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
  }
  if (host.empty()) return false;
  uint32_t p = 80;
  if (!port.empty()) {
    if (port.size() > 5) return false;
    p = 0;
    for (char ch : port) {
      if (ch < '0' || ch > '9') return false;
      p = p * 10 + static_cast<uint32_t>(ch - '0');
    }
    if (p == 0 || p > 65535) return false;
  }
  size_t hash = tail.find('#');
  if (hash != std::string_view::npos) tail = tail.substr(0, hash);
  out->host.assign(host);
  out->port = static_cast<uint16_t>(p);
  out->host_header.assign(authority);
  if (tail.empty()) {
    out->target = "/";
  } else if (tail.front() == '?') {
    out->target = "/";
    out->target.append(tail);
  } else {
    out->target.assign(tail);
  }
  return true;
}

struct PlainHttpClient::Endpoint {
  std::string host;
  uint16_t port = 0;
  bool resolved = false;
  std::vector<sockaddr_storage> addrs;
  std::vector<socklen_t> addr_lens;
  std::vector<Conn*> idle;  // keep-alive connections waiting for a request
};

struct PlainHttpClient::Conn {
  int fd = -1;
  Endpoint* ep = nullptr;
  Xfer* xfer = nullptr;  // the transfer it carries; null while idle
  uint32_t events = 0;   // what the loop watches for
  bool reused = false;   // has carried a complete response
};

struct PlainHttpClient::Xfer final : Http1Decoder::Sink {
  enum class Phase { kConnecting, kResponse };

  PlainHttpClient* owner = nullptr;

  uint64_t id = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  bool active = false;
  StreamHandler* handler = nullptr;
  Endpoint* ep = nullptr;
  Conn* conn = nullptr;
  bool fresh_conn = false;  // this transfer opened its connection
  size_t addr_index = 0;
  int last_errno = 0;
  int retries = 0;

  std::string req;  // request head and body
  size_t sent = 0;

  int64_t start_ns = 0;
  int64_t timeout_ns = 0;
  int64_t connect_deadline_ns = 0;
  int64_t connected_ns = -1;
  int64_t first_byte_ns = -1;
  bool timer_armed = false;
  uint64_t timer_id = 0;
  bool deferred = false;  // failed inside start(): completes on the next loop turn
  int deferred_code = 0;
  std::string deferred_message;

  Phase phase = Phase::kConnecting;
  Http1Decoder decoder;   // the response's framing
  int64_t feed_t_ns = 0;  // the stamp of the bytes being fed

  // Http1Decoder::Sink: the response's head and body go straight to the handler.
  void on_head(int status, std::string_view content_type) override {
    handler->on_headers(status, content_type, first_byte_ns);
  }
  bool on_body(const char* data, size_t n) override {
    owner->body_bytes_ += n;
    owner->body_reads_++;
    return handler->on_body(std::string_view(data, n), feed_t_ns);
  }
};

PlainHttpClient::PlainHttpClient(EventLoop& loop, int64_t connect_timeout_ns)
    : loop_(loop), connect_timeout_ns_(connect_timeout_ns) {
  loop_.snapshot_readable(true);
  read_buf_.resize(kReadBufBytes);
}

PlainHttpClient::~PlainHttpClient() {
  cancel_all();
  for (auto& ep : endpoints_) {
    std::vector<Conn*> idle;
    idle.swap(ep->idle);
    for (Conn* c : idle) close_conn(c);
  }
}

size_t PlainHttpClient::idle_connections() const {
  size_t n = 0;
  for (const auto& ep : endpoints_) n += ep->idle.size();
  return n;
}

PlainHttpClient::Endpoint* PlainHttpClient::endpoint_for(const PlainHttpUrl& url) {
  for (auto& ep : endpoints_) {
    if (ep->port == url.port && ep->host == url.host) return ep.get();
  }
  auto ep = std::make_unique<Endpoint>();
  ep->host = url.host;
  ep->port = url.port;
  endpoints_.push_back(std::move(ep));
  return endpoints_.back().get();
}

PlainHttpClient::Xfer* PlainHttpClient::find(uint64_t id) const {
  if (!(id & kIdBit)) return nullptr;
  uint64_t slot = id & kSlotMask;
  if (slot >= xfers_.size()) return nullptr;
  Xfer* x = xfers_[slot].get();
  return x->active && x->id == id ? x : nullptr;
}

uint64_t PlainHttpClient::start(const StreamRequest& request, const PlainHttpUrl& url,
                                StreamHandler* handler) {
  uint32_t slot;
  if (!free_xfers_.empty()) {
    slot = free_xfers_.back();
    free_xfers_.pop_back();
  } else {
    slot = static_cast<uint32_t>(xfers_.size());
    xfers_.push_back(std::make_unique<Xfer>());
    xfers_.back()->owner = this;
  }
  Xfer* x = xfers_[slot].get();
  x->slot = slot;
  x->generation++;
  x->id = kIdBit | (x->generation << 24) | slot;
  x->active = true;
  x->handler = handler;
  x->ep = endpoint_for(url);
  x->conn = nullptr;
  x->fresh_conn = false;
  x->addr_index = 0;
  x->last_errno = 0;
  x->retries = 0;
  x->sent = 0;
  x->timeout_ns = request.timeout_ns;
  x->connected_ns = -1;
  x->first_byte_ns = -1;
  x->timer_armed = false;
  x->deferred = false;
  x->phase = Xfer::Phase::kConnecting;
  x->decoder.reset();

  // The request, as libcurl would send it: Host, Accept, the caller's headers ("Name:" alone
  // removes a header in curl's convention, so it is not sent), Content-Length for a body.
  std::string& r = x->req;
  r.clear();
  const bool post = !request.body.empty();
  r.append(post ? "POST " : "GET ").append(url.target).append(" HTTP/1.1\r\n");
  bool has_host = false, has_accept = false, has_type = false, has_length = false;
  for (const std::string& h : request.headers) {
    size_t colon = h.find(':');
    std::string_view name(h.data(), colon == std::string::npos ? h.size() : colon);
    if (colon != std::string::npos && trim(std::string_view(h).substr(colon + 1)).empty()) continue;
    if (iequals(name, "host")) has_host = true;
    if (iequals(name, "accept")) has_accept = true;
    if (iequals(name, "content-type")) has_type = true;
    if (iequals(name, "content-length")) has_length = true;
  }
  if (!has_host) r.append("Host: ").append(url.host_header).append("\r\n");
  if (!has_accept) r.append("Accept: */*\r\n");
  for (const std::string& h : request.headers) {
    size_t colon = h.find(':');
    if (colon != std::string::npos && trim(std::string_view(h).substr(colon + 1)).empty()) continue;
    r.append(h).append("\r\n");
  }
  if (post) {
    if (!has_type) r.append("Content-Type: application/x-www-form-urlencoded\r\n");
    if (!has_length) fmt::format_to(std::back_inserter(r), "Content-Length: {}\r\n", request.body.size());
  }
  r.append("\r\n");
  r.append(request.body);

  in_flight_++;
  x->start_ns = mono_ns();
  const uint64_t id = x->id;
  starting_ = true;
  begin(x);
  starting_ = false;
  return id;
}

void PlainHttpClient::begin(Xfer* x) {
  Endpoint* ep = x->ep;
  if (!ep->idle.empty()) {
    Conn* c = ep->idle.back();
    ep->idle.pop_back();
    c->xfer = x;
    x->conn = c;
    x->fresh_conn = false;
    x->connected_ns = x->start_ns;
    x->phase = Xfer::Phase::kResponse;
    if (x->timeout_ns > 0) arm_timer(x);
    send_more(x);
    return;
  }
  open_connection(x);
}

void PlainHttpClient::open_connection(Xfer* x) {
  Endpoint* ep = x->ep;
  if (!ep->resolved) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
    addrinfo* res = nullptr;
    std::string port = std::to_string(ep->port);
    int rc = getaddrinfo(ep->host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0 || res == nullptr) {
      if (rc == 0 && res == nullptr) rc = EAI_NONAME;
      complete(x, CURLE_COULDNT_RESOLVE_HOST,
               fmt::format("Could not resolve host: {} ({})", ep->host, gai_strerror(rc)), false,
               false, 0);
      return;
    }
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
      sockaddr_storage ss{};
      std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
      ep->addrs.push_back(ss);
      ep->addr_lens.push_back(a->ai_addrlen);
    }
    freeaddrinfo(res);
    ep->resolved = true;
  }
  x->fresh_conn = true;
  x->addr_index = 0;
  x->phase = Xfer::Phase::kConnecting;
  x->connect_deadline_ns = mono_ns() + connect_timeout_ns_;
  arm_timer(x);
  try_connect(x);
}

void PlainHttpClient::try_connect(Xfer* x) {
  Endpoint* ep = x->ep;
  for (; x->addr_index < ep->addrs.size(); ++x->addr_index) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&ep->addrs[x->addr_index]);
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      x->last_errno = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = connect(fd, sa, ep->addr_lens[x->addr_index]);
    if (rc != 0 && errno != EINPROGRESS) {
      x->last_errno = errno;
      close(fd);
      continue;
    }
    Conn* c;
    if (!free_conns_.empty()) {
      c = free_conns_.back();
      free_conns_.pop_back();
    } else {
      conn_store_.push_back(std::make_unique<Conn>());
      c = conn_store_.back().get();
    }
    c->fd = fd;
    c->ep = ep;
    c->xfer = x;
    c->events = 0;
    c->reused = false;
    x->conn = c;
    connections_opened_++;
    if (rc == 0) {
      on_connected(x);
    } else {
      set_watch(c, EPOLLOUT);
    }
    return;
  }
  complete(x, CURLE_COULDNT_CONNECT,
           fmt::format("Failed to connect to {} port {} after {:.0f} ms: {}", ep->host, ep->port,
                       ms_since(x->start_ns, mono_ns()),
                       x->last_errno != 0 ? std::strerror(x->last_errno) : "no address"),
           false, false, 0);
}

void PlainHttpClient::on_connected(Xfer* x) {
  x->connected_ns = mono_ns();
  x->phase = Xfer::Phase::kResponse;
  send_more(x);
}

bool PlainHttpClient::send_more(Xfer* x) {
  Conn* c = x->conn;
  while (x->sent < x->req.size()) {
    ssize_t n = send(c->fd, x->req.data() + x->sent, x->req.size() - x->sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      x->sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_watch(c, kReadEvents | EPOLLOUT);
      return true;
    }
    int e = n < 0 ? errno : EPIPE;
    if (retry_fresh(x)) return false;
    complete(x, CURLE_SEND_ERROR, fmt::format("Failed sending data to the peer: {}", std::strerror(e)),
             false, false, 0);
    return false;
  }
  set_watch(c, kReadEvents);
  return true;
}

void PlainHttpClient::set_watch(Conn* c, uint32_t events) {
  if (c->events == events) return;
  c->events = events;
  loop_.watch(c->fd, events, [this, c](uint32_t ev) { on_event(c, ev); });
}

void PlainHttpClient::on_event(Conn* c, uint32_t events) {
  Xfer* x = c->xfer;
  if (x == nullptr) {
    // Idle: the server closed it (or sent bytes nobody asked for); it cannot carry a request.
    auto& idle = c->ep->idle;
    idle.erase(std::remove(idle.begin(), idle.end(), c), idle.end());
    close_conn(c);
    return;
  }
  if (x->phase == Xfer::Phase::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0 && (events & (EPOLLERR | EPOLLHUP))) err = ECONNREFUSED;
    if (err != 0) {
      x->last_errno = err;
      x->conn = nullptr;
      close_conn(c);
      ++x->addr_index;
      try_connect(x);
      return;
    }
    on_connected(x);
    return;
  }
  if ((events & EPOLLOUT) && x->sent < x->req.size()) {
    if (!send_more(x)) return;
    if (c->xfer != x) return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) read_ready(c);
}

void PlainHttpClient::read_ready(Conn* c) {
  Xfer* x = c->xfer;
  // The bytes the loop counted after epoll_wait had arrived by the moment it counted them: they
  // take that stamp. Reading exactly that many leaves anything newer for the next round (the loop is
  // level-triggered), so a stamp never precedes arrival, and one recv per readiness report is the
  // common case.
  int pending = loop_.wake_readable();
  const int64_t wake = loop_.wake_readable_ns();
  if (wake == 0) pending = -1;
  for (;;) {
    size_t want = read_buf_.size();
    const bool at_wake = pending > 0;
    if (at_wake) want = std::min(want, static_cast<size_t>(pending));
    ssize_t n = recv(c->fd, read_buf_.data(), want, MSG_DONTWAIT);
    if (n > 0) {
      const int64_t t = at_wake ? wake : mono_ns();
      if (!feed(x, read_buf_.data(), static_cast<size_t>(n), t)) return;
      if (at_wake) {
        pending -= static_cast<int>(n);
        if (pending > 0) continue;
      }
      return;
    }
    if (n == 0) {
      on_eof(x);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    int e = errno;
    if (retry_fresh(x)) return;
    complete(x, CURLE_RECV_ERROR, fmt::format("Recv failure: {}", std::strerror(e)), false, false,
             0);
    return;
  }
}

namespace {

// The CURLcode libcurl gives for the same fault, so both paths classify errors alike.
int curl_code_for(Http1Decoder::Error e) {
  switch (e) {
    case Http1Decoder::Error::kNone:
      return CURLE_OK;
    case Http1Decoder::Error::kBadStatusLine:
    case Http1Decoder::Error::kSwitchedProtocols:
    case Http1Decoder::Error::kBadContentLength:
    case Http1Decoder::Error::kHeadTooLarge:
      return CURLE_WEIRD_SERVER_REPLY;
    case Http1Decoder::Error::kBadChunkSize:
    case Http1Decoder::Error::kChunkLineTooLong:
    case Http1Decoder::Error::kBadChunkEnd:
    case Http1Decoder::Error::kClosedInHead:
      return CURLE_RECV_ERROR;
    case Http1Decoder::Error::kEmptyReply:
      return CURLE_GOT_NOTHING;
    case Http1Decoder::Error::kClosedInBody:
      return CURLE_PARTIAL_FILE;
  }
  return CURLE_RECV_ERROR;
}

}  // namespace

bool PlainHttpClient::feed(Xfer* x, const char* data, size_t n, int64_t t_ns) {
  if (x->first_byte_ns < 0) x->first_byte_ns = t_ns;
  x->feed_t_ns = t_ns;
  Http1Decoder& d = x->decoder;
  switch (d.feed(data, n, *x)) {
    case Http1Decoder::Result::kMore:
      return true;
    case Http1Decoder::Result::kDone:
      // Bytes after the response (a server talking out of turn) make the connection unusable.
      complete(x, CURLE_OK, "", d.keep_alive() && d.consumed() == n, false, t_ns);
      return false;
    case Http1Decoder::Result::kStopped:
      complete(x, CURLE_WRITE_ERROR, "Failure writing output to destination", false, false, 0);
      return false;
    case Http1Decoder::Result::kFailed:
      break;
  }
  complete(x, curl_code_for(d.error()), d.message(), false, false, 0);
  return false;
}

void PlainHttpClient::on_eof(Xfer* x) {
  Http1Decoder& d = x->decoder;
  if (d.eof() == Http1Decoder::Result::kDone) {
    complete(x, CURLE_OK, "", false, false, 0);
    return;
  }
  if (d.error() == Http1Decoder::Error::kEmptyReply && retry_fresh(x)) return;
  complete(x, curl_code_for(d.error()), d.message(), false, false, 0);
}

bool PlainHttpClient::retry_fresh(Xfer* x) {
  if (x->conn == nullptr || !x->conn->reused || x->decoder.got_bytes() || x->retries > 0) {
    return false;
  }
  x->retries++;
  x->decoder.reset();
  close_conn(x->conn);
  x->conn = nullptr;
  x->sent = 0;
  open_connection(x);
  return true;
}

void PlainHttpClient::arm_timer(Xfer* x) {
  int64_t deadline = -1;
  if (x->phase == Xfer::Phase::kConnecting) deadline = x->connect_deadline_ns;
  if (x->timeout_ns > 0) {
    int64_t total = x->start_ns + x->timeout_ns;
    deadline = deadline < 0 ? total : std::min(deadline, total);
  }
  if (deadline >= 0) {
    schedule_timer(x, deadline);
  } else if (x->timer_armed) {
    loop_.cancel_timer(x->timer_id);
    x->timer_armed = false;
  }
}

void PlainHttpClient::schedule_timer(Xfer* x, int64_t deadline_ns) {
  if (x->timer_armed) loop_.cancel_timer(x->timer_id);
  x->timer_armed = true;
  const uint64_t id = x->id;
  x->timer_id = loop_.add_timer_at(deadline_ns, [this, id] {
    Xfer* y = find(id);
    if (y == nullptr) return;
    y->timer_armed = false;
    on_timer(y);
  });
}

void PlainHttpClient::on_timer(Xfer* x) {
  const int64_t now = mono_ns();
  if (x->deferred) {
    complete(x, x->deferred_code, std::move(x->deferred_message), false, false, 0);
    return;
  }
  if (x->phase == Xfer::Phase::kConnecting && now >= x->connect_deadline_ns) {
    complete(x, CURLE_OPERATION_TIMEDOUT,
             fmt::format("Connection timed out after {:.0f} milliseconds", ms_since(x->start_ns, now)),
             false, false, 0);
    return;
  }
  if (x->timeout_ns > 0 && now >= x->start_ns + x->timeout_ns) {
    complete(x, CURLE_OPERATION_TIMEDOUT,
             fmt::format("Operation timed out after {:.0f} milliseconds with {} bytes received",
                         ms_since(x->start_ns, now), x->decoder.body_bytes()),
             false, false, 0);
    return;
  }
  arm_timer(x);
}

bool PlainHttpClient::cancel(uint64_t id) {
  Xfer* x = find(id);
  if (x == nullptr) return false;
  complete(x, CURLE_ABORTED_BY_CALLBACK, "", false, true, 0);
  return true;
}

void PlainHttpClient::cancel_all() {
  std::vector<uint64_t> ids;
  for (const auto& x : xfers_) {
    if (x->active) ids.push_back(x->id);
  }
  for (uint64_t id : ids) cancel(id);
}

void PlainHttpClient::park(Conn* c) {
  c->xfer = nullptr;
  c->reused = true;
  set_watch(c, kReadEvents);
  c->ep->idle.push_back(c);
}

void PlainHttpClient::close_conn(Conn* c) {
  if (c->fd >= 0) {
    loop_.unwatch(c->fd);
    close(c->fd);
  }
  c->fd = -1;
  c->events = 0;
  c->xfer = nullptr;
  c->reused = false;
  free_conns_.push_back(c);
}

void PlainHttpClient::complete(Xfer* x, int code, std::string message, bool keep_connection,
                               bool cancelled, int64_t t_ns) {
  Conn* c = x->conn;
  x->conn = nullptr;
  if (x->sent < x->req.size()) keep_connection = false;  // answered before the request was sent
  if (c != nullptr) {
    if (keep_connection) {
      park(c);
    } else {
      close_conn(c);
    }
  }
  if (starting_ && !cancelled) {
    // Failed inside start(): the handler hears of it on the next loop turn, never from inside
    // start() (a caller refilling from on_complete would otherwise recurse, once per request).
    x->deferred = true;
    x->deferred_code = code;
    x->deferred_message = std::move(message);
    schedule_timer(x, 0);
    return;
  }
  if (x->timer_armed) loop_.cancel_timer(x->timer_id);
  x->timer_armed = false;
  const int64_t now = t_ns != 0 ? t_ns : mono_ns();
  TransferResult r;
  r.code = static_cast<CURLcode>(code);
  r.curl_error = std::move(message);
  r.cancelled = cancelled;
  r.http_status = x->decoder.status();
  r.connect_ms = x->fresh_conn && x->connected_ns >= 0 ? ms_since(x->start_ns, x->connected_ns) : 0;
  r.pretransfer_ms = x->connected_ns >= 0 ? ms_since(x->start_ns, x->connected_ns) : 0;
  r.ttfb_ms = x->first_byte_ns >= 0 ? ms_since(x->start_ns, x->first_byte_ns) : 0;
  StreamHandler* handler = x->handler;
  x->active = false;
  x->deferred = false;
  x->handler = nullptr;
  free_xfers_.push_back(x->slot);
  in_flight_--;
  handler->on_complete(r, now);
}

}  // namespace tokperf
