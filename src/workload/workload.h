// The run's request source (workload/request_spec.h) built from the workload flags: the synthetic
// generator (the paragraph to N tokens, N drawn from a length distribution), K shared-prefix
// groups, or a dataset file (sampled, or replayed by its timestamps). Files are read and checked
// when the workload is created, so a malformed line stops the run before any request is sent.
//
// Lengths to text: without a tokenizer a word counts kApproxTokensPerWord tokens (the project's
// estimate); calibrate() measures tokens per word of our vocabulary once with the server's (or the
// simulator's) tokenizer, so generated prompts are sized by that instead. Formats and examples:
// docs/WORKLOADS.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "workload/datasets.h"
#include "workload/length_dist.h"
#include "workload/prompt.h"
#include "workload/request_spec.h"

namespace tokperf {

enum class DatasetSampling : uint8_t { kShuffle, kRandom, kSequential };
// "shuffle" (without replacement: a seeded permutation, a new one each pass), "random" (with
// replacement), "sequential" (file order).
Result<DatasetSampling> parse_dataset_sampling(std::string_view text);

struct WorkloadOptions {
  std::string dataset;  // "" (synthetic) or KIND:FILE (workload/datasets.h)
  DatasetSampling sampling = DatasetSampling::kShuffle;
  bool replay = true;     // a timestamped dataset is replayed (else sampled like any other)
  double time_scale = 1;  // replay speed: 2 = twice as fast
  LengthDist input = LengthDist::fixed(128);
  LengthDist output = LengthDist::fixed(256);
  int prefix_groups = 0;        // K shared-prefix groups (0: none)
  int64_t prefix_tokens = 0;    // tokens of each group's shared prefix
  bool unique_prompts = false;  // synthetic: a per-request nonce first (no cache hits)
  int64_t block_tokens = 512;   // mooncake: tokens per hash id
  uint64_t seed = 42;
};

class Workload final : public RequestSource {
 public:
  // Reads and checks the dataset (if any). Errors name the file, line and what was expected.
  static Result<std::shared_ptr<Workload>> create(const WorkloadOptions& options);

  // Measures tokens per word of generated text with `counter` (one call; two when
  // `counts_overhead`, a counter whose counts include a fixed extra such as a chat template, so
  // the slope between them is taken); without one the estimate stays. `how` names the tokenizer
  // for the notes.
  void calibrate(const TokenCounter& counter, const std::string& how,
                 bool counts_overhead = false);
  // Counts the prompt (and ShareGPT's recorded reply) of every sharegpt/jsonl entry with
  // `counter`, replacing the 1.25 tokens/word estimate; an entry it cannot count keeps the
  // estimate (said in the notes). One call per text: meant for a local tokenizer.
  void count_dataset(const TokenCounter& counter, const std::string& how);
  void set_tokens_per_word(double tpw, bool exact, std::string how);

  RequestSpec at(uint64_t i) const override;
  size_t timed_count() const override;
  RequestSpec timed_at(size_t k) const override;
  // timed_at(k) without building its text (lengths, timestamp, line only). REQUIRES: k < size.
  const RequestSpec& timed_meta(size_t k) const { return data_.specs[k]; }
  std::string describe() const override;

  const WorkloadOptions& options() const { return o_; }
  // Entries of the dataset (0: synthetic).
  size_t dataset_size() const { return data_.specs.size(); }
  bool is_dataset() const { return !o_.dataset.empty(); }
  // The prompts are generated text sized by tokens per word (synthetic, Mooncake, Azure), not a
  // file's own text.
  bool generates_text() const {
    return !is_dataset() || data_.kind == DatasetKind::kMooncake || data_.kind == DatasetKind::kAzure;
  }
  // The dataset is replayed by its timestamps (else sampled).
  bool replays() const { return o_.replay && data_.timed && !data_.specs.empty(); }
  void set_replay(bool replay) { o_.replay = replay; }
  double tokens_per_word() const { return tokens_per_word_; }
  // The index of the dataset entry request i uses (sampling rule); REQUIRES: dataset_size() > 0.
  size_t entry_of(uint64_t i) const;
  // Notes for the run: sampling, cycling (when `planned_requests` > entries), estimates.
  std::vector<std::string> notes(int64_t planned_requests) const;

 private:
  explicit Workload(WorkloadOptions o) : o_(std::move(o)) {}
  RequestSpec synthetic(uint64_t i) const;
  RequestSpec entry(size_t k) const;  // with text built (mooncake)
  int64_t words_for(int64_t tokens) const;
  std::string group_prefix(int g) const;

  WorkloadOptions o_;
  Dataset data_;
  double tokens_per_word_ = kApproxTokensPerWord;
  bool lengths_exact_ = false;
  std::string tokens_how_ = "estimated at 1.25 tokens per word (no tokenizer)";
  std::string dataset_how_;     // "" (estimated) or what counted the dataset's texts
  int64_t dataset_uncounted_ = 0;  // entries count_dataset could not count
};

}  // namespace tokperf
