// Splits the client's TTFT into where the time went, per level and per request:
//   client TTFT = (client − server TTFT: network, HTTP, gateway, client)
//               + server queue + server prefill (+ server overhead: tokenization, process hops)
// Per level from the engine's histograms over the level's window (means: Δsum/Δcount, exact, so the
// parts add up); per request where the response carried the server's own timings. Definitions and
// caveats (different clocks, window edges): docs/SERVER-METRICS.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/request_record.h"
#include "servermetrics/server_window.h"

namespace tokperf::servermetrics {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct LevelDecomposition {
  int64_t client_requests = 0;  // OK requests of the level with a first token (all phases)
  double client_ttft_mean_ms = kNaN;
  double server_ttft_mean_ms = kNaN;  // NaN where the engine has no TTFT histogram
  double queue_mean_ms = kNaN;
  double prefill_mean_ms = kNaN;
  double outside_server_ms = kNaN;   // client − server TTFT
  double server_overhead_ms = kNaN;  // server TTFT − queue − prefill
  double server_requests = 0;        // observations in the server's TTFT (or queue) histogram
  std::string dominant;              // "queue" | "prefill" | "outside_server" | "server_overhead"
  std::string resolution;            // the buckets the server's P50s lie in, for the reader
  // What the client got in the level (all phases; usage when reported, else counted tokens), to
  // set beside the server's token counters.
  int64_t client_prompt_tokens = 0, client_output_tokens = 0;
};


// The server's own timings for one request, as a response reported them (NaN: not reported).
struct ServerRequestTiming {
  double prompt_ms = kNaN;  // prefill (llama.cpp timings.prompt_ms)
  double queue_ms = kNaN;   // waiting before prefill (vLLM per-request metrics; the simulator)
  int64_t prompt_n = -1;    // prompt tokens the server computed (cached ones excluded)
};
using ServerTimingOf = std::function<std::optional<ServerRequestTiming>(const RequestTimeline&)>;

// Reads RequestTimeline::server (ServerTimings: llama.cpp `timings`, vLLM per-request metrics,
// Ollama durations). The one place
// that knows where per-request server timings live on a record.
std::optional<ServerRequestTiming> timing_from_record(const RequestTimeline& t);

// What the server view needs of one finished request (any phase), kept instead of the whole
// timeline so a long run's memory stays bounded (about 64 bytes a request).
struct RequestDigest {
  int level = 0;
  double client_ttft_ms = kNaN;  // OK requests with a first token, else NaN
  int64_t prompt_tokens = -1, output_tokens = -1;  // compute_request_metrics' counts
  std::optional<ServerRequestTiming> timing;
};
// `m` must be compute_request_metrics(t).
RequestDigest digest_of(const RequestTimeline& t, const RequestMetrics& m,
                        const ServerTimingOf& timing_of = timing_from_record);
std::vector<RequestDigest> digests_of(std::span<const RequestTimeline> records,
                                      const ServerTimingOf& timing_of = timing_from_record);

// Client side: the mean TTFT of OK requests of `level` (all phases: the window holds them all).
LevelDecomposition decompose_level(std::span<const RequestDigest> requests, int level,
                                   const ServerWindow& window);
LevelDecomposition decompose_level(std::span<const RequestTimeline> records, int level,
                                   const ServerWindow& window);

struct RequestDecomposition {
  int64_t requests = 0;  // OK requests of the level that carried server timings
  double client_ttft_mean_ms = kNaN, client_ttft_p50_ms = kNaN;
  double server_prompt_mean_ms = kNaN, server_prompt_p50_ms = kNaN;
  double server_queue_mean_ms = kNaN;  // NaN unless every such request reported it
  // client TTFT − prompt_ms (− queue_ms when reported): network, HTTP, and queueing when the
  // server does not report it.
  double remainder_mean_ms = kNaN, remainder_p50_ms = kNaN;
  double remainder_min_ms = kNaN;
  double server_prompt_ms_total = 0;   // Σ prompt_ms: compare with a prefill-seconds counter
  int64_t server_prompt_n_total = -1;  // Σ prompt_n (-1: not reported): the prompt-token counter
};

RequestDecomposition decompose_requests(std::span<const RequestDigest> requests, int level);
RequestDecomposition decompose_requests(std::span<const RequestTimeline> records, int level,
                                        const ServerTimingOf& timing_of = timing_from_record);

nlohmann::json level_decomposition_json(const LevelDecomposition& d);
nlohmann::json request_decomposition_json(const RequestDecomposition& d);

// "TTFT 512 ms = 3 outside + 400 queue + 100 prefill + 9 server overhead (means)" or "".
std::string describe_decomposition(const LevelDecomposition& d);

}  // namespace tokperf::servermetrics
