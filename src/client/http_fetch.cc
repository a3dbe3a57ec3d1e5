#include "client/http_fetch.h"

#include <curl/curl.h>

#include <memory>

#include "client/transport.h"

namespace tokperf {
namespace {

size_t append_body(char* data, size_t size, size_t n, void* userp) {
  static_cast<std::string*>(userp)->append(data, size * n);
  return size * n;
}

}  // namespace

Result<HttpReply> http_fetch(std::string_view method, const std::string& url,
                             const std::vector<std::string>& headers, std::string_view body,
                             int64_t timeout_ns) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), &curl_easy_cleanup);
  if (!easy) return Error{"libcurl: curl_easy_init failed"};
  CURL* e = easy.get();
  HttpReply reply;
  char err[CURL_ERROR_SIZE] = {0};
  std::string method_str(method);
  std::string body_str(body);
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &append_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ns / 1'000'000));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ns / 1'000'000));
  if (method_str == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method_str.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body_str.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_str.size()));
  }
  curl_slist* list = curl_slist_append(nullptr, "Expect:");
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
  CURLcode rc = curl_easy_perform(e);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) return Error{describe_curl_failure(rc, err, url)};
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  reply.status = static_cast<int>(status);
  char* ct = nullptr;
  curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ct);
  if (ct != nullptr) reply.content_type = ct;
  return reply;
}

std::string body_excerpt(std::string_view body, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(body.size(), max_bytes) + 3);
  for (char c : body) {
    if (out.size() >= max_bytes) {
      // Do not cut a UTF-8 sequence in half.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
      out += "...";
      return out;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return out;
}

}  // namespace tokperf
