#include "tokenize/bpe_model.h"

#include <functional>
#include <queue>

#include <fmt/format.h>

namespace tokperf {
namespace {

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::array<std::string, 256> make_byte_level_chars() {
  std::array<std::string, 256> t;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    t[b] = utf8_of(printable ? b : next++);
  }
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> table = make_byte_level_chars();
  return table;
}

std::string to_byte_level(std::string_view bytes) {
  const auto& t = byte_level_chars();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += t[c];
  return out;
}

Result<BpeModel> BpeModel::create(std::unordered_map<std::string, int32_t> vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges,
                                  bool ignore_merges) {
  BpeModel m;
  const auto& chars = byte_level_chars();
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(chars[b]);
    if (it == vocab.end()) {
      return Error{fmt::format(
          "the vocabulary has no token for byte 0x{:02X} ('{}'): not a byte-level BPE vocabulary",
          b, chars[b])};
    }
    m.byte_id_[b] = it->second;
  }
  m.merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    auto ia = vocab.find(a), ib = vocab.find(b), im = vocab.find(a + b);
    if (ia == vocab.end() || ib == vocab.end() || im == vocab.end()) {
      return Error{
          fmt::format("merge {} ('{}' '{}') names a token that is not in the vocabulary", r, a, b)};
    }
    // The first (lowest-ranked) rule for a pair wins, as in the Rust library's HashMap build.
    m.merges_.emplace(key(ia->second, ib->second), Merge{static_cast<int32_t>(r), im->second});
  }
  // Inverse of the byte-level mapping, to decode tokens for checks (fuzz/, tests).
  std::unordered_map<std::string, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b) byte_of.emplace(chars[b], static_cast<unsigned char>(b));
  for (const auto& [tok, id] : vocab) {
    std::string bytes;
    for (size_t i = 0; i < tok.size();) {
      size_t len = 1;
      const auto c = static_cast<unsigned char>(tok[i]);
      if (c >= 0xF0)
        len = 4;
      else if (c >= 0xE0)
        len = 3;
      else if (c >= 0xC0)
        len = 2;
      auto it = byte_of.find(tok.substr(i, len));
      if (it == byte_of.end()) {
        bytes.clear();  // not byte-level text (an added token kept in the vocabulary)
        break;
      }
      bytes += static_cast<char>(it->second);
      i += len;
    }
    if (!bytes.empty()) m.bytes_of_.emplace(id, std::move(bytes));
  }
  m.vocab_ = std::move(vocab);
  m.ignore_merges_ = ignore_merges;
  return m;
}

std::string BpeModel::token_bytes(int32_t id) const {
  auto it = bytes_of_.find(id);
  return it == bytes_of_.end() ? std::string() : it->second;
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>* ids) const {
  if (bytes.empty()) return;
  if (bytes.size() == 1) {
    ids->push_back(byte_id_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  if (ignore_merges_) {
    auto it = vocab_.find(to_byte_level(bytes));
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  // Symbols in a doubly linked list over the bytes; a min-heap of candidate merges by (rank,
  // position). A popped candidate is stale when its left symbol was merged away or its pair
  // changed.
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  const auto n = static_cast<int32_t>(bytes.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    sym[i] = {byte_id_[static_cast<unsigned char>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  using Candidate = std::pair<int32_t, int32_t>;  // (rank, left position)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0 || sym[left].next < 0) return;
    auto it = merges_.find(key(sym[left].id, sym[sym[left].next].id));
    if (it != merges_.end()) heap.emplace(it->second.rank, left);
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    auto [rank, left] = heap.top();
    heap.pop();
    if (!sym[left].alive || sym[left].next < 0) continue;
    const int32_t right = sym[left].next;
    auto it = merges_.find(key(sym[left].id, sym[right].id));
    if (it == merges_.end() || it->second.rank != rank) continue;
    sym[left].id = it->second.id;
    sym[right].alive = false;
    sym[left].next = sym[right].next;
    if (sym[right].next >= 0) sym[sym[right].next].prev = left;
    consider(sym[left].prev);
    consider(left);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) ids->push_back(sym[i].id);
}

}  // namespace tokperf
