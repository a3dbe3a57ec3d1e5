#include "client/transport.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "client/plain_http.h"
#include "core/clock.h"

namespace tokperf {

struct Transport::Transfer {
  Transport* owner = nullptr;
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  StreamHandler* handler = nullptr;
  std::string body;  // curl keeps a pointer to it (CURLOPT_POSTFIELDS)
  std::string url;
  std::string content_type;
  int status = 0;
  bool headers_done = false;
  char error[CURL_ERROR_SIZE] = {0};
};

namespace {

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw std::runtime_error("libcurl failed to initialise");
    }
  });
}

double info_ms(CURL* easy, CURLINFO what) {
  curl_off_t us = -1;
  if (curl_easy_getinfo(easy, what, &us) != CURLE_OK || us < 0) return -1;
  return static_cast<double>(us) / 1000.0;
}

}  // namespace

Transport::Transport(EventLoop& loop, TransportOptions options)
    : loop_(loop), options_(options) {
  loop_.snapshot_readable(true);
  global_init_once();
  multi_ = curl_multi_init();
  if (multi_ == nullptr) throw std::runtime_error("libcurl: curl_multi_init failed");
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Transport::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Transport::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, options_.http2 ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING);
  connection_cache_ = std::max(16, options_.max_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, connection_cache_);
  builtin_allowed_ =
      options_.client == HttpClientKind::kAuto && !options_.http2 && !http_proxy_configured();
  plain_url_ = std::make_unique<PlainHttpUrl>();
}

bool http_proxy_configured() {
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

const PlainHttpUrl* Transport::builtin_url(const std::string& url) {
  if (!builtin_allowed_) return nullptr;
  if (url != plain_url_text_) {
    plain_url_text_ = url;
    plain_url_ok_ = parse_plain_http_url(url, plain_url_.get());
  }
  return plain_url_ok_ ? plain_url_.get() : nullptr;
}

size_t Transport::in_flight() const {
  return transfers_.size() + (plain_ ? plain_->in_flight() : 0);
}

uint64_t Transport::body_bytes() const {
  return body_bytes_ + (plain_ ? plain_->body_bytes() : 0);
}

uint64_t Transport::body_reads() const {
  return body_reads_ + (plain_ ? plain_->body_reads() : 0);
}

Transport::~Transport() {
  cancel_all();
  plain_.reset();
  if (timer_armed_) loop_.cancel_timer(timer_id_);
  for (CURL* e : idle_easy_) curl_easy_cleanup(e);
  curl_multi_cleanup(multi_);
}

uint64_t Transport::start(const StreamRequest& request, StreamHandler* handler) {
  if (const PlainHttpUrl* url = builtin_url(request.url)) {
    if (!plain_) plain_ = std::make_unique<PlainHttpClient>(loop_, options_.connect_timeout_ns);
    builtin_transfers_++;
    return plain_->start(request, *url, handler);
  }
  curl_transfers_++;
  return start_curl(request, handler);
}

uint64_t Transport::start_curl(const StreamRequest& request, StreamHandler* handler) {
  auto t = std::make_unique<Transfer>();
  t->owner = this;
  t->id = next_id_++;
  t->handler = handler;
  t->body = request.body;
  t->url = request.url;
  if (!idle_easy_.empty()) {
    t->easy = idle_easy_.back();
    idle_easy_.pop_back();
    curl_easy_reset(t->easy);
  } else {
    t->easy = curl_easy_init();
  }
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transport::on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transport::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, nullptr);  // no compression: bytes as they arrive
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout_ns / 1'000'000));
  if (request.timeout_ns > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ns / 1'000'000));
  }
  if (!options_.verify_tls) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (options_.http2) {
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     t->url.rfind("https://", 0) == 0 ? CURL_HTTP_VERSION_2TLS
                                                      : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
  } else {
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  }
  if (!request.body.empty()) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
  }
  // "Expect: 100-continue" would add a round trip before large bodies are sent.
  t->headers = curl_slist_append(t->headers, "Expect:");
  for (const auto& h : request.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);

  // Keep enough idle connections for every concurrent stream, or curl closes and reopens them.
  if (static_cast<long>(transfers_.size() + 1) > connection_cache_) {
    connection_cache_ = static_cast<long>(transfers_.size() + 1) * 5 / 4 + 8;
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, connection_cache_);
  }
  uint64_t id = t->id;
  transfers_.emplace(id, std::move(t));
  curl_multi_add_handle(multi_, e);
  // Drive it now rather than waiting for curl's zero-delay timer to come round the loop. Reads done
  // here were not reported by epoll, so they are stamped when they happen.
  int64_t saved_stamp = io_stamp_ns_;
  io_stamp_ns_ = 0;
  drive(CURL_SOCKET_TIMEOUT, 0);
  io_stamp_ns_ = saved_stamp;
  return id;
}

void Transport::cancel(uint64_t id) {
  if ((id & PlainHttpClient::kIdBit) && plain_) {
    plain_->cancel(id);
    return;
  }
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return;
  finish(it->second.get(), CURLE_ABORTED_BY_CALLBACK, /*cancelled=*/true);
}

void Transport::cancel_all() {
  std::vector<uint64_t> ids;
  ids.reserve(transfers_.size());
  for (auto& [id, t] : transfers_) ids.push_back(id);
  for (uint64_t id : ids) cancel(id);
  if (plain_) plain_->cancel_all();
}

int Transport::on_socket(CURL* /*easy*/, curl_socket_t s, int what, void* userp, void* /*sockp*/) {
  auto* self = static_cast<Transport*>(userp);
  if (what == CURL_POLL_REMOVE) {
    self->loop_.unwatch(s);
    return 0;
  }
  uint32_t events = 0;
  if (what & CURL_POLL_IN) events |= EPOLLIN;
  if (what & CURL_POLL_OUT) events |= EPOLLOUT;
  self->loop_.watch(s, events, [self, s](uint32_t ev) {
    int mask = 0;
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) mask |= CURL_CSELECT_IN;
    if (ev & EPOLLOUT) mask |= CURL_CSELECT_OUT;
    if (ev & EPOLLERR) mask |= CURL_CSELECT_ERR;
    // Bytes that were pending at the wake carry the wake stamp; if more arrived since (a server
    // catching up sends events back to back), curl's read takes them too, and the wake stamp would
    // precede their arrival: then every read is stamped when it happens (never before arrival).
    int at_wake = self->loop_.wake_readable();
    int now_pending = 0;
    bool unchanged = at_wake > 0 && ioctl(s, FIONREAD, &now_pending) == 0 && now_pending <= at_wake;
    self->io_stamp_ns_ = unchanged ? self->loop_.wake_readable_ns() : 0;
    self->io_stamp_socket_ = s;
    self->drive(s, mask);
    self->io_stamp_ns_ = 0;
    self->io_stamp_socket_ = CURL_SOCKET_BAD;
  });
  return 0;
}

int Transport::on_timer(CURLM* /*multi*/, long timeout_ms, void* userp) {
  auto* self = static_cast<Transport*>(userp);
  // curl moves its deadline on almost every socket action; re-arming a loop timer each time costs a
  // cancel and an insert. A deadline that moves later (or away) keeps the armed, earlier timer,
  // which on firing re-arms at curl's current deadline instead of calling curl early.
  if (timeout_ms < 0) {
    self->curl_deadline_ns_ = -1;
    return 0;
  }
  const int64_t deadline = mono_ns() + timeout_ms * 1'000'000;
  self->curl_deadline_ns_ = deadline;
  if (self->timer_armed_ && self->timer_at_ns_ <= deadline) return 0;
  if (self->timer_armed_) self->loop_.cancel_timer(self->timer_id_);
  self->arm_timer(deadline);
  return 0;
}

void Transport::arm_timer(int64_t deadline_ns) {
  timer_armed_ = true;
  timer_at_ns_ = deadline_ns;
  timer_id_ = loop_.add_timer_at(deadline_ns, [this] {
    timer_armed_ = false;
    if (curl_deadline_ns_ < 0) return;          // curl no longer wants a timeout
    if (curl_deadline_ns_ > mono_ns()) {        // moved later since this timer was armed
      arm_timer(curl_deadline_ns_);
      return;
    }
    curl_deadline_ns_ = -1;  // due: curl sets its next one from inside the call below
    drive(CURL_SOCKET_TIMEOUT, 0);
  });
}

size_t Transport::on_write(char* data, size_t size, size_t n, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  // The wake stamp belongs to the socket epoll reported; curl may also run other transfers while it
  // drives that socket (expired timers), and their reads are stamped when they happen.
  int64_t now = 0;
  if (t->owner->io_stamp_ns_ != 0) {
    curl_socket_t sock = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(t->easy, CURLINFO_ACTIVESOCKET, &sock) == CURLE_OK &&
        sock == t->owner->io_stamp_socket_) {
      now = t->owner->io_stamp_ns_;
    }
  }
  if (now == 0) now = mono_ns();
  size_t len = size * n;
  t->owner->body_bytes_ += len;
  t->owner->body_reads_++;
  return t->handler->on_body(std::string_view(data, len), now) ? len : 0;
}

size_t Transport::on_header(char* data, size_t size, size_t n, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  size_t len = size * n;
  std::string_view line(data, len);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (also after a 100 Continue or a redirect): start over.
    t->headers_done = false;
    t->content_type.clear();
    size_t sp = line.find(' ');
    t->status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
  } else if (line == "\r\n" || line == "\n") {
    if (t->status >= 200 && !t->headers_done) {
      t->headers_done = true;
      t->handler->on_headers(t->status, t->content_type, mono_ns());
    }
  } else if (len > 13 && strncasecmp(data, "content-type:", 13) == 0) {
    std::string_view v = line.substr(13);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    t->content_type.assign(v);
  }
  return len;
}

void Transport::drive(curl_socket_t s, int ev_bitmask) {
  int running = 0;
  curl_multi_socket_action(multi_, s, ev_bitmask, &running);
  reap_finished();
}

void Transport::reap_finished() {
  int pending = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &pending)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    if (t != nullptr) finish(t, msg->data.result, /*cancelled=*/false);
  }
}

void Transport::finish(Transfer* t, CURLcode code, bool cancelled) {
  int64_t now = mono_ns();
  TransferResult r;
  r.code = code;
  r.cancelled = cancelled;
  r.curl_error = t->error;
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  r.http_status = status != 0 ? static_cast<int>(status) : t->status;
  r.connect_ms = info_ms(t->easy, CURLINFO_CONNECT_TIME_T);  // incl. name lookup; 0 if reused
  r.pretransfer_ms = info_ms(t->easy, CURLINFO_PRETRANSFER_TIME_T);
  r.ttfb_ms = info_ms(t->easy, CURLINFO_STARTTRANSFER_TIME_T);
  curl_multi_remove_handle(multi_, t->easy);
  curl_slist_free_all(t->headers);
  t->headers = nullptr;
  idle_easy_.push_back(t->easy);
  StreamHandler* handler = t->handler;
  auto node = transfers_.extract(t->id);  // keeps Transfer alive through the callback
  handler->on_complete(r, now);
}

std::string describe_curl_failure(CURLcode code, std::string_view curl_error,
                                  std::string_view url) {
  std::string cause = curl_error.empty() ? curl_easy_strerror(code) : std::string(curl_error);
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      return fmt::format("cannot connect to {}: {} (is the server running and the port right?)", url,
                         cause);
    case CURLE_COULDNT_RESOLVE_HOST:
      return fmt::format("cannot resolve the host of {}: {}", url, cause);
    case CURLE_OPERATION_TIMEDOUT:
      return fmt::format("timed out talking to {}: {}", url, cause);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
      return fmt::format("TLS failed with {}: {}", url, cause);
    default:
      return fmt::format("request to {} failed: {}", url, cause);
  }
}

}  // namespace tokperf
