// Fuzz target for the workload file readers (workload/datasets.h): ShareGPT JSON, JSONL datasets,
// Mooncake traces and Azure trace CSV. Byte 0 picks the reader (mod 4) and the time scale, the rest
// is the file. Invariants: on success there is at least one entry, lengths are -1 or positive,
// replayable files have offsets from 0 that never decrease, line numbers rise, mooncake has one
// block-id list per entry; an error always names the file. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "workload/datasets.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "dataset_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tokperf;
  if (size < 1) return 0;
  static constexpr double kSpeeds[] = {1.0, 2.0, 0.5, 1e-9};
  const int kind = data[0] & 3;
  const double speed = kSpeeds[(data[0] >> 2) & 3];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  Result<Dataset> r = Error{""};
  switch (kind) {
    case 0:
      r = parse_sharegpt(text, "f.json");
      break;
    case 1:
      r = parse_jsonl_dataset(text, "f.jsonl", speed);
      break;
    case 2:
      r = parse_mooncake(text, "f.jsonl", speed);
      break;
    default:
      r = parse_azure_csv(text, "f.csv", speed);
      break;
  }
  if (!r.ok()) {
    check(r.error().find("f.") != std::string::npos, "error does not name the file");
    return 0;
  }
  const Dataset& d = r.value();
  check(!d.specs.empty(), "success without entries");
  check(kind != 2 || d.block_ids.size() == d.specs.size(), "mooncake ids per entry");
  int last_line = 0;
  int64_t last_offset = 0;
  for (size_t i = 0; i < d.specs.size(); ++i) {
    const RequestSpec& s = d.specs[i];
    check(s.input_tokens == -1 || s.input_tokens >= 1, "input tokens");
    check(s.output_tokens == -1 || s.output_tokens >= 1, "output tokens");
    check(!flat_prompt(s).empty() || kind >= 2, "empty prompt");
    if (kind != 0) {
      check(s.source_line > last_line, "line numbers do not rise");
      last_line = s.source_line;
    }
    if (d.timed) {
      check(s.timestamp_ns >= 0, "negative offset");
      if (i == 0) check(s.timestamp_ns == 0, "first offset is not 0");
      check(s.timestamp_ns >= last_offset, "offsets decrease");
      last_offset = s.timestamp_ns;
    }
  }
  return 0;
}
