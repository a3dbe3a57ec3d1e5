// The Split pre-tokenizer of tokenizer.json: a regular expression cuts text into pieces. Patterns
// are compiled with PCRE2 in UTF-8 + UCP mode, so \s, \p{L}, \p{N} and (?i:...) mean what the Rust
// `tokenizers` library (Oniguruma) means by them for the patterns real tokenizers use.
//
// Thread rules: immutable after create(); split() may be called from any thread (each call has its
// own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf {

// What happens to the matches and to the text between them (the "gaps"), as tokenizer.json's
// "behavior" and "invert" say. Only the two behaviours real byte-level tokenizers use are offered:
//   kIsolated: matches and gaps each become a piece;
//   kRemoved:  the matches are dropped and the gaps kept, or with invert the gaps dropped and the
//              matches kept (GPT-4o's file says it this way).
enum class SplitBehavior { kIsolated, kRemoved };

class RegexSplitter {
 public:
  // Fails with PCRE2's message and the offset in the pattern when it does not compile.
  static Result<std::shared_ptr<const RegexSplitter>> create(const std::string& pattern,
                                                             bool literal, SplitBehavior behavior,
                                                             bool invert);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` (never empty ones) to *out. REQUIRES: text is valid UTF-8. Fails
  // only when PCRE2 does (its match limit on pathological input), naming the error.
  Status split(std::string_view text, std::vector<std::string>* out) const;

 private:
  RegexSplitter() = default;
  void* code_ = nullptr;  // pcre2_code_8, owned
  SplitBehavior behavior_ = SplitBehavior::kIsolated;
  bool invert_ = false;
};

}  // namespace tokperf
