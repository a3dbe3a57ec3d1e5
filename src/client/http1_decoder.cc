#include "client/http1_decoder.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

namespace tokperf {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

// Whether a comma-separated header value holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Parses a chunk-size line (without its LF): hex digits, then optional extensions.
bool parse_chunk_size(std::string_view line, uint64_t* size) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  uint64_t v = 0;
  size_t i = 0;
  for (; i < line.size(); ++i) {
    char ch = line[i];
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                     : -1;
    if (d < 0) break;
    v = v * 16 + static_cast<uint64_t>(d);
    if (v > Http1Decoder::kMaxChunkSize) return false;
  }
  if (i == 0) return false;
  std::string_view rest = line.substr(i);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.empty() && rest.front() != ';') return false;
  *size = v;
  return true;
}

}  // namespace

void Http1Decoder::reset() {
  got_bytes_ = false;
  in_body_ = false;
  final_ = Result::kMore;
  head_.clear();
  head_scan_ = 0;
  status_ = 0;
  content_type_.clear();
  keep_alive_ = true;
  framing_ = Framing::kClose;
  remaining_ = 0;
  chunk_ = Chunk::kSize;
  line_.clear();
  consumed_ = 0;
  body_bytes_ = 0;
  error_ = Error::kNone;
  message_.clear();
}

Http1Decoder::Result Http1Decoder::fail(Error e, std::string message) {
  final_ = Result::kFailed;
  error_ = e;
  message_ = std::move(message);
  return Result::kFailed;
}

Http1Decoder::Result Http1Decoder::feed(const char* data, size_t n, Sink& sink) {
  if (final_ != Result::kMore) return final_;
  if (n > 0) got_bytes_ = true;
  if (in_body_) return feed_body(data, n, 0, sink);
  size_t off = 0;  // bytes of `data` the heads parsed so far took
  for (;;) {
    const size_t before = head_.size();
    head_.append(data + off, n - off);
    // The head ends at an empty line (CRLF CRLF, or bare LFs, as libcurl also accepts).
    size_t end = std::string::npos;
    const std::string& h = head_;
    for (size_t i = head_scan_; i < h.size(); ++i) {
      if (h[i] != '\n') continue;
      size_t j = i + 1;
      if (j < h.size() && h[j] == '\r') ++j;
      if (j < h.size() && h[j] == '\n') {
        end = j + 1;
        break;
      }
    }
    // The limit holds however the bytes were split: a head must end within kMaxHeadBytes.
    if (end == std::string::npos ? h.size() >= kMaxHeadBytes : end > kMaxHeadBytes) {
      return fail(Error::kHeadTooLarge,
                  fmt::format("the response headers exceed {} KiB", kMaxHeadBytes / 1024));
    }
    if (end == std::string::npos) {
      head_scan_ = h.size() >= 2 ? h.size() - 2 : 0;
      return Result::kMore;
    }
    // Every head end inside the bytes held before this call would have been found then, so the
    // end lies in `data`, at off + (end - before).
    off += end - before;
    int verdict = parse_head(end, sink);
    if (verdict < 0) return Result::kFailed;
    head_.clear();
    head_scan_ = 0;
    if (verdict == 0) continue;  // an interim 1xx response: the real one follows
    in_body_ = true;
    if (framing_ == Framing::kNone || (framing_ == Framing::kLength && remaining_ == 0)) {
      consumed_ = off;
      return final_ = Result::kDone;
    }
    return feed_body(data + off, n - off, off, sink);
  }
}

int Http1Decoder::parse_head(size_t end, Sink& sink) {
  std::string_view head(head_.data(), end);
  size_t eol = head.find('\n');
  std::string_view status_line = trim(head.substr(0, eol));
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") ||
      (status_line[7] != '0' && status_line[7] != '1') || status_line[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(status_line[9])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[10])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[11])) ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    std::string shown(status_line.substr(0, 60));
    for (char& ch : shown) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    }
    fail(Error::kBadStatusLine,
         fmt::format("the server's reply is not an HTTP/1.x response (it began '{}')", shown));
    return -1;
  }
  const bool http11 = status_line[7] == '1';
  const int status = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 +
                     (status_line[11] - '0');
  bool keep_alive = http11;
  bool chunked = false;
  int64_t content_length = -1;
  std::string_view content_type;
  std::string_view lines = head.substr(eol + 1);
  while (!lines.empty()) {
    size_t nl = lines.find('\n');
    std::string_view line = lines.substr(0, nl);
    lines = nl == std::string_view::npos ? std::string_view() : lines.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-type")) {
      content_type = value;
    } else if (iequals(name, "content-length")) {
      int64_t v = 0;
      bool ok = !value.empty() && value.size() <= 18;
      for (char ch : value) {
        if (ch < '0' || ch > '9') ok = false;
        if (ok) v = v * 10 + (ch - '0');
      }
      if (!ok) {
        fail(Error::kBadContentLength, "the response has an invalid Content-Length");
        return -1;
      }
      if (content_length >= 0 && content_length != v) {
        fail(Error::kBadContentLength, "the response has two different Content-Length headers");
        return -1;
      }
      content_length = v;
    } else if (iequals(name, "transfer-encoding")) {
      if (has_token(value, "chunked")) chunked = true;
    } else if (iequals(name, "connection")) {
      if (has_token(value, "close")) keep_alive = false;
      if (has_token(value, "keep-alive")) keep_alive = true;
    }
  }
  if (status < 200) {
    if (status == 101) {
      fail(Error::kSwitchedProtocols,
           "the server switched protocols (101), which was not asked for");
      return -1;
    }
    return 0;
  }
  status_ = status;
  content_type_.assign(content_type);
  keep_alive_ = keep_alive;
  if (status == 204 || status == 304) {
    framing_ = Framing::kNone;
  } else if (chunked) {
    framing_ = Framing::kChunked;
    chunk_ = Chunk::kSize;
  } else if (content_length >= 0) {
    framing_ = Framing::kLength;
    remaining_ = static_cast<uint64_t>(content_length);
  } else {
    framing_ = Framing::kClose;
    keep_alive_ = false;
  }
  sink.on_head(status_, content_type_);
  return 1;
}

bool Http1Decoder::deliver(const char* data, size_t n, Sink& sink) {
  body_bytes_ += n;
  return sink.on_body(data, n);
}

Http1Decoder::Result Http1Decoder::feed_body(const char* data, size_t n, size_t base, Sink& sink) {
  auto stop = [&] { return final_ = Result::kStopped; };
  auto done = [&](size_t used) {
    consumed_ = base + used;
    return final_ = Result::kDone;
  };
  switch (framing_) {
    case Framing::kNone:
      return Result::kMore;
    case Framing::kClose:
      if (n > 0 && !deliver(data, n, sink)) return stop();
      return Result::kMore;
    case Framing::kLength: {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, remaining_));
      if (take > 0 && !deliver(data, take, sink)) return stop();
      remaining_ -= take;
      if (remaining_ == 0) return done(take);
      return Result::kMore;
    }
    case Framing::kChunked:
      break;
  }
  auto bad = [&](Error e, std::string why) { return fail(e, std::move(why)); };
  size_t i = 0;
  while (i < n) {
    switch (chunk_) {
      case Chunk::kSize:
      case Chunk::kTrailer: {
        const char* start = data + i;
        const auto* nl = static_cast<const char*>(std::memchr(start, '\n', n - i));
        size_t take = nl != nullptr ? static_cast<size_t>(nl - start) : n - i;
        if (line_.size() + take > kMaxLineBytes) {
          return bad(Error::kChunkLineTooLong,
                     "a chunk-size or trailer line of the chunked response exceeds 4 KiB");
        }
        if (nl == nullptr) {
          line_.append(start, take);
          return Result::kMore;
        }
        i += take + 1;
        std::string_view line(start, take);
        if (!line_.empty()) {
          line_.append(start, take);
          line = line_;
        }
        if (chunk_ == Chunk::kTrailer) {
          bool blank = line.empty() || line == "\r";
          line_.clear();
          if (blank) return done(i);
          break;
        }
        uint64_t size = 0;
        if (!parse_chunk_size(line, &size)) {
          return bad(Error::kBadChunkSize,
                     "Illegal or missing hexadecimal sequence in chunked-encoding");
        }
        line_.clear();
        if (size == 0) {
          chunk_ = Chunk::kTrailer;
        } else {
          remaining_ = size;
          chunk_ = Chunk::kData;
        }
        break;
      }
      case Chunk::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(n - i, remaining_));
        if (!deliver(data + i, take, sink)) return stop();
        i += take;
        remaining_ -= take;
        if (remaining_ == 0) chunk_ = Chunk::kDataCr;
        break;
      }
      case Chunk::kDataCr:
        if (data[i] == '\r') {
          chunk_ = Chunk::kDataLf;
        } else if (data[i] == '\n') {
          chunk_ = Chunk::kSize;
        } else {
          return bad(Error::kBadChunkEnd, "a chunk of the chunked response is not followed by CRLF");
        }
        ++i;
        break;
      case Chunk::kDataLf:
        if (data[i] != '\n') {
          return bad(Error::kBadChunkEnd, "a chunk of the chunked response is not followed by CRLF");
        }
        chunk_ = Chunk::kSize;
        ++i;
        break;
    }
  }
  return Result::kMore;
}

Http1Decoder::Result Http1Decoder::eof() {
  if (final_ != Result::kMore) return final_;
  if (!in_body_) {
    if (!got_bytes_) return fail(Error::kEmptyReply, "Empty reply from server");
    return fail(Error::kClosedInHead, "the connection closed in the middle of the response headers");
  }
  switch (framing_) {
    case Framing::kClose:
    case Framing::kNone:
      consumed_ = 0;
      return final_ = Result::kDone;
    case Framing::kLength:
      return fail(Error::kClosedInBody,
                  fmt::format("transfer closed with {} bytes remaining to read", remaining_));
    case Framing::kChunked:
      break;
  }
  return fail(Error::kClosedInBody, "transfer closed with outstanding read data remaining");
}

}  // namespace tokperf
