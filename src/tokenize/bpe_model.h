// The BPE model of a byte-level tokenizer.json: a vocabulary of byte-level strings (each byte shown
// as one printable character, GPT-2's bytes_to_unicode) and ranked merges. A piece of text is
// encoded as its bytes' ids, then the adjacent pair with the lowest merge rank (the leftmost of
// equal ranks) is merged until no pair has a merge: what the Rust `tokenizers` library does
// (word.merge_all).
//
// Thread rules: immutable after create(); encode_piece() may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.h"

namespace tokperf {

// GPT-2's bytes_to_unicode: byte b as a UTF-8 string of one code point (printable bytes stand for
// themselves; the others are mapped to U+0100 onwards in byte order).
const std::array<std::string, 256>& byte_level_chars();

// A piece's bytes as byte-level text ("Ġhello" for " hello").
std::string to_byte_level(std::string_view bytes);

class BpeModel {
 public:
  // vocab: byte-level string -> id. merges: pairs of byte-level strings in rank order. Fails when a
  // byte has no token, or a merge names a string not in the vocabulary (naming it).
  static Result<BpeModel> create(std::unordered_map<std::string, int32_t> vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                 bool ignore_merges);

  // Appends the ids of one pre-tokenized piece (raw bytes, not byte-level text) to *ids.
  void encode_piece(std::string_view bytes, std::vector<int32_t>* ids) const;

  // The bytes of token `id` ("" for an id not in the vocabulary).
  std::string token_bytes(int32_t id) const;

  size_t vocab_size() const { return vocab_.size(); }
  size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<int32_t, std::string> bytes_of_;  // id -> its bytes (decoded byte-level)
  bool ignore_merges_ = false;  // a piece that is a whole vocabulary entry is that token (Llama-3)
};

}  // namespace tokperf
