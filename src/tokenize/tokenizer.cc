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
