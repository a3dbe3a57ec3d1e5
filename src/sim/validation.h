// The simulator against published serving measurements (data/validation/): each point replayed
// through run_offline_level (the engine and load rules of `tokperf sim run`) with its engine's
// preset, and the error of each metric. The held-out figures that the CLI prints beside its
// predictions (sim/accuracy_figures.h) are generated from this, and a test recomputes them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/deployment.h"
#include "sim/engine_preset.h"

namespace tokperf::sim {

enum class ValidationMetric { kTtft, kTpot, kOutputThroughput };
const char* metric_name(ValidationMetric m);  // "TTFT", "TPOT", "output tok/s"

struct ValidationPoint {
  std::string id, source, engine, sim_engine, model, sim_model, gpu, sim_gpu, dtype, load;
  // The batch it was added in (points.jsonl `batch`); "first" for the first batch, which has none.
  std::string batch = "first";
  std::string sim_kv_dtype = "auto";  // the source's KV-cache dtype when it set one (--kv-dtype)
  int tp = 1;
  bool held_out = false;
  // closed: `concurrency` users with fixed lengths; burst: every request at t = 0 with its lengths;
  // rate: see request_rate.
  bool burst = false;
  int64_t concurrency = 1, requests = 0, input_tokens = 0, output_tokens = 0;
  // closed only. The source's client sent every request at once behind a `concurrency`-slot
  // semaphore (vLLM's benchmark_serving / `vllm bench serve` with --request-rate inf and
  // --max-concurrency): the first `concurrency` start together, every one of `requests` is
  // measured (no warm-up) and the output rate is over the whole run (workload `start: together`).
  bool start_together = false;
  // > 0: an open loop (workload kind `rate`): `requests` sent at Poisson times at this many per
  // second (SGLang's bench_serving and vLLM's benchmark_serving with --request-rate r), no cap on
  // how many are in flight, every request measured, the output rate over the whole run.
  double request_rate = 0;
  // closed only. > 0: the source did not ignore EOS; lengths are the engine's EOS draw capped at
  // this max_tokens, its mean set so the expected length is `output_tokens` (the published mean).
  int64_t max_tokens = 0;
  // closed only, > 0: the source drew each request's lengths uniformly from the integers
  // [floor(len x range_ratio), len] for len = input_tokens and output_tokens, as the random dataset
  // of SGLang's bench_serving and of the benchmark_serving.py copies that follow it does
  // (workload `range_ratio`; 1 = exact lengths). The harness draws them with a fixed seed.
  double range_ratio = 0;
  // Engine settings the source states (its server command), applied over the preset before any
  // fitting override (points.jsonl `engine_settings`, knob names as `--knob`; `max_model_len` is
  // the deployment's --max-model-len). Not fitted.
  std::map<std::string, double> engine_settings;
  // burst (required) and rate (optional): each request's input and output length, in order.
  std::vector<int64_t> input_lens, output_lens;
  // A Hugging Face config.json's fields (points.jsonl `model_config`) for a model the catalog
  // lacks (`sim_model` "custom"); empty: `sim_model` is a catalog id.
  std::string model_config;
  // The published statistic: median (the source's `stat` names a median or a p50, in any case),
  // else the table's mean.
  bool median = false;
  // The source's TPOT figure is an inter-token latency over every gap of every request
  // (bench_serving's median_itl_ms, "ITL p50"), not a per-request TPOT (points.jsonl
  // `tpot_statistic: "itl"`): the replay takes the statistic over the measured requests' gaps.
  bool tpot_is_itl = false;
  // closed, spread start only. The source's output rate counts every token that arrived inside
  // its measurement window, whichever request carried it (a steady-state window, workload
  // `throughput: "tokens_in_window"`); otherwise the measured requests' tokens over their span.
  // The replay of a spread closed loop counts the window's tokens either way (the steady rate;
  // validation.cc says why); the field records the source's method.
  bool tokens_in_window = false;
  // The source sent its requests to a freshly started server with no warm-up (points.jsonl
  // `cold_start`, with the source's words in `cold_start_evidence`).
  bool cold_start = false;
  // The model class the figures are reported by: a mixture-of-experts `sim_model` (set on load
  // from the catalog) or a dense one.
  bool moe = false;
  std::map<ValidationMetric, double> published;  // metrics used (excluded ones are left out)
};

// A whole text file; the error names the path.
Result<std::string> read_text_file(const std::string& path);

// The ids of a split file's two halves ({"held_out": [...], "calibration": [...]}); an absent
// half is empty. Used by both validation sets.
struct SplitIds {
  std::set<std::string> held_out, calibration;
};
Result<SplitIds> load_split_file(const std::string& path);

// The mean m of the engine's EOS draw (Engine::draw_output_length: ceil of an exponential with mean
// m, clamped to [1, cap]) whose expected length is `mean`. REQUIRES: 1 <= mean <= cap.
double eos_mean_for_expected_length(double mean, int64_t cap);

// Reads points.jsonl and split.json from `dir`; every point must be in exactly one split half.
Result<std::vector<ValidationPoint>> load_validation_set(const std::string& dir);

struct PointPrediction {
  std::map<ValidationMetric, double> predicted;
  std::string error;  // non-empty when the point could not be replayed (e.g. does not fit)
};
PointPrediction predict_point(const ValidationPoint& p, const KnobOverrides& overrides = {});

// The model class whose held-out figures a prediction is given with.
enum class ModelClass { kDense, kMoe };

struct MetricSummary {
  int n = 0;
  double median_abs_pct = 0;  // median |predicted / measured - 1| x 100
  double worst_ratio = 1;     // max over points of max(p/m, m/p)
};
// The summary of (predicted, measured) pairs.
MetricSummary summarize_errors(const std::vector<std::pair<double, double>>& predicted_measured);

struct ValidationResult {
  struct Row {
    const ValidationPoint* point;
    ValidationMetric metric;
    double predicted, measured;
    double error_pct() const { return 100.0 * (predicted / measured - 1.0); }
  };
  std::vector<Row> rows;              // every published metric of every point, in file order
  std::vector<std::string> failures;  // "id: why" for points that could not be replayed
  // Over one half, all points or those of one model class.
  MetricSummary summary(bool held_out, ValidationMetric m,
                        std::optional<ModelClass> cls = std::nullopt) const;
};

ValidationResult run_validation(const std::vector<ValidationPoint>& points,
                                const KnobOverrides& overrides = {});

// The text of sim/accuracy_figures.h for these results (held-out summaries, per model class and
// for all points).
std::string accuracy_figures_header(const ValidationResult& r);

// "TTFT typically within ±X%, TPOT ±Y%, output throughput ±Z% (median |error| on N held-out
// published runs of <class> models; worst W×)" from the generated figures of that class. Given
// the GPU id and engine preset of the prediction, it adds that they are outside that class's
// validated set when no point of the class ran on them.
std::string held_out_accuracy_line(std::string_view gpu_id = {}, std::string_view engine = {},
                                   ModelClass cls = ModelClass::kDense);
// Whether some point of that class in the validation set ran on this GPU id and this engine
// preset (an empty argument is not checked).
bool in_validated_set(std::string_view gpu_id, std::string_view engine,
                      ModelClass cls = ModelClass::kDense);
// The line for a prediction on this deployment (its GPU and its model's class) and engine preset.
std::string held_out_accuracy_line(const Deployment& d, std::string_view engine);
inline ModelClass model_class_of(const Deployment& d) {
  return d.model.is_moe() ? ModelClass::kMoe : ModelClass::kDense;
}

}  // namespace tokperf::sim
