// The simulated server's text model: a deterministic tokenizer (one token per whitespace-separated
// word) used both by POST /tokenize and to size the prompt the engine prefills, so a client that
// builds prompts with /tokenize gets exactly the prefill it asked for; and deterministic filler
// text for generated tokens. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokperf::sim {

// Tokens in `text`: its whitespace-separated words. (A real chat template adds a few tokens per
// message; the simulator counts content only, and says so in docs/SIMULATOR.md.)
int64_t count_tokens(std::string_view text);

// Token ids of `text` (FNV-1a of each word, mod 32000): equal words get equal ids.
std::vector<int32_t> tokenize(std::string_view text);

// Chained hashes of the full `block_size`-token blocks of `text`, as the engine's prefix cache
// wants them (hash i covers tokens [0, block_size (i + 1))). Equal prefixes give equal hashes.
std::vector<uint64_t> prefix_block_hashes(std::string_view text, int64_t block_size);

// The text of generated token `index` (0-based) of a response: one word and a space, cycling
// through a fixed sentence, so responses are deterministic and count back to their length.
std::string_view filler_token(int64_t index);

}  // namespace tokperf::sim
