#include "cli/workload_flags.h"

#include <cmath>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace tokperf {

void add_workload_flags(CLI::App* sub, WorkloadFlags& f) {
  const char* g = "Workload";
  sub->add_option("--dataset", f.dataset,
                  "Requests from a file: sharegpt:FILE, jsonl:FILE, mooncake:FILE (trace), "
                  "azure:FILE (trace CSV); traces replay by their timestamps (--trace-speed)")
      ->group(g);
  sub->add_option("--dataset-sampling", f.sampling,
                  "shuffle (without replacement), random (with replacement) or sequential")
      ->capture_default_str()
      ->group(g);
  sub->add_flag("--no-replay", f.no_replay,
                "Sample a timestamped dataset like any other instead of replaying its times")
      ->group(g);
  sub->add_option("--prefix-groups", f.prefix_groups,
                  "K shared prompt prefixes (system prompts); each request uses one, then its own "
                  "--input-tokens")
      ->group(g);
  sub->add_option("--prefix-tokens", f.prefix_tokens, "Tokens of each shared prefix")->group(g);
  sub->add_option("--mooncake-block-tokens", f.block_tokens,
                  "Tokens per hash id of a Mooncake trace")
      ->capture_default_str()
      ->group(g);
  const char* v = "vLLM bench names";
  sub->add_option("--dataset-name", f.dataset_name,
                  "sharegpt, custom (JSONL), random or prefix_repetition (with --dataset-path)")
      ->group(v);
  sub->add_option("--dataset-path", f.dataset_path, "The file of --dataset-name")->group(v);
  sub->add_option("--random-input-len", f.random_input_len, "Mean synthetic prompt tokens")
      ->group(v);
  sub->add_option("--random-output-len", f.random_output_len, "Mean output tokens")->group(v);
  sub->add_option("--random-range-ratio", f.random_range_ratio,
                  "Lengths uniform in [len (1 - r), len (1 + r)]")
      ->group(v);
  sub->add_option("--prefix-repetition-prefix-len", f.prefix_tokens, "= --prefix-tokens")->group(v);
  sub->add_option("--prefix-repetition-num-prefixes", f.prefix_groups, "= --prefix-groups")
      ->group(v);
  sub->add_option("--prefix-repetition-suffix-len", f.prefix_suffix_len,
                  "= --input-tokens (the per-request part)")
      ->group(v);
  sub->add_option("--prefix-repetition-output-len", f.prefix_output_len, "= --output-tokens")
      ->group(v);
}

namespace {

// vLLM's random dataset: uniform in [len (1 - r), len (1 + r)] (a fixed length when r = 0).
std::string vllm_length(int64_t len, double ratio, const char* flag) {
  if (len < 1) throw UsageError(fmt::format("{} must be at least 1", flag));
  if (!(ratio >= 0 && ratio < 1)) {
    throw UsageError("--random-range-ratio must be in [0, 1)");
  }
  const auto lo = std::max<int64_t>(1, std::llround(static_cast<double>(len) * (1 - ratio)));
  const auto hi = std::max<int64_t>(lo, std::llround(static_cast<double>(len) * (1 + ratio)));
  return lo == hi ? std::to_string(lo) : fmt::format("uniform:{}..{}", lo, hi);
}

LengthDist length_flag(const std::string& text, const char* flag, int64_t fallback) {
  if (text.empty()) return LengthDist::fixed(fallback);
  auto d = LengthDist::parse(text, flag);
  if (!d) throw UsageError(d.error());
  return *d;
}

}  // namespace

PromptFlagText prompt_flag_text(const TargetFlags& t) {
  return {t.input_tokens, t.output_tokens, t.unique_prompts,
          !t.prompt.empty() || !t.prompt_file.empty()};
}

void apply_workload_flags(const WorkloadFlags& f, const PromptFlagText& p, const LoadFlags& load,
                          BenchConfig& c) {
  WorkloadOptions o;
  std::string input_text = p.input_tokens, output_text = p.output_tokens;
  o.dataset = f.dataset;
  if (!f.dataset_name.empty()) {
    if (!f.dataset.empty()) throw UsageError("give --dataset or --dataset-name, not both");
    const std::string& n = f.dataset_name;
    if (n == "sharegpt" || n == "custom" || n == "jsonl" || n == "mooncake" || n == "azure") {
      if (f.dataset_path.empty()) {
        throw UsageError(fmt::format("--dataset-name {} needs --dataset-path FILE", n));
      }
      o.dataset = (n == "custom" ? "jsonl" : n) + ":" + f.dataset_path;
    } else if (n != "random" && n != "prefix_repetition") {
      throw UsageError(
          fmt::format("--dataset-name '{}' is not supported; accepted: sharegpt, "
                      "custom (JSONL), mooncake, azure, random, prefix_repetition",
                      n));
    }
  } else if (!f.dataset_path.empty()) {
    throw UsageError("--dataset-path needs --dataset-name (or use --dataset KIND:FILE)");
  }
  if (f.random_input_len > 0 || f.prefix_suffix_len > 0) {
    if (!input_text.empty()) {
      throw UsageError("give --input-tokens or --random-input-len/--prefix-repetition-suffix-len");
    }
    input_text = vllm_length(f.random_input_len > 0 ? f.random_input_len : f.prefix_suffix_len,
                             f.random_range_ratio, "--random-input-len");
  }
  if (f.random_output_len > 0 || f.prefix_output_len > 0) {
    if (!output_text.empty()) {
      throw UsageError(
          "give --output-tokens or --random-output-len/--prefix-repetition-output-len");
    }
    output_text = vllm_length(f.random_output_len > 0 ? f.random_output_len : f.prefix_output_len,
                              f.random_range_ratio, "--random-output-len");
  }
  o.input = length_flag(input_text, "--input-tokens", 128);
  o.output = length_flag(output_text, "--output-tokens", 256);
  o.prefix_groups = f.prefix_groups;
  o.prefix_tokens = f.prefix_tokens;
  o.unique_prompts = p.unique_prompts;
  o.block_tokens = f.block_tokens;
  o.seed = load.seed;
  o.time_scale = load.trace_speed;
  auto sampling = parse_dataset_sampling(f.sampling);
  if (!sampling) throw UsageError(sampling.error());
  o.sampling = *sampling;

  const bool needed = !o.dataset.empty() || !o.input.is_fixed() || !o.output.is_fixed() ||
                      o.prefix_groups > 0 || o.prefix_tokens > 0;
  // The run's default max_tokens (requests whose source gives none), and today's fixed prompt.
  if (!output_text.empty())
    c.prompt.output_tokens = std::max<int64_t>(1, std::llround(o.output.mean()));
  if (!needed) {
    if (!input_text.empty()) c.prompt.input_tokens = std::llround(o.input.mean());
    return;
  }
  if (p.user_prompt) {
    throw UsageError(
        "--prompt/--prompt-file send one prompt; they cannot be combined with "
        "--dataset, --prefix-groups or length distributions");
  }
  if (!load.trace.empty()) {
    throw UsageError(
        "--trace replays its own file; it cannot be combined with --dataset, "
        "--prefix-groups or length distributions");
  }
  if (!o.dataset.empty() && (!input_text.empty() && !o.input.is_fixed())) {
    throw UsageError("a dataset brings its own prompts; --input-tokens does not apply to it");
  }
  o.replay = !f.no_replay;
  auto w = Workload::create(o);
  if (!w) throw UsageError(w.error());
  std::shared_ptr<Workload> workload = *w;
  const bool levels_given =
      !load.concurrency.empty() || load.sweep || !load.request_rate.empty() || !load.ramp.empty();
  if (workload->replays() && levels_given) workload->set_replay(false);  // sample it instead
  if (workload->replays()) {
    // One open-loop level whose arrivals are the file's timestamps (the --trace path).
    c.load.trace.clear();
    for (size_t k = 0; k < workload->timed_count(); ++k) {
      const RequestSpec& s = workload->timed_meta(k);
      TraceEntry e;
      e.offset_ns = s.timestamp_ns;
      e.input_tokens = s.input_tokens;
      e.output_tokens = s.output_tokens;
      e.line = s.source_line;
      c.load.trace.push_back(std::move(e));
    }
    c.load.plan.levels = {LevelSpec{LoadMode::kRate, 0, 0, 0}};
  }
  c.prompt.input_tokens =
      std::llround(o.input.mean()) + (o.prefix_groups > 0 ? o.prefix_tokens : 0);
  c.prompt.input_tokens_note = workload->describe();
  c.workload = std::move(workload);
}

}  // namespace tokperf
