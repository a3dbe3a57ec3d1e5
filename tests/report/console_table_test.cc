#include "report/console_table.h"

#include <gtest/gtest.h>

namespace tokperf {
namespace {

DistStats p(double p50, double p95, double p99) {
  DistStats s;
  s.count = 1;
  s.p50 = p50;
  s.p95 = p95;
  s.p99 = p99;
  return s;
}

std::vector<LevelSummary> two_levels() {
  LevelSummary a;
  a.params = {"c=1", 0, 1};
  a.ttft = p(350, 400, 0);
  a.tpot = p(38, 42, 0);
  a.itl = p(37.5, 0, 61.2);
  a.e2e = p(4200, 4650, 0);
  a.output_token_throughput_tps = 28.3;
  a.sent = a.ok = 20;

  LevelSummary b;
  b.params = {"c=16", 1, 16};
  b.ttft = p(750, 1500, 0);
  b.tpot = p(80, 130, 0);
  b.itl = p(79.4, 0, 2100);
  b.e2e = p(16000, 19500, 0);
  b.output_token_throughput_tps = 210;
  b.sent = 99;
  b.ok = 95;
  b.failed = 4;
  b.errors = {{ErrorKind::kRateLimited, 3, 429, "HTTP 429: Too Many Requests"},
              {ErrorKind::kIncomplete, 1, 0, "connection closed after 12 chunks"}};
  return {a, b};
}

// Expected text written by hand from format_ms's rules (<10 ms: 2 decimals, <100: 1, <1000: 0,
// then seconds) and right-aligned columns two spaces apart.
TEST(ConsoleTable, GoldenText) {
  const std::string want =
      "concurrency  TTFT P50  TTFT P95  TPOT P50  TPOT P95  ITL P50  ITL P99  E2E P50  E2E P95  "
      "out tok/s  ok  failed\n"
      "          1    350 ms    400 ms   38.0 ms   42.0 ms  37.5 ms  61.2 ms   4.20 s   4.65 s  "
      "     28.3  20       0\n"
      "         16    750 ms    1.50 s   80.0 ms    130 ms  79.4 ms   2.10 s   16.0 s   19.5 s  "
      "      210  95       4\n";
  EXPECT_EQ(render_level_table(two_levels()), want);
}

TEST(ConsoleTable, ErrorBreakdownGolden) {
  EXPECT_EQ(render_error_breakdown(two_levels()),
            "errors at concurrency 16: 3 rate_limited (429), 1 incomplete\n"
            "  rate_limited: HTTP 429: Too Many Requests\n"
            "  incomplete: connection closed after 12 chunks\n");
  auto one = two_levels();
  one.erase(one.begin());
  EXPECT_EQ(render_error_breakdown(one).rfind("errors: 3 rate_limited (429), 1 incomplete\n", 0),
            0u);
  one[0].errors.clear();
  EXPECT_EQ(render_error_breakdown(one), "");
}

TEST(ConsoleTable, RateColumnAndUndefinedValues) {
  LevelSummary s;
  s.params = {"rate=2.5/s", 0, 0, 2.5};
  s.sent = s.failed = 1;  // nothing succeeded: every latency is NaN
  const std::string out = render_level_table({s});
  EXPECT_EQ(out,
            "rate req/s  TTFT P50  TTFT P95  TPOT P50  TPOT P95  ITL P50  ITL P99  E2E P50  "
            "E2E P95  out tok/s  ok  failed\n"
            "      2.50         -         -         -         -        -        -        -  "
            "      -          -   0       1\n");
}

TEST(ConsoleTable, HealthWarnings) {
  ClientHealth h;
  EXPECT_EQ(render_health_warnings(h), "");
  h.warnings = {"a", "b"};
  EXPECT_EQ(render_health_warnings(h), "warning: a\nwarning: b\n");
}

}  // namespace
}  // namespace tokperf
