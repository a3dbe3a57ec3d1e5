// SentencePiece .model files (Llama-2, Mistral, Gemma, T5 ...) through Debian's libsentencepiece:
// the library itself encodes, so counts are those of the reference implementation (normalization
// rules, byte fallback and user-defined symbols included, as stored in the model).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenize/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tokperf {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads the serialized model `bytes` read from `file` (named in errors).
  static Result<std::unique_ptr<SentencePieceTokenizer>> from_bytes(std::string_view bytes,
                                                                    const std::string& file);
  ~SentencePieceTokenizer() override;

  Result<std::vector<int32_t>> encode(std::string_view text) const override;
  std::string kind() const override;

 private:
  SentencePieceTokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace tokperf
