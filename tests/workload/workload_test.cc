#include "workload/workload.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tokperf {
namespace {

int64_t words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int64_t n = 0;
  while (in >> w) ++n;
  return n;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name + "_" + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

std::shared_ptr<Workload> make(WorkloadOptions o) {
  auto w = Workload::create(o);
  EXPECT_TRUE(w.ok()) << w.error();
  return w.ok() ? *w : nullptr;
}

TEST(Workload, SyntheticLengthsFollowTheDistributionsAndRepeat) {
  WorkloadOptions o;
  o.input = LengthDist::parse("uniform:100..200", "x").value();
  o.output = LengthDist::parse("normal:50,10", "x").value();
  auto w = make(o);
  w->set_tokens_per_word(1.0, true, "a word tokenizer");
  std::set<int64_t> inputs;
  for (uint64_t i = 0; i < 200; ++i) {
    RequestSpec s = w->at(i);
    EXPECT_GE(s.input_tokens, 100);
    EXPECT_LE(s.input_tokens, 200);
    EXPECT_EQ(words(s.prompt), s.input_tokens);  // one token per word: exact
    EXPECT_TRUE(s.input_tokens_exact);
    EXPECT_GE(s.output_tokens, 1);
    EXPECT_EQ(s.prefix_group, -1);
    inputs.insert(s.input_tokens);
    RequestSpec again = w->at(i);
    EXPECT_EQ(again.prompt, s.prompt);
    EXPECT_EQ(again.output_tokens, s.output_tokens);
  }
  EXPECT_GT(inputs.size(), 50u);
  o.seed = 43;
  auto other = make(o);
  EXPECT_NE(other->at(0).input_tokens * 1000 + other->at(1).input_tokens,
            w->at(0).input_tokens * 1000 + w->at(1).input_tokens);
}

TEST(Workload, WithoutATokenizerLengthsAreEstimates) {
  WorkloadOptions o;
  o.input = LengthDist::fixed(125);
  auto w = make(o);
  RequestSpec s = w->at(0);
  EXPECT_EQ(s.input_tokens, 125);
  EXPECT_FALSE(s.input_tokens_exact);
  EXPECT_EQ(words(s.prompt), 100);  // 125 / 1.25
  EXPECT_NE(w->describe().find("1.25"), std::string::npos);
}

TEST(Workload, CalibrationMeasuresTokensPerWord) {
  WorkloadOptions o;
  o.input = LengthDist::fixed(300);
  auto w = make(o);
  // Two tokens per word.
  w->calibrate([](const std::string& s) -> Result<int64_t> { return 2 * words(s); }, "test");
  EXPECT_DOUBLE_EQ(w->tokens_per_word(), 2.0);
  EXPECT_EQ(words(w->at(0).prompt), 150);
}

TEST(Workload, CalibrationWithATemplateOverheadTakesTheSlope) {
  WorkloadOptions o;
  o.input = LengthDist::fixed(300);
  auto w = make(o);
  // A server's usage: 1.5 tokens per word plus a 12-token chat template.
  TokenCounter usage = [](const std::string& s) -> Result<int64_t> {
    return 3 * words(s) / 2 + 12;
  };
  w->calibrate(usage, "usage", /*counts_overhead=*/true);
  EXPECT_DOUBLE_EQ(w->tokens_per_word(), 1.5);  // not (3000 + 12) / 2000
  EXPECT_EQ(words(w->at(0).prompt), 200);
}

TEST(Workload, CountDatasetReplacesEstimatesWithCounts) {
  const std::string path = temp_file(
      "sg.json",
      R"([{"id": "a", "conversations": [{"from": "human", "value": "one two three four"},
                                       {"from": "gpt", "value": "five six"}]},
          {"id": "b", "conversations": [{"from": "human", "value": "seven"},
                                       {"from": "gpt", "value": "eight nine ten eleven twelve"}]}])");
  WorkloadOptions o;
  o.dataset = "sharegpt:" + path;
  o.sampling = DatasetSampling::kSequential;
  auto w = make(o);
  std::remove(path.c_str());
  EXPECT_EQ(w->at(0).input_tokens, 5);  // 4 words x 1.25, an estimate
  EXPECT_STREQ(w->at(0).input_tokens_method, "approximate");
  // Three tokens per word; one text it cannot count.
  w->count_dataset(
      [](const std::string& s) -> Result<int64_t> {
        if (s == "seven") return Error{"no"};
        return 3 * words(s);
      },
      "tokenizer t.json");
  RequestSpec a = w->at(0), b = w->at(1);
  EXPECT_EQ(a.input_tokens, 12);
  EXPECT_EQ(a.output_tokens, 6);  // the reply, counted
  EXPECT_TRUE(a.input_tokens_exact);
  EXPECT_EQ(a.input_tokens_method, nullptr);  // the run's method
  EXPECT_EQ(b.input_tokens, 1);  // the estimate stays
  EXPECT_STREQ(b.input_tokens_method, "approximate");
  bool said = false;
  for (const auto& n : w->notes(2)) {
    said |= n.find("counted with tokenizer t.json; 1 entries it could not count") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(Workload, PrefixGroupsShareTheirPrefixAndNothingElse) {
  WorkloadOptions o;
  o.input = LengthDist::fixed(50);
  o.prefix_groups = 3;
  o.prefix_tokens = 40;
  auto w = make(o);
  w->set_tokens_per_word(1.0, true, "words");
  std::map<int, std::string> prefix_of;
  std::set<std::string> rest;
  std::set<int> groups;
  for (uint64_t i = 0; i < 60; ++i) {
    RequestSpec s = w->at(i);
    ASSERT_GE(s.prefix_group, 0);
    ASSERT_LT(s.prefix_group, 3);
    groups.insert(s.prefix_group);
    EXPECT_EQ(s.input_tokens, 90);  // shared 40 + own 50
    EXPECT_EQ(words(s.prompt), 90);
    const size_t nl = s.prompt.find('\n');
    ASSERT_NE(nl, std::string::npos);
    const std::string prefix = s.prompt.substr(0, nl);
    EXPECT_EQ(words(prefix), 40);
    auto [it, fresh] = prefix_of.emplace(s.prefix_group, prefix);
    if (!fresh) {
      EXPECT_EQ(it->second, prefix);
    }
    EXPECT_TRUE(rest.insert(s.prompt.substr(nl + 1, 40)).second) << "request parts repeat";
  }
  EXPECT_EQ(groups.size(), 3u);
  EXPECT_NE(prefix_of[0].substr(0, 30), prefix_of[1].substr(0, 30));
}

TEST(Workload, PrefixFlagsGoTogether) {
  WorkloadOptions o;
  o.prefix_groups = 2;
  EXPECT_FALSE(Workload::create(o).ok());
  o.prefix_groups = 0;
  o.prefix_tokens = 10;
  EXPECT_FALSE(Workload::create(o).ok());
}

TEST(Workload, ShuffleVisitsEveryEntryOncePerPassAndCycles) {
  std::string text;
  for (int i = 0; i < 7; ++i) text += "{\"prompt\": \"p" + std::to_string(i) + "\"}\n";
  const std::string path = temp_file("wl.jsonl", text);
  WorkloadOptions o;
  o.dataset = "jsonl:" + path;
  auto w = make(o);
  std::remove(path.c_str());
  ASSERT_EQ(w->dataset_size(), 7u);
  std::vector<std::string> first, second;
  for (uint64_t i = 0; i < 7; ++i) first.push_back(w->at(i).prompt);
  for (uint64_t i = 7; i < 14; ++i) second.push_back(w->at(i).prompt);
  EXPECT_EQ(std::set<std::string>(first.begin(), first.end()).size(), 7u);
  EXPECT_EQ(std::set<std::string>(second.begin(), second.end()).size(), 7u);
  EXPECT_NE(first, second);  // each pass reshuffled
  auto notes = w->notes(20);
  bool cycles = false;
  for (auto& n : notes) cycles |= n.find("cycles") != std::string::npos;
  EXPECT_TRUE(cycles);
  for (auto& n : w->notes(5)) EXPECT_EQ(n.find("cycles"), std::string::npos) << n;
}

TEST(Workload, SequentialAndRandomSampling) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += "{\"prompt\": \"p" + std::to_string(i) + "\"}\n";
  const std::string path = temp_file("wl2.jsonl", text);
  WorkloadOptions o;
  o.dataset = "jsonl:" + path;
  o.sampling = DatasetSampling::kSequential;
  auto seq = make(o);
  o.sampling = DatasetSampling::kRandom;
  auto rnd = make(o);
  std::remove(path.c_str());
  EXPECT_EQ(seq->at(0).prompt, "p0");
  EXPECT_EQ(seq->at(6).prompt, "p1");
  // With replacement: 20 draws from 5 repeat an entry within the first 5 (probability 1 - 5!/5^5).
  std::set<std::string> seen;
  for (uint64_t i = 0; i < 5; ++i) seen.insert(rnd->at(i).prompt);
  EXPECT_LT(seen.size(), 5u);
  EXPECT_FALSE(parse_dataset_sampling("bogus").ok());
}

TEST(Workload, MooncakeEqualHashIdsGiveEqualText) {
  const std::string path = temp_file(
      "mc.jsonl",
      "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [7, 8]}\n"
      "{\"timestamp\": 100, \"input_length\": 30, \"output_length\": 3, \"hash_ids\": [7, 9]}\n"
      "{\"timestamp\": 200, \"input_length\": 30, \"output_length\": 3, \"hash_ids\": [5]}\n");
  WorkloadOptions o;
  o.dataset = "mooncake:" + path;
  o.block_tokens = 16;
  auto w = make(o);
  std::remove(path.c_str());
  w->set_tokens_per_word(1.0, true, "words");
  ASSERT_TRUE(w->replays());
  ASSERT_EQ(w->timed_count(), 3u);
  RequestSpec a = w->timed_at(0), b = w->timed_at(1), c = w->timed_at(2);
  EXPECT_EQ(words(a.prompt), 40);
  EXPECT_EQ(words(b.prompt), 30);
  EXPECT_EQ(words(c.prompt), 30);  // one id of 16 tokens, the rest its own
  EXPECT_EQ(a.prompt.substr(0, a.prompt.find('\n')), b.prompt.substr(0, b.prompt.find('\n')));
  EXPECT_NE(a.prompt.substr(0, 40), c.prompt.substr(0, 40));
  EXPECT_NE(a.prompt.substr(a.prompt.find('\n') + 1, 20),
            b.prompt.substr(b.prompt.find('\n') + 1, 20));
  EXPECT_EQ(b.timestamp_ns, 100'000'000);
}

TEST(Workload, ABadDatasetFailsAtCreation) {
  const std::string path = temp_file("bad.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n");
  WorkloadOptions o;
  o.dataset = "jsonl:" + path;
  auto w = Workload::create(o);
  std::remove(path.c_str());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find(path + " line 2"), std::string::npos) << w.error();
  o.dataset = "jsonl:/nonexistent/x.jsonl";
  EXPECT_FALSE(Workload::create(o).ok());
}

}  // namespace
}  // namespace tokperf
