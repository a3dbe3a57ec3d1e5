#include "workload/length_dist.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

namespace tokperf {
namespace {

double sample_mean(const LengthDist& d, int n, uint64_t seed, double* sd = nullptr) {
  WorkloadRng rng(seed);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const auto x = static_cast<double>(d.sample(rng));
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / n;
  if (sd) *sd = std::sqrt(sum2 / n - mean * mean);
  return mean;
}

TEST(LengthDist, FixedAcceptsABareNumberAndFixedColon) {
  for (const char* t : {"300", "fixed:300", " 300 "}) {
    auto d = LengthDist::parse(t, "--input-tokens");
    ASSERT_TRUE(d.ok()) << t << ": " << d.error();
    WorkloadRng rng(1);
    EXPECT_TRUE(d->is_fixed());
    EXPECT_EQ(d->sample(rng), 300);
  }
}

TEST(LengthDist, UniformStaysInsideAndCoversBothEnds) {
  auto d = LengthDist::parse("uniform:10..13", "--input-tokens");
  ASSERT_TRUE(d.ok()) << d.error();
  WorkloadRng rng(7);
  std::map<int64_t, int> seen;
  for (int i = 0; i < 4000; ++i) seen[d->sample(rng)]++;
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.begin()->first, 10);
  EXPECT_EQ(seen.rbegin()->first, 13);
  for (auto& [v, n] : seen) EXPECT_GT(n, 800) << v;  // ~1000 each
}

TEST(LengthDist, NormalHasItsMeanAndSd) {
  auto d = LengthDist::parse("normal:500,100", "--input-tokens");
  ASSERT_TRUE(d.ok()) << d.error();
  double sd = 0;
  const double mean = sample_mean(*d, 20000, 3, &sd);
  EXPECT_NEAR(mean, 500, 5);
  EXPECT_NEAR(sd, 100, 5);
}

TEST(LengthDist, LognormalTakesTheLengthsOwnMeanAndSd) {
  auto d = LengthDist::parse("lognormal:400,200", "--output-tokens");
  ASSERT_TRUE(d.ok()) << d.error();
  double sd = 0;
  const double mean = sample_mean(*d, 50000, 5, &sd);
  EXPECT_NEAR(mean, 400, 8);
  EXPECT_NEAR(sd, 200, 15);
  WorkloadRng rng(9);
  for (int i = 0; i < 1000; ++i) EXPECT_GE(d->sample(rng), 1);
}

TEST(LengthDist, SameSeedSameDraws) {
  auto d = LengthDist::parse("lognormal:400,200", "x").value();
  WorkloadRng a(11), b(11), c(12);
  bool differs = false;
  for (int i = 0; i < 50; ++i) {
    const int64_t x = d.sample(a);
    EXPECT_EQ(x, d.sample(b));
    differs |= x != d.sample(c);
  }
  EXPECT_TRUE(differs);
}

TEST(LengthDist, PerRequestStreamsDoNotDependOnOrder) {
  WorkloadRng a = WorkloadRng::for_request(42, 1, 5);
  WorkloadRng b = WorkloadRng::for_request(42, 1, 5);
  WorkloadRng c = WorkloadRng::for_request(42, 1, 6);
  WorkloadRng d = WorkloadRng::for_request(42, 2, 5);
  const double x = a.uniform();
  EXPECT_EQ(x, b.uniform());
  EXPECT_NE(x, c.uniform());
  EXPECT_NE(x, d.uniform());
}

TEST(LengthDist, HistogramFollowsItsWeights) {
  auto d = LengthDist::parse_histogram("# length weight\n100 3\n200..209 1\n\n300 0\n", "h.txt");
  ASSERT_TRUE(d.ok()) << d.error();
  WorkloadRng rng(2);
  int at100 = 0, in200 = 0;
  for (int i = 0; i < 8000; ++i) {
    const int64_t x = d->sample(rng);
    if (x == 100)
      ++at100;
    else if (x >= 200 && x <= 209)
      ++in200;
    else
      ADD_FAILURE() << "drew " << x;
  }
  EXPECT_NEAR(at100 / 8000.0, 0.75, 0.03);
  EXPECT_NEAR(d->mean(), 0.75 * 100 + 0.25 * 204.5, 1e-9);
}

TEST(LengthDist, HistogramFromAFile) {
  const std::string path = ::testing::TempDir() + "hist_" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << "64,1\n128,1\n";
  auto d = LengthDist::parse("hist:" + path, "--input-tokens");
  std::remove(path.c_str());
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->kind(), LengthDist::Kind::kHistogram);
  EXPECT_DOUBLE_EQ(d->mean(), 96);
}

TEST(LengthDist, BadSyntaxSaysWhatIsAccepted) {
  for (const char* t :
       {"", "abc", "0", "-5", "gauss:1,2", "uniform:5", "uniform:9..3", "normal:500", "normal:x,1",
        "lognormal:0,1", "normal:10,-1", "hist:/nonexistent/file", "uniform:1..99999999999"}) {
    auto d = LengthDist::parse(t, "--input-tokens");
    ASSERT_FALSE(d.ok()) << t;
    EXPECT_NE(d.error().find("--input-tokens"), std::string::npos) << d.error();
  }
  auto d = LengthDist::parse("gauss:1,2", "--output-tokens");
  EXPECT_NE(d.error().find("uniform:A..B"), std::string::npos) << d.error();
}

TEST(LengthDist, BadHistogramNamesTheLine) {
  auto d = LengthDist::parse_histogram("100 1\nabc 2\n", "h.txt");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("h.txt"), std::string::npos);
  EXPECT_NE(d.error().find("line 2"), std::string::npos) << d.error();
  EXPECT_FALSE(LengthDist::parse_histogram("", "h").ok());
  EXPECT_FALSE(LengthDist::parse_histogram("5 0\n", "h").ok());
  EXPECT_FALSE(LengthDist::parse_histogram("5\n", "h").ok());
  EXPECT_FALSE(LengthDist::parse_histogram("5 -1\n", "h").ok());
}

}  // namespace
}  // namespace tokperf
