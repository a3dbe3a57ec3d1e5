// `tokperf bench`: closed-loop load against an OpenAI-compatible streaming endpoint.
// Flags -> BenchConfig (validated once) -> probe the server -> build the prompt -> run -> report.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "client/request_builder.h"
#include "client/server_probe.h"
#include "core/units.h"
#include "load/bench_runner.h"
#include "sim/deployment_cli.h"
#include "sim/sim_server.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

struct BenchFlags {
  std::string url;
  std::string api = "chat";
  std::string model;
  std::string api_key;
  std::vector<std::string> headers;
  std::string extra_body;
  std::string prompt;
  std::string prompt_file;
  int64_t input_tokens = 0;
  bool unique_prompts = false;
  int64_t output_tokens = 256;
  bool ignore_eos = false;
  bool no_usage = false;
  bool http2 = false;
  bool insecure = false;
  std::string concurrency = "1";
  int64_t requests = 100;
  int64_t warmup = -1;
  std::string timeout = "10m";
  std::string duration;
  std::string out_dir;
  bool json = false;
  bool no_progress = false;
  sim::DeploymentFlags sim;  // the built-in simulated target, used when --url is absent
  bool sim_flags_given = false;
};

std::vector<int> parse_concurrency_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto n = parse_count(item);
    if (!n || *n < 1 || *n > 100000) {
      throw UsageError(fmt::format(
          "--concurrency '{}': '{}' is not a whole number from 1 to 100000; expected e.g. 8 or "
          "1,4,8,16",
          text, item));
    }
    out.push_back(static_cast<int>(*n));
  }
  if (out.empty()) throw UsageError("--concurrency is empty; expected e.g. 8 or 1,4,8,16");
  return out;
}

int64_t duration_flag(const std::string& name, const std::string& text) {
  auto d = parse_duration_ns(text);
  if (!d) throw UsageError(fmt::format("{}: {}", name, d.error()));
  return *d;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--prompt-file '{}' cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) throw UsageError(fmt::format("--prompt-file '{}' is empty", path));
  return ss.str();
}

// Turns the flags into a validated config; throws UsageError naming the bad flag.
BenchConfig make_config(const BenchFlags& f) {
  BenchConfig c;
  auto url = normalise_base_url(f.url);
  if (!url) throw UsageError(url.error());
  c.target.base_url = *url;
  if (f.api != "chat" && f.api != "completions") {
    throw UsageError(fmt::format("--api '{}' is not known; accepted: chat, completions", f.api));
  }
  c.target.api = f.api;
  c.target.model = f.model;
  c.target.api_key = f.api_key;
  if (c.target.api_key.empty()) {
    if (const char* env = std::getenv("OPENAI_API_KEY")) c.target.api_key = env;
  }
  for (const auto& h : f.headers) {
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      throw UsageError(fmt::format("--header '{}' is not 'Name: value'", h));
    }
    c.target.headers.push_back(h);
  }
  c.target.extra_body_json = f.extra_body;
  if (!f.extra_body.empty()) {
    // Checked now, before any request, so a typo costs nothing.
    PromptConfig probe;
    probe.text = "x";
    auto b = RequestBuilder::create(c.target, probe);
    if (!b) throw UsageError(b.error());
  }
  c.target.include_usage = !f.no_usage;
  c.target.ignore_eos = f.ignore_eos;
  c.target.http2 = f.http2;
  c.target.verify_tls = !f.insecure;

  int sources = !f.prompt.empty() + !f.prompt_file.empty() + (f.input_tokens > 0);
  if (sources > 1) {
    throw UsageError("give only one of --prompt, --prompt-file and --input-tokens");
  }
  if (f.input_tokens < 0) throw UsageError("--input-tokens must be at least 1");
  if (f.output_tokens < 1) throw UsageError("--output-tokens must be at least 1");
  c.prompt.output_tokens = f.output_tokens;
  c.prompt.unique_prefix = f.unique_prompts;
  if (!f.prompt.empty()) c.prompt.text = f.prompt;
  if (!f.prompt_file.empty()) c.prompt.text = read_file(f.prompt_file);
  c.prompt.input_tokens = f.input_tokens > 0 ? f.input_tokens : -1;

  c.load.concurrency = parse_concurrency_list(f.concurrency);
  if (f.requests < 0) throw UsageError("--requests must be 0 (with --duration) or more");
  c.load.requests = f.requests;
  c.load.warmup = f.warmup;
  c.load.timeout_ns = duration_flag("--timeout", f.timeout);
  if (!f.duration.empty()) {
    c.load.duration_ns = duration_flag("--duration", f.duration);
    if (f.requests == 100) c.load.requests = 0;  // --duration alone: run until it elapses
  }
  if (c.load.requests == 0 && c.load.duration_ns == 0) {
    throw UsageError("--requests 0 needs --duration (otherwise the run would never stop)");
  }
  c.load.progress = !f.no_progress && !f.json && isatty(STDERR_FILENO);
  c.out_dir = f.out_dir;
  std::random_device rd;
  c.run_id = fmt::format("tp{:08x}", rd());
  return c;
}

// Resolves the model and builds the prompt; exits early (Result error) when the server is unreachable.
Result<std::vector<std::string>> prepare(BenchConfig& c, std::vector<std::string>& notes) {
  auto models = list_models(c.target);
  if (!models) return Error{models.error()};
  if (c.target.model.empty()) {
    if (models->empty()) {
      return Error{fmt::format("{}/models lists no model; name one with --model", c.target.base_url)};
    }
    c.target.model = models->front();
  }
  if (c.prompt.text.empty()) {
    int64_t n = c.prompt.input_tokens > 0 ? c.prompt.input_tokens : 128;
    TokenCounter counter;
    auto tok = ServerTokenizer::probe(c.target);
    if (tok) {
      ServerTokenizer t = *tok;
      counter = [t](const std::string& s) { return t.count(s); };
    }
    int64_t reserve = 0;
    if (c.prompt.unique_prefix) {
      auto r = counter ? counter(unique_prefix(0, 0)) : Result<int64_t>(7);
      reserve = r ? *r : 7;
    }
    SyntheticPrompt p = make_synthetic_prompt(n, reserve, counter);
    c.prompt.text = p.text;
    c.prompt.input_tokens = p.tokens + reserve;
    c.prompt.input_tokens_exact = p.exact;
    c.prompt.input_tokens_note = p.note;
    if (!p.exact) notes.push_back("prompt length approximated: " + p.note);
  } else {
    c.prompt.input_tokens_note = "user prompt (length from the server's usage)";
  }
  return *models;
}

int run_bench(BenchFlags& flags) {
  // Without --url: the simulated engine in-process on an ephemeral loopback port, measured through
  // the same HTTP path as a real server (docs/SIMULATOR.md).
  std::unique_ptr<sim::SimServer> simulated;
  if (flags.url.empty()) {
    auto s = sim::start_sim_target(flags.sim, flags.model);
    if (!s) throw UsageError(s.error());
    simulated = std::move(s).value();
    flags.url = simulated->base_url();
    fmt::print(stderr,
               "tokperf: no --url, so benchmarking the built-in simulated engine at {}: {} "
               "(repeated prompts hit its prefix cache, as on vLLM; --unique-prompts avoids it)\n",
               flags.url, sim::describe_simulation(*simulated));
  } else if (flags.sim_flags_given) {
    throw UsageError("--sim-model, --model-config, --gpu, --gpu-spec, --dtype, --kv-dtype and --tp "
                     "describe the simulated target; they cannot be combined with --url");
  }
  BenchConfig config = make_config(flags);
  std::vector<std::string> notes;
  auto ready = prepare(config, notes);
  if (!ready) {
    fmt::print(stderr, "tokperf: {}\n", ready.error());
    return kExitUnreachable;
  }
  return run_bench_load(config, notes, flags.json);
}

}  // namespace

void register_bench_command(CLI::App& app, CommandSet& cmds) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure TTFT, TPOT, ITL and E2E of a streaming endpoint under closed-loop load");
  auto* target = "Target";
  sub->add_option("--url", flags->url,
                  "Base URL of an OpenAI-compatible server (with or without /v1); without it, the "
                  "built-in simulated engine is started and measured")
      ->group(target);
  sub->add_option("--api", flags->api, "chat (POST /chat/completions) or completions")
      ->capture_default_str()->group(target);
  sub->add_option("--model", flags->model, "Model id (default: the first id from GET /models)")
      ->group(target);
  sub->add_option("--api-key", flags->api_key,
                  "Bearer token (default: $OPENAI_API_KEY); never printed or written")
      ->group(target);
  sub->add_option("--header", flags->headers, "Extra header 'Name: value' (repeatable)")->group(target);
  sub->add_option("--extra-body", flags->extra_body,
                  "JSON object merged into every request body, e.g. '{\"temperature\": 0}'")
      ->group(target);
  sub->add_flag("--no-usage", flags->no_usage,
                "Do not send stream_options.include_usage (for servers that reject it)")
      ->group(target);
  sub->add_flag("--http2", flags->http2, "Use HTTP/2")->group(target);
  sub->add_flag("--insecure", flags->insecure, "Do not verify TLS certificates")->group(target);
  auto* prompt = "Prompt";
  sub->add_option("--prompt", flags->prompt, "Prompt text sent by every request")->group(prompt);
  sub->add_option("--prompt-file", flags->prompt_file, "Read the prompt from a file")->group(prompt);
  sub->add_option("--input-tokens", flags->input_tokens,
                  "Synthetic prompt of N tokens (exact where the server has /tokenize; default 128)")
      ->group(prompt);
  sub->add_flag("--unique-prompts", flags->unique_prompts,
                "Start each prompt with a per-request nonce so no prefix cache can serve it")
      ->group(prompt);
  sub->add_option("--output-tokens", flags->output_tokens, "max_tokens of every request")
      ->capture_default_str()->group(prompt);
  sub->add_flag("--ignore-eos", flags->ignore_eos,
                "Ask the server to generate exactly --output-tokens (ignore_eos)")
      ->group(prompt);
  auto* load = "Load";
  sub->add_option("--concurrency,-c", flags->concurrency,
                  "Requests in flight (closed loop); a list runs one level each: 1,4,8,16")
      ->capture_default_str()->group(load);
  sub->add_option("--requests,-n", flags->requests, "Measured requests per level")
      ->capture_default_str()->group(load);
  sub->add_option("--warmup", flags->warmup,
                  "Warm-up requests per level, excluded from statistics (default: one per slot)")
      ->group(load);
  sub->add_option("--duration", flags->duration,
                  "Stop starting measured requests after this long (e.g. 30s, 5m)")
      ->group(load);
  sub->add_option("--timeout", flags->timeout, "Per-request timeout")->capture_default_str()->group(load);
  auto* out = "Output";
  sub->add_option("--out", flags->out_dir, "Write summary.json and requests.jsonl into this folder")
      ->group(out);
  sub->add_flag("--json", flags->json, "Print summary.json to stdout (the table goes to stderr)")
      ->group(out);
  sub->add_flag("--no-progress", flags->no_progress, "No live progress line")->group(out);
  sim::add_deployment_flags(*sub, flags->sim, "--sim-model", "Simulated target (without --url)");
  cmds.add(sub, [flags, sub] {
    flags->sim_flags_given = sim::deployment_flags_given(*sub, "--sim-model");
    return run_bench(*flags);
  });
}

}  // namespace tokperf
