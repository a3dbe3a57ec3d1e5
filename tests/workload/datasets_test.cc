#include "workload/datasets.h"

#include <gtest/gtest.h>

#include <string>

namespace tokperf {
namespace {

bool mentions(const std::string& error, std::initializer_list<const char*> parts) {
  for (const char* p : parts) {
    if (error.find(p) == std::string::npos) return false;
  }
  return true;
}

TEST(DatasetRef, KindColonFile) {
  auto r = parse_dataset_ref("sharegpt:/data/sg.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, DatasetKind::kShareGpt);
  EXPECT_EQ(r->path, "/data/sg.json");
  EXPECT_EQ(parse_dataset_ref("azure:x.csv")->kind, DatasetKind::kAzure);
  EXPECT_EQ(parse_dataset_ref("mooncake:x")->kind, DatasetKind::kMooncake);
  for (const char* bad : {"", "x.json", "csv:x", "sharegpt:"}) {
    auto e = parse_dataset_ref(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_TRUE(mentions(e.error(), {"sharegpt", "jsonl", "mooncake", "azure"})) << e.error();
  }
}

TEST(ShareGpt, HumanTurnIsThePromptReplyLengthIsTheOutput) {
  const std::string text = R"([
    {"id": "a", "conversations": [{"from": "human", "value": "one two three four"},
                                  {"from": "gpt", "value": "w w w w w w w w"}]},
    {"id": "b", "conversations": [{"from": "system", "value": "be brief"},
                                  {"from": "human", "value": "hello"},
                                  {"from": "gpt", "value": "hi there"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "no reply"}]},
    {"id": "d", "conversations": []}
  ])";
  auto d = parse_sharegpt(text, "sg.json");
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->specs.size(), 2u);
  EXPECT_EQ(d->skipped, 2);
  EXPECT_EQ(d->specs[0].prompt, "one two three four");
  EXPECT_EQ(d->specs[0].input_tokens, 5);    // 4 words x 1.25
  EXPECT_EQ(d->specs[0].output_tokens, 10);  // 8 words x 1.25
  EXPECT_EQ(d->specs[0].session_id, "a");
  EXPECT_EQ(d->specs[1].prompt, "hello");
  EXPECT_EQ(d->specs[1].source_line, 2);
  EXPECT_FALSE(d->timed);
}

TEST(ShareGpt, MalformedFilesNameTheFileAndWhatWasExpected) {
  auto e = parse_sharegpt("[\n{\"conversations\": [}\n]", "sg.json");
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(mentions(e.error(), {"sg.json", "line 2", "conversations"})) << e.error();
  e = parse_sharegpt("{}", "sg.json");
  EXPECT_TRUE(mentions(e.error(), {"sg.json", "array"})) << e.error();
  e = parse_sharegpt(R"([{"conversations": [{"from": "human"}]}])", "sg.json");
  EXPECT_TRUE(mentions(e.error(), {"sg.json", "entry 1", "value"})) << e.error();
  e = parse_sharegpt(R"([{"id": "x", "convs": []}])", "sg.json");
  EXPECT_TRUE(mentions(e.error(), {"entry 1", "\"x\"", "conversations"})) << e.error();
  e = parse_sharegpt("[]", "sg.json");
  EXPECT_TRUE(mentions(e.error(), {"sg.json", "nothing to send"})) << e.error();
  // A number no double holds is an error, not an exception (found by dataset_fuzz).
  e = parse_sharegpt("[{\"n\": 40e440}]", "sg.json");
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(mentions(e.error(), {"sg.json", "number overflow"})) << e.error();
}

TEST(JsonlDataset, PromptsMessagesSessionsAndOutputs) {
  const std::string text =
      "{\"prompt\": \"say hi\", \"output_tokens\": 12}\n"
      "\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be kind\"}, {\"role\": \"user\", "
      "\"content\": \"how are you\"}], \"session_id\": \"s1\", \"turn\": 2}\n";
  auto d = parse_jsonl_dataset(text, "d.jsonl", 1);
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->specs.size(), 2u);
  EXPECT_EQ(d->specs[0].prompt, "say hi");
  EXPECT_EQ(d->specs[0].output_tokens, 12);
  EXPECT_EQ(d->specs[0].source_line, 1);
  ASSERT_EQ(d->specs[1].messages.size(), 2u);
  EXPECT_EQ(d->specs[1].messages[1].role, "user");
  EXPECT_EQ(d->specs[1].session_id, "s1");
  EXPECT_EQ(d->specs[1].turn, 2);
  EXPECT_EQ(d->specs[1].output_tokens, -1);
  EXPECT_EQ(d->specs[1].source_line, 3);
  EXPECT_EQ(flat_prompt(d->specs[1]), "be kind\nhow are you");
  EXPECT_FALSE(d->timed);
}

TEST(JsonlDataset, TimestampsMakeItReplayableAndScale) {
  const std::string text =
      "{\"prompt\": \"a\", \"timestamp\": 10}\n{\"prompt\": \"b\", \"timestamp\": 12.5}\n";
  auto d = parse_jsonl_dataset(text, "d.jsonl", 2);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_TRUE(d->timed);
  EXPECT_EQ(d->specs[0].timestamp_ns, 0);
  EXPECT_EQ(d->specs[1].timestamp_ns, 1'250'000'000);
}

TEST(JsonlDataset, EveryMalformedLineIsNamed) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"{\"prompt\": \"ok\"}\nnot json\n", "line 2"},
      {"{\"output_tokens\": 3}\n", "exactly one of"},
      {"{\"prompt\": \"a\", \"messages\": []}\n", "exactly one of"},
      {"{\"prompt\": 5}\n", "non-empty string"},
      {"{\"messages\": [{\"role\": \"user\"}]}\n", "role"},
      {"{\"messages\": []}\n", "non-empty array"},
      // found by dataset_fuzz: messages whose contents are all empty made an empty prompt
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"\"}]}\n", "every \"content\" here is empty"},
      {"{\"prompt\": \"a\", \"output_tokens\": 0}\n", "positive integer"},
      {"{\"prompt\": \"a\", \"session_id\": \"s\"}\n", "go together"},
      {"{\"prompt\": \"a\", \"session_id\": \"s\", \"turn\": -1}\n", "\"turn\""},
      {"{\"prompt\": \"a\", \"timestamp\": \"x\"}\n", "non-negative number"},
      {"{\"prompt\": \"a\", \"timestamp\": 5}\n{\"prompt\": \"b\", \"timestamp\": 4}\n", "sorted"},
      {"{\"prompt\": \"a\", \"timestamp\": 5}\n{\"prompt\": \"b\"}\n", "every line one or none"},
      {"{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"timestamp\": 1}\n", "every line one or none"},
      {"[1, 2]\n", "not a JSON object"},
  };
  for (const Case& c : cases) {
    auto d = parse_jsonl_dataset(c.text, "d.jsonl", 1);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_TRUE(mentions(d.error(), {"d.jsonl", "line", c.expect})) << d.error();
  }
  auto empty = parse_jsonl_dataset("\n  \n", "d.jsonl", 1);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(mentions(empty.error(), {"d.jsonl", "empty"})) << empty.error();
  EXPECT_FALSE(parse_jsonl_dataset("{\"prompt\": \"a\"}", "d", 0).ok());
}

TEST(Mooncake, ReadsLengthsTimestampsAndHashIds) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 20, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 500, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 3]}\n";
  auto d = parse_mooncake(text, "m.jsonl", 0.5);
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->specs.size(), 2u);
  EXPECT_TRUE(d->timed);
  EXPECT_EQ(d->specs[1].timestamp_ns, 1'000'000'000);  // 0.5 s at half speed
  EXPECT_EQ(d->specs[0].input_tokens, 1000);
  EXPECT_EQ(d->specs[1].output_tokens, 5);
  EXPECT_EQ(d->block_ids[1], (std::vector<uint64_t>{1, 3}));
}

TEST(Mooncake, MalformedLinesAreNamed) {
  for (const char* text :
       {"{\"input_length\": 1, \"output_length\": 1}\n",
        "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}\n",
        "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": \"x\"}\n",
        "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [\"a\"]}\n",
        "{\"timestamp\": 9, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 1, "
        "\"input_length\": 1, \"output_length\": 1}\n"}) {
    auto d = parse_mooncake(text, "m.jsonl", 1);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_TRUE(mentions(d.error(), {"m.jsonl", "line"})) << d.error();
  }
  EXPECT_FALSE(parse_mooncake("", "m.jsonl", 1).ok());
}

TEST(Azure, ReadsTheCsvWithDateTimes) {
  const std::string text =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\n"
      "2023-11-16 18:15:50.9951690,396,109\n";
  auto d = parse_azure_csv(text, "az.csv", 1);
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->specs.size(), 2u);
  EXPECT_TRUE(d->timed);
  EXPECT_EQ(d->specs[0].input_tokens, 374);
  EXPECT_EQ(d->specs[1].output_tokens, 109);
  EXPECT_NEAR(static_cast<double>(d->specs[1].timestamp_ns), 4.314579e9, 1e3);
  EXPECT_EQ(d->specs[1].source_line, 3);
}

TEST(Azure, SecondsAndOtherColumnOrders) {
  auto d = parse_azure_csv("GeneratedTokens,TIMESTAMP,ContextTokens\n5,1.5,10\n7,3.5,20\n", "a", 4);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->specs[1].timestamp_ns, 500'000'000);
  EXPECT_EQ(d->specs[1].input_tokens, 20);
}

TEST(Azure, MalformedLinesAreNamed) {
  for (const char* text : {"a,b,c\n1,2,3\n", "TIMESTAMP,ContextTokens,GeneratedTokens\nx,1,2\n",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n1,-1,2\n",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n1,5\n",
                           "TIMESTAMP,ContextTokens,GeneratedTokens\n2,1,1\n1,1,1\n"}) {
    auto d = parse_azure_csv(text, "az.csv", 1);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_TRUE(mentions(d.error(), {"az.csv", "line"})) << d.error();
  }
  EXPECT_FALSE(parse_azure_csv("", "az.csv", 1).ok());
  EXPECT_FALSE(parse_azure_csv("TIMESTAMP,ContextTokens,GeneratedTokens\n", "az.csv", 1).ok());
}

}  // namespace
}  // namespace tokperf
