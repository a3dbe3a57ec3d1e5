#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/clock.h"

namespace tokperf {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses "METHOD SP target SP HTTP/1.x" into req; false if it is not one.
bool parse_request_line(std::string_view line, HttpRequest& req) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return false;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char c : method) {
    if (!is_token_char(c)) return false;
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  if (target.front() != '/' && target != "*") return false;
  if (version == "HTTP/1.1") {
    req.version_minor = 1;
  } else if (version == "HTTP/1.0") {
    req.version_minor = 0;
  } else {
    return false;
  }
  req.method = method;
  req.target = target;
  size_t q = target.find('?');
  req.path = target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  return true;
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return &v;
  }
  return nullptr;
}

HttpParseResult parse_http_request(std::string_view in, size_t max_header_bytes,
                                   size_t max_body_bytes, HttpRequest& req) {
  HttpParseResult r;
  auto error = [&r](int status) {
    r.kind = HttpParseResult::Kind::kError;
    r.status = status;
    return r;
  };
  size_t line_end = in.find("\r\n");
  if (line_end != std::string_view::npos && !parse_request_line(in.substr(0, line_end), req)) {
    return error(400);
  }
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (in.size() > max_header_bytes) return error(431);
    return r;  // need more
  }
  if (head_end > max_header_bytes) return error(431);
  std::string_view rest = in.substr(line_end + 2, head_end + 2 - (line_end + 2));
  int64_t content_length = -1;
  while (!rest.empty()) {
    size_t eol = rest.find("\r\n");
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return error(400);
    std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!is_token_char(c)) return error(400);
    }
    std::string_view value = trim_ows(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      if (value.empty() || value.size() > 18) return error(400);
      int64_t v = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return error(400);
        v = v * 10 + (c - '0');
      }
      if (content_length >= 0 && content_length != v) return error(400);
      content_length = v;
    } else if (iequals(name, "transfer-encoding")) {
      return error(501);
    }
    req.headers.emplace_back(name, value);
  }
  size_t body_len = content_length < 0 ? 0 : static_cast<size_t>(content_length);
  if (body_len > max_body_bytes) return error(413);
  size_t total = head_end + 4 + body_len;
  if (in.size() < total) return r;  // wait for the rest of the body
  req.body.assign(in.substr(head_end + 4, body_len));
  r.kind = HttpParseResult::Kind::kComplete;
  r.consumed = total;
  return r;
}

const char* http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

// One accepted socket. Owned by HttpServer::connections_; responses hold weak references.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HttpServer& server, int fd, uint64_t id) : server_(server), fd_(fd), id_(id) {}

  void on_io(uint32_t events);
  // Sends the pieces with one sendmsg() if nothing is queued, else queues them. False once closed.
  bool send_pieces(std::initializer_list<std::string_view> pieces);
  void response_done(bool keep_alive);
  void close(bool reset);
  bool closed() const { return closed_; }
  bool keep_alive() const { return keep_alive_; }

 private:
  void read_input();
  void flush();
  void try_parse();
  void schedule_parse();
  void reply_error(int status);

  HttpServer& server_;
  int fd_;
  uint64_t id_;
  bool closed_ = false;
  bool busy_ = false;  // a request is being answered; later input waits in in_
  bool keep_alive_ = true;
  bool close_after_flush_ = false;
  bool want_out_ = false;
  std::string in_;
  std::string out_;
  size_t out_off_ = 0;
  std::weak_ptr<HttpResponse> current_;
};

void HttpConnection::on_io(uint32_t events) {
  auto self = shared_from_this();  // close() drops the server's reference
  if (events & EPOLLERR) {
    close(false);
    return;
  }
  if (events & EPOLLOUT) flush();
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) read_input();
  if (closed_) return;
  if (!busy_) try_parse();
}

void HttpConnection::read_input() {
  char buf[16384];
  for (;;) {
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      server_.stats_.bytes_received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      // A client that keeps sending while its response streams gets cut off past the limits.
      if (in_.size() > server_.options_.max_header_bytes + server_.options_.max_body_bytes + 1) {
        close(true);
        return;
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    close(false);  // peer closed (n == 0) or a hard error
    return;
  }
}

bool HttpConnection::send_pieces(std::initializer_list<std::string_view> pieces) {
  if (closed_) return false;
  if (out_off_ < out_.size()) {
    for (auto p : pieces) out_.append(p);
    return true;
  }
  out_.clear();
  out_off_ = 0;
  iovec iov[4];
  size_t niov = 0, total = 0;
  for (auto p : pieces) {
    if (p.empty()) continue;
    iov[niov].iov_base = const_cast<char*>(p.data());
    iov[niov].iov_len = p.size();
    total += p.size();
    ++niov;
  }
  if (total == 0) return true;
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = niov;
  ssize_t n;
  do {
    n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      close(false);
      return false;
    }
    n = 0;
  }
  server_.stats_.bytes_sent.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  size_t sent = static_cast<size_t>(n);
  if (sent < total) {
    // Keep what the kernel did not take, in order, and wait for EPOLLOUT.
    size_t skip = sent;
    for (size_t i = 0; i < niov; ++i) {
      size_t len = iov[i].iov_len;
      if (skip >= len) {
        skip -= len;
        continue;
      }
      out_.append(static_cast<const char*>(iov[i].iov_base) + skip, len - skip);
      skip = 0;
    }
    if (!want_out_) {
      want_out_ = true;
      auto weak = weak_from_this();
      server_.loop_.watch(fd_, EPOLLIN | EPOLLOUT | EPOLLRDHUP, [weak](uint32_t ev) {
        if (auto c = weak.lock()) c->on_io(ev);
      });
    }
  }
  return true;
}

void HttpConnection::flush() {
  while (out_off_ < out_.size()) {
    ssize_t n = send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      close(false);
      return;
    }
    server_.stats_.bytes_sent.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    out_off_ += static_cast<size_t>(n);
  }
  out_.clear();
  out_off_ = 0;
  if (want_out_) {
    want_out_ = false;
    auto weak = weak_from_this();
    server_.loop_.watch(fd_, EPOLLIN | EPOLLRDHUP, [weak](uint32_t ev) {
      if (auto c = weak.lock()) c->on_io(ev);
    });
  }
  if (close_after_flush_) close(false);
}

void HttpConnection::response_done(bool keep_alive) {
  busy_ = false;
  current_.reset();
  if (!keep_alive) {
    close_after_flush_ = true;
    busy_ = true;  // serve nothing more on this connection
    if (out_off_ >= out_.size()) close(false);
    return;
  }
  if (!in_.empty()) schedule_parse();
}

// The next pipelined request is parsed on a later turn, never inside the previous handler's call.
void HttpConnection::schedule_parse() {
  auto weak = weak_from_this();
  server_.loop_.add_timer_at(0, [weak] {
    auto c = weak.lock();
    if (c && !c->closed_ && !c->busy_) c->try_parse();
  });
}

void HttpConnection::close(bool reset) {
  if (closed_) return;
  closed_ = true;
  auto self = shared_from_this();
  if (reset) {
    linger lg{1, 0};  // close() then sends RST instead of FIN
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  server_.loop_.unwatch(fd_);
  server_.forget(fd_);
  ::close(fd_);
  if (auto resp = current_.lock()) {
    if (!resp->finished_ && !resp->closed_) {
      resp->closed_ = true;
      if (resp->on_close_) {
        // Deferred: the handler may be inside write() right now.
        server_.loop_.add_timer_at(0, [cb = std::move(resp->on_close_)] { cb(); });
        resp->on_close_ = nullptr;
      }
    }
  }
  current_.reset();
}

void HttpConnection::reply_error(int status) {
  server_.stats_.bad_requests.fetch_add(1, std::memory_order_relaxed);
  busy_ = true;
  close_after_flush_ = true;
  std::string body = std::string("{\"error\":{\"message\":\"") + http_reason(status) + "\"}}";
  std::string head =
      "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n";
  if (send_pieces({head, body}) && out_off_ >= out_.size()) close(false);
}

void HttpConnection::try_parse() {
  if (in_.empty()) return;
  const auto& opts = server_.options_;
  HttpRequest req;
  HttpParseResult parsed = parse_http_request(in_, opts.max_header_bytes, opts.max_body_bytes, req);
  if (parsed.kind == HttpParseResult::Kind::kNeedMore) return;
  if (parsed.kind == HttpParseResult::Kind::kError) return reply_error(parsed.status);
  in_.erase(0, parsed.consumed);
  req.received_ns = mono_ns();
  req.connection_id = id_;

  const std::string* conn_hdr = req.header("connection");
  if (req.version_minor == 0) {
    keep_alive_ = conn_hdr != nullptr && iequals(*conn_hdr, "keep-alive");
  } else {
    keep_alive_ = conn_hdr == nullptr || !iequals(*conn_hdr, "close");
  }
  busy_ = true;
  server_.stats_.requests.fetch_add(1, std::memory_order_relaxed);
  auto resp = std::make_shared<HttpResponse>(weak_from_this());
  current_ = resp;
  auto self = shared_from_this();
  server_.handler_(req, std::move(resp));
}

// ---- HttpResponse ----

HttpResponse::~HttpResponse() {
  if (finished_) return;
  if (auto c = conn_.lock()) c->close(true);  // never leave a client waiting forever
}

bool HttpResponse::alive() const {
  auto c = conn_.lock();
  return c && !c->closed();
}

bool HttpResponse::start(int status, const HttpHeaders& headers, Mode mode, std::string_view body) {
  auto c = conn_.lock();
  if (!c || c->closed() || started_) return false;
  started_ = true;
  chunked_ = mode == Mode::kChunked;
  bool keep_alive = c->keep_alive();
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) + "\r\n";
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  if (chunked_) {
    head += "Transfer-Encoding: chunked\r\n";
  } else {
    head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!c->send_pieces({head, chunked_ ? std::string_view() : body})) return false;
  if (!chunked_) {
    finished_ = true;
    c->response_done(keep_alive);
  }
  return true;
}

bool HttpResponse::write(std::string_view bytes) {
  auto c = conn_.lock();
  if (!c || c->closed() || !started_ || finished_ || !chunked_) return false;
  if (bytes.empty()) return true;
  char size_line[24];
  int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", bytes.size());
  return c->send_pieces({std::string_view(size_line, static_cast<size_t>(n)), bytes, "\r\n"});
}

bool HttpResponse::finish() {
  auto c = conn_.lock();
  if (!c || c->closed() || !started_ || finished_) return false;
  finished_ = true;
  bool ok = !chunked_ || c->send_pieces({"0\r\n\r\n"});
  if (ok) c->response_done(c->keep_alive());
  return ok;
}

void HttpResponse::abort() {
  if (auto c = conn_.lock()) c->close(true);
}

bool HttpResponse::write_raw(std::string_view bytes) {
  auto c = conn_.lock();
  if (!c || c->closed() || finished_) return false;
  started_ = true;
  return c->send_pieces({bytes});
}

void HttpResponse::finish_raw(bool keep_alive) {
  auto c = conn_.lock();
  if (!c || c->closed() || finished_) return;
  finished_ = true;
  c->response_done(keep_alive && c->keep_alive());
}

bool HttpResponse::reply_json(int status, std::string_view json, const HttpHeaders& extra) {
  HttpHeaders h = extra;
  h.emplace_back("Content-Type", "application/json");
  return start(status, h, Mode::kContentLength, json);
}

bool HttpResponse::start_sse(int status, const HttpHeaders& extra) {
  HttpHeaders h = extra;
  h.emplace_back("Content-Type", "text/event-stream");
  h.emplace_back("Cache-Control", "no-cache");
  return start(status, h, Mode::kChunked);
}

// ---- HttpServer ----

HttpServer::HttpServer(EventLoop& loop, Handler handler, Options options)
    : loop_(loop), handler_(std::move(handler)), options_(options) {}

HttpServer::~HttpServer() { close_all(); }

Status HttpServer::listen(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Error{"http server: '" + host + "' is not an IPv4 address (e.g. 127.0.0.1)"};
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{std::string("http server: socket: ") + std::strerror(errno)};
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (options_.reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    std::string msg = std::strerror(errno);
    ::close(fd);
    return Error{"http server: SO_REUSEPORT: " + msg};
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, options_.listen_backlog) != 0) {
    std::string msg = std::strerror(errno);
    ::close(fd);
    return Error{"http server: cannot listen on " + host + ":" + std::to_string(port) + ": " + msg};
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  loop_.watch(fd, EPOLLIN, [this](uint32_t) { on_accept(); });
  return Status::Ok();
}

void HttpServer::on_accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
        // Out of descriptors: shed this connection rather than leave it in the backlog, where the
        // listen socket stays readable and the loop would spin on it.
        ::close(spare_fd_);
        const int shed = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (shed >= 0) {
          // Counted before the close, so a peer that sees its connection end sees it counted.
          stats_.connections_refused.fetch_add(1, std::memory_order_relaxed);
          ::close(shed);
        }
        spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (shed >= 0 && spare_fd_ >= 0) continue;
      }
      // EAGAIN: drained. Otherwise try again on the next readiness.
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto conn = std::make_shared<HttpConnection>(*this, fd, next_connection_id_++);
    connections_[fd] = conn;
    stats_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    stats_.connections_open.fetch_add(1, std::memory_order_relaxed);
    std::weak_ptr<HttpConnection> weak = conn;
    loop_.watch(fd, EPOLLIN | EPOLLRDHUP, [weak](uint32_t ev) {
      if (auto c = weak.lock()) c->on_io(ev);
    });
  }
}

void HttpServer::forget(int fd) {
  if (connections_.erase(fd) != 0) {
    stats_.connections_open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void HttpServer::close_all() {
  if (listen_fd_ >= 0) {
    loop_.unwatch(listen_fd_);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
  }
  auto conns = std::move(connections_);
  connections_.clear();
  stats_.connections_open.store(0, std::memory_order_relaxed);
  for (auto& [fd, c] : conns) c->close(false);
}

}  // namespace tokperf
