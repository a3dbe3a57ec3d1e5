#include "sim/validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "load/load_plan.h"
#include "sim/accuracy_figures.h"
#include "sim/deployment.h"
#include "sim/model_catalog.h"
#include "sim/offline_runner.h"

namespace tokperf::sim {
namespace {

// Per-request lengths uniform over [floor(len x range_ratio), len], input then output per request,
// from a fixed seed (the source's own draw is not published, only its rule).
std::vector<OfflineLengths> drawn_lengths(const ValidationPoint& p, int64_t n) {
  std::mt19937_64 rng(0x7e57'5eedULL);
  auto draw = [&](int64_t len) {
    const auto lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * p.range_ratio));
    const int64_t from = std::max<int64_t>(
        1, lo);  // modulo, not a distribution: the same draw with any standard library
    return from + static_cast<int64_t>(rng() % static_cast<uint64_t>(len - from + 1));
  };
  std::vector<OfflineLengths> out(static_cast<size_t>(n));
  for (auto& l : out) {
    l.prompt_tokens = draw(p.input_tokens);
    l.output_tokens = draw(p.output_tokens);
  }
  return out;
}

// The per-request lengths the source sent, in order; a 0 output is sampled once (zero_ttft in
// predict_point counts it as the source did).
std::vector<OfflineLengths> source_lengths(const ValidationPoint& p) {
  std::vector<OfflineLengths> out(p.input_lens.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].prompt_tokens = std::max<int64_t>(1, p.input_lens[i]);
    out[i].output_tokens = std::max<int64_t>(1, p.output_lens[i]);
  }
  return out;
}

std::vector<int64_t> int_list(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> v;
  if (auto it = j.find(key); it != j.end() && it->is_array()) {
    for (const auto& x : *it) v.push_back(x.get<int64_t>());
  }
  return v;
}

double statistic(std::vector<double> v, bool median) {
  if (v.empty()) return NAN;
  if (!median) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// Requests measured, their TTFT/TPOT (and every inter-token gap) and the output rate over the
// measured window.
struct Measured {
  bool keep_gaps = false;  // itl_ms is kept only for points that publish a gap statistic
  std::vector<double> ttft_ms, tpot_ms, itl_ms;
  double output_tokens = 0;
  int64_t first_send = INT64_MAX, last_end = 0;
  // > 0: the rate's window is this many seconds, the sum of several runs' windows (pooled runs,
  // each from its own t = 0), instead of last_end - first_send.
  double pooled_window_s = 0;
};

// Adds one run's measurements to a pool of runs of the same point: the requests' figures side by
// side, the tokens and the windows summed.
void pool(const Measured& run, Measured& into) {
  into.ttft_ms.insert(into.ttft_ms.end(), run.ttft_ms.begin(), run.ttft_ms.end());
  into.tpot_ms.insert(into.tpot_ms.end(), run.tpot_ms.begin(), run.tpot_ms.end());
  into.itl_ms.insert(into.itl_ms.end(), run.itl_ms.begin(), run.itl_ms.end());
  into.output_tokens += run.output_tokens;
  if (run.last_end > run.first_send) {
    into.pooled_window_s += static_cast<double>(run.last_end - run.first_send) / 1e9;
  }
}

void collect(const RequestTimeline& t, Measured& m) {
  if (!t.ok() || t.token_events.empty()) return;
  const auto& e = t.token_events;
  m.ttft_ms.push_back(static_cast<double>(e.front().t_ns - t.send_ns) / 1e6);
  if (e.size() >= 2) {
    m.tpot_ms.push_back(static_cast<double>(e.back().t_ns - e.front().t_ns) / 1e6 /
                        static_cast<double>(e.size() - 1));
  }
  for (size_t i = 1; m.keep_gaps && i < e.size(); ++i) {
    m.itl_ms.push_back(static_cast<double>(e[i].t_ns - e[i - 1].t_ns) / 1e6);
  }
  m.output_tokens += static_cast<double>(e.size());
  m.first_send = std::min(m.first_send, t.send_ns);
  m.last_end = std::max(m.last_end, t.end_ns);
}

}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read " + path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<SplitIds> load_split_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return Error{text.error()};
  const nlohmann::json split = nlohmann::json::parse(*text, nullptr, false);
  if (split.is_discarded() || !split.is_object()) return Error{path + " is not a JSON object"};
  SplitIds ids;
  try {
    for (const auto& x : split.value("held_out", nlohmann::json::array())) {
      ids.held_out.insert(x.get<std::string>());
    }
    for (const auto& x : split.value("calibration", nlohmann::json::array())) {
      ids.calibration.insert(x.get<std::string>());
    }
  } catch (const nlohmann::json::exception& e) {
    return Error{path + ": " + e.what()};
  }
  return ids;
}

// E = sum over k < cap of exp(-k / m) = (1 - exp(-cap / m)) / (1 - exp(-1 / m)), increasing in
// m; bisection.
double eos_mean_for_expected_length(double mean, int64_t cap) {
  const auto expected = [cap](double m) {
    return -std::expm1(-static_cast<double>(cap) / m) / -std::expm1(-1.0 / m);
  };
  double lo = 1e-3, hi = 1e9;
  for (int i = 0; i < 200; ++i) {
    const double mid = std::sqrt(lo * hi);
    (expected(mid) < mean ? lo : hi) = mid;
  }
  return hi;
}

const char* metric_name(ValidationMetric m) {
  switch (m) {
    case ValidationMetric::kTtft:
      return "TTFT";
    case ValidationMetric::kTpot:
      return "TPOT";
    case ValidationMetric::kOutputThroughput:
      return "output tok/s";
  }
  return "?";
}

Result<std::vector<ValidationPoint>> load_validation_set(const std::string& dir) {
  auto points_text = read_text_file(dir + "/points.jsonl");
  if (!points_text.ok()) return Error{points_text.error()};
  auto split = load_split_file(dir + "/split.json");
  if (!split.ok()) return Error{split.error()};
  const std::set<std::string>& held = split->held_out;
  const std::set<std::string>& calib = split->calibration;

  std::vector<ValidationPoint> out;
  std::istringstream lines(*points_text);
  std::string line;
  int lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = fmt::format("{}/points.jsonl line {}", dir, lineno);
    if (j.is_discarded() || !j.is_object()) return Error{where + " is not a JSON object"};
    try {
      ValidationPoint p;
      p.id = j.at("id");
      p.source = j.at("source");
      p.batch = j.value("batch", "first");
      p.engine = j.at("engine");
      p.sim_engine = j.value("sim_engine", p.engine);
      p.model = j.at("model");
      p.sim_model = j.at("sim_model");
      if (j.contains("model_config")) {
        p.model_config = j.at("model_config").dump();
        auto shape = model_from_hf_config_text(p.model_config, where + " model_config");
        if (!shape.ok()) return Error{shape.error()};
        p.moe = shape->is_moe();
      } else if (auto shape = find_model(p.sim_model); shape.ok()) {
        p.moe = shape->is_moe();
      }
      p.gpu = j.at("gpu");
      p.sim_gpu = j.at("sim_gpu");
      p.dtype = j.at("dtype");
      p.sim_kv_dtype = j.value("sim_kv_dtype", "auto");
      p.load = j.value("load", "");
      p.tp = j.at("tp");
      const auto& w = j.at("workload");
      p.burst = w.at("kind") == "burst";
      if (p.burst) {
        p.input_lens = int_list(w, "input_lens");
        p.output_lens = int_list(w, "output_lens");
        if (p.input_lens.empty() || p.input_lens.size() != p.output_lens.size()) {
          return Error{where + ": a burst needs input_lens and output_lens of equal length"};
        }
      } else {
        if (w.at("kind") == "rate") {
          p.request_rate = w.at("request_rate");
          p.requests = w.at("requests");
          if (!(p.request_rate > 0) || p.requests < 1) {
            return Error{where + ": a rate workload needs request_rate > 0 and requests >= 1"};
          }
          p.input_lens = int_list(w, "input_lens");
          p.output_lens = int_list(w, "output_lens");
          if (p.input_lens.size() != p.output_lens.size() ||
              (!p.input_lens.empty() && p.input_lens.size() != static_cast<size_t>(p.requests))) {
            return Error{where +
                         ": a rate workload's input_lens and output_lens, when given, need one "
                         "entry per request"};
          }
        } else if (w.at("kind") != "closed") {
          return Error{where + ": workload kind must be closed, rate or burst"};
        }
        p.concurrency = p.request_rate > 0 ? 0 : w.at("concurrency").get<int64_t>();
        p.requests = w.value("requests", 0);
        p.input_tokens = w.at("input_tokens");
        p.output_tokens = w.at("output_tokens");
        p.start_together = w.value("start", "") == "together";
        const std::string throughput = w.value("throughput", "measured_requests");
        if (throughput != "measured_requests" && throughput != "tokens_in_window") {
          return Error{where + ": workload throughput must be measured_requests or " +
                       "tokens_in_window, not " + throughput};
        }
        p.tokens_in_window = throughput == "tokens_in_window";
        if (p.tokens_in_window && (p.start_together || p.request_rate > 0)) {
          return Error{where + ": throughput tokens_in_window is replayed only for a closed " +
                       "loop without start: together"};
        }
        if (!w.value("ignore_eos", true)) p.max_tokens = w.at("max_tokens");
        p.range_ratio = w.value("range_ratio", 0.0);
        if (!(p.range_ratio >= 0 && p.range_ratio <= 1)) {
          return Error{where + ": range_ratio must be in [0, 1] (0: not given, 1: exact lengths)"};
        }
        if (p.range_ratio > 0 && !p.start_together && p.request_rate == 0) {
          return Error{where + ": range_ratio is replayed only with start: together or a rate"};
        }
        if (p.range_ratio > 0 && p.max_tokens > 0) {
          return Error{where + ": range_ratio needs ignore_eos (the drawn output length is exact)"};
        }
        if (p.max_tokens > 0 && p.max_tokens < p.output_tokens) {
          return Error{where + ": max_tokens must be at least the mean output_tokens"};
        }
      }
      std::string stat = j.value("stat", "");
      std::transform(stat.begin(), stat.end(), stat.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      p.median = stat.find("median") != std::string::npos || stat.find("p50") != std::string::npos;
      const std::string tpot_statistic = j.value("tpot_statistic", "tpot");
      if (tpot_statistic != "tpot" && tpot_statistic != "itl") {
        return Error{where +
                     ": tpot_statistic must be tpot (per request) or itl (every gap), not " +
                     tpot_statistic};
      }
      p.tpot_is_itl = tpot_statistic == "itl";
      p.cold_start = j.value("cold_start", false);
      if (j.contains("engine_settings")) {
        for (const auto& [name, value] : j.at("engine_settings").items()) {
          p.engine_settings[name] = value.get<double>();
        }
      }
      const auto& pub = j.at("published");
      const nlohmann::json excluded = j.value("excluded", nlohmann::json::object());
      for (auto [key, m] : {std::pair{"ttft_ms", ValidationMetric::kTtft},
                            {"tpot_ms", ValidationMetric::kTpot},
                            {"output_tok_s", ValidationMetric::kOutputThroughput}}) {
        if (pub.contains(key) && !excluded.contains(key)) p.published[m] = pub.at(key);
      }
      const bool h = held.count(p.id) > 0, c = calib.count(p.id) > 0;
      if (h == c)
        return Error{where + ": '" + p.id + "' must be in exactly one half of split.json"};
      p.held_out = h;
      out.push_back(std::move(p));
    } catch (const nlohmann::json::exception& e) {
      return Error{where + ": " + e.what()};
    }
  }
  if (out.empty()) return Error{dir + "/points.jsonl has no points"};
  return out;
}

PointPrediction predict_point(const ValidationPoint& p, const KnobOverrides& overrides) {
  PointPrediction out;
  DeploymentFlags f;
  f.model = p.sim_model;
  f.model_config_text = p.model_config;
  f.gpu = p.sim_gpu;
  f.dtype = p.dtype;
  f.kv_dtype = p.sim_kv_dtype;
  f.tp = p.tp;
  f.engine = p.sim_engine;
  // The served context length is the deployment's (--max-model-len), not an engine knob.
  KnobOverrides settings = p.engine_settings;
  if (auto it = settings.find("max_model_len"); it != settings.end()) {
    if (it->second < 1 || it->second != std::floor(it->second)) {
      out.error = "engine_settings: 'max_model_len' takes a whole number of tokens";
      return out;
    }
    f.max_model_len = static_cast<int64_t>(it->second);
    settings.erase(it);
  }
  auto d = resolve_deployment(f);
  if (!d.ok()) {
    out.error = d.error();
    return out;
  }
  auto preset = find_engine_preset(p.sim_engine, d->gpu, d->tp);
  if (!preset.ok()) {
    out.error = preset.error();
    return out;
  }
  if (Status s = apply_knob_overrides(settings, *preset); !s.ok()) {
    out.error = "engine_settings: " + s.error();
    return out;
  }
  preset->knobs = knobs_for_engine(*preset, preset->knobs, preset->config);
  if (Status s = apply_knob_overrides(overrides, *preset); !s.ok()) {
    out.error = s.error();
    return out;
  }
  const CostModel cost(std::move(d).value(), preset->knobs);
  if (!cost.fits()) {
    out.error = "the weights do not fit";
    return out;
  }
  EngineConfig cfg = preset->config;
  cfg.cold_start = p.cold_start;
  // Closed loops: max_tokens and whether EOS ends a request early (the published mean length).
  const int64_t max_tokens = p.max_tokens > 0 ? p.max_tokens : p.output_tokens;
  const bool ignore_eos = p.max_tokens == 0;
  if (!ignore_eos) {
    cfg.eos_mean_tokens =
        eos_mean_for_expected_length(static_cast<double>(p.output_tokens), p.max_tokens);
  }
  // The client both closed-loop replays use: every request planned up front, waiting for one of
  // `concurrency` slots.
  auto slotted_level = [&] {
    OfflineLevel lv;
    lv.prompt_tokens = p.input_tokens;
    lv.output_tokens = max_tokens;
    lv.ignore_eos = ignore_eos;
    lv.plan.open_loop = true;
    lv.plan.spec = LevelSpec{LoadMode::kRate, 1, 1, 0};
    lv.plan.max_concurrency = p.concurrency;
    return lv;
  };
  Measured m;
  m.keep_gaps = p.tpot_is_itl;
  // Requests the source sent with a 0 output length (bursts and rate points with per-request
  // lengths): they completed at the source with no error, their first token being EOS, which
  // streams no text. Each takes its share of the prefill (one sampled token) and, as the source
  // did, counts with TTFT 0 and no output tokens.
  int64_t zero_ttft = 0;
  // A level whose every request is measured from t = 0 (bursts, rates, start: together); false
  // (with out.error) when it cannot run.
  auto run_open_level = [&](const OfflineLevel& lv) {
    auto run = run_offline_level(cost, cfg, lv);
    if (!run.ok()) {
      out.error = run.error();
      return false;
    }
    for (const auto& t : run->timelines) {
      if (t.seq < p.output_lens.size() && p.output_lens[t.seq] < 1) {
        ++zero_ttft;
        continue;
      }
      collect(t, m);
    }
    m.first_send = 0;
    return true;
  };
  if (p.burst) {
    OfflineLevel lv;
    lv.prompt_tokens = lv.output_tokens = 1;
    lv.plan.open_loop = true;
    lv.plan.spec = LevelSpec{LoadMode::kRate, 1, 1, 0};
    for (size_t i = 0; i < p.input_lens.size(); ++i) {
      lv.plan.arrivals.push_back(PlannedArrival{0, Phase::kMeasure, static_cast<int64_t>(i)});
    }
    lv.lengths = source_lengths(p);
    if (!run_open_level(lv)) return out;
  } else if (p.request_rate > 0) {
    // An open loop at the source's rate: Poisson arrivals (exponential gaps, as both clients draw
    // them) from a fixed seed, nothing capped, every request measured from t = 0.
    OfflineLevel lv = slotted_level();
    lv.plan.max_concurrency = 0;
    std::mt19937_64 rng(0x7a7e'5eedULL);
    std::exponential_distribution<double> gap(p.request_rate);
    double at_s = 0;
    for (int64_t i = 0; i < p.requests; ++i) {
      lv.plan.arrivals.push_back(PlannedArrival{std::llround(at_s * 1e9), Phase::kMeasure, i});
      at_s += gap(rng);
    }
    if (!p.input_lens.empty()) {
      lv.lengths = source_lengths(p);
    } else if (p.range_ratio > 0) {
      lv.lengths = drawn_lengths(p, p.requests);
    }
    if (!run_open_level(lv)) return out;
  } else if (p.start_together) {
    // The source's own method (vLLM's benchmark_serving, --request-rate inf, --max-concurrency c):
    // every request is created at t = 0 and waits for one of c slots, so the first c are a burst
    // and the rest follow as slots free; TTFT counts from the slot (the request function starts
    // inside the semaphore); all requests are measured, the rate over the whole run.
    OfflineLevel lv = slotted_level();
    const int64_t n = p.requests > 0 ? p.requests : std::max<int64_t>(40, 4 * p.concurrency);
    for (int64_t i = 0; i < n; ++i) {
      lv.plan.arrivals.push_back(PlannedArrival{0, Phase::kMeasure, i});
    }
    if (p.range_ratio > 0) lv.lengths = drawn_lengths(p, n);
    if (!run_open_level(lv)) return out;
  } else {
    // A closed loop (a client with `concurrency` slots and a queue, as vLLM's bench and AIPerf
    // run it) in the state real clients drift into within a few requests: users at random phases
    // of one cycle. A deterministic engine with fixed output lengths keeps whatever queue the
    // start built (a request finishes a fixed number of steps after its first token, so the loop
    // re-sends at the rate the queue is served), so the start has to be that state already. A
    // first pass spreads the users evenly over one unloaded request's E2E; the scored passes
    // place them at random times over the median E2E the first pass measured under load, one
    // pass per fixed seed, pooled: one draw of the phases is a noisy sample of what a long real
    // run, whose phases keep moving, averages over.
    OfflineLevel one;
    one.prompt_tokens = p.input_tokens;
    one.output_tokens = p.output_tokens;
    one.plan.spec = LevelSpec{LoadMode::kConcurrency, 1, 1, 0};
    one.plan.measure = PhaseLimit{0, 1};
    auto single = run_offline_level(cost, cfg, one);
    if (!single.ok() || single->timelines.empty() || !single->timelines[0].ok()) {
      out.error = single.ok() ? "a single request does not run" : single.error();
      return out;
    }
    const int64_t c = p.concurrency;
    const int64_t n = p.requests > 0 ? p.requests : std::max<int64_t>(40, 4 * c);
    const int64_t warm = 2 * c, total = warm + n + c;
    // seed 0: evenly spaced; otherwise random phases from that seed.
    auto spread_over = [&](int64_t cycle_ns, uint64_t seed) {
      std::vector<int64_t> starts;
      std::mt19937_64 rng(seed);
      std::uniform_int_distribution<int64_t> phase(0, cycle_ns - 1);
      for (int64_t i = 0; i < c; ++i) {
        starts.push_back(seed != 0 && i > 0 ? phase(rng) : i * cycle_ns / c);
      }
      std::sort(starts.begin(), starts.end());
      OfflineLevel lv = slotted_level();
      for (int64_t i = 0; i < total; ++i) {
        const int64_t at = i < c ? starts[static_cast<size_t>(i)] : cycle_ns;
        const Phase phase = i < warm       ? Phase::kWarmup
                            : i < warm + n ? Phase::kMeasure
                                           : Phase::kCooldown;
        lv.plan.arrivals.push_back(PlannedArrival{at, phase, i});
      }
      return run_offline_level(cost, cfg, lv);
    };
    auto first = spread_over(std::max<int64_t>(1, single->end_ns), 0);
    if (!first.ok()) {
      out.error = first.error();
      return out;
    }
    std::vector<int64_t> loaded_e2e;
    for (const auto& t : first->timelines) {
      if (t.phase == Phase::kMeasure && t.ok()) loaded_e2e.push_back(t.end_ns - t.send_ns);
    }
    if (loaded_e2e.empty()) {
      out.error = "no measured request of the closed loop finished";
      return out;
    }
    std::nth_element(loaded_e2e.begin(), loaded_e2e.begin() + loaded_e2e.size() / 2,
                     loaded_e2e.end());
    const int64_t cycle_ns = std::max<int64_t>(1, loaded_e2e[loaded_e2e.size() / 2]);
    constexpr int kPhaseDraws = 5;
    for (int draw = 0; draw < kPhaseDraws; ++draw) {
      auto run = spread_over(cycle_ns, 0x5eed'c1c1eULL + static_cast<uint64_t>(draw));
      if (!run.ok()) {
        out.error = run.error();
        return out;
      }
      Measured md;
      md.keep_gaps = m.keep_gaps;
      for (const auto& t : run->timelines) {
        if (t.phase == Phase::kMeasure) collect(t, md);
      }
      if (md.last_end > md.first_send) {
        // The steady-state rate: every token inside the measured window, warm-up and cool-down
        // requests' included (the cool-down ones are cut when the last measured request ends, as
        // the source's requests are at its window's end, and their tokens so far count). The
        // measured requests' own tokens over their span would come out about c / (n + c) low: n
        // requests over c users are sent over n / c cycles and the last ends a cycle later. No
        // source starts spread out (this replay does, to be in steady state), so whichever way
        // the source counted (`tokens_in_window` from a window, or a whole run), the rate to
        // compare is the steady one.
        md.output_tokens = 0;
        for (const auto& t : run->timelines) {
          for (const auto& e : t.token_events) {
            if (e.t_ns >= md.first_send && e.t_ns <= md.last_end) md.output_tokens += 1;
          }
        }
      }
      pool(md, m);
    }
  }
  if (m.ttft_ms.empty()) {
    out.error = "no request produced a token";
    return out;
  }
  std::vector<double> ttft = m.ttft_ms;
  ttft.insert(ttft.end(), static_cast<size_t>(zero_ttft), 0.0);
  const double window_s = m.pooled_window_s > 0
                              ? m.pooled_window_s
                              : static_cast<double>(m.last_end - m.first_send) / 1e9;
  for (const auto& [metric, _] : p.published) {
    switch (metric) {
      case ValidationMetric::kTtft:
        out.predicted[metric] = statistic(ttft, p.median);
        break;
      case ValidationMetric::kTpot:
        out.predicted[metric] = statistic(p.tpot_is_itl ? m.itl_ms : m.tpot_ms, p.median);
        break;
      case ValidationMetric::kOutputThroughput:
        out.predicted[metric] = window_s > 0 ? m.output_tokens / window_s : NAN;
        break;
    }
  }
  return out;
}

ValidationResult run_validation(const std::vector<ValidationPoint>& points,
                                const KnobOverrides& overrides) {
  ValidationResult r;
  for (const auto& p : points) {
    const PointPrediction pred = predict_point(p, overrides);
    if (!pred.error.empty()) {
      r.failures.push_back(p.id + ": " + pred.error);
      continue;
    }
    for (const auto& [metric, measured] : p.published) {
      r.rows.push_back({&p, metric, pred.predicted.at(metric), measured});
    }
  }
  return r;
}

namespace {

// How many times off a prediction is, either way (infinite where the ratio is not finite).
double times_off(double predicted, double measured) {
  const double ratio = std::max(predicted / measured, measured / predicted);
  return std::isfinite(ratio) ? ratio : INFINITY;
}

// Whether a row's point is of the class (every point when none is given).
bool of_class(const ValidationResult::Row& row, std::optional<ModelClass> cls) {
  return !cls || row.point->moe == (*cls == ModelClass::kMoe);
}

}  // namespace

MetricSummary summarize_errors(const std::vector<std::pair<double, double>>& predicted_measured) {
  MetricSummary s;
  std::vector<double> ape;
  for (const auto& [predicted, measured] : predicted_measured) {
    ape.push_back(std::abs(100.0 * (predicted / measured - 1.0)));
    s.worst_ratio = std::max(s.worst_ratio, times_off(predicted, measured));
  }
  s.n = static_cast<int>(ape.size());
  s.median_abs_pct = statistic(ape, true);
  return s;
}

MetricSummary ValidationResult::summary(bool held_out, ValidationMetric m,
                                        std::optional<ModelClass> cls) const {
  std::vector<std::pair<double, double>> pairs;
  for (const auto& row : rows) {
    if (row.point->held_out != held_out || row.metric != m) continue;
    if (!of_class(row, cls)) continue;
    pairs.emplace_back(row.predicted, row.measured);
  }
  return summarize_errors(pairs);
}

std::string accuracy_figures_header(const ValidationResult& r) {
  auto joined = [](const std::set<std::string>& v) {
    std::string out;
    for (const std::string& x : v) out += (out.empty() ? "" : " ") + x;
    return out;
  };
  // One HeldOutFigures per class (and for all points); a metric no held-out point has is n = 0
  // with a median of -1.
  auto figures = [&](const char* name, std::optional<ModelClass> cls) {
    std::set<std::string> held, gpus, engines;
    for (const auto& row : r.rows) {
      if (!of_class(row, cls)) continue;
      if (row.point->held_out) held.insert(row.point->id);
      gpus.insert(row.point->sim_gpu);
      engines.insert(row.point->sim_engine);
    }
    const MetricSummary t = r.summary(true, ValidationMetric::kTtft, cls);
    const MetricSummary p = r.summary(true, ValidationMetric::kTpot, cls);
    const MetricSummary o = r.summary(true, ValidationMetric::kOutputThroughput, cls);
    auto pct = [](const MetricSummary& s) { return s.n > 0 ? s.median_abs_pct : -1.0; };
    const double worst = std::max({t.worst_ratio, p.worst_ratio, o.worst_ratio});
    // Which held-out point and metric that worst ratio is (the first in row order on a tie).
    std::string worst_what;
    for (const auto& row : r.rows) {
      if (!row.point->held_out || !of_class(row, cls)) continue;
      if (worst_what.empty() && times_off(row.predicted, row.measured) >= worst) {
        worst_what = fmt::format("{} of {}", metric_name(row.metric), row.point->id);
      }
    }
    return fmt::format(
        "inline constexpr HeldOutFigures {}{{{}, {}, {:.1f}, {}, {:.1f}, {}, {:.1f}, {:.2f},\n"
        "                                     \"{}\",\n"
        "                                     \"{}\",\n"
        "                                     \"{}\"}};\n",
        name, held.size(), t.n, pct(t), p.n, pct(p), o.n, pct(o), worst, worst_what, joined(gpus),
        joined(engines));
  };
  return "// Generated by `tokperf sim validate --write-figures src/sim/accuracy_figures.h` from\n"
         "// data/validation/ (held-out points only). Do not edit: change the model, regenerate, "
         "and\n"
         "// tests/sim/validation_test.cc checks that these equal the recomputed figures.\n"
         "#pragma once\n\n"
         "namespace tokperf::sim::accuracy {\n\n"
         "// clang-format off\n"
         "// Held-out runs; per metric the points and the median |error| in % (-1: no point); the\n"
         "// worst ratio over the three metrics and which metric of which point it is; the GPUs\n"
         "// and engine presets of the class's points (calibration and held-out), "
         "space-separated.\n"
         "struct HeldOutFigures {\n"
         "  int runs, ttft_n;\n"
         "  double ttft_pct;\n"
         "  int tpot_n;\n"
         "  double tpot_pct;\n"
         "  int output_n;\n"
         "  double output_pct, worst_ratio;\n"
         "  const char* worst;\n"
         "  const char* gpus;\n"
         "  const char* engines;\n"
         "};\n\n" +
         figures("kDense", ModelClass::kDense) + figures("kMoe", ModelClass::kMoe) +
         figures("kAll", std::nullopt) +
         "// clang-format on\n\n}  // namespace tokperf::sim::accuracy\n";
}

namespace {

bool listed(std::string_view list, std::string_view id) {
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(' ', at), list.size());
    if (list.substr(at, end - at) == id) return true;
    at = end + 1;
  }
  return false;
}

const accuracy::HeldOutFigures& figures_of(ModelClass cls) {
  return cls == ModelClass::kMoe ? accuracy::kMoe : accuracy::kDense;
}

}  // namespace

bool in_validated_set(std::string_view gpu_id, std::string_view engine, ModelClass cls) {
  const accuracy::HeldOutFigures& f = figures_of(cls);
  return (gpu_id.empty() || listed(f.gpus, gpu_id)) &&
         (engine.empty() || listed(f.engines, engine));
}

std::string held_out_accuracy_line(std::string_view gpu_id, std::string_view engine,
                                   ModelClass cls) {
  const accuracy::HeldOutFigures& f = figures_of(cls);
  const char* what = cls == ModelClass::kMoe ? "mixture-of-experts" : "dense";
  // Rounded up, so the bound printed is never tighter than the median measured (8.5% is "±9%").
  auto pm = [](int n, double pct) {
    return n > 0 ? fmt::format("±{:.0f}%", std::ceil(pct)) : std::string("(no held-out point)");
  };
  std::string line = fmt::format(
      "accuracy: TTFT typically within {}, TPOT {}, output throughput {} (median |error| on {} "
      "held-out published runs of {} models; worst {:.1f}x off, the {}; docs/SIMULATOR.md)",
      pm(f.ttft_n, f.ttft_pct), pm(f.tpot_n, f.tpot_pct), pm(f.output_n, f.output_pct), f.runs,
      what, std::ceil(f.worst_ratio * 10) / 10, f.worst);
  std::vector<std::string> unvalidated;
  if (!gpu_id.empty() && !listed(f.gpus, gpu_id))
    unvalidated.push_back(fmt::format("GPU '{}'", gpu_id));
  if (!engine.empty() && !listed(f.engines, engine))
    unvalidated.push_back(fmt::format("engine '{}'", engine));
  if (!unvalidated.empty()) {
    line += fmt::format(
        "; but the validation set has no published run of a {} model on {} (its GPUs: {}; "
        "engines: {}), so expect larger errors here",
        what, fmt::join(unvalidated, " or "), f.gpus, f.engines);
  }
  return line;
}

std::string held_out_accuracy_line(const Deployment& d, std::string_view engine) {
  return held_out_accuracy_line(d.gpu.id, engine, model_class_of(d));
}

}  // namespace tokperf::sim
