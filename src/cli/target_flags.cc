#include "cli/target_flags.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "client/openai_adapter.h"
#include "client/request_builder.h"
#include "client/server_probe.h"
#include "client/tool_call.h"
#include "client/usage_probe.h"
#include "workload/length_dist.h"
#include "workload/prompt.h"

namespace tokperf {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--prompt-file '{}' cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) throw UsageError(fmt::format("--prompt-file '{}' is empty", path));
  return ss.str();
}

}  // namespace

void add_target_flags(CLI::App* sub, TargetFlags& f) {
  auto* target = "Target";
  sub->add_option("--url,--base-url", f.url,
                  "Base URL of an OpenAI-compatible server (with or without /v1); without it, "
                  "the built-in simulated engine (see --sim-model, --gpu)")
      ->group(target);
  sub->add_option("--api", f.api,
                  "Protocol: chat (POST /v1/chat/completions), completions, anthropic "
                  "(/v1/messages), responses (/v1/responses), ollama (/api/chat), ollama-generate "
                  "(/api/generate), tgi (/generate_stream), llamacpp (/completion), or auto (probe "
                  "the server once)")
      ->capture_default_str()
      ->group(target);
  sub->add_option("--model", f.model, "Model id (default: the first id from GET /models)")
      ->group(target);
  sub->add_option("--api-key", f.api_key,
                  "API key (default: $OPENAI_API_KEY; $ANTHROPIC_API_KEY with --api anthropic); "
                  "never printed or written")
      ->group(target);
  sub->add_option("--header", f.headers, "Extra header 'Name: value' (repeatable)")->group(target);
  sub->add_option("--extra-body", f.extra_body,
                  "JSON object merged into every request body, e.g. '{\"temperature\": 0}'")
      ->group(target);
  sub->add_flag("--no-usage", f.no_usage,
                "Do not send stream_options.include_usage (for servers that reject it)")
      ->group(target);
  sub->add_flag("--http2", f.http2, "Use HTTP/2")->group(target);
  sub->add_option("--http-client", f.http_client,
                  "auto: tokperf's own HTTP/1.1 client for http:// URLs (no proxy set, no "
                  "--http2), libcurl for https, HTTP/2 and proxies; curl: libcurl for every "
                  "request")
      ->capture_default_str()
      ->group(target);
  sub->add_flag("--insecure", f.insecure, "Do not verify TLS certificates")->group(target);
  auto* prompt = "Prompt";
  sub->add_option("--prompt", f.prompt, "Prompt text sent by every request")->group(prompt);
  sub->add_option("--prompt-file", f.prompt_file, "Read the prompt from a file")->group(prompt);
  sub->add_option("--input-tokens", f.input_tokens,
                  "Synthetic prompt of N tokens (exact where the server has /tokenize; default "
                  "128), or a distribution: uniform:A..B, normal:MEAN,SD, lognormal:MEAN,SD, "
                  "hist:FILE")
      ->group(prompt);
  sub->add_flag("--unique-prompts", f.unique_prompts,
                "Start each prompt with a per-request nonce so no prefix cache can serve it")
      ->group(prompt);
  sub->add_option("--output-tokens", f.output_tokens,
                  "max_tokens of every request (default 256), or a distribution as --input-tokens")
      ->group(prompt);
  sub->add_option("--tools", f.tools,
                  "Agent tool calls: a JSON file holding an array of OpenAI tool definitions, "
                  "sent as `tools`; the prompt asks to call the first; tool_call_ms is recorded")
      ->group(prompt);
  sub->add_option("--tool-choice", f.tool_choice,
                  "With --tools: auto, required, none, or a tool's name (default: not sent)")
      ->group(prompt);
  sub->add_option("--tokenizer", f.tokenizer,
                  "Count prompt tokens offline where the server has no /tokenize: a Hugging Face "
                  "tokenizer.json (byte-level BPE: Llama-3, Qwen, GPT-4o), a SentencePiece "
                  ".model, or a model folder holding one (docs/TOKENIZERS.md)")
      ->group(prompt);
  sub->add_flag("--no-calibrate", f.no_calibrate,
                "Without /tokenize or --tokenizer, approximate prompt lengths (1.25 tokens/word) "
                "instead of sizing them by probe requests' usage.prompt_tokens")
      ->group(prompt);
  sub->add_flag("--ignore-eos", f.ignore_eos,
                "Ask the server to generate exactly --output-tokens (ignore_eos)")
      ->group(prompt);
}

void apply_target_flags(const TargetFlags& f, BenchConfig& c) {
  auto url = normalise_base_url(f.url.empty() ? "http://127.0.0.1" : f.url);
  if (!url) throw UsageError(url.error());
  c.target.base_url = *url;
  if (f.api != "auto" && !parse_api_kind(f.api)) {
    throw UsageError(
        fmt::format("--api '{}' is not known; accepted: {}, auto", f.api, api_kind_names()));
  }
  c.target.api = f.api;
  c.target.model = f.model;
  c.target.api_key = f.api_key;
  if (c.target.api_key.empty() && f.api == "anthropic") {
    if (const char* env = std::getenv("ANTHROPIC_API_KEY")) c.target.api_key = env;
  }
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
    TargetConfig t = c.target;
    if (t.api == "auto") t.api = "chat";
    auto b = RequestBuilder::create(t, probe);
    if (!b) throw UsageError(b.error());
  }
  c.target.include_usage = !f.no_usage;
  c.target.ignore_eos = f.ignore_eos;
  c.target.http2 = f.http2;
  if (f.http_client != "auto" && f.http_client != "curl") {
    throw UsageError(
        fmt::format("--http-client '{}' is not known; accepted: auto, curl", f.http_client));
  }
  c.target.http_client = f.http_client;
  c.target.verify_tls = !f.insecure;

  int sources = !f.prompt.empty() + !f.prompt_file.empty() + !f.input_tokens.empty();
  if (sources > 1) {
    throw UsageError("give only one of --prompt, --prompt-file and --input-tokens");
  }
  // Distributions are checked here too; the workload (cli/workload_flags.h) draws from them.
  int64_t output_tokens = 256, input_tokens = -1;
  if (!f.output_tokens.empty()) {
    auto d = LengthDist::parse(f.output_tokens, "--output-tokens");
    if (!d) throw UsageError(d.error());
    output_tokens = std::max<int64_t>(1, std::llround(d->mean()));
  }
  if (!f.input_tokens.empty()) {
    auto d = LengthDist::parse(f.input_tokens, "--input-tokens");
    if (!d) throw UsageError(d.error());
    if (d->is_fixed()) input_tokens = std::llround(d->mean());
  }
  c.prompt.output_tokens = output_tokens;
  c.prompt.unique_prefix = f.unique_prompts;
  if (!f.prompt.empty()) c.prompt.text = f.prompt;
  if (!f.prompt_file.empty()) c.prompt.text = read_file(f.prompt_file);
  c.prompt.input_tokens = input_tokens;
  if (!f.tool_choice.empty() && f.tools.empty()) throw UsageError("--tool-choice needs --tools");
  if (!f.tools.empty()) {
    auto tools = load_tools_file(f.tools);
    if (!tools) throw UsageError(tools.error());
    if (f.api != "auto") {
      auto tb = tools_for_api(*tools, f.tool_choice, *parse_api_kind(f.api));
      if (!tb) throw UsageError(tb.error());
    }
    c.target.tools_json = tools->dump();
    c.target.tool_choice = f.tool_choice;
  }

  if (!f.tokenizer.empty()) c.tokenizer = load_tokenizer_flag(f.tokenizer);
  c.calibrate_lengths = !f.no_calibrate;

  std::random_device rd;
  c.run_id = fmt::format("tp{:08x}", rd());
}

std::shared_ptr<const Tokenizer> load_tokenizer_flag(const std::string& path) {
  auto t = load_tokenizer(path);
  if (!t) throw UsageError("--tokenizer: " + t.error());
  return std::shared_ptr<const Tokenizer>(std::move(*t));
}

namespace {

// What sizes the run's prompts: the first that works of the server's /tokenize, --tokenizer, the
// server's usage (probe requests), nothing (the 1.25 tokens/word estimate).
struct LengthSource {
  TokenCounter counter;  // empty: approximate
  LengthMethod method = LengthMethod::kApproximate;
  std::string how;             // names the counter in notes
  bool counts_template = false;  // usage: the count includes what the server adds to the text
  std::shared_ptr<UsageCounter> usage;
};

// allow_usage: probe requests may be sent (not for datasets that bring their own text).
LengthSource choose_length_source(BenchConfig& c, std::vector<std::string>& notes,
                                  bool allow_usage) {
  LengthSource src;
  if (auto tok = ServerTokenizer::probe(c.target); tok) {
    ServerTokenizer t = *tok;
    src.counter = [t](const std::string& s) { return t.count(s); };
    src.method = LengthMethod::kServerTokenize;
    src.how = "the server's /tokenize";
    if (c.tokenizer) {
      notes.push_back(fmt::format("prompt lengths counted by {}; --tokenizer {} was not needed",
                                  t.endpoint(), c.tokenizer->name()));
    }
  } else if (c.tokenizer) {
    std::shared_ptr<const Tokenizer> t = c.tokenizer;
    src.counter = [t](const std::string& s) { return t->count(s); };
    src.method = LengthMethod::kTokenizer;
    src.how = "tokenizer " + t->name();
    c.prompt.tokenizer_name = t->name();
  } else if (c.calibrate_lengths && allow_usage) {
    auto u = UsageCounter::probe(c.target);
    if (u) {
      auto usage = std::make_shared<UsageCounter>(std::move(*u));
      src.counter = [usage](const std::string& s) { return usage->count(s); };
      src.method = LengthMethod::kUsageCalibrated;
      src.how = "the server's usage.prompt_tokens";
      src.counts_template = true;
      src.usage = usage;
    } else {
      notes.push_back("no /tokenize, no --tokenizer, and usage calibration failed (" + u.error() +
                      "): prompt lengths approximated");
    }
  }
  c.prompt.input_tokens_method = src.method;
  return src;
}

void note_probe_requests(const LengthSource& src, std::vector<std::string>& notes) {
  if (!src.usage) return;
  notes.push_back(fmt::format(
      "no /tokenize and no --tokenizer: prompt lengths calibrated from the server's "
      "usage.prompt_tokens ({} probe requests with max_tokens 1, sent before the run; the count "
      "includes the server's chat template)",
      src.usage->requests()));
}

}  // namespace

// Trace entries that give a length get a synthetic prompt of that length (one per distinct length).
static Status build_trace_prompts(BenchConfig& c, const LengthSource& src,
                                  std::vector<std::string>& notes) {
  if (c.load.trace.empty()) return Status::Ok();
  std::map<int64_t, std::string> by_length;
  bool approximated = false;
  // Probe requests are too dear for a search per distinct length: with usage, one slope (tokens
  // per word, and the server's fixed overhead) sizes them all.
  double tpw = 0, overhead = 0;
  if (src.counts_template) {
    constexpr int64_t kWords = 1000;
    auto a = src.counter(paragraph_words(kWords)), b = src.counter(paragraph_words(2 * kWords));
    if (a && b && *b > *a) {
      tpw = static_cast<double>(*b - *a) / kWords;
      overhead = static_cast<double>(*a) - tpw * kWords;
    }
  }
  for (auto& e : c.load.trace) {
    if (!e.prompt.empty() || e.input_tokens <= 0) continue;
    auto it = by_length.find(e.input_tokens);
    if (it == by_length.end() && src.counts_template) {
      const double want = static_cast<double>(e.input_tokens) - overhead;
      const int64_t words =
          tpw > 0 ? std::max<int64_t>(1, std::llround(want / tpw))
                  : std::max<int64_t>(1, std::llround(want / kApproxTokensPerWord));
      approximated = true;
      it = by_length.emplace(e.input_tokens, paragraph_words(words)).first;
    }
    if (it == by_length.end()) {
      SyntheticPrompt p = make_synthetic_prompt(e.input_tokens, 0, src.counter, src.how);
      if (p.unreachable) {
        return Error{fmt::format("trace line {} asks for {} prompt tokens; {}", e.line,
                                 e.input_tokens, p.note)};
      }
      approximated |= !p.exact;
      it = by_length.emplace(e.input_tokens, p.text).first;
    }
    e.prompt = it->second;
  }
  if (approximated && src.counts_template) {
    notes.push_back(fmt::format("trace prompt lengths sized at {:.3f} tokens per word plus {:.0f} "
                                "tokens of template, measured from the server's usage",
                                tpw, overhead));
  } else if (approximated) {
    notes.push_back("trace prompt lengths approximated (no tokenizer)");
  }
  return Status::Ok();
}

void check_sessions_api(const BenchConfig& c) {
  if (!c.load.sessions.active()) return;
  auto api = parse_api_kind(c.target.api);
  if (api && !api_supports_messages(*api)) {
    throw UsageError(fmt::format(
        "--turns sends each turn with the conversation so far, which needs a chat-style API; "
        "--api {} sends a bare prompt. Use --api chat, anthropic, responses or ollama",
        c.target.api));
  }
}

// The instruction that asks the model to call the first tool (--tools with a synthetic prompt).
static std::string tool_instruction(const BenchConfig& c) {
  if (c.target.tools_json.empty()) return "";
  auto tools = nlohmann::json::parse(c.target.tools_json, nullptr, false);
  return fmt::format("Call the function {} with arguments drawn from the following text. ",
                     first_tool_name(tools));
}

// Resolves the model and builds the prompt; exits early (Result error) when the server is unreachable.
Result<std::vector<std::string>> prepare_target(BenchConfig& c, std::vector<std::string>& notes) {
  if (c.target.api == "auto") {
    auto d = detect_api(c.target);
    if (!d) return Error{d.error()};
    c.target.api = d->api;
    const std::string said = fmt::format("--api auto chose {}: {}", d->api, d->reason);
    fmt::print(stderr, "tokperf: {}\n", said);
    notes.push_back(said);
  }
  auto models = list_models(c.target);
  if (!models) return Error{models.error()};
  if (c.target.model.empty()) {
    if (models->empty() && (c.target.api == "tgi" || c.target.api == "llamacpp")) {
      // These endpoints serve the one loaded model and take no model name.
    } else if (models->empty()) {
      return Error{fmt::format("{}/models lists no model; name one with --model", c.target.base_url)};
    }
    if (!models->empty()) c.target.model = models->front();
  }
  const bool synthetic = c.workload || c.prompt.text.empty() || !c.load.trace.empty();
  LengthSource src;
  if (synthetic) {
    src = choose_length_source(c, notes, !c.workload || c.workload->generates_text());
  }
  if (c.workload) {
    // Per-request prompts: size generated text with the counter; count dataset prompts with a
    // local tokenizer (one /tokenize or probe request per entry would cost too much).
    if (src.counter) c.workload->calibrate(src.counter, src.how, src.counts_template);
    if (src.method == LengthMethod::kTokenizer) c.workload->count_dataset(src.counter, src.how);
    if (!c.workload->generates_text() && src.method != LengthMethod::kTokenizer) {
      c.prompt.input_tokens_method = LengthMethod::kApproximate;  // the file's text, estimated
    }
    note_probe_requests(src, notes);
    const PhaseLimit& m = c.load.plan.measure;
    const int64_t planned =
        m.requests > 0 ? m.requests * static_cast<int64_t>(c.load.plan.levels.size()) : -1;
    for (std::string& n : c.workload->notes(planned)) notes.push_back(std::move(n));
    c.prompt.input_tokens_note = c.workload->describe();
    return *models;
  }
  if (c.prompt.text.empty()) {
    int64_t n = c.prompt.input_tokens > 0 ? c.prompt.input_tokens : 128;
    const TokenCounter& counter = src.counter;
    // With --tools the prompt starts by asking for the call; its tokens count in the length.
    const std::string instruction = tool_instruction(c);
    SyntheticPrompt p;
    int64_t reserve = 0, instruction_tokens = 0;
    if (src.counts_template) {
      // The server's count covers the whole request: measure the prompt as sent (the per-request
      // prefix of seq 0 standing for all, whose counts are near-constant, and the instruction).
      const std::string head = (c.prompt.unique_prefix ? unique_prefix(0, 0) : "") + instruction;
      TokenCounter whole = [&](const std::string& s) { return counter(head + s); };
      p = make_synthetic_prompt(n, 0, whole, src.how);
    } else {
      if (c.prompt.unique_prefix) {
        auto r = counter ? counter(unique_prefix(0, 0)) : Result<int64_t>(7);
        reserve = r ? *r : 7;
      }
      if (!instruction.empty()) {
        auto r = counter ? counter(instruction)
                         : Result<int64_t>(static_cast<int64_t>(instruction.size() / 4));
        instruction_tokens = r ? *r : 0;
      }
      p = make_synthetic_prompt(std::max<int64_t>(1, n - instruction_tokens), reserve, counter,
                                src.how);
    }
    if (p.unreachable) {
      // A flag the tokenizer cannot satisfy: a usage error (exit 2), not an unreachable server.
      const int64_t extra = reserve + instruction_tokens;
      throw UsageError(fmt::format(
          "--input-tokens {} cannot be reached: {}{}; accepted: --input-tokens of at least {}", n,
          p.note,
          extra > 0 ? fmt::format(" after {} tokens of per-request prefix and tool instruction",
                                  extra)
                    : "",
          p.tokens + extra));
    }
    c.prompt.text = instruction + p.text;
    c.prompt.input_tokens = p.tokens + reserve + instruction_tokens;
    c.prompt.input_tokens_exact = p.exact;
    c.prompt.input_tokens_note = p.note;
    if (!p.exact) c.prompt.input_tokens_method = LengthMethod::kApproximate;
    note_probe_requests(src, notes);
    if (!p.exact) notes.push_back("prompt length approximated: " + p.note);
  } else {
    c.prompt.input_tokens_note = "user prompt (length from the server's usage)";
  }
  if (Status s = build_trace_prompts(c, src, notes); !s) throw UsageError(s.error());
  check_sessions_api(c);
  return *models;
}

}  // namespace tokperf
