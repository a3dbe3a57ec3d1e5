#include "client/ndjson_parser.h"

namespace tokperf {
namespace {

constexpr unsigned char kBom[3] = {0xEF, 0xBB, 0xBF};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool blank(std::string_view s) {
  for (char c : s)
    if (!is_space(c)) return false;
  return true;
}

}  // namespace

void NdjsonParser::feed(std::string_view bytes) {
  bytes_fed_ += bytes.size();
  // BOM at stream start: match byte by byte, so a split BOM is skipped too. A partial match that
  // fails gives its bytes back as ordinary line content.
  while (at_stream_start_ && !bytes.empty()) {
    if (static_cast<unsigned char>(bytes.front()) == kBom[bom_matched_]) {
      bytes.remove_prefix(1);
      if (++bom_matched_ == 3) at_stream_start_ = false;
      continue;
    }
    line_.append(reinterpret_cast<const char*>(kBom), bom_matched_);
    at_stream_start_ = false;
  }
  while (!bytes.empty()) {
    const size_t lf = bytes.find('\n');
    if (lf == std::string_view::npos) {
      line_.append(bytes);
      return;
    }
    if (line_.empty()) {
      line(bytes.substr(0, lf));
    } else {
      line_.append(bytes.substr(0, lf));
      line(line_);
      line_.clear();
    }
    bytes.remove_prefix(lf + 1);
  }
}

void NdjsonParser::line(std::string_view l) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (blank(l)) {
    ++blank_lines_;
    return;
  }
  ++events_;
  sink_->on_event(SseEvent{"message", l, ""});
}

bool NdjsonParser::has_partial_event() const {
  if (at_stream_start_ && bom_matched_ > 0) return true;
  return !blank(line_);
}

void NdjsonParser::reset() {
  line_.clear();
  bom_matched_ = 0;
  at_stream_start_ = true;
  bytes_fed_ = 0;
  events_ = 0;
  blank_lines_ = 0;
}

}  // namespace tokperf
