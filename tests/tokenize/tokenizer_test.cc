// Token ids against references made by other implementations (tests/data/tokenize/README.md):
// transformers.js for tokenizer.json, Debian's spm_encode for SentencePiece.
#include "tokenize/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/utf8.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

const std::string kDir = std::string(TOKPERF_TEST_DATA).append("/tokenize/");

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const std::string& file) {
  std::ifstream in(kDir + file);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    cases.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<int32_t>>()});
  }
  return cases;
}

std::unique_ptr<Tokenizer> load(const std::string& file) {
  auto t = load_tokenizer(kDir + file);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
  return t.ok() ? std::move(*t) : nullptr;
}

// Every case of `cases` encodes to its reference ids.
void expect_reference_ids(const std::string& model, const std::string& cases_file,
                          size_t min_cases) {
  auto t = load(model);
  ASSERT_NE(t, nullptr);
  auto cases = read_cases(cases_file);
  ASSERT_GE(cases.size(), min_cases) << cases_file;
  int mismatches = 0;
  for (const Case& c : cases) {
    auto ids = t->encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.error() << " for " << nlohmann::json(c.text).dump();
    if (*ids != c.ids && ++mismatches <= 5) {
      ADD_FAILURE() << model << ": " << nlohmann::json(c.text).dump() << "\n  got      "
                    << nlohmann::json(*ids).dump() << "\n  expected "
                    << nlohmann::json(c.ids).dump();
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size() << " cases";
}

TEST(HfBpe, Qwen3MatchesTransformersJs) {
  expect_reference_ids("qwen3.tokenizer.json", "qwen3.cases.jsonl", 150);
}
TEST(HfBpe, Gpt4oMatchesTransformersJs) {
  expect_reference_ids("gpt4o.tokenizer.json", "gpt4o.cases.jsonl", 150);
}
TEST(HfBpe, Llama3StyleMatchesTransformersJs) {
  expect_reference_ids("llama3-style.tokenizer.json", "llama3-style.cases.jsonl", 150);
}
TEST(SentencePiece, UnigramMatchesSpmEncode) {
  expect_reference_ids("sp-unigram.model", "sp-unigram.cases.jsonl", 100);
}
TEST(SentencePiece, BpeWithByteFallbackMatchesSpmEncode) {
  expect_reference_ids("sp-bpe-bytefallback.model", "sp-bpe-bytefallback.cases.jsonl", 100);
}

TEST(HfBpe, SpecialTokensInTextAreOneTokenEach) {
  auto t = load("qwen3.tokenizer.json");
  ASSERT_NE(t, nullptr);
  auto ids = t->encode("<|im_start|><|im_end|><|endoftext|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{151644, 151645, 151643}));
}

TEST(HfBpe, EmptyTextHasNoTokens) {
  auto t = load("gpt4o.tokenizer.json");
  ASSERT_NE(t, nullptr);
  auto n = t->count("");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
}

TEST(Tokenizers, InvalidUtf8IsRefusedNamingTheByte) {
  for (const char* file : {"qwen3.tokenizer.json", "sp-unigram.model"}) {
    auto t = load(file);
    ASSERT_NE(t, nullptr);
    auto ids = t->encode(std::string("ok \xC3\x28 bad"));
    ASSERT_FALSE(ids.ok()) << file;
    EXPECT_NE(ids.error().find("not valid UTF-8 (byte 3)"), std::string::npos) << ids.error();
  }
}

TEST(Utf8, InvalidFormsAreFound) {
  EXPECT_EQ(invalid_utf8_offset("plain ascii"), -1);
  EXPECT_EQ(invalid_utf8_offset("\xE4\xBD\xA0\xF0\x9F\x98\x80"), -1);  // 你 😀
  EXPECT_EQ(invalid_utf8_offset("a\xC0\xAF"), 1);                      // overlong '/'
  EXPECT_EQ(invalid_utf8_offset("ab\xED\xA0\x80"), 2);                 // a surrogate
  EXPECT_EQ(invalid_utf8_offset("\xF4\x90\x80\x80"), 0);               // above U+10FFFF
  EXPECT_EQ(invalid_utf8_offset("abc\xE4\xBD"), 3);                    // cut short
  EXPECT_EQ(invalid_utf8_offset("\x80"), 0);                           // a lone continuation
}

TEST(Tokenizers, AFolderLoadsItsTokenizerJson) {
  const auto dir = std::filesystem::temp_directory_path() / "tokperf-tok-dir" / "Qwen3-test";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kDir + "qwen3.tokenizer.json", dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  auto t = load_tokenizer(dir.string());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ((*t)->name(), "Qwen3-test/tokenizer.json");
  EXPECT_NE((*t)->kind().find("byte-level BPE"), std::string::npos);
  std::filesystem::remove_all(dir.parent_path());
}

TEST(Tokenizers, SyntheticPromptsAreExactWithARealTokenizer) {
  auto t = load("llama3-style.tokenizer.json");
  ASSERT_NE(t, nullptr);
  TokenCounter counter = [&](const std::string& s) { return t->count(s); };
  for (int64_t n : {1, 7, 128, 1000, 4096}) {
    SyntheticPrompt p = make_synthetic_prompt(n, 0, counter);
    EXPECT_TRUE(p.exact) << n;
    EXPECT_EQ(p.tokens, n);
    EXPECT_EQ(*t->count(p.text), n);
  }
}

// --- bad files: each error names the file and what is accepted.

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("tokperf-tok-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::string load_error(const std::string& path) {
  auto t = load_tokenizer(path);
  return t.ok() ? "(loaded)" : t.error();
}

TEST(TokenizerFiles, MissingFileNamesIt) {
  std::string e = load_error("/nonexistent/tok.json");
  EXPECT_NE(e.find("'/nonexistent/tok.json' cannot be read"), std::string::npos) << e;
}

TEST(TokenizerFiles, EmptyFolderAndEmptyFile) {
  const auto dir = std::filesystem::temp_directory_path() / "tokperf-tok-empty-dir";
  std::filesystem::create_directories(dir);
  EXPECT_NE(load_error(dir.string()).find("neither tokenizer.json nor tokenizer.model"),
            std::string::npos);
  std::filesystem::remove_all(dir);
  std::string e = load_error(write_temp("empty.json", ""));
  EXPECT_NE(e.find("is empty"), std::string::npos) << e;
}

TEST(TokenizerFiles, MalformedJsonAndJunk) {
  std::string e = load_error(write_temp("bad.json", "{\"model\": {\"type\": \"BPE\", "));
  EXPECT_NE(e.find("not a JSON object"), std::string::npos) << e;
  EXPECT_NE(e.find("accepted"), std::string::npos) << e;
  e = load_error(write_temp("junk.model", "\x01\x02 this is no protobuf \xff\xfe"));
  EXPECT_NE(e.find("not a SentencePiece model"), std::string::npos) << e;
  EXPECT_NE(e.find("tokperf-tok-junk.model"), std::string::npos) << e;
}

TEST(TokenizerFiles, UnsupportedModelsAreRefusedNotMiscounted) {
  std::string e = load_error(write_temp(
      "wp.json",
      R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "pre_tokenizer": null})"));
  EXPECT_NE(e.find("\"WordPiece\", which tokperf does not implement"), std::string::npos) << e;
  e = load_error(
      write_temp("uni.json", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})"));
  EXPECT_NE(e.find("\"Unigram\""), std::string::npos) << e;
  // SentencePiece-style BPE written as tokenizer.json (Llama-2's): Metaspace, refused with a hint.
  e = load_error(
      write_temp("meta.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "normalizer": null, "pre_tokenizer": {"type": "Metaspace", "replacement": "_"}})"));
  EXPECT_NE(e.find("\"Metaspace\" is not implemented"), std::string::npos) << e;
  EXPECT_NE(e.find("tokenizer.model"), std::string::npos) << e;
  e = load_error(
      write_temp("lower.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "ByteLevel"}})"));
  EXPECT_NE(e.find("normalizer \"Lowercase\" is not implemented"), std::string::npos) << e;
  e = load_error(
      write_temp("nobyte.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "ByteLevel"}})"));
  EXPECT_NE(e.find("no token for byte 0x00"), std::string::npos) << e;
}

TEST(TokenizerFiles, BadMergesAndPatternsNameTheProblem) {
  // A full byte vocabulary, then one bad merge.
  std::ifstream in(kDir + "gpt4o.tokenizer.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  j["model"]["merges"].push_back("Ġ nonexistent");
  std::string e = load_error(write_temp("merge.json", j.dump()));
  EXPECT_NE(e.find("names a token that is not in the vocabulary"), std::string::npos) << e;
  j = nlohmann::json::parse(ss.str());
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  e = load_error(write_temp("regex.json", j.dump()));
  EXPECT_NE(e.find("does not compile"), std::string::npos) << e;
  j = nlohmann::json::parse(ss.str());
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext";
  e = load_error(write_temp("behav.json", j.dump()));
  EXPECT_NE(e.find("\"MergedWithNext\" is not implemented"), std::string::npos) << e;
}

}  // namespace
}  // namespace tokperf
