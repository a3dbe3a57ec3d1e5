#include "analysis/compare.h"

#include <gtest/gtest.h>

#include "analysis/ci_gate.h"

namespace tokperf {
namespace {

// n requests whose first token comes at ttft_ms and the rest every itl_ms, `tokens` in all.
std::vector<RequestSample> stream(int n, double ttft_ms, double itl_ms, int tokens) {
  std::vector<RequestSample> out;
  for (int i = 0; i < n; ++i) {
    RequestSample r;
    r.seq = i;
    r.ttft_ms = r.ttfo_ms = ttft_ms;
    r.itl_ms.assign(static_cast<size_t>(tokens - 1), itl_ms);
    r.output_tokens = tokens;
    r.tpot_ms = itl_ms;
    r.e2e_ms = ttft_ms + itl_ms * (tokens - 1);
    out.push_back(r);
  }
  return out;
}

LevelSummary summary_of(const std::vector<RequestSample>& rs, int failed = 0) {
  LevelSummary s;
  s.params.label = "c=1";
  s.params.level = 0;
  s.params.concurrency = 1;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestSample& r : rs) {
    ttft.push_back(r.ttft_ms);
    tpot.push_back(r.tpot_ms);
    e2e.push_back(r.e2e_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  s.ttft = s.ttfo = compute_dist_stats(ttft);
  s.tpot = compute_dist_stats(tpot);
  s.itl = compute_dist_stats(itl);
  s.e2e = compute_dist_stats(e2e);
  s.ok = static_cast<int64_t>(rs.size());
  s.failed = failed;
  s.sent = s.ok + failed;
  return s;
}

RunFigures figures(const std::string& name, const std::vector<RequestSample>& rs, int failed = 0) {
  std::vector<LevelSummary> lv{summary_of(rs, failed)};
  auto f = run_figures(name, lv, rs, "", PerceivedOptions{});
  EXPECT_TRUE(f.ok());
  return *f;
}

// The source material's story: A = 0.8 s TTFT, then tokens every 65 ms (about 8 s in all); B = 3.5
// s TTFT, then every 40 ms (about 6 s). B wins on total time; users preferred A.
TEST(Compare, ModelAWithTheEarlyFirstTokenFeelsFaster) {
  std::vector<RunFigures> runs{figures("A", stream(20, 800, 65, 109)),
                               figures("B", stream(20, 3500, 40, 64))};
  EXPECT_DOUBLE_EQ(runs[0].level.e2e.p50, 800 + 65 * 108);  // 7,820 ms
  EXPECT_DOUBLE_EQ(runs[1].level.e2e.p50, 3500 + 40 * 63);  // 6,020 ms
  Verdict v = perceived_verdict(runs, PerceivedOptions{});
  EXPECT_EQ(v.winner, 0);
  EXPECT_EQ(v.explanation,
            "A would feel faster: its first text appears at 800 ms vs 3.50 s for B (P50), and "
            "after that neither makes a reader at 8 tokens/s wait (TPOT 65.0 ms vs 40.0 ms, both "
            "under 125 ms per token). B finishes sooner (E2E P50 6.02 s vs 7.82 s), but total "
            "time hides the 2.70 s longer wait before anything appears.");
  // Order does not matter.
  std::vector<RunFigures> swapped{runs[1], runs[0]};
  EXPECT_EQ(perceived_verdict(swapped, PerceivedOptions{}).winner, 1);
}

TEST(Compare, DecodingSlowerThanReadingCountsAgainstARun) {
  // Same TTFT; "slow" decodes at 325 ms/token, slower than a reader at 8 tokens/s (125 ms/token).
  std::vector<RunFigures> runs{figures("fast", stream(10, 500, 50, 20)),
                               figures("slow", stream(10, 500, 325, 20))};
  Verdict v = perceived_verdict(runs, PerceivedOptions{});
  EXPECT_EQ(v.winner, 0);
  // The reader waits 200 ms before each of the 19 later tokens: 3,800 ms.
  EXPECT_DOUBLE_EQ(runs[1].perceived.reading_stall_ms.p50, 19 * 200.0);
  EXPECT_NE(v.explanation.find("waits 0.00 ms vs 3.80 s"), std::string::npos) << v.explanation;
}

TEST(Compare, SmallDifferencesAreNotNoticeable) {
  std::vector<RunFigures> runs{figures("A", stream(10, 500, 30, 20)),
                               figures("B", stream(10, 530, 30, 20))};
  Verdict v = perceived_verdict(runs, PerceivedOptions{});
  EXPECT_EQ(v.winner, -1);
  EXPECT_NE(v.explanation.find("No difference users would notice"), std::string::npos);
}

TEST(Compare, ARunThatFailsMoreLosesEvenWhenFaster) {
  std::vector<RunFigures> runs{figures("steady", stream(95, 900, 30, 20), 0),
                               figures("flaky", stream(95, 300, 30, 20), 5)};
  Verdict v = perceived_verdict(runs, PerceivedOptions{});
  EXPECT_EQ(v.winner, 0);
  EXPECT_NE(v.explanation.find("flaky failed 5.0% of requests against 0.0%"), std::string::npos)
      << v.explanation;
}

TEST(Compare, UnknownLevelListsTheLevelsThereAre) {
  std::vector<RequestSample> rs = stream(3, 100, 10, 5);
  std::vector<LevelSummary> lv{summary_of(rs)};
  auto f = run_figures("A", lv, rs, "c=64", PerceivedOptions{});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), "run 'A' has no level 'c=64'; its levels are: c=1");
}

TEST(Compare, TableShowsDeltasAgainstTheBaseline) {
  std::vector<RunFigures> runs{figures("A", stream(20, 800, 65, 109)),
                               figures("B", stream(20, 3500, 40, 64))};
  std::string t = render_compare_table(runs, 20);
  EXPECT_NE(t.find("+2.70 s (+338%)"), std::string::npos) << t;  // TTFT P50
  EXPECT_NE(t.find("-25.0 ms (-38%)"), std::string::npos) << t;  // TPOT P50
}

// --- CI gate ---

TEST(CiGate, ParsesTheDocumentedExample) {
  auto g = parse_gate("ttft.p95>+10%, tpot.p95>+10%,errors>0");
  ASSERT_TRUE(g.ok()) << g.error();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[0].metric, "ttft");
  EXPECT_EQ((*g)[0].stat, "p95");
  EXPECT_EQ((*g)[0].mode, GateCondition::Mode::kDeltaPct);
  EXPECT_DOUBLE_EQ((*g)[0].threshold, 10);
  EXPECT_EQ((*g)[2].metric, "errors");
  EXPECT_EQ((*g)[2].mode, GateCondition::Mode::kValue);
  auto d = parse_gate("e2e.p50>=+0.5s,itl<2s");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ((*d)[0].mode, GateCondition::Mode::kDelta);
  EXPECT_DOUBLE_EQ((*d)[0].threshold, 500);
  EXPECT_EQ((*d)[1].stat, "p95");
  EXPECT_DOUBLE_EQ((*d)[1].threshold, 2000);
}

TEST(CiGate, RejectsBadConditionsNamingThem) {
  for (const char* bad : {"ttft", "latency>1s", "ttft.p42>+1%", "errors.p95>0", "ttft.p95>10%",
                          "tok_s>5ms", "ttft.p95>+x%", ""}) {
    auto g = parse_gate(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_NE(g.error().find("expected METRIC[.STAT] OP VALUE"), std::string::npos) << g.error();
  }
}

TEST(CiGate, EachConditionDecidesOnItsOwn) {
  RunFigures base = figures("base", stream(20, 1000, 50, 20));
  RunFigures ttft_up = figures("cand", stream(20, 1150, 50, 20));  // +15% TTFT
  RunFigures tpot_up = figures("cand", stream(20, 1000, 60, 20));  // +20% TPOT
  RunFigures errs = figures("cand", stream(20, 1000, 50, 20), 1);
  auto g = parse_gate("ttft.p95>+10%,tpot.p95>+10%,errors>0");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(evaluate_gate(*g, base, base).empty());
  auto f1 = evaluate_gate(*g, base, ttft_up);
  ASSERT_EQ(f1.size(), 1u);
  EXPECT_EQ(f1[0].condition, "ttft.p95>+10%");
  EXPECT_EQ(f1[0].detail, "ttft.p95 of cand is 1.15 s vs 1.00 s for base (+15.0%)");
  auto f2 = evaluate_gate(*g, base, tpot_up);
  ASSERT_EQ(f2.size(), 1u);
  EXPECT_EQ(f2[0].condition, "tpot.p95>+10%");
  auto f3 = evaluate_gate(*g, base, errs);
  ASSERT_EQ(f3.size(), 1u);
  EXPECT_EQ(f3[0].condition, "errors>0");
  // Just under the threshold passes: +9%.
  RunFigures ttft_9 = figures("cand", stream(20, 1090, 50, 20));
  EXPECT_TRUE(evaluate_gate(*g, base, ttft_9).empty());
}

TEST(CiGate, UndefinedFiguresFailTheGate) {
  RunFigures base = figures("base", stream(20, 1000, 50, 20));
  RunFigures none = base;
  none.level.ttft = DistStats{};
  auto g = parse_gate("ttft.p95>+10%");
  ASSERT_TRUE(g.ok());
  auto f = evaluate_gate(*g, base, none);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].detail.find("undefined"), std::string::npos);
}

}  // namespace
}  // namespace tokperf
