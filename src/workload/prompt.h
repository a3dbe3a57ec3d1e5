// Prompt construction. Fixed-length synthetic prompts (a paragraph repeated to N tokens) keep runs
// comparable; with the server's tokenizer the length is exact, otherwise approximated and said so.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"

namespace tokperf {

// Counts the tokens of a text (usually the server's /tokenize). Empty function: no tokenizer.
using TokenCounter = std::function<Result<int64_t>(const std::string&)>;

struct SyntheticPrompt {
  std::string text;
  int64_t tokens = 0;  // exact when `exact`, else the estimate
  bool exact = false;
  // With a counter: even the shortest prompt (one word) has more tokens than asked for; `tokens`
  // then holds that smallest count and `text` the approximation.
  bool unreachable = false;
  std::string note;  // how the count was obtained, shown in the output
};

// Tokens per word assumed without a tokenizer, for our paragraph (measured on Llama-2/3
// tokenizers).
inline constexpr double kApproxTokensPerWord = 1.25;

// Builds a prompt of n_tokens (n_tokens >= 1). reserve_tokens are left for a per-request prefix.
// With a counter: the longest repetition of the paragraph with at most n_tokens - reserve tokens
// (a search from the estimate: ~2 log2(error) + 2 calls, so a counter that costs a request stays
// cheap; the count must not fall as words are added). `how` names the counter in the note. Without
// one: an approximation by words.
SyntheticPrompt make_synthetic_prompt(int64_t n_tokens, int64_t reserve_tokens,
                                      const TokenCounter& counter,
                                      const std::string& how = "server tokenizer");

// A per-request prefix of six common words and a newline, distinct for each seq of a run (so no
// prefix cache can serve the prompt), with a near-constant token count across tokenizers.
std::string unique_prefix(uint64_t run_seed, uint64_t seq);

// n_words words of our vocabulary picked by a hash of (key, position): equal keys give equal text,
// and the text for n words is a prefix of the text for more. Shared prefixes and trace blocks.
std::string block_words(uint64_t key, int64_t n_words);

// The first n words of the repeated paragraph.
std::string paragraph_words(int64_t n_words);

}  // namespace tokperf
