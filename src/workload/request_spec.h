// What one request of a run asks for: the per-request workload interface. Every source of requests
// (the synthetic generator with its length distributions and shared prefixes, a dataset file, a
// timestamped trace; later multi-turn sessions and tool calls) produces RequestSpecs; the runners
// (load/bench_runner.h against a server, cli/sim_run_load.h in virtual time) turn one into a
// request body and record what was asked for next to what was served (docs/WORKLOADS.md).
//
// Contract for a source: `at(i)` is the spec of the i-th request the run sends (i counts every
// request of the run, warm-up included, from 0), is deterministic for a given seed, and may be
// called in any order and more than once. Sources are immutable once built, so one may be shared
// by several runners. A source that needs feedback (a session's next turn carries the reply just
// generated) is a different kind of source and gets its own hook; this interface stays read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/chat_message.h"

namespace tokperf {

struct RequestSpec {
  // The prompt: `messages` when non-empty (sent as a chat history where the protocol takes one,
  // else the contents joined by newlines), otherwise `prompt`.
  std::string prompt;
  std::vector<ChatMessage> messages;
  // Requested prompt length in tokens (what the source meant to send; an estimate when no
  // tokenizer measured it, see input_tokens_exact). -1: unknown.
  int64_t input_tokens = -1;
  bool input_tokens_exact = false;
  // How input_tokens was obtained (a client/target_config.h length_method_name(), static); null:
  // the run's method.
  const char* input_tokens_method = nullptr;
  // Requested output tokens (sent as max_tokens). -1: the run's --output-tokens.
  int64_t output_tokens = -1;
  // Shared-prefix group of the prompt (0..K-1); -1: none.
  int prefix_group = -1;
  // Multi-turn datasets: the conversation and the 0-based turn, as the dataset gives them ("" and
  // -1 when it does not).
  std::string session_id;
  int turn = -1;
  // Replay: the request's send offset from the first entry in ns (after time scaling); -1: none.
  int64_t timestamp_ns = -1;
  // Where it came from: 1-based line (or entry) of the dataset file; 0 for generated specs.
  int source_line = 0;
};

// The text of a spec as one string: the prompt, or the messages' contents joined by newlines.
std::string flat_prompt(const RequestSpec& s);

// A read-only source of request specs (see the contract above).
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // The spec of the i-th request of the run.
  virtual RequestSpec at(uint64_t i) const = 0;
  // Replay: how many specs carry a timestamp (0 when the source is sampled, not replayed) and the
  // k-th of them in time order (timestamp_ns set), to send as one open-loop level.
  virtual size_t timed_count() const = 0;
  virtual RequestSpec timed_at(size_t k) const = 0;
  // One line for the run's notes: what the source is and how its lengths were obtained.
  virtual std::string describe() const = 0;
};

}  // namespace tokperf
