// Fuzz target for the trace replay reader (parse_trace_jsonl in load/arrivals.h). Invariants: on
// success, offsets start at 0 and never decrease, each entry gives either input_tokens >= 0 or a
// prompt, line numbers rise; an error always says something. Byte 0 picks the replay speed, the
// rest is the file. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "load/arrivals.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "trace_jsonl_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr double kSpeeds[] = {1.0, 2.0, 0.5, 1000.0, 0.001, 3.7, 1e-9, 1e9};
  const double speed = kSpeeds[data[0] & 7];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto r = tokperf::parse_trace_jsonl(text, speed);
  if (!r.ok()) {
    check(!r.error().empty(), "empty error message");
    return 0;
  }
  const auto& entries = r.value();
  int last_line = 0;
  int64_t last_offset = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (i == 0) check(e.offset_ns == 0, "first offset is not 0");
    check(e.offset_ns >= last_offset, "offsets decrease");
    check(e.line > last_line, "line numbers do not rise");
    check(e.input_tokens >= 0 || !e.prompt.empty() || e.input_tokens == -1,
          "input tokens negative");
    check(e.output_tokens >= -1, "output tokens below -1");
    last_offset = e.offset_ns;
    last_line = e.line;
  }
  return 0;
}
