#include "sim/sim_text.h"

#include <array>

namespace tokperf::sim {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Calls f(word) for each whitespace-separated word.
template <class F>
void for_each_word(std::string_view text, F&& f) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > begin) f(text.substr(begin, i - begin));
  }
}

uint32_t fnv1a(std::string_view w) {
  uint32_t h = 2166136261u;
  for (unsigned char c : w) h = (h ^ c) * 16777619u;
  return h;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

constexpr std::array<std::string_view, 16> kFiller = {
    "The ",   "simulated ", "engine ", "streams ", "these ",    "words ", "at ",   "the ",
    "speed ", "its ",       "cost ",   "model ",   "predicts ", "for ",   "each ", "step. "};

}  // namespace

int64_t count_tokens(std::string_view text) {
  int64_t n = 0;
  for_each_word(text, [&](std::string_view) { ++n; });
  return n;
}

std::vector<int32_t> tokenize(std::string_view text) {
  std::vector<int32_t> ids;
  for_each_word(text,
                [&](std::string_view w) { ids.push_back(static_cast<int32_t>(fnv1a(w) % 32000)); });
  return ids;
}

std::vector<uint64_t> prefix_block_hashes(std::string_view text, int64_t block_size) {
  std::vector<uint64_t> out;
  if (block_size < 1) return out;
  uint64_t h = 0x5151'5eed;
  int64_t in_block = 0;
  for_each_word(text, [&](std::string_view w) {
    h = mix(h, fnv1a(w));
    if (++in_block == block_size) {
      out.push_back(h);
      in_block = 0;
    }
  });
  return out;
}

std::string_view filler_token(int64_t index) {
  return kFiller[static_cast<size_t>(index) % kFiller.size()];
}

}  // namespace tokperf::sim
