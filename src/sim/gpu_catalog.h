// Accelerators the simulator knows: dense tensor-core peaks, memory, bandwidth and interconnect.
// Figures and their sources: docs/CATALOG.md. Peaks are DENSE (datasheets often print the 2:4
// sparsity figure, twice as large); GeForce cards list FP16/BF16 with FP32 accumulate (half rate),
// which is what inference engines use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/dtype.h"

namespace tokperf::sim {

struct GpuSpec {
  std::string id;    // the --gpu spelling, e.g. "a100-80g"
  std::string name;  // human name for output
  double memory_bytes = 0;
  double memory_bw_bytes_per_s = 0;
  // One-way GPU-to-GPU bandwidth (datasheets quote the bidirectional sum: NVLink 600/900 GB/s,
  // PCIe Gen4 x16 64 GB/s); this is half of it.
  double interconnect_bytes_per_s = 0;
  std::string interconnect;  // "NVLink 3", "PCIe Gen4 x16", ...
  double fp16_flops = 0;
  double bf16_flops = 0;
  double fp8_flops = 0;  // 0: no FP8 tensor math on this GPU
  double int8_ops = 0;   // 0: no INT8 tensor math
  // The share of the datasheet matmul rate this GPU's software stack reaches, relative to the
  // NVIDIA stacks the engine efficiencies (CostKnobs) were measured and fitted on: 1 for NVIDIA
  // GPUs; the MI300X's ROCm GEMMs reach a lower share of a higher peak (docs/CATALOG.md). Scales
  // the linear layers' compute efficiency; the lower bounds (100% of peak) keep the datasheet.
  double matmul_stack_factor = 1.0;
  // The same for decode attention's KV reads: the share of CostKnobs::bandwidth_efficiency that
  // reading paged KV reaches on this GPU, relative to the Hopper and Ampere parts the knob was set
  // on. Fitted for the Ada GPUs (L40S, L4, RTX 4090) on calibration points (kAdaKvReadFactor);
  // 1 elsewhere.
  double kv_read_factor = 1.0;

  // The matmul rate for weights in `weights`: FP8/INT8 run at their own rate only where the GPU has
  // that math (W8A8); INT4 is weight-only (dequantised to 16-bit), as are FP8/INT8 elsewhere.
  double matmul_flops(DType weights) const;
};

// The built-in catalog, in a stable order.
const std::vector<GpuSpec>& builtin_gpus();

// Looks up a built-in id; the error names the id and lists the known ones.
Result<GpuSpec> find_gpu(std::string_view id);

// Reads a user GPU spec from JSON:
//   {"id": "my-gpu", "name": "...", "memory_gib": 80, "memory_bandwidth_gb_s": 2039,
//    "interconnect_gb_s": 300, "tflops": {"fp16": 312, "bf16": 312, "fp8": 0, "int8": 624},
//    "matmul_stack_factor": 1, "kv_read_factor": 1}
// memory, bandwidth and one of tflops.fp16/bf16 are required; interconnect is one-way;
// matmul_stack_factor and kv_read_factor (default 1) must lie in (0, 1].
Result<GpuSpec> gpu_from_json_text(std::string_view text, std::string_view origin);
Result<GpuSpec> load_gpu_spec(const std::string& path);

}  // namespace tokperf::sim
