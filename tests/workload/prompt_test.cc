#include "workload/prompt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace tokperf {
namespace {

int64_t words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int64_t n = 0;
  while (in >> w) ++n;
  return n;
}

TEST(SyntheticPrompt, WithATokenizerHitsTheTargetExactly) {
  // A fake tokenizer: every word is one token, plus one BOS-like token.
  TokenCounter counter = [](const std::string& s) -> Result<int64_t> { return words(s) + 1; };
  SyntheticPrompt p = make_synthetic_prompt(300, 0, counter);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.tokens, 300);
  EXPECT_EQ(words(p.text), 299);
}

TEST(SyntheticPrompt, ReservesRoomForThePrefix) {
  TokenCounter counter = [](const std::string& s) -> Result<int64_t> { return words(s); };
  SyntheticPrompt p = make_synthetic_prompt(100, 7, counter);
  EXPECT_EQ(p.tokens, 93);
}

TEST(SyntheticPrompt, WhenTheTargetCannotBeHitTakesTheClosestBelow) {
  // Two tokens per word: an odd target cannot be met.
  TokenCounter counter = [](const std::string& s) -> Result<int64_t> { return 2 * words(s); };
  SyntheticPrompt p = make_synthetic_prompt(101, 0, counter);
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.tokens, 100);
  EXPECT_NE(p.note.find("closest"), std::string::npos);
}

TEST(SyntheticPrompt, WithoutATokenizerApproximatesAndSaysSo) {
  SyntheticPrompt p = make_synthetic_prompt(1000, 0, TokenCounter{});
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(words(p.text), 800);  // 1000 / 1.25
  EXPECT_NE(p.note.find("approximate"), std::string::npos);
}

TEST(SyntheticPrompt, AFailingTokenizerFallsBackToTheApproximation) {
  TokenCounter counter = [](const std::string&) -> Result<int64_t> { return Error{"boom"}; };
  SyntheticPrompt p = make_synthetic_prompt(50, 0, counter);
  EXPECT_FALSE(p.exact);
  EXPECT_NE(p.note.find("boom"), std::string::npos);
}

TEST(SyntheticPrompt, SearchesFromTheEstimateInFewCalls) {
  // A counter that costs a request (usage calibration) must not be called ~log2(2n) times with
  // prompts of twice the target: the search starts from the estimate and stays near it.
  int calls = 0;
  int64_t longest = 0;
  TokenCounter counter = [&](const std::string& s) -> Result<int64_t> {
    ++calls;
    longest = std::max(longest, words(s));
    return words(s) * 3 / 2 + 9;  // 1.5 tokens per word and a 9-token template
  };
  SyntheticPrompt p = make_synthetic_prompt(10000, 0, counter, "probe");
  EXPECT_TRUE(p.exact);
  EXPECT_EQ(p.tokens, 10000);  // 6661 words: 9991 + 9
  EXPECT_LE(calls, 8);
  EXPECT_LE(longest, 8000);  // the first guess, at 1.25 tokens per word
  EXPECT_NE(p.note.find("exact (probe)"), std::string::npos) << p.note;
}

TEST(SyntheticPrompt, AnUnreachableTargetIsSaidNotApproximated) {
  TokenCounter counter = [](const std::string& s) -> Result<int64_t> { return words(s) + 10; };
  SyntheticPrompt p = make_synthetic_prompt(5, 0, counter, "usage");
  EXPECT_TRUE(p.unreachable);
  EXPECT_FALSE(p.exact);
  EXPECT_EQ(p.tokens, 11);  // the shortest prompt
  EXPECT_NE(p.note.find("the shortest prompt has 11 tokens, more than 5"), std::string::npos)
      << p.note;
}

TEST(UniquePrefix, DistinctWithinARunAndAlwaysSixWords) {
  std::set<std::string> seen;
  for (uint64_t seq = 0; seq < 5000; ++seq) {
    std::string p = unique_prefix(42, seq);
    EXPECT_EQ(words(p), 6);
    EXPECT_EQ(p.back(), '\n');
    EXPECT_TRUE(seen.insert(p).second) << "duplicate at " << seq;
  }
  EXPECT_NE(unique_prefix(1, 0), unique_prefix(2, 0));
}

}  // namespace
}  // namespace tokperf
