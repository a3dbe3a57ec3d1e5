// Numeric formats for weights and the KV cache, and how many bytes one element takes.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace tokperf::sim {

enum class DType { kFp16, kBf16, kFp8, kInt8, kInt4 };

// Bytes per element: 2, 2, 1, 1, 0.5 (INT4 packs two per byte; group scales are ignored).
double dtype_bytes(DType d);

// "fp16", "bf16", ... (the spelling the flags accept).
const char* dtype_name(DType d);

// Parses a --dtype / --kv-dtype value; the error names the value and lists what is accepted.
Result<DType> parse_dtype(std::string_view text, std::string_view flag = "--dtype");

}  // namespace tokperf::sim
