// Blocking one-off HTTP calls for set-up before any load: GET /models, POST /tokenize, health checks.
// Not for the measured path (that is client/transport.h). Safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// Performs one request. Fails (Result error) only when no HTTP reply came at all; the message names
// the URL and the cause. An HTTP error status is a successful Result with that status.
Result<HttpReply> http_fetch(std::string_view method, const std::string& url,
                             const std::vector<std::string>& headers, std::string_view body = {},
                             int64_t timeout_ns = 10'000'000'000);

// First ~300 bytes of a body, on one line, for error messages.
std::string body_excerpt(std::string_view body, size_t max_bytes = 300);

}  // namespace tokperf
