#include "workload/prompt.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace tokperf {
namespace {

// Our own text: plain words that most tokenizers keep whole.
constexpr std::string_view kParagraph =
    "The river runs past the old mill and under the stone bridge where children stop to watch the "
    "water. In the spring the banks are green and full of birds, and in the autumn the leaves turn "
    "red and gold before they fall into the current and drift away to the sea. People from the "
    "town walk along the path in the evening, talk about the day, and wait for the lights to come "
    "on in the houses on the far side of the valley.";

constexpr std::array<std::string_view, 64> kPrefixWords = {
    "apple",  "river",  "stone",  "cloud",  "green",   "light",  "table",  "chair",
    "music",  "paper",  "bread",  "water",  "house",   "field",  "glass",  "night",
    "horse",  "train",  "plant",  "sugar",  "storm",   "metal",  "ocean",  "smile",
    "dream",  "tiger",  "honey",  "coral",  "amber",   "maple",  "cedar",  "pearl",
    "silver", "candle", "garden", "forest", "bridge",  "window", "winter", "summer",
    "market", "planet", "rocket", "island", "valley",  "castle", "pencil", "basket",
    "button", "copper", "desert", "engine", "feather", "guitar", "harbor", "jacket",
    "ladder", "meadow", "needle", "orange", "pepper",  "rabbit", "saddle", "tunnel"};

std::vector<std::string_view> paragraph_tokens() {
  std::vector<std::string_view> words;
  std::string_view p = kParagraph;
  while (!p.empty()) {
    size_t sp = p.find(' ');
    words.push_back(p.substr(0, sp));
    if (sp == std::string_view::npos) break;
    p.remove_prefix(sp + 1);
  }
  return words;
}

}  // namespace

std::string paragraph_words(int64_t n_words) {
  static const std::vector<std::string_view> words = paragraph_tokens();
  std::string out;
  out.reserve(static_cast<size_t>(n_words) * 6);
  for (int64_t i = 0; i < n_words; ++i) {
    if (i > 0) out += ' ';
    out += words[static_cast<size_t>(i) % words.size()];
  }
  return out;
}

std::string block_words(uint64_t key, int64_t n_words) {
  std::string out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, n_words)) * 7);
  uint64_t x = key * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  for (int64_t i = 0; i < n_words; ++i) {
    x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    if (i > 0) out += ' ';
    out += kPrefixWords[z & 63];
  }
  return out;
}

std::string unique_prefix(uint64_t run_seed, uint64_t seq) {
  // Word i is digit i of seq in base 64, shifted by a per-run offset: distinct for every seq below
  // 2^36 within a run, different between runs, and always six short words (~7 tokens).
  uint64_t x = run_seed;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  std::string out;
  for (int i = 0; i < 6; ++i) {
    uint64_t digit = (seq >> (6 * i)) & 63;
    uint64_t offset = (x >> (6 * i)) & 63;
    out += kPrefixWords[(digit + offset) & 63];
    out += i < 5 ? ' ' : '\n';
  }
  return out;
}

SyntheticPrompt make_synthetic_prompt(int64_t n_tokens, int64_t reserve_tokens,
                                      const TokenCounter& counter) {
  SyntheticPrompt p;
  int64_t target = std::max<int64_t>(1, n_tokens - reserve_tokens);
  if (counter) {
    auto count_words = [&](int64_t w) { return counter(paragraph_words(w)); };
    // Largest w with count(w) <= target. Tokens per word lie well within [0.5, 4] for this text.
    int64_t lo = 0, hi = target * 2 + 8;
    bool failed = false;
    int64_t best_tokens = 0;
    while (lo < hi) {
      int64_t mid = (lo + hi + 1) / 2;
      auto c = count_words(mid);
      if (!c) {
        failed = true;
        p.note = fmt::format("tokenizer failed ({}); ", c.error());
        break;
      }
      if (*c <= target) {
        lo = mid;
        best_tokens = *c;
      } else {
        hi = mid - 1;
      }
    }
    if (!failed && lo > 0) {
      p.text = paragraph_words(lo);
      p.tokens = best_tokens;
      p.exact = true;
      p.note = best_tokens == target
                   ? "exact (server tokenizer)"
                   : fmt::format("server tokenizer: {} tokens, the closest at or under {}",
                                 best_tokens, target);
      return p;
    }
  }
  int64_t words =
      std::max<int64_t>(1, std::llround(static_cast<double>(target) / kApproxTokensPerWord));
  p.text = paragraph_words(words);
  p.tokens = target;
  p.exact = false;
  p.note += fmt::format("approximate: {} words at ~{} tokens/word (no tokenize endpoint)", words,
                        kApproxTokensPerWord);
  return p;
}

}  // namespace tokperf
