// The workload flags shared by `bench`, `sim run` and `capacity`: datasets (--dataset KIND:FILE),
// sampling, shared-prefix groups, and vLLM bench's names for them (--dataset-name/--dataset-path,
// --random-input-len, --random-output-len, --random-range-ratio, --prefix-repetition-*). Lengths
// come from --input-tokens / --output-tokens, which take a distribution (workload/length_dist.h).
// docs/WORKLOADS.md.
#pragma once

#include <cstdint>
#include <string>

#include "cli/load_flags.h"
#include "cli/target_flags.h"
#include "load/bench_config.h"

namespace CLI {
class App;
}

namespace tokperf {

struct WorkloadFlags {
  std::string dataset;
  std::string sampling = "shuffle";
  bool no_replay = false;
  int prefix_groups = 0;
  int64_t prefix_tokens = 0;
  int64_t block_tokens = 512;
  // vLLM bench's names.
  std::string dataset_name;
  std::string dataset_path;
  int64_t random_input_len = 0;
  int64_t random_output_len = 0;
  double random_range_ratio = 0;
  int64_t prefix_suffix_len = 0;
  int64_t prefix_output_len = 0;
};

// Declares the flags on `sub` (group "Workload").
void add_workload_flags(CLI::App* sub, WorkloadFlags& flags);

// What the other flag groups say about the prompt.
struct PromptFlagText {
  std::string input_tokens;   // --input-tokens as given ("" when not)
  std::string output_tokens;  // --output-tokens as given
  bool unique_prompts = false;
  bool user_prompt = false;  // --prompt or --prompt-file
};

PromptFlagText prompt_flag_text(const TargetFlags& target);

// Builds c.workload when a flag asks for more than one fixed prompt (a dataset, a distribution in
// --input-tokens/--output-tokens, shared prefixes); reads and checks dataset files now. A
// timestamped dataset is replayed as one open-loop level (like --trace) unless the load flags give
// levels, when its entries are sampled instead. Call after c.load is set from `load`. Throws
// UsageError naming the flag or the file and line.
void apply_workload_flags(const WorkloadFlags& flags, const PromptFlagText& prompt,
                          const LoadFlags& load, BenchConfig& c);

}  // namespace tokperf
