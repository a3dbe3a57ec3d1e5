// Which serving engine a /metrics page comes from, and where each engine keeps the common concepts
// (server TTFT, queue, prefill, decode, E2E, ITL, running, waiting, KV usage, preemptions,
// prefix-cache hits, token counters, finished requests). Names, units and traps per engine:
// ../shared/SERVER_METRICS.md; the mapping as documented: docs/SERVER-METRICS.md.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "servermetrics/exposition_parser.h"

namespace tokperf::servermetrics {

enum class Engine : uint8_t {
  kUnknown,
  kVllm,
  kSglang,
  kTrtllm,
  kTriton,
  kTgi,
  kLlamaCpp,
  kDynamo
};
const char* engine_name(Engine e);

enum class Concept : uint8_t {
  kTtft,              // server-side time to first token (from arrival at the frontend)
  kItl,               // inter-token latency (per step or per request, see the mapping)
  kE2e,               // request latency
  kQueue,             // arrival -> scheduled
  kPrefill,           // scheduled -> first token
  kDecode,            // first token -> last token
  kRunning,           // requests in the running batch
  kWaiting,           // requests queued in the engine
  kKvUsage,           // KV cache in use, 0..1
  kPreemptions,       // preempted/retracted requests (counter)
  kPrefixHits,        // prompt tokens served from the prefix cache (counter)
  kPromptTokens,      // prompt tokens processed (counter)
  kGenerationTokens,  // output tokens generated (counter)
  kFinished,          // finished requests (counter)
  kPrefillSeconds,    // total time spent in prefill (a counter of seconds; llama.cpp)
  kDecodeSeconds,     // total time spent decoding (a counter of seconds; llama.cpp)
  kCount_
};
const char* concept_name(Concept c);

// How a concept is stored in the engine's exposition.
enum class Shape : uint8_t {
  kHistogram,    // family with _bucket/_sum/_count; value scale converts to seconds
  kCounter,      // exact series name, or with _total
  kGauge,        // exact series name
  kHistogramSum  // a histogram whose _sum is the counter wanted (TGI's token-length histograms)
};

struct MappingEntry {
  Engine engine;
  Concept concept_id;
  std::string_view family;  // counters: without _total
  Shape shape;
  double to_seconds = 1;  // histograms: multiply values by this (Triton's are in ms)
  std::string_view note;  // what differs from the common concept, if anything
};

// Every known mapping, in preference order (an engine's newer name first).
std::span<const MappingEntry> mapping_table();

// Recognises the engine by the name prefixes of its series; kUnknown when none matches.
Engine detect_engine(const Exposition& e);

}  // namespace tokperf::servermetrics
