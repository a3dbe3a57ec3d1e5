#include "tokenize/tokenizer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tokenize/hf_bpe.h"
#include "tokenize/sentencepiece_tokenizer.h"

namespace tokperf {

Result<int64_t> Tokenizer::count(std::string_view text) const {
  auto ids = encode(text);
  if (!ids) return Error{ids.error()};
  return static_cast<int64_t>(ids->size());
}

std::string tokenizer_label(const std::string& path) {
  std::filesystem::path p(path);
  std::string file = p.filename().string();
  std::string dir = p.parent_path().filename().string();
  if ((file == "tokenizer.json" || file == "tokenizer.model") && !dir.empty() && dir != "." &&
      dir != "..") {
    return dir + "/" + file;
  }
  return file.empty() ? path : file;
}

int64_t invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF)
      len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4, cp = c & 0x07;
    else
      return static_cast<int64_t>(i);
    if (i + len > n) return static_cast<int64_t>(i);
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return static_cast<int64_t>(i);
    }
    i += len;
  }
  return -1;
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    // A model folder (a Hugging Face snapshot): its tokenizer.json, else its tokenizer.model.
    const fs::path dir(path);
    if (fs::exists(dir / "tokenizer.json", ec)) {
      file = (dir / "tokenizer.json").string();
    } else if (fs::exists(dir / "tokenizer.model", ec)) {
      file = (dir / "tokenizer.model").string();
    } else {
      return Error{
          fmt::format("tokenizer folder '{}' holds neither tokenizer.json nor "
                      "tokenizer.model",
                      path)};
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Error{fmt::format("tokenizer file '{}' cannot be read: {}", file, std::strerror(errno))};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.empty()) {
    return Error{
        fmt::format("tokenizer file '{}' is empty; accepted: a Hugging Face "
                    "tokenizer.json (byte-level BPE) or a SentencePiece .model",
                    file)};
  }
  // tokenizer.json is a JSON object; a SentencePiece model is a binary protobuf, which never starts
  // with '{' (its first byte is a field tag, 0x0A for the pieces).
  size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{') {
    auto t = HfBpeTokenizer::from_json(bytes, file);
    if (!t) return Error{t.error()};
    return std::unique_ptr<Tokenizer>(std::move(*t));
  }
  auto t = SentencePieceTokenizer::from_bytes(bytes, file);
  if (!t) return Error{t.error()};
  return std::unique_ptr<Tokenizer>(std::move(*t));
}

}  // namespace tokperf
