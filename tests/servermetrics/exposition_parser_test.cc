#include "servermetrics/exposition_parser.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace tokperf::servermetrics {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read test data " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
// Real llama.cpp captures (tests/data/real-streams/README.md).
std::string capture(const std::string& name) {
  return read(std::string(TOKPERF_TEST_DATA).append("/real-streams/") + name);
}
std::string local(const std::string& name) {
  return read(std::string(TOKPERF_TEST_DATA).append("/servermetrics/") + name);
}

const Sample* find(const Exposition& e, std::string_view name, const Labels& labels = {}) {
  for (const Sample& s : e.samples) {
    if (s.name == name && (labels.empty() || s.labels == labels)) return &s;
  }
  return nullptr;
}

TEST(ExpositionParser, LlamaCppCaptureGolden) {
  const std::string text = capture("llamacpp-metrics.prom");
  ASSERT_FALSE(text.empty());
  Exposition e = parse_exposition(text);
  EXPECT_EQ(e.bad_lines, 0) << e.first_error;
  EXPECT_EQ(e.samples.size(), 15u);
  EXPECT_EQ(e.families.size(), 15u);
  ASSERT_NE(find(e, "llamacpp:prompt_tokens_total"), nullptr);
  EXPECT_DOUBLE_EQ(find(e, "llamacpp:prompt_tokens_total")->value, 59);
  EXPECT_DOUBLE_EQ(find(e, "llamacpp:prompt_seconds_total")->value, 0.026514);
  EXPECT_DOUBLE_EQ(find(e, "llamacpp:predicted_tokens_seconds")->value, 856.765);
  EXPECT_EQ(e.type_of("llamacpp:tokens_predicted_total"), MetricType::kCounter);
  EXPECT_EQ(e.type_of("llamacpp:requests_processing"), MetricType::kGauge);
  EXPECT_EQ(e.families.at("llamacpp:n_tokens_max").help,
            "Largest observed sequence length (prompt + generation)");
  EXPECT_FALSE(e.saw_eof);
}

TEST(ExpositionParser, AnySplitGivesTheSameResult) {
  for (const char* f : {"llamacpp-metrics-under-load.prom", "llamacpp-metrics-after.prom"}) {
    const std::string text = capture(f);
    const Exposition whole = parse_exposition(text);
    ASSERT_EQ(whole.bad_lines, 0) << f << ": " << whole.first_error;
    for (size_t cut = 0; cut <= text.size(); cut += 7) {
      ExpositionParser p;
      p.feed(std::string_view(text).substr(0, cut));
      p.feed(std::string_view(text).substr(cut));
      Exposition e = p.finish();
      ASSERT_EQ(e.samples.size(), whole.samples.size()) << f << " cut at " << cut;
      for (size_t i = 0; i < e.samples.size(); ++i) {
        EXPECT_EQ(e.samples[i].name, whole.samples[i].name);
        EXPECT_EQ(e.samples[i].value, whole.samples[i].value);
      }
    }
  }
}

TEST(ExpositionParser, OpenMetricsEscapesExemplarsAndSpecialValues) {
  Exposition e = parse_exposition(local("openmetrics.txt"));
  EXPECT_EQ(e.bad_lines, 0) << e.first_error;
  EXPECT_TRUE(e.saw_eof);
  const Sample* req = find(e, "acme_http_requests_total");
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(req->labels.size(), 1u);
  EXPECT_EQ(req->labels[0].second, "/a\"b\\c\nd");
  ASSERT_TRUE(req->timestamp);
  EXPECT_DOUBLE_EQ(*req->timestamp, 1700000000.5);
  EXPECT_EQ(e.families.at("acme_http_requests").unit, "requests");
  EXPECT_EQ(e.families.at("acme_http_requests").help, "Requests with a \\ and a\nnewline.");
  EXPECT_EQ(e.family_of("acme_http_requests_total"), "acme_http_requests");
  EXPECT_EQ(e.type_of("acme_http_requests_created"), MetricType::kCounter);
  // The exemplar after the bucket value is dropped; the value stays.
  const Sample* b = find(e, "acme_latency_seconds_bucket", {{"le", "0.5"}});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->value, 3);
  EXPECT_FALSE(b->timestamp);
  EXPECT_TRUE(std::isnan(find(e, "acme_weird")->value));  // trailing comma in labels accepted
  EXPECT_EQ(find(e, "acme_neg")->value, -INFINITY);
  EXPECT_EQ(find(e, "acme_pos")->value, INFINITY);
  // A family nobody declared is still kept as a raw series.
  EXPECT_EQ(find(e, "some_unknown_family")->value, 1500);
  EXPECT_EQ(e.type_of("some_unknown_family"), MetricType::kUntyped);
}

TEST(ExpositionParser, BadLinesAreCountedAndSkipped) {
  Exposition e = parse_exposition(
      "good 1\n"
      "bad{a=1} 2\n"
      "also_bad{a=\"x} 3\n"
      "no_value\n"
      "word 12abc\n"
      "{} 4\n"
      "dup{a=\"1\",a=\"2\"} 5\n"
      "good2{b=\"2\"} 6 1700\n"
      "# EOF\n"
      "after 7\n");
  EXPECT_EQ(e.samples.size(), 2u);
  EXPECT_EQ(e.bad_lines, 7);
  EXPECT_EQ(e.first_error.rfind("line 2:", 0), 0u) << e.first_error;
  EXPECT_TRUE(e.saw_eof);
}

// The format is UTF-8; a label value or HELP text that is not would also make the server window
// in summary.json impossible to write (found by exposition_parser_fuzz: an uncaught
// nlohmann type_error 316 when the window was dumped).
TEST(ExpositionParser, InvalidUtf8LabelValuesAndHelpTextAreBadLines) {
  Exposition e = parse_exposition(
      "# HELP ok_total fine \xE2\x9C\x93 text\n"
      "# HELP bad_total cut \xE2\x9C\n"
      "ok_total{model=\"caf\xC3\xA9\"} 1\n"
      "bad_total{model=\"a\xC0=\"} 2\n"
      "ok_total{model=\"b\"} 3\n");
  ASSERT_EQ(e.samples.size(), 2u);
  EXPECT_EQ(e.samples[0].labels[0].second, "caf\xC3\xA9");
  EXPECT_EQ(e.bad_lines, 2);
  EXPECT_EQ(e.first_error, "line 2: # HELP bad_total: text is not valid UTF-8 (byte 4)");
  EXPECT_EQ(e.families.at("ok_total").help, "fine \xE2\x9C\x93 text");
  EXPECT_EQ(parse_exposition("x{m=\"a\xC0=\"} 2\n").first_error,
            "line 1: x: label m value is not valid UTF-8 (byte 1)");
}

TEST(ExpositionParser, HtmlIsNotMetrics) {
  Exposition e = parse_exposition("<!DOCTYPE html>\n<html><body>Not here</body></html>\n");
  EXPECT_TRUE(e.samples.empty());
  EXPECT_EQ(e.bad_lines, 2);
}

TEST(ExpositionParser, FloatsAsTheFormatsWriteThem) {
  EXPECT_EQ(*parse_prom_float("1.5e3"), 1500);
  EXPECT_EQ(*parse_prom_float("-0.25"), -0.25);
  EXPECT_EQ(*parse_prom_float("+Inf"), INFINITY);
  EXPECT_EQ(*parse_prom_float("-Inf"), -INFINITY);
  EXPECT_TRUE(std::isnan(*parse_prom_float("NaN")));
  EXPECT_EQ(*parse_prom_float("1e999"), INFINITY);
  EXPECT_FALSE(parse_prom_float(""));
  EXPECT_FALSE(parse_prom_float("0x10"));
  EXPECT_FALSE(parse_prom_float("1,5"));
  EXPECT_FALSE(parse_prom_float("--1"));
}

TEST(ExpositionParser, SeriesKeyIsStableAndEscaped) {
  EXPECT_EQ(series_key("x", {}), "x");
  EXPECT_EQ(series_key("x", {{"a", "q\"\\\n"}, {"b", "2"}}), "x{a=\"q\\\"\\\\\\n\",b=\"2\"}");
}

}  // namespace
}  // namespace tokperf::servermetrics
