// Fuzz target for the tokenizer.json byte-level BPE encoder (tokenize/hf_bpe.h) on the reduced real
// tokenizers of tests/data/tokenize/. Byte 0 picks the tokenizer (GPT-4o: no normalizer; Qwen3:
// NFC; Llama-3 style: ignore_merges, digits in threes); the rest is the text. Invariants: valid
// UTF-8 always encodes, invalid UTF-8 is always refused with a message naming it, count() equals
// the number of ids, and without a normalizer decoding the ids gives back the text byte for byte
// (nothing dropped, nothing invented, added tokens included). See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/utf8.h"
#include "tokenize/hf_bpe.h"

#ifndef TOKPERF_SOURCE_DIR
#error "fuzz/CMakeLists.txt defines TOKPERF_SOURCE_DIR"
#endif

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "bpe_encode_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

std::unique_ptr<tokperf::HfBpeTokenizer> load(const char* name) {
  const std::string path = std::string(TOKPERF_SOURCE_DIR) + "/tests/data/tokenize/" + name;
  FILE* f = fopen(path.c_str(), "rb");
  check(f != nullptr, "cannot open the test tokenizer");
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  fclose(f);
  auto t = tokperf::HfBpeTokenizer::from_json(text, path);
  check(t.ok(), "the test tokenizer does not load");
  return std::move(*t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tokperf;
  static const std::unique_ptr<HfBpeTokenizer> tokenizers[3] = {
      load("gpt4o.tokenizer.json"), load("qwen3.tokenizer.json"),
      load("llama3-style.tokenizer.json")};
  if (size < 1) return 0;
  const int which = data[0] % 3;
  const HfBpeTokenizer& t = *tokenizers[which];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto ids = t.encode(text);
  if (invalid_utf8_offset(text) >= 0) {
    check(!ids.ok(), "invalid UTF-8 was encoded");
    check(ids.error().find("not valid UTF-8") != std::string::npos, "refusal does not say why");
    return 0;
  }
  check(ids.ok(), "valid UTF-8 was refused");
  auto n = t.count(text);
  check(n.ok() && *n == static_cast<int64_t>(ids->size()), "count differs from encode");
  check(text.empty() == ids->empty(), "empty text iff no ids");
  if (which != 1) check(t.decode(*ids) == text, "decode(encode(text)) != text");
  return 0;
}
