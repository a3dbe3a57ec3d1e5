#include "sim/gpu_catalog.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tokperf::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;
constexpr double kT = 1e12;

GpuSpec make(const char* id, const char* name, double mem_gib, double bw_gb_s, double link_gb_s,
             const char* link, double fp16_t, double bf16_t, double fp8_t, double int8_t) {
  GpuSpec g;
  g.id = id;
  g.name = name;
  g.memory_bytes = mem_gib * kGiB;
  g.memory_bw_bytes_per_s = bw_gb_s * kGB;
  g.interconnect_bytes_per_s = link_gb_s * kGB;
  g.interconnect = link;
  g.fp16_flops = fp16_t * kT;
  g.bf16_flops = bf16_t * kT;
  g.fp8_flops = fp8_t * kT;
  g.int8_ops = int8_t * kT;
  return g;
}

// Decode attention on the Ada GPUs reads paged KV at this share of the bandwidth efficiency the
// Hopper and Ampere parts reach: fitted on the calibration half of data/validation/ (the `vllm`
// points on L40S, L4 and RTX 4090; docs/SIMULATOR.md, "Sixth change"; refitted with the per-GEMM
// weight stream, "Seventh change": 0.252 -> 0.334).
constexpr double kAdaKvReadFactor = 0.334;

GpuSpec ada(GpuSpec g) {
  g.kv_read_factor = kAdaKvReadFactor;
  return g;
}

// ROCm's GEMMs reach 51.4% of the MI300X's BF16 peak where CUDA's reach 86.9% (A100 SXM) and
// 80.3% (H100 SXM) of theirs: the maximum achievable matmul FLOPS of stas00/ml-engineering's
// comparison table (docs/CATALOG.md). 0.514 / mean(0.869, 0.803) = 0.615.
GpuSpec mi300x() {
  GpuSpec g = make("mi300x", "AMD Instinct MI300X 192GB", 192, 5300, 448, "Infinity Fabric", 1307.4,
                   1307.4, 2614.9, 2614.9);
  g.matmul_stack_factor = 0.615;
  return g;
}

}  // namespace

double GpuSpec::matmul_flops(DType weights) const {
  const double half = bf16_flops > 0 ? bf16_flops : fp16_flops;
  switch (weights) {
    case DType::kFp16:
      return fp16_flops > 0 ? fp16_flops : bf16_flops;
    case DType::kFp8:
      return fp8_flops > 0 ? fp8_flops : half;
    case DType::kInt8:
      return int8_ops > 0 ? int8_ops : half;
    case DType::kBf16:
    case DType::kInt4:
      return half;
  }
  return half;
}

const std::vector<GpuSpec>& builtin_gpus() {
  // Dense peaks in TFLOPS; interconnect one-way GB/s. Memory in GiB as CUDA reports it to the
  // serving engine (cudaMemGetInfo's total, what vLLM logs as total_gpu_memory), which is less
  // than the datasheet's where the driver keeps some back. Sources: docs/CATALOG.md.
  static const std::vector<GpuSpec> kGpus = {
      make("a100-40g", "NVIDIA A100 40GB SXM", 39.4, 1555, 300, "NVLink 3", 312, 312, 0, 624),
      make("a100-80g", "NVIDIA A100 80GB SXM", 79.2, 2039, 300, "NVLink 3", 312, 312, 0, 624),
      make("h100", "NVIDIA H100 SXM 80GB", 79.2, 3350, 450, "NVLink 4", 989.4, 989.4, 1978.9,
           1978.9),
      make("h200", "NVIDIA H200 SXM 141GB", 139.8, 4800, 450, "NVLink 4", 989.4, 989.4, 1978.9,
           1978.9),
      ada(make("l40s", "NVIDIA L40S 48GB", 44.39, 864, 32, "PCIe Gen4 x16", 362.05, 362.05, 733,
               733)),
      ada(make("rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24, 1008, 32, "PCIe Gen4 x16", 165.2,
               165.2, 330.3, 660.6)),
      make("a10g", "NVIDIA A10G 24GB (AWS)", 24, 600, 32, "PCIe Gen4 x16", 70, 70, 0, 140),
      ada(make("l4", "NVIDIA L4 24GB", 24, 300, 32, "PCIe Gen4 x16", 121, 121, 242.5, 242.5)),
      mi300x(),
  };
  return kGpus;
}

Result<GpuSpec> find_gpu(std::string_view id) {
  std::string known;
  for (const auto& g : builtin_gpus()) {
    if (g.id == id) return g;
    known += known.empty() ? g.id : ", " + g.id;
  }
  return Error{"--gpu '" + std::string(id) + "' is not a known GPU; accepted: " + known +
               " (or --gpu-spec FILE)"};
}

Result<GpuSpec> gpu_from_json_text(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error{"GPU spec " + where + " is not a JSON object"};
  }
  auto num = [&](const nlohmann::json& obj, const char* key) -> double {
    auto it = obj.find(key);
    return (it != obj.end() && it->is_number()) ? it->get<double>() : 0.0;
  };
  GpuSpec g;
  g.id = j.value("id", std::string("custom"));
  g.name = j.value("name", g.id);
  g.memory_bytes = num(j, "memory_gib") * kGiB;
  g.memory_bw_bytes_per_s = num(j, "memory_bandwidth_gb_s") * kGB;
  g.interconnect_bytes_per_s = num(j, "interconnect_gb_s") * kGB;
  g.interconnect = j.value("interconnect", std::string("custom"));
  if (auto t = j.find("tflops"); t != j.end() && t->is_object()) {
    g.fp16_flops = num(*t, "fp16") * kT;
    g.bf16_flops = num(*t, "bf16") * kT;
    g.fp8_flops = num(*t, "fp8") * kT;
    g.int8_ops = num(*t, "int8") * kT;
  }
  if (g.memory_bytes <= 0 || g.memory_bw_bytes_per_s <= 0 ||
      (g.fp16_flops <= 0 && g.bf16_flops <= 0)) {
    return Error{"GPU spec " + where +
                 " needs positive memory_gib, memory_bandwidth_gb_s and tflops.fp16 or "
                 "tflops.bf16 (optional: id, name, interconnect_gb_s, tflops.fp8, tflops.int8)"};
  }
  // The stack factors: optional, in (0, 1]; the error says what the factor means.
  const struct {
    const char* key;
    double* field;
    const char* meaning;
  } factors[] = {
      {"matmul_stack_factor", &g.matmul_stack_factor,
       "the share of the NVIDIA stacks' achieved matmul rate this GPU's software reaches; 1 for "
       "NVIDIA"},
      {"kv_read_factor", &g.kv_read_factor,
       "the share of the datacenter GPUs' achieved KV-read bandwidth decode attention reaches "
       "here; 1 for Hopper and Ampere"},
  };
  for (const auto& f : factors) {
    auto it = j.find(f.key);
    if (it == j.end()) continue;
    const double v = it->is_number() ? it->get<double>() : -1;
    if (!(v > 0 && v <= 1)) {
      return Error{"GPU spec " + where + ": " + f.key + " must be a number in (0, 1] (" +
                   f.meaning + ")"};
    }
    *f.field = v;
  }
  if (g.fp16_flops <= 0) g.fp16_flops = g.bf16_flops;
  if (g.bf16_flops <= 0) g.bf16_flops = g.fp16_flops;
  return g;
}

Result<GpuSpec> load_gpu_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"--gpu-spec '" + path + "' cannot be read"};
  std::stringstream ss;
  ss << in.rdbuf();
  return gpu_from_json_text(ss.str(), "'" + path + "'");
}

}  // namespace tokperf::sim
