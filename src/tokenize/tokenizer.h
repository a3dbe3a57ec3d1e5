// Offline tokenizers: exact prompt lengths where the server has no /tokenize (hosted APIs), without
// fetching anything at run time. One interface, two implementations:
//   - Hugging Face tokenizer.json with a byte-level BPE model (GPT-2 family: Llama-3, Qwen2/3,
//     GPT-4o, DeepSeek-V3 ...), our own implementation (tokenize/hf_bpe.h);
//   - SentencePiece .model files (Llama-2, Mistral, Gemma ...) through libsentencepiece
//     (tokenize/sentencepiece_tokenizer.h).
// What is exact, what is refused and why: docs/TOKENIZERS.md.
//
// Thread rules: a loaded tokenizer is immutable; encode() and count() may be called from any
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The token ids of `text` as the model sees it when no special tokens are added (no BOS/EOS, no
  // chat template); special tokens written in the text are recognised as the server would. Fails
  // on text that is not valid UTF-8 (naming the byte offset), never silently miscounts.
  virtual Result<std::vector<int32_t>> encode(std::string_view text) const = 0;
  Result<int64_t> count(std::string_view text) const;
  // Short label for notes and records, e.g. "Qwen3-8B/tokenizer.json" (see tokenizer_label()).
  const std::string& name() const { return name_; }
  // What kind of tokenizer it is, e.g. "byte-level BPE (tokenizer.json)".
  virtual std::string kind() const = 0;

 protected:
  std::string name_;
};

// Loads a tokenizer from `path`: a tokenizer.json (Hugging Face), a SentencePiece .model, or a
// folder holding one of them (tokenizer.json preferred). Errors name the file, what was wrong and
// what is accepted.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

// The label of a tokenizer file: its name, with its folder's name before it when the file name is
// the generic tokenizer.json / tokenizer.model ("Qwen3-8B/tokenizer.json").
std::string tokenizer_label(const std::string& path);

}  // namespace tokperf
