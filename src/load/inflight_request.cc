#include "load/inflight_request.h"

#include <fmt/format.h>

#include "client/http_fetch.h"
#include "client/protocol_detect.h"
#include "core/clock.h"

namespace tokperf {
namespace {

constexpr size_t kErrorBodyBytes = 4096;

ErrorKind kind_for_curl(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return ErrorKind::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
      return ErrorKind::kConnect;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return ErrorKind::kIncomplete;
    default:
      return ErrorKind::kOther;
  }
}

}  // namespace

void InflightRequest::start(RequestTimeline timeline, const StreamRequest& request,
                            Transport& transport, bool keep_reply) {
  tl_ = std::move(timeline);
  recorder_.begin(&tl_, keep_reply);
  error_body_.clear();
  content_type_.clear();
  status_ = 0;
  tl_.start_unix_us = wall_us();
  tl_.send_ns = mono_ns();  // immediately before the transfer starts
  transfer_id_ = transport.start(request, this);
}

void InflightRequest::on_headers(int http_status, std::string_view content_type, int64_t) {
  status_ = http_status;
  content_type_.assign(content_type);
  tl_.http_status = http_status;
}

bool InflightRequest::on_body(std::string_view bytes, int64_t t_ns) {
  if (status_ >= 200 && status_ < 300 && is_event_stream()) {
    recorder_.on_bytes(bytes, t_ns);
  } else if (error_body_.size() < kErrorBodyBytes) {
    error_body_.append(bytes.substr(0, kErrorBodyBytes - error_body_.size()));
  }
  return true;
}

void InflightRequest::on_complete(const TransferResult& r, int64_t t_ns) {
  tl_.end_ns = t_ns;
  tl_.connect_ms = r.connect_ms;
  tl_.ttfb_ms = r.ttfb_ms;
  if (tl_.http_status == 0) tl_.http_status = r.http_status;
  classify_outcome(r);
  on_done_(this);
}

bool InflightRequest::is_event_stream() const {
  // Some servers send no content type on streams; only a declared type that cannot carry the
  // protocol's framing (SSE, or NDJSON for Ollama) is "not streaming".
  return content_type_fits(recorder_.api(), content_type_);
}

void InflightRequest::fail(ErrorKind kind, std::string message) {
  tl_.error.kind = kind;
  tl_.error.http_status = tl_.http_status;
  tl_.error.message = std::move(message);
}

void InflightRequest::classify_outcome(const TransferResult& r) {
  int status = tl_.http_status;
  if (r.cancelled) return fail(ErrorKind::kCancelled, "stopped before the response finished");
  if (status == 401 || status == 403) {
    return fail(ErrorKind::kAuth, fmt::format("HTTP {}: the API key was refused: {}", status,
                                              body_excerpt(error_body_)));
  }
  if (status == 429) {
    return fail(ErrorKind::kRateLimited,
                fmt::format("HTTP 429 (rate limited): {}", body_excerpt(error_body_)));
  }
  if (status == 404 || status == 405) {  // often a server of another protocol than --api
    return fail(ErrorKind::kHttp,
                fmt::format("HTTP {}: {} (no --api {} endpoint here: the server may speak another "
                            "protocol; --api auto probes it)",
                            status, body_excerpt(error_body_), api_kind_name(recorder_.api())));
  }
  if (status >= 300) {
    return fail(ErrorKind::kHttp, fmt::format("HTTP {}: {}", status, body_excerpt(error_body_)));
  }
  if (r.code != CURLE_OK) {
    ErrorKind k = kind_for_curl(r.code);
    std::string what = r.curl_error.empty() ? curl_easy_strerror(r.code) : r.curl_error;
    if (k == ErrorKind::kIncomplete) {
      what = fmt::format("connection dropped mid-stream after {} token events: {}",
                         tl_.token_events.size(), what);
    }
    return fail(k, what);
  }
  if (status >= 200 && !is_event_stream()) {
    std::string foreign = describe_foreign_stream(recorder_.api(), content_type_, error_body_);
    if (!foreign.empty()) return fail(ErrorKind::kNotStreaming, std::move(foreign));
    return fail(ErrorKind::kNotStreaming,
                fmt::format("the server answered '{}', not a text/event-stream, to a streaming "
                            "request: {}",
                            content_type_, body_excerpt(error_body_)));
  }
  // Nothing usable arrived: say what did when it is another protocol (wrong --api, a proxy).
  if (tl_.token_events.empty() && !tl_.saw_done && !recorder_.saw_finish() &&
      recorder_.stream_errors() == 0) {
    std::string foreign = describe_foreign_stream(recorder_.api(), content_type_, recorder_.head());
    if (!foreign.empty()) return fail(ErrorKind::kParse, std::move(foreign));
  }
  if (recorder_.stream_errors() > 0) {
    return fail(ErrorKind::kStreamError, fmt::format("the server sent an error in the stream: {}",
                                                     recorder_.first_stream_error()));
  }
  if (recorder_.parse_errors() > 0) {
    return fail(ErrorKind::kParse, fmt::format("{} malformed event(s); first: {}",
                                               recorder_.parse_errors(),
                                               recorder_.first_parse_error()));
  }
  if (!tl_.saw_done && !recorder_.saw_finish()) {
    return fail(ErrorKind::kIncomplete, recorder_.truncated()
                                            ? "the stream ended in the middle of an event"
                                            : "the stream ended without a finish_reason or [DONE]");
  }
}

}  // namespace tokperf
