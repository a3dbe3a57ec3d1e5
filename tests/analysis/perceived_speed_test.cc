#include "analysis/perceived_speed.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tokperf {
namespace {

// Five events at 100, 150, 200, 600, 650 ms after send, five visible characters each.
RequestSample five_events() {
  RequestSample r;
  r.ttft_ms = 100;
  r.itl_ms = {50, 50, 400, 50};
  r.token_ms = {100, 150, 200, 600, 650};
  r.content_chars = {5, 5, 5, 5, 5};
  r.output_tokens = 5;
  r.tpot_ms = 137.5;
  return r;
}

TEST(PerceivedSpeed, FirstCharsAndReadingStallFromTokenTimes) {
  PerceivedOptions o;
  o.first_chars = 12;
  o.reader_tokens_per_s = 10;  // 100 ms per token
  PerceivedRequest p = perceived_request(five_events(), o);
  EXPECT_DOUBLE_EQ(p.first_chars_ms, 200);  // 5 + 5 + 5 >= 12 at the third event
  EXPECT_FALSE(p.chars_estimated);
  // Reader busy until 200, 300, 400; idle 400 -> 600 (200 ms); then 700, 800.
  EXPECT_DOUBLE_EQ(p.reading_stall_ms, 200);
  EXPECT_DOUBLE_EQ(p.reading_done_ms, 800);
}

TEST(PerceivedSpeed, FallsBackToTtftAndItlWithoutTokenTimes) {
  RequestSample r = five_events();
  r.token_ms.clear();
  r.content_chars.clear();
  PerceivedOptions o;
  o.first_chars = 3;
  o.reader_tokens_per_s = 10;
  PerceivedRequest p = perceived_request(r, o);
  EXPECT_TRUE(p.chars_estimated);
  EXPECT_DOUBLE_EQ(p.first_chars_ms, 200);  // one character per event assumed
  EXPECT_DOUBLE_EQ(p.reading_stall_ms, 200);
}

TEST(PerceivedSpeed, PackedChunksTakeLongerToReadSoTheReaderNeverWaits) {
  RequestSample r = five_events();
  r.output_tokens = 10;  // two tokens per event: 200 ms of reading each
  PerceivedOptions o;
  o.reader_tokens_per_s = 10;
  PerceivedRequest p = perceived_request(r, o);
  EXPECT_DOUBLE_EQ(p.reading_stall_ms, 0);
  EXPECT_DOUBLE_EQ(p.reading_done_ms, 1100);
}

TEST(PerceivedSpeed, NeverReachingNCharactersIsUndefined) {
  PerceivedOptions o;
  o.first_chars = 26;
  EXPECT_TRUE(std::isnan(perceived_request(five_events(), o).first_chars_ms));
  RequestSample none;
  EXPECT_TRUE(std::isnan(perceived_request(none, o).reading_stall_ms));
}

TEST(PerceivedSpeed, SummaryCountsRequestsDecodingFasterThanTheReader) {
  std::vector<RequestSample> rs{five_events(), five_events(), five_events()};
  rs[1].tpot_ms = 65;
  rs[1].token_ms = {100, 165, 230, 295, 360};
  rs[2].ok = false;  // ignored
  PerceivedOptions o;
  o.first_chars = 5;
  o.reader_tokens_per_s = 10;
  PerceivedSummary s = summarize_perceived(rs, -1, o);
  EXPECT_EQ(s.requests, 2);
  EXPECT_DOUBLE_EQ(s.reader_tpot_threshold_ms, 100);
  EXPECT_EQ(s.with_tpot, 2);
  EXPECT_EQ(s.decode_faster_than_reader, 1);  // 65 ms yes, 137.5 ms no
  EXPECT_EQ(s.stalled, 1);
  EXPECT_DOUBLE_EQ(s.first_chars_ms.p50, 100);
  EXPECT_DOUBLE_EQ(s.reading_stall_ms.max, 200);
  EXPECT_DOUBLE_EQ(s.reading_stall_ms.min, 0);
}

}  // namespace
}  // namespace tokperf
