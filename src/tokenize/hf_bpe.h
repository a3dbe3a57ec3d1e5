// Hugging Face tokenizer.json with a byte-level BPE model: Llama-3, Qwen2/3, GPT-4o, DeepSeek-V3
// and the other GPT-2-family tokenizers. Encoding follows the Rust `tokenizers` library:
//   1. added tokens (special tokens such as <|im_start|>) are cut out of the raw text first,
//      leftmost-longest, honouring lstrip / rstrip / single_word;
//   2. each other part is normalized (NFC, NFD, NFKC, NFKD or a Sequence of them, via utf8proc),
//   3. pre-tokenized: a Sequence of Split (regex, PCRE2) and Digits steps ending in ByteLevel
//      (use_regex: GPT-2's pattern; add_prefix_space),
//   4. each piece is BPE-encoded (tokenize/bpe_model.h).
// Anything else in the file (WordPiece, Unigram or WordLevel models, Metaspace or BERT
// pre-tokenizers, Replace/Prepend/Lowercase normalizers, BPE dropout, subword prefixes) is refused
// at load with a message saying what was found and what is accepted: a count we cannot make exactly
// is never made. The post-processor (BOS/EOS templates) and decoder are not used: encode() adds no
// special tokens.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenize/bpe_model.h"
#include "tokenize/regex_split.h"
#include "tokenize/tokenizer.h"

namespace tokperf {

class HfBpeTokenizer final : public Tokenizer {
 public:
  // Parses the text of a tokenizer.json; `file` names it in errors and becomes the label.
  static Result<std::unique_ptr<HfBpeTokenizer>> from_json(std::string_view json,
                                                           const std::string& file);

  Result<std::vector<int32_t>> encode(std::string_view text) const override;
  std::string kind() const override;
  // The text of `ids` (added tokens as their content; unknown ids as nothing). The inverse of
  // encode() when the file has no normalizer; used by the fuzz target and tests.
  std::string decode(const std::vector<int32_t>& ids) const;

  struct AddedToken {
    std::string content;
    int32_t id = 0;
    bool lstrip = false, rstrip = false, single_word = false;
  };

 private:
  HfBpeTokenizer() = default;
  Status encode_part(std::string_view text, std::vector<int32_t>* ids) const;

  enum class Normalization { kNfc, kNfd, kNfkc, kNfkd };
  struct PreStep {
    std::shared_ptr<const RegexSplitter> split;  // Split or Digits
  };

  std::vector<Normalization> normalizers_;
  std::vector<PreStep> pre_steps_;
  bool add_prefix_space_ = false;
  std::shared_ptr<const RegexSplitter> byte_level_split_;  // ByteLevel use_regex: GPT-2's pattern
  bool added_first_[256] = {};                             // bytes that start an added token
  std::vector<AddedToken> added_;                          // longest first
  std::unique_ptr<BpeModel> model_;
  std::string summary_;  // for kind()
};

}  // namespace tokperf
