// Fuzz target for the tool-call arguments completeness check, JsonCompletion (client/tool_call.h).
// Input layout: byte 0 mod 8 = number of split points, the next bytes place them, the rest (at most
// 1 KiB) is the arguments text. Invariants: feeding the text in the split fragments, whole, and one
// byte at a time gives the same verdict (complete / failed / open) and completes in the fragment
// holding the same byte; and the verdict matches a reference made with the JSON parser itself:
// complete exactly when some prefix starting (after whitespace) with '{' or '[' parses as one JSON
// value, at the shortest such prefix. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/tool_call.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "tool_call_json_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

// Feeds `text` cut at `cuts`; returns the end offset (exclusive) of the fragment that completed
// the JSON, or 0 when none did.
size_t completion_end(std::string_view text, const std::vector<size_t>& cuts,
                      tokperf::JsonCompletion& j) {
  size_t begin = 0;
  for (size_t k = 0; k <= cuts.size(); ++k) {
    const size_t end = k < cuts.size() ? cuts[k] : text.size();
    if (end < begin) continue;
    const bool was = j.complete();
    j.feed(text.substr(begin, end - begin));
    if (!was && j.complete()) return end;
    begin = end;
  }
  return 0;
}

// The reference: the shortest prefix that is one JSON object or array; 0: none.
size_t reference_end(std::string_view text) {
  size_t first = 0;
  while (first < text.size() && (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' ||
                                 text[first] == '\r')) {
    ++first;
  }
  if (first == text.size() || (text[first] != '{' && text[first] != '[')) return 0;
  for (size_t n = first + 1; n <= text.size(); ++n) {
    const char c = text[n - 1];
    if (c != '}' && c != ']') continue;  // a value that parses ends with its closing bracket
    if (nlohmann::json::accept(text.substr(0, n))) return n;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t n_cuts = data[0] % 8;
  if (size < 1 + n_cuts) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1 + n_cuts, size - 1 - n_cuts);
  if (text.size() > 1024) text = text.substr(0, 1024);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < n_cuts; ++i) {
    const size_t at = text.empty() ? 0 : data[1 + i] % (text.size() + 1);
    if (cuts.empty() || at >= cuts.back()) cuts.push_back(at);
  }
  tokperf::JsonCompletion whole, split, bytes;
  const size_t end_whole = completion_end(text, {}, whole);
  const size_t end_split = completion_end(text, cuts, split);
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  const size_t end_bytes = completion_end(text, every, bytes);

  check(whole.complete() == split.complete() && whole.complete() == bytes.complete(),
        "the fragments changed whether the JSON completed");
  check(whole.failed() == split.failed() && whole.failed() == bytes.failed(),
        "the fragments changed whether the JSON failed");
  check(!(whole.complete() && whole.failed()), "complete and failed at once");
  const size_t ref = reference_end(text);
  check(whole.complete() == (ref != 0), "completion disagrees with the JSON parser");
  if (ref != 0) {
    check(end_bytes == ref, "byte-by-byte feeding completed at another byte than the parser");
    check(end_split >= ref, "split feeding completed before the JSON was whole");
    check(end_whole == text.size(), "whole feeding completed outside its one fragment");
  }
  return 0;
}
