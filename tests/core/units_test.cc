#include "core/units.h"

#include <gtest/gtest.h>

namespace tokperf {
namespace {

TEST(ParseDuration, AcceptsEveryUnit) {
  EXPECT_EQ(*parse_duration_ns("250ns"), 250);
  EXPECT_EQ(*parse_duration_ns("250us"), 250'000);
  EXPECT_EQ(*parse_duration_ns("500ms"), 500'000'000);
  EXPECT_EQ(*parse_duration_ns("2s"), 2'000'000'000);
  EXPECT_EQ(*parse_duration_ns("1.5s"), 1'500'000'000);
  EXPECT_EQ(*parse_duration_ns("5m"), 300'000'000'000);
  EXPECT_EQ(*parse_duration_ns("1h"), 3'600'000'000'000);
}

TEST(ParseDuration, BareNumberNeedsDefaultUnit) {
  EXPECT_FALSE(parse_duration_ns("30").ok());
  EXPECT_EQ(*parse_duration_ns("30", "s"), 30'000'000'000);
}

TEST(ParseDuration, RejectsGarbageWithAMessageNamingTheInput) {
  for (const char* bad : {"", "s", "-1s", "2 s", "2sec", "abc", "1e3s", ".s"}) {
    auto r = parse_duration_ns(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("duration"), std::string::npos) << r.error();
  }
}

TEST(ParseCount, Suffixes) {
  EXPECT_EQ(*parse_count("200"), 200);
  EXPECT_EQ(*parse_count("2k"), 2000);
  EXPECT_EQ(*parse_count("1.5M"), 1'500'000);
  EXPECT_FALSE(parse_count("1.5").ok());
  EXPECT_FALSE(parse_count("2x").ok());
  EXPECT_FALSE(parse_count("").ok());
}

TEST(FormatMs, PicksAReadableUnit) {
  EXPECT_EQ(format_ms(0.4213), "0.42 ms");
  EXPECT_EQ(format_ms(12.34), "12.3 ms");
  EXPECT_EQ(format_ms(812.4), "812 ms");
  EXPECT_EQ(format_ms(1834), "1.83 s");
  EXPECT_EQ(format_ms(12345), "12.3 s");
  EXPECT_EQ(format_ms(std::numeric_limits<double>::quiet_NaN()), "-");
}

}  // namespace
}  // namespace tokperf
