// Fuzz target for the Prometheus/OpenMetrics exposition parser and the window arithmetic on top of
// it. Invariants: splitting the bytes differently (and byte by byte) never changes what the parser
// reads; computing a window over two parses never crashes and percentiles stay inside their bucket.
// Input layout: byte 0 picks how many split points follow (0-7), the next bytes place them, the
// rest is the exposition. See docs/FUZZING.md.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "servermetrics/exposition_parser.h"
#include "servermetrics/server_window.h"

namespace {

using namespace tokperf::servermetrics;

std::string fingerprint(const Exposition& e) {
  std::string s;
  for (const Sample& x : e.samples) {
    s += series_key(x.name, x.labels);
    s += '=';
    s += std::isnan(x.value) ? std::string("NaN") : std::to_string(x.value);
    s += x.timestamp ? "@" + std::to_string(*x.timestamp) : "";
    s += '\n';
  }
  for (const auto& [name, f] : e.families) {
    s += name + "|" + metric_type_name(f.type) + "|" + f.help + "|" + f.unit + "\n";
  }
  s += std::to_string(e.bad_lines) + e.first_error + (e.saw_eof ? "EOF" : "");
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t n_splits = data[0] % 8;
  if (size < 1 + n_splits) return 0;
  std::vector<size_t> splits;
  const std::string_view text(reinterpret_cast<const char*>(data + 1 + n_splits),
                              size - 1 - n_splits);
  for (size_t i = 0; i < n_splits; ++i) {
    splits.push_back(text.empty() ? 0 : data[1 + i] % (text.size() + 1));
  }
  std::sort(splits.begin(), splits.end());

  const Exposition whole = parse_exposition(text);
  const std::string expected = fingerprint(whole);

  ExpositionParser pieces;
  size_t at = 0;
  for (size_t s : splits) {
    pieces.feed(text.substr(at, s - at));
    at = s;
  }
  pieces.feed(text.substr(at));
  if (fingerprint(pieces.finish()) != expected) abort();

  ExpositionParser bytes;
  for (char c : text) bytes.feed(std::string_view(&c, 1));
  if (fingerprint(bytes.finish()) != expected) abort();

  // A window from the page to itself and from an empty page to it.
  Scrape a{1, true, {}, Exposition{}}, b{2, true, {}, whole};
  const Scrape pair[2] = {a, b};
  if (auto w = compute_window(pair)) {
    for (const auto& [family, h] : w->histograms) {
      for (double q : {0.5, 0.9, 0.99}) {
        auto p = h.percentile(q);
        if (!p) continue;
        if (!(p->lower <= p->value) && !std::isnan(p->value) && !std::isnan(p->lower)) abort();
        if (!(p->value <= p->upper) && !std::isnan(p->value) && !std::isnan(p->upper)) abort();
      }
    }
    (void)window_json(*w).dump();
  }
  return 0;
}
