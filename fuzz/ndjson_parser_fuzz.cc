// Fuzz target for the NDJSON framing layer (client/ndjson_parser.h). Invariant: splitting the bytes
// differently (at the points the first bytes pick, and one byte at a time) never changes the
// records, the blank-line count or the partial-record flag; no record is empty, whitespace-only or
// contains an LF. Input layout as sse_parser_fuzz. See docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "client/ndjson_parser.h"

namespace {

struct Outcome {
  std::vector<std::string> records;
  uint64_t blank = 0, bytes = 0, dispatched = 0;
  bool partial = false;
  bool operator==(const Outcome& o) const {
    return records == o.records && blank == o.blank && bytes == o.bytes &&
           dispatched == o.dispatched && partial == o.partial;
  }
};

class Sink : public tokperf::SseSink {
 public:
  explicit Sink(Outcome* o) : o_(o) {}
  void on_event(const tokperf::SseEvent& e) override {
    if (e.data.empty() || e.data.find('\n') != std::string_view::npos) abort();
    if (e.data.find_first_not_of(" \t\r\f\v") == std::string_view::npos) abort();
    o_->records.emplace_back(e.data);
  }

 private:
  Outcome* o_;
};

Outcome run(std::string_view s, const std::vector<size_t>& cuts) {
  Outcome out;
  Sink sink(&out);
  tokperf::NdjsonParser p(&sink);
  size_t at = 0;
  for (size_t cut : cuts) {
    p.feed(s.substr(at, cut - at));
    at = cut;
  }
  p.feed(s.substr(at));
  out.blank = p.blank_lines();
  out.bytes = p.bytes_fed();
  out.dispatched = p.events_dispatched();
  out.partial = p.has_partial_event();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t n_cuts = std::min<size_t>(data[0] % 8, size - 1);
  std::string_view stream(reinterpret_cast<const char*>(data) + 1 + n_cuts, size - 1 - n_cuts);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < n_cuts; ++i) {
    cuts.push_back(stream.empty() ? 0 : data[1 + i] * stream.size() / 255);
  }
  std::sort(cuts.begin(), cuts.end());
  const Outcome whole = run(stream, {});
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  if (!(whole == run(stream, cuts)) || !(whole == run(stream, every))) {
    fprintf(stderr, "NdjsonParser: split feeding changed the outcome\n");
    abort();
  }
  if (whole.dispatched != whole.records.size()) abort();
  return 0;
}
