// Offline simulation speed: 100,000 closed-loop requests through the engine (goal: <= 1 s).
#include <benchmark/benchmark.h>

#include "sim/offline_runner.h"

namespace tokperf::sim {
namespace {

void BM_Offline100k(benchmark::State& state) {
  const CostModel cost(Deployment{find_model("llama-3.1-8b").value(), find_gpu("h100").value(),
                                  DType::kBf16, DType::kBf16, 1},
                       CostKnobs{});
  OfflineWorkload w;
  w.prompt_tokens = 512;
  w.output_tokens = static_cast<int64_t>(state.range(0));
  w.concurrency = 256;
  w.requests = 100'000;
  for (auto _ : state) {
    auto run = run_offline(cost, EngineConfig{}, w);
    benchmark::DoNotOptimize(run.ok());
  }
  state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(BM_Offline100k)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace tokperf::sim

BENCHMARK_MAIN();
