#include "client/ndjson_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

class Lines : public SseSink {
 public:
  void on_event(const SseEvent& e) override { lines.emplace_back(e.data); }
  std::vector<std::string> lines;
};

std::vector<std::string> parse(std::string_view s, NdjsonParser** out = nullptr) {
  static Lines sink;
  sink.lines.clear();
  static NdjsonParser p(&sink);
  p.reset();
  p.feed(s);
  if (out) *out = &p;
  return sink.lines;
}

TEST(NdjsonParserTest, OneRecordPerLineDispatchedAtItsNewline) {
  Lines sink;
  NdjsonParser p(&sink);
  p.feed(R"({"a":1})");
  EXPECT_TRUE(sink.lines.empty());  // not before its LF
  EXPECT_TRUE(p.has_partial_event());
  p.feed("\n{\"b\":2}\n");
  ASSERT_EQ(sink.lines.size(), 2u);
  EXPECT_EQ(sink.lines[0], R"({"a":1})");
  EXPECT_EQ(sink.lines[1], R"({"b":2})");
  EXPECT_FALSE(p.has_partial_event());
  EXPECT_EQ(p.events_dispatched(), 2u);
  EXPECT_EQ(p.bytes_fed(), 16u);
}

TEST(NdjsonParserTest, CrlfBlankLinesAndBom) {
  NdjsonParser* p = nullptr;
  auto lines = parse("\xEF\xBB\xBF{\"a\":1}\r\n\r\n   \n{\"b\":2}\n\n", &p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"a":1})");
  EXPECT_EQ(lines[1], R"({"b":2})");
  EXPECT_EQ(p->blank_lines(), 3u);
  // A lone CR is not a line end in NDJSON.
  lines = parse("{\"a\":1}\r{\"b\":2}\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "{\"a\":1}\r{\"b\":2}");
  // A failed BOM match gives its bytes back.
  lines = parse("\xEF\xBBx\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "\xEF\xBBx");
}

TEST(NdjsonParserTest, TruncationIsReported) {
  NdjsonParser* p = nullptr;
  parse("{\"a\":1}\n{\"b\"", &p);
  EXPECT_TRUE(p->has_partial_event());
  parse("{\"a\":1}\n  ", &p);
  EXPECT_FALSE(p->has_partial_event());  // trailing whitespace is not a record
}

TEST(NdjsonParserTest, EverySplitGivesTheSameRecords) {
  const std::string s =
      "\xEF\xBB\xBF{\"x\":\"\xC3\xA9\"}\r\n\n{\"y\":[1,2]}\n  \n{\"z\":0}\n{\"cut\"";
  Lines whole;
  NdjsonParser pw(&whole);
  pw.feed(s);
  for (size_t i = 0; i <= s.size(); ++i) {
    for (size_t j = i; j <= s.size(); j += 3) {
      Lines split;
      NdjsonParser ps(&split);
      ps.feed(s.substr(0, i));
      ps.feed(s.substr(i, j - i));
      ps.feed(s.substr(j));
      ASSERT_EQ(split.lines, whole.lines) << i << "," << j;
      ASSERT_EQ(ps.has_partial_event(), pw.has_partial_event());
      ASSERT_EQ(ps.blank_lines(), pw.blank_lines());
    }
  }
  EXPECT_EQ(whole.lines.size(), 3u);
  EXPECT_TRUE(pw.has_partial_event());
}

}  // namespace
}  // namespace tokperf
