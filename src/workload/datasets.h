// Readers of workload files (docs/WORKLOADS.md has each format with an example). Each parser is a
// pure function of the file's text, so it can be fuzzed; errors name the file, the line (or entry)
// and what was expected, and a file with no usable entry is an error. Nothing is downloaded.
//   sharegpt  ShareGPT JSON: an array of {"conversations": [{"from", "value"}, ...]}; the first
//             human turn is the prompt, the reply after it gives the output length (its tokens,
//             estimated, as vLLM's bench takes the recorded reply's length)
//   jsonl     one object per line: "prompt" (string) or "messages" ([{role, content}]), optional
//             "output_tokens", "session_id" + "turn", "timestamp" (seconds) or "timestamp_ms"
//   mooncake  Mooncake traces, one object per line: "timestamp" (ms), "input_length",
//             "output_length", "hash_ids" (one id per block of the prompt; equal ids, equal text)
//   azure     Azure LLM inference trace CSV: TIMESTAMP (date-time or seconds), ContextTokens,
//             GeneratedTokens
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "workload/request_spec.h"

namespace tokperf {

enum class DatasetKind : uint8_t { kShareGpt, kJsonl, kMooncake, kAzure };
const char* dataset_kind_name(DatasetKind k);

struct DatasetRef {
  DatasetKind kind = DatasetKind::kJsonl;
  std::string path;
};
// "sharegpt:FILE", "jsonl:FILE", "mooncake:FILE" or "azure:FILE".
Result<DatasetRef> parse_dataset_ref(std::string_view text);

// Tokens of a text without a tokenizer: words x 1.25 (workload/prompt.h kApproxTokensPerWord), at
// least 1 — the project's estimate for prompts it cannot tokenize.
int64_t estimate_tokens(std::string_view text);

// A parsed file. Specs of mooncake entries carry no text: `block_ids[i]` lists their blocks, and
// Workload builds the text (so equal ids give equal text) once it knows the tokenizer's scale.
struct Dataset {
  DatasetKind kind = DatasetKind::kJsonl;
  std::string path;
  std::vector<RequestSpec> specs;
  std::vector<std::vector<uint64_t>> block_ids;  // mooncake: per spec; else empty
  bool timed = false;                            // every spec has a timestamp (replayable)
  int64_t skipped = 0;  // sharegpt: conversations without a human turn followed by a reply
  // sharegpt: the recorded reply of each spec (its length is the spec's output_tokens), kept so a
  // tokenizer can count it exactly (Workload::count_dataset).
  std::vector<std::string> replies;
};

// `name` labels errors (the path). speed scales timestamps (2 = twice as fast); offsets start at 0.
Result<Dataset> parse_sharegpt(std::string_view text, std::string_view name);
Result<Dataset> parse_jsonl_dataset(std::string_view text, std::string_view name, double speed);
Result<Dataset> parse_mooncake(std::string_view text, std::string_view name, double speed);
Result<Dataset> parse_azure_csv(std::string_view text, std::string_view name, double speed);

// Reads and parses ref.path.
Result<Dataset> load_dataset(const DatasetRef& ref, double speed);

}  // namespace tokperf
