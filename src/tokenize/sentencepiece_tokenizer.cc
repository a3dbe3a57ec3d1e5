#include "tokenize/sentencepiece_tokenizer.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "core/utf8.h"

namespace tokperf {

SentencePieceTokenizer::SentencePieceTokenizer()
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::from_bytes(
    std::string_view bytes, const std::string& file) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  auto status = t->sp_->LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    return Error{fmt::format(
        "tokenizer '{}': not a SentencePiece model ({}); accepted: a SentencePiece .model file or "
        "a Hugging Face tokenizer.json with a byte-level BPE model",
        file, status.ToString())};
  }
  t->name_ = tokenizer_label(file);
  return t;
}

Result<std::vector<int32_t>> SentencePieceTokenizer::encode(std::string_view text) const {
  if (int64_t bad = invalid_utf8_offset(text); bad >= 0) {
    // SentencePiece would silently replace the bytes with U+FFFD; a count of other text is no
    // count.
    return Error{
        fmt::format("the text is not valid UTF-8 (byte {}); invalid bytes are refused", bad)};
  }
  std::vector<int> ids;
  auto status = sp_->Encode(text, &ids);
  if (!status.ok()) return Error{fmt::format("SentencePiece failed: {}", status.ToString())};
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::kind() const {
  return fmt::format("SentencePiece ({} pieces)", sp_->GetPieceSize());
}

}  // namespace tokperf
