#include "sim/sim_text.h"

#include <gtest/gtest.h>

namespace tokperf::sim {
namespace {

TEST(SimText, CountsWhitespaceSeparatedWords) {
  EXPECT_EQ(count_tokens(""), 0);
  EXPECT_EQ(count_tokens("  \n\t "), 0);
  EXPECT_EQ(count_tokens("one"), 1);
  EXPECT_EQ(count_tokens(" one  two\nthree\t four "), 4);
  EXPECT_EQ(tokenize("a b a").size(), 3u);
  EXPECT_EQ(tokenize("a b a")[0], tokenize("a b a")[2]);
  EXPECT_NE(tokenize("a b")[0], tokenize("a b")[1]);
}

TEST(SimText, PrefixBlockHashesCoverFullBlocksAndChain) {
  // 5 words in blocks of 2: two full blocks, the fifth word is in no hash.
  const auto h = prefix_block_hashes("a b c d e", 2);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(prefix_block_hashes("a  b\nc d x", 2), h);  // same words, other spacing/tail
  const auto other = prefix_block_hashes("z b c d", 2);
  ASSERT_EQ(other.size(), 2u);
  EXPECT_NE(other[0], h[0]);
  EXPECT_NE(other[1], h[1]);  // chained: a different first block changes every later hash
  EXPECT_TRUE(prefix_block_hashes("a b c", 0).empty());
}

TEST(SimText, FillerIsDeterministicOneWordPerToken) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += filler_token(i);
  EXPECT_EQ(count_tokens(text), 40);
  EXPECT_EQ(filler_token(0), "The ");
  EXPECT_EQ(filler_token(16), filler_token(0));
}

}  // namespace
}  // namespace tokperf::sim
