#include "client/sse_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

struct Got {
  std::string type, data, id;
  bool operator==(const Got& o) const { return type == o.type && data == o.data && id == o.id; }
};

std::ostream& operator<<(std::ostream& os, const Got& g) {
  return os << "{type=" << g.type << " data=" << ::testing::PrintToString(g.data) << " id=" << g.id
            << "}";
}

class Collect : public SseSink {
 public:
  void on_event(const SseEvent& e) override {
    events.push_back({std::string(e.type), std::string(e.data), std::string(e.id)});
  }
  std::vector<Got> events;
};

std::vector<Got> parse(std::string_view stream) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed(stream);
  return sink.events;
}

Got msg(std::string data, std::string id = "") {
  return {"message", std::move(data), std::move(id)};
}

TEST(SseParserTest, LfCrAndCrlfAllEndLines) {
  EXPECT_EQ(parse("data: a\n\n"), std::vector<Got>{msg("a")});
  EXPECT_EQ(parse("data: a\r\r"), std::vector<Got>{msg("a")});
  EXPECT_EQ(parse("data: a\r\n\r\n"), std::vector<Got>{msg("a")});
  EXPECT_EQ(parse("data: a\r\n\ndata: b\r\rdata: c\n\r\n"),
            (std::vector<Got>{msg("a"), msg("b"), msg("c")}));
}

TEST(SseParserTest, CrAloneDispatchesWithoutWaitingForLf) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("data: a\r\r");
  ASSERT_EQ(sink.events.size(), 1u);
  parser.feed("\n");  // completes the CRLF begun by the second CR: no extra empty line
  parser.feed("data: b\n\n");
  EXPECT_EQ(sink.events, (std::vector<Got>{msg("a"), msg("b")}));
}

TEST(SseParserTest, CrAtEndOfFeedAndLfAtStartOfNextAreOneLineEnd) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("data: a\r");
  parser.feed("\ndata: b\r");
  parser.feed("\n\r");
  parser.feed("\n");
  // Had the LFs counted as extra empty lines, "a" would dispatch alone before "b".
  EXPECT_EQ(sink.events, std::vector<Got>{msg("a\nb")});
}

TEST(SseParserTest, CommentsAreIgnoredButCounted) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed(": ping\n:\ndata: x\n: between\n\n:keep-alive\n\n");
  EXPECT_EQ(sink.events, std::vector<Got>{msg("x")});
  EXPECT_EQ(parser.comments(), 4u);
  EXPECT_EQ(parser.events_dispatched(), 1u);
}

TEST(SseParserTest, OnlyOneLeadingSpaceIsRemovedFromTheValue) {
  EXPECT_EQ(parse("data:a\n\n"), std::vector<Got>{msg("a")});
  EXPECT_EQ(parse("data: a\n\n"), std::vector<Got>{msg("a")});
  EXPECT_EQ(parse("data:  a \n\n"), std::vector<Got>{msg(" a ")});
  EXPECT_EQ(parse("data:\ta\n\n"), std::vector<Got>{msg("\ta")});
}

TEST(SseParserTest, FieldSplitsAtFirstColon) {
  EXPECT_EQ(parse("data: {\"a\":1}\n\n"), std::vector<Got>{msg("{\"a\":1}")});
  EXPECT_EQ(parse("data: a: b\n\n"), std::vector<Got>{msg("a: b")});
}

TEST(SseParserTest, LineWithoutColonIsFieldWithEmptyValue) {
  // "data" alone appends an empty line: the buffer is "\n", not empty, so an event with "" goes
  // out.
  EXPECT_EQ(parse("data\n\n"), std::vector<Got>{msg("")});
  EXPECT_EQ(parse("data\ndata\n\n"), std::vector<Got>{msg("\n")});
  EXPECT_EQ(parse("data:\n\n"), std::vector<Got>{msg("")});
}

TEST(SseParserTest, DataLinesJoinWithLf) {
  EXPECT_EQ(parse("data: a\ndata: b\ndata:\ndata: c\n\n"), std::vector<Got>{msg("a\nb\n\nc")});
}

TEST(SseParserTest, EventSetsTypeForOneEventOnly) {
  EXPECT_EQ(parse("event: delta\ndata: a\n\ndata: b\n\n"),
            (std::vector<Got>{{"delta", "a", ""}, msg("b")}));
}

TEST(SseParserTest, EmptyDataDoesNotDispatchButResetsType) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("event: ping\n\ndata: a\n\n\n\n");
  EXPECT_EQ(sink.events, std::vector<Got>{msg("a")});
  EXPECT_EQ(parser.events_dispatched(), 1u);
}

TEST(SseParserTest, IdPersistsAcrossEventsAndNulIdIsIgnored) {
  using namespace std::string_literals;
  EXPECT_EQ(parse("id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n"s),
            (std::vector<Got>{msg("a", "1"), msg("b", "1"), msg("c", "1"), msg("d", "")}));
}

TEST(SseParserTest, IdWithoutDataStillSetsLastEventId) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("id: 7\n\n");
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(parser.last_event_id(), "7");
}

TEST(SseParserTest, RetryAcceptsDigitsOnly) {
  Collect sink;
  SseParser parser(&sink);
  EXPECT_EQ(parser.retry_ms(), -1);
  parser.feed("retry: 1500\n\n");
  EXPECT_EQ(parser.retry_ms(), 1500);
  parser.feed("retry: 12a\nretry: -3\nretry: 2.5\nretry:  7\nretry:\n\n");
  EXPECT_EQ(parser.retry_ms(), 1500);
  parser.feed("retry: 99999999999999999999999\n\n");
  EXPECT_EQ(parser.retry_ms(), INT64_MAX);
  EXPECT_TRUE(sink.events.empty());
}

TEST(SseParserTest, UnknownFieldsAndCaseMismatchesAreIgnored) {
  EXPECT_EQ(parse("foo: bar\nData: x\nDATA: y\ndata: z\n\n"), std::vector<Got>{msg("z")});
}

TEST(SseParserTest, LeadingBomSkippedOnceAlsoWhenSplit) {
  EXPECT_EQ(parse("\xEF\xBB\xBF"
                  "data: a\n\n"),
            std::vector<Got>{msg("a")});
  // A second BOM is not at stream start: it becomes part of the field name, an unknown field.
  EXPECT_EQ(parse("\xEF\xBB\xBF\xEF\xBB\xBF"
                  "data: a\n\ndata: b\n\n"),
            std::vector<Got>{msg("b")});
  Collect sink;
  SseParser parser(&sink);
  parser.feed("\xEF");
  parser.feed("\xBB");
  parser.feed(
      "\xBF"
      "da");
  parser.feed("ta: a\n\n");
  EXPECT_EQ(sink.events, std::vector<Got>{msg("a")});
  EXPECT_EQ(parser.bytes_fed(), 12u);
}

TEST(SseParserTest, BrokenBomPrefixIsContent) {
  // EF BB then 'x': not a BOM, so those bytes start the first line ("\xEF\xBBxdata" is unknown).
  Collect sink;
  SseParser parser(&sink);
  parser.feed("\xEF\xBB");
  EXPECT_TRUE(parser.has_partial_event());
  parser.feed("data: a\n\ndata: b\n\n");
  EXPECT_EQ(sink.events, std::vector<Got>{msg("b")});
}

TEST(SseParserTest, UnterminatedEventIsNotDispatchedAndReportedPartial) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("data: a\n\n");
  EXPECT_FALSE(parser.has_partial_event());
  parser.feed("data: b\n");
  EXPECT_TRUE(parser.has_partial_event());  // a field waiting for its empty line
  parser.feed("\ndata: c");
  EXPECT_TRUE(parser.has_partial_event());  // an unterminated line
  EXPECT_EQ(sink.events, (std::vector<Got>{msg("a"), msg("b")}));
}

TEST(SseParserTest, CommentsAloneAreNotAPartialEvent) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed(": ping\n");
  EXPECT_FALSE(parser.has_partial_event());
}

TEST(SseParserTest, ResetStartsAFreshStream) {
  Collect sink;
  SseParser parser(&sink);
  parser.feed("id: 3\nretry: 10\ndata: half");
  parser.reset();
  EXPECT_FALSE(parser.has_partial_event());
  EXPECT_EQ(parser.retry_ms(), -1);
  EXPECT_EQ(parser.bytes_fed(), 0u);
  parser.feed(
      "\xEF\xBB\xBF"
      "data: a\n\n");
  EXPECT_EQ(sink.events, std::vector<Got>{msg("a")});
}

// A stream with every feature at once: BOM, LF/CR/CRLF, comments, multi-line data, id, retry, an
// event type, an empty-data event, an ignored field and a trailing partial event.
constexpr std::string_view kMixed =
    "\xEF\xBB\xBF"
    ": hello\r\n"
    "retry: 3000\n"
    "id: 41\r"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "event: update\r\n"  // a split inside this CRLF or the next must not end the event early
    "data: line one\r\n"
    "data:line two\n"
    ":mid comment\n"
    "\r\n"
    "event: ignored-empty\n"
    "\r"
    "foo: bar\r\n"
    "data\r\n"
    "\r"
    "id: 42\n"
    "data: last\r\n"
    "\n"
    "data: partial";

const std::vector<Got>& mixed_expected() {
  static const std::vector<Got> kExpected = {
      {"message", "{\"a\":1}", "41"},
      {"update", "line one\nline two", "41"},
      {"message", "", "41"},
      {"message", "last", "42"},
  };
  return kExpected;
}

std::vector<Got> parse_split(std::string_view s, const std::vector<size_t>& cuts) {
  Collect sink;
  SseParser parser(&sink);
  size_t at = 0;
  for (size_t cut : cuts) {
    parser.feed(s.substr(at, cut - at));
    at = cut;
  }
  parser.feed(s.substr(at));
  EXPECT_TRUE(parser.has_partial_event());
  EXPECT_EQ(parser.bytes_fed(), s.size());
  EXPECT_EQ(parser.comments(), 2u);
  EXPECT_EQ(parser.retry_ms(), 3000);
  return sink.events;
}

TEST(SseParserTest, MixedStreamInOnePiece) { EXPECT_EQ(parse_split(kMixed, {}), mixed_expected()); }

TEST(SseParserTest, MixedStreamAtEverySingleSplit) {
  for (size_t i = 0; i <= kMixed.size(); ++i) {
    ASSERT_EQ(parse_split(kMixed, {i}), mixed_expected()) << "split at " << i;
  }
}

TEST(SseParserTest, MixedStreamAtEveryPairOfSplits) {
  for (size_t i = 0; i <= kMixed.size(); ++i) {
    for (size_t j = i; j <= kMixed.size(); ++j) {
      ASSERT_EQ(parse_split(kMixed, {i, j}), mixed_expected()) << "splits at " << i << "," << j;
    }
  }
}

TEST(SseParserTest, MixedStreamByteByByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kMixed.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(parse_split(kMixed, cuts), mixed_expected());
}

}  // namespace
}  // namespace tokperf
