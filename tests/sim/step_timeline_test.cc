#include "sim/step_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace tokperf::sim {
namespace {

// `streams` streams, a step every `step_ns`, each step's tokens handed out `spacing_ns` apart in
// a new order; stream i's first token in step `first_step[i]`.
std::vector<std::vector<int64_t>> built(int streams, int steps, int64_t step_ns, int64_t spacing_ns,
                                        const std::vector<int>& first_step) {
  std::mt19937 rng(7);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(streams));
  for (int k = 0; k < steps; ++k) {
    std::vector<int> order;
    for (int s = 0; s < streams; ++s) {
      if (k >= first_step[static_cast<size_t>(s)]) order.push_back(s);
    }
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) {
      out[static_cast<size_t>(order[i])].push_back(1'000'000'000 + k * step_ns +
                                                   static_cast<int64_t>(i) * spacing_ns);
    }
  }
  return out;
}

TEST(StepTimeline, ReadsTheStepAndTheSpacingItWasBuiltWith) {
  const StepFigures f = step_figures(built(40, 60, 25'000'000, 70'000, std::vector<int>(40, 0)));
  EXPECT_NEAR(f.token_spacing_us, 70.0, 1e-9);
  EXPECT_NEAR(f.decode_step_ms, 25.0, 1e-9);
  EXPECT_EQ(f.steps, 60);
  EXPECT_EQ(f.full_steps, 60);
  EXPECT_EQ(f.decode_steps, 58);  // the first step carries every first token
}

// A prompt that finished in a step makes it a prefill step: the time into it and out of it is not
// a decode-only step, however long; a step that few streams share does not set the spacing.
TEST(StepTimeline, StepsWithAFirstTokenAreNotDecodeSteps) {
  std::vector<int> first(40, 0);
  first[39] = 30;  // a late stream: its first token lands in step 30
  auto streams = built(40, 60, 25'000'000, 70'000, first);
  // Step 30 also ran the late stream's prefill: 300 ms longer, every later token that much later.
  for (auto& s : streams) {
    for (int64_t& t : s) {
      if (t >= 1'000'000'000 + 30 * 25'000'000) t += 300'000'000;
    }
  }
  const StepFigures f = step_figures(streams);
  EXPECT_NEAR(f.decode_step_ms, 25.0, 1e-9);  // the 325 ms step into step 30 is not counted
  EXPECT_NEAR(f.token_spacing_us, 70.0, 1e-9);
  // Steps 0-29 carry 39 streams, 30-59 all 40: both at least 90% of the usual 40.
  EXPECT_EQ(f.full_steps, 60);
  EXPECT_EQ(f.decode_steps, 56);  // not into step 0 (none before), nor into or out of step 30
}

TEST(StepTimeline, OneStreamOrNoTokensGiveNothing) {
  const StepFigures one = step_figures(built(1, 20, 25'000'000, 70'000, {0}));
  EXPECT_TRUE(std::isnan(one.token_spacing_us));
  EXPECT_TRUE(std::isnan(one.decode_step_ms));
  const StepFigures none = step_figures({});
  EXPECT_TRUE(std::isnan(none.token_spacing_us));
  EXPECT_EQ(none.steps, 0);
}

}  // namespace
}  // namespace tokperf::sim
