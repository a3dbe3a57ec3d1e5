#include "workload/workload.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

namespace tokperf {
namespace {

// Streams of WorkloadRng::for_request, one per purpose, so adding one never shifts another.
constexpr uint64_t kInputStream = 1;
constexpr uint64_t kGroupStream = 2;
constexpr uint64_t kOutputStream = 3;
constexpr uint64_t kSampleStream = 4;
constexpr int64_t kUniqueWords = 6;  // unique_prefix()

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A seeded bijection of [0, n): a 4-round Feistel network on the smallest even bit width holding n,
// cycle-walking values >= n back in. Stateless, so entry k of pass c costs O(1) expected.
uint64_t permute(uint64_t x, uint64_t n, uint64_t key) {
  if (n <= 1) return 0;
  int bits = std::bit_width(n - 1);
  if (bits < 2) bits = 2;
  if (bits % 2 != 0) ++bits;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  do {
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = mix64(r ^ mix64(key + round)) & mask;
      const uint64_t nl = r;
      r = l ^ f;
      l = nl;
    }
    x = (l << half) | r;
  } while (x >= n);
  return x;
}

}  // namespace

std::string flat_prompt(const RequestSpec& s) {
  if (s.messages.empty()) return s.prompt;
  std::string out;
  for (size_t i = 0; i < s.messages.size(); ++i) {
    if (i > 0) out += '\n';
    out += s.messages[i].content;
  }
  return out;
}

Result<DatasetSampling> parse_dataset_sampling(std::string_view text) {
  if (text == "shuffle") return DatasetSampling::kShuffle;
  if (text == "random") return DatasetSampling::kRandom;
  if (text == "sequential") return DatasetSampling::kSequential;
  return Error{
      fmt::format("--dataset-sampling '{}' is not known; accepted: shuffle (without "
                  "replacement), random (with replacement), sequential (file order)",
                  text)};
}

Result<std::shared_ptr<Workload>> Workload::create(const WorkloadOptions& options) {
  if (options.prefix_groups < 0 || options.prefix_groups > 1'000'000) {
    return Error{"--prefix-groups must be 0 (none) to 1000000"};
  }
  if (options.prefix_tokens < 0 || options.prefix_tokens > 10'000'000) {
    return Error{"--prefix-tokens must be 0 to 10000000"};
  }
  if (options.prefix_groups > 0 && options.prefix_tokens < 1) {
    return Error{"--prefix-groups needs --prefix-tokens N (the shared prefix's length, >= 1)"};
  }
  if (options.prefix_tokens > 0 && options.prefix_groups < 1) {
    return Error{"--prefix-tokens needs --prefix-groups K (how many shared prefixes, >= 1)"};
  }
  if (!options.dataset.empty() && options.prefix_groups > 0) {
    return Error{"--prefix-groups shapes synthetic prompts; it cannot be combined with --dataset"};
  }
  if (options.block_tokens < 1) return Error{"the Mooncake block size must be at least 1 token"};
  std::shared_ptr<Workload> w(new Workload(options));
  if (!options.dataset.empty()) {
    auto ref = parse_dataset_ref(options.dataset);
    if (!ref) return Error{ref.error()};
    auto d = load_dataset(*ref, options.time_scale);
    if (!d) return Error{d.error()};
    w->data_ = std::move(*d);
  }
  return w;
}

void Workload::set_tokens_per_word(double tpw, bool exact, std::string how) {
  if (!(tpw > 0) || !std::isfinite(tpw)) return;
  tokens_per_word_ = tpw;
  lengths_exact_ = exact;
  tokens_how_ = std::move(how);
}

void Workload::calibrate(const TokenCounter& counter, const std::string& how,
                         bool counts_overhead) {
  if (!counter) return;
  // Our vocabulary as generated text: a long sample of both word sources.
  constexpr int64_t kWords = 2000;
  auto sample = [](int64_t words) {
    return block_words(12345, words / 2) + "\n" + paragraph_words(words / 2);
  };
  auto n = counter(sample(kWords));
  if (!n || *n <= 0) return;
  double tpw = static_cast<double>(*n) / static_cast<double>(kWords);
  if (counts_overhead) {
    auto half = counter(sample(kWords / 2));
    if (!half || *half >= *n) return;
    tpw = static_cast<double>(*n - *half) / static_cast<double>(kWords / 2);
  }
  set_tokens_per_word(tpw, tpw == 1.0,
                      fmt::format("sized at {:.3f} tokens per word, measured with {}", tpw, how));
}

void Workload::count_dataset(const TokenCounter& counter, const std::string& how) {
  if (!counter || (data_.kind != DatasetKind::kShareGpt && data_.kind != DatasetKind::kJsonl)) {
    return;
  }
  for (size_t k = 0; k < data_.specs.size(); ++k) {
    RequestSpec& s = data_.specs[k];
    auto n = counter(flat_prompt(s));
    if (!n) {
      ++dataset_uncounted_;
      continue;
    }
    s.input_tokens = std::max<int64_t>(1, *n);
    s.input_tokens_exact = true;
    if (k < data_.replies.size()) {
      if (auto r = counter(data_.replies[k]); r) s.output_tokens = std::max<int64_t>(1, *r);
    }
  }
  dataset_how_ = how;
}

int64_t Workload::words_for(int64_t tokens) const {
  return std::max<int64_t>(1, std::llround(static_cast<double>(tokens) / tokens_per_word_));
}

std::string Workload::group_prefix(int g) const {
  return block_words(mix64(o_.seed ^ 0x7072656669785f67ULL) + static_cast<uint64_t>(g),
                     words_for(o_.prefix_tokens)) +
         "\n";
}

RequestSpec Workload::synthetic(uint64_t i) const {
  RequestSpec s;
  WorkloadRng in = WorkloadRng::for_request(o_.seed, kInputStream, i);
  WorkloadRng out = WorkloadRng::for_request(o_.seed, kOutputStream, i);
  const int64_t n = o_.input.sample(in);
  s.output_tokens = o_.output.sample(out);
  std::string text;
  int64_t words = words_for(n);
  if (o_.prefix_groups > 0) {
    WorkloadRng g = WorkloadRng::for_request(o_.seed, kGroupStream, i);
    s.prefix_group = static_cast<int>(g.below(static_cast<uint64_t>(o_.prefix_groups)));
    text = group_prefix(s.prefix_group);
  }
  if (o_.prefix_groups > 0 || o_.unique_prompts) {
    // The per-request part starts with a nonce, so only the shared prefix can be cached.
    text += unique_prefix(o_.seed, i);
    words = std::max<int64_t>(1, words - kUniqueWords);
  }
  text += paragraph_words(words);
  s.prompt = std::move(text);
  s.input_tokens = n + (o_.prefix_groups > 0 ? o_.prefix_tokens : 0);
  s.input_tokens_exact = lengths_exact_;
  return s;
}

RequestSpec Workload::entry(size_t k) const {
  RequestSpec s = data_.specs[k];
  if ((data_.kind == DatasetKind::kShareGpt || data_.kind == DatasetKind::kJsonl) &&
      !s.input_tokens_exact) {
    s.input_tokens_method = "approximate";  // the file's text, estimated at 1.25 tokens per word
  }
  if (data_.kind == DatasetKind::kMooncake) {
    // Block b of the prompt is the text of hash id b: equal ids give equal text (prefix-cache hits
    // where the trace has them); the last block is cut to the entry's length, a shortfall of ids
    // filled with text of this entry's own.
    const std::vector<uint64_t>& ids = data_.block_ids[k];
    std::string text;
    int64_t left = s.input_tokens;
    for (size_t b = 0; b < ids.size() && left > 0; ++b) {
      const int64_t t = std::min(left, o_.block_tokens);
      text += block_words(ids[b], words_for(t));
      text += '\n';
      left -= t;
    }
    if (left > 0) {
      text += block_words(mix64(o_.seed + 0x6d6f6f6eULL) ^ mix64(k + 1), words_for(left));
    }
    s.prompt = std::move(text);
    s.input_tokens_exact = lengths_exact_;
  } else if (data_.kind == DatasetKind::kAzure) {
    // Lengths only: each prompt is its own (a nonce first), so no prefix cache serves it.
    s.prompt = unique_prefix(o_.seed, k) +
               paragraph_words(std::max<int64_t>(1, words_for(s.input_tokens) - kUniqueWords));
    s.input_tokens_exact = lengths_exact_;
  }
  return s;
}

size_t Workload::entry_of(uint64_t i) const {
  const uint64_t n = data_.specs.size();
  switch (o_.sampling) {
    case DatasetSampling::kSequential:
      return static_cast<size_t>(i % n);
    case DatasetSampling::kRandom: {
      WorkloadRng r = WorkloadRng::for_request(o_.seed, kSampleStream, i);
      return static_cast<size_t>(r.below(n));
    }
    case DatasetSampling::kShuffle:
      return static_cast<size_t>(permute(i % n, n, mix64(o_.seed) + i / n));
  }
  return 0;
}

RequestSpec Workload::at(uint64_t i) const {
  if (data_.specs.empty()) return synthetic(i);
  RequestSpec s = entry(entry_of(i));
  s.timestamp_ns = -1;  // sampled, not replayed
  return s;
}

size_t Workload::timed_count() const { return replays() ? data_.specs.size() : 0; }

RequestSpec Workload::timed_at(size_t k) const { return entry(k); }

std::string Workload::describe() const {
  if (!is_dataset()) {
    std::string s = fmt::format("synthetic prompts, input tokens {}, output tokens {}",
                                o_.input.text(), o_.output.text());
    if (o_.prefix_groups > 0) {
      s += fmt::format(", {} shared-prefix group{} of {} tokens before each request's own part",
                       o_.prefix_groups, o_.prefix_groups == 1 ? "" : "s", o_.prefix_tokens);
    }
    return s + "; " + tokens_how_;
  }
  static constexpr const char* kSampling[] = {"shuffled, without replacement",
                                              "random, with replacement", "in file order"};
  return fmt::format("dataset {}:{} ({} entries{}), {}", dataset_kind_name(data_.kind), data_.path,
                     data_.specs.size(),
                     data_.skipped > 0 ? fmt::format(", {} skipped", data_.skipped) : "",
                     replays() ? fmt::format("replayed by its timestamps at {}x", o_.time_scale)
                               : kSampling[static_cast<int>(o_.sampling)]);
}

std::vector<std::string> Workload::notes(int64_t planned_requests) const {
  std::vector<std::string> out;
  out.push_back("workload: " + describe());
  if (is_dataset() && !replays() && planned_requests > static_cast<int64_t>(dataset_size())) {
    out.push_back(
        fmt::format("the dataset has {} entries and the run sends {}: it cycles{}", dataset_size(),
                    planned_requests,
                    o_.sampling == DatasetSampling::kShuffle ? " (each pass reshuffled)" : ""));
  } else if (is_dataset() && !replays() && planned_requests < 0) {
    out.push_back(fmt::format("the dataset has {} entries; a run sending more cycles through it",
                              dataset_size()));
  }
  const bool texts = data_.kind == DatasetKind::kShareGpt || data_.kind == DatasetKind::kJsonl;
  if (is_dataset() && texts && !dataset_how_.empty()) {
    out.push_back(fmt::format(
        "dataset prompt lengths{} counted with {}{}", data_.kind == DatasetKind::kShareGpt
                                                          ? " (and ShareGPT reply lengths, used "
                                                            "as max_tokens)"
                                                          : "",
        dataset_how_,
        dataset_uncounted_ > 0
            ? fmt::format("; {} entries it could not count keep the 1.25 tokens/word estimate",
                          dataset_uncounted_)
            : ""));
  } else if (is_dataset() && texts) {
    out.push_back(
        "dataset prompt lengths (and ShareGPT reply lengths, used as max_tokens) are "
        "estimated at 1.25 tokens per word; the served lengths come from the server's "
        "usage");
  } else if (is_dataset()) {
    out.push_back("trace prompts are generated text " + tokens_how_);
  }
  return out;
}

}  // namespace tokperf
