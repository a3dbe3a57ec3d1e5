#include "sim/dtype.h"

#include <array>
#include <string>

namespace tokperf::sim {
namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  double bytes;
};

constexpr std::array<DTypeRow, 5> kDTypes = {{
    {DType::kFp16, "fp16", 2.0},
    {DType::kBf16, "bf16", 2.0},
    {DType::kFp8, "fp8", 1.0},
    {DType::kInt8, "int8", 1.0},
    {DType::kInt4, "int4", 0.5},
}};

}  // namespace

double dtype_bytes(DType d) {
  for (const auto& r : kDTypes) {
    if (r.dtype == d) return r.bytes;
  }
  return 2.0;
}

const char* dtype_name(DType d) {
  for (const auto& r : kDTypes) {
    if (r.dtype == d) return r.name;
  }
  return "?";
}

Result<DType> parse_dtype(std::string_view text, std::string_view flag) {
  for (const auto& r : kDTypes) {
    if (text == r.name) return r.dtype;
  }
  return Error{std::string(flag) + " '" + std::string(text) +
               "' is not a known dtype; accepted: fp16, bf16, fp8, int8, int4"};
}

}  // namespace tokperf::sim
