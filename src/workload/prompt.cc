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
                                      const TokenCounter& counter, const std::string& how) {
  SyntheticPrompt p;
  int64_t target = std::max<int64_t>(1, n_tokens - reserve_tokens);
  if (counter) {
    // Largest w with count(w) <= target, searched from the estimate: one measured ratio refines
    // it, then steps doubling away from it bracket the answer (good: count <= target; bad: above)
    // and a bisection closes the bracket.
    std::string failure;
    int64_t best_tokens = 0;
    // count(w) <= target; a failing count clears *ok (and the search stops).
    auto fits = [&](int64_t w, bool* ok) -> bool {
      if (w <= 0) return true;
      auto c = counter(paragraph_words(w));
      if (!c) {
        failure = c.error();
        *ok = false;
        return false;
      }
      return *c <= target;
    };
    auto count_of = [&](int64_t w) -> Result<int64_t> { return counter(paragraph_words(w)); };
    bool ok = true;
    int64_t guess =
        std::max<int64_t>(1, std::llround(static_cast<double>(target) / kApproxTokensPerWord));
    if (auto c0 = count_of(guess); !c0) {
      failure = c0.error();
      ok = false;
    } else if (*c0 > 0) {
      guess = std::max<int64_t>(
          1, std::llround(static_cast<double>(guess) * static_cast<double>(target) /
                          static_cast<double>(*c0)));
    }
    int64_t good = 0, bad = -1;  // bad < 0: not found yet
    if (ok) {
      if (fits(guess, &ok)) {
        good = guess;
        for (int64_t step = 1; ok; step *= 2) {
          if (!fits(good + step, &ok)) {
            bad = good + step;
            break;
          }
          good += step;
        }
      } else if (ok) {
        bad = guess;
        for (int64_t step = 1; ok; step *= 2) {
          const int64_t w = std::max<int64_t>(0, bad - step);
          if (fits(w, &ok)) {
            good = w;
            break;
          }
          bad = w;
        }
      }
    }
    while (ok && bad - good > 1) {
      const int64_t mid = good + (bad - good) / 2;
      if (fits(mid, &ok)) {
        good = mid;
      } else if (ok) {
        bad = mid;
      }
    }
    if (ok && good > 0) {
      auto c = count_of(good);
      if (c) {
        best_tokens = *c;
      } else {
        ok = false;
        failure = c.error();
      }
    }
    if (!ok) {
      p.note = fmt::format("tokenizer failed ({}); ", failure);
    } else if (good > 0) {
      p.text = paragraph_words(good);
      if (best_tokens < target && target - best_tokens <= 8) {
        // The next word of the paragraph is longer than the gap: close it with " the"s, one token
        // each in every tokenizer we know of; kept only when the count confirms it.
        std::string padded = p.text;
        for (int64_t k = best_tokens; k < target; ++k) padded += " the";
        if (auto c = counter(padded); c && *c == target) {
          p.text = std::move(padded);
          best_tokens = *c;
        }
      }
      p.tokens = best_tokens;
      p.exact = true;
      p.note = best_tokens == target
                   ? fmt::format("exact ({})", how)
                   : fmt::format("{}: {} tokens, the closest at or under {}", how, best_tokens,
                                 target);
      return p;
    } else {
      // Even one word is longer than the target.
      auto c = count_of(1);
      p.unreachable = true;
      p.tokens = c ? *c : target + 1;
      p.text = paragraph_words(1);
      p.note = fmt::format("{}: the shortest prompt has {} tokens, more than {}", how, p.tokens,
                           target);
      return p;
    }
  }
  int64_t words =
      std::max<int64_t>(1, std::llround(static_cast<double>(target) / kApproxTokensPerWord));
  p.text = paragraph_words(words);
  p.tokens = target;
  p.exact = false;
  p.note += fmt::format("approximate: {} words at ~{} tokens/word (no tokenizer)", words,
                        kApproxTokensPerWord);
  return p;
}

}  // namespace tokperf
