#include "sim/sim_server.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <time.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "core/clock.h"
#include "net/event_loop.h"
#include "net/http_server.h"
#include "sim/engine_preset.h"
#include "sim/openai_chunks.h"
#include "sim/protocol_chunks.h"
#include "sim/serving_metrics.h"
#include "sim/sim_text.h"

namespace tokperf::sim {
namespace {

constexpr int64_t kCreatedUnixS = 1700000000;  // fixed, so responses are byte-for-byte repeatable

// The prompt text of a request: chat messages' contents (string, or text parts) joined by
// newlines, or the completions prompt (a string, or the first of a list).
std::string prompt_text(const nlohmann::json& body, bool chat) {
  std::string text;
  if (chat) {
    if (!body.contains("messages") || !body["messages"].is_array()) return text;
    for (const auto& m : body["messages"]) {
      if (!m.is_object() || !m.contains("content")) continue;
      const auto& c = m["content"];
      if (c.is_string()) {
        text += c.get<std::string>();
        text += '\n';
      } else if (c.is_array()) {
        for (const auto& part : c) {
          if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
              part["text"].is_string()) {
            text += part["text"].get<std::string>();
            text += '\n';
          }
        }
      }
    }
    return text;
  }
  if (!body.contains("prompt")) return text;
  const auto& p = body["prompt"];
  if (p.is_string()) return p.get<std::string>();
  if (p.is_array() && !p.empty() && p[0].is_string()) return p[0].get<std::string>();
  return text;
}

// The prompt text of a request in one of the other protocols.
std::string protocol_prompt_text(const nlohmann::json& body, SimProtocol p) {
  switch (p) {
    case SimProtocol::kAnthropic:
    case SimProtocol::kOllamaChat:
      return prompt_text(body, true);
    case SimProtocol::kResponses: {
      if (!body.contains("input")) return "";
      const auto& in = body["input"];
      if (in.is_string()) return in.get<std::string>();
      std::string text;
      if (!in.is_array()) return text;
      for (const auto& m : in) {  // [{role, content: "..." | [{type: input_text, text}]}]
        if (!m.is_object() || !m.contains("content")) continue;
        const auto& c = m["content"];
        if (c.is_string()) text += c.get<std::string>() + "\n";
        if (!c.is_array()) continue;
        for (const auto& part : c) {
          if (part.is_object() && part.contains("text") && part["text"].is_string()) {
            text += part["text"].get<std::string>() + "\n";
          }
        }
      }
      return text;
    }
    case SimProtocol::kOllamaGenerate:
    case SimProtocol::kLlamaCpp:
      return prompt_text(body, false);
    case SimProtocol::kTgi:
      return body.contains("inputs") && body["inputs"].is_string()
                 ? body["inputs"].get<std::string>()
                 : std::string();
  }
  return "";
}

// Where each protocol puts the output-token limit (JSON pointer).
const char* max_tokens_pointer(SimProtocol p) {
  switch (p) {
    case SimProtocol::kAnthropic:
      return "/max_tokens";
    case SimProtocol::kResponses:
      return "/max_output_tokens";
    case SimProtocol::kOllamaChat:
    case SimProtocol::kOllamaGenerate:
      return "/options/num_predict";
    case SimProtocol::kTgi:
      return "/parameters/max_new_tokens";
    case SimProtocol::kLlamaCpp:
      return "/n_predict";
  }
  return "/max_tokens";
}

}  // namespace

// A generation request being answered (loop thread only).
struct Stream {
  Stream(uint64_t id_in, std::shared_ptr<HttpResponse> resp_in, OpenAiChunks chunks_in)
      : id(id_in), resp(std::move(resp_in)), chunks(std::move(chunks_in)) {}
  uint64_t id = 0;
  std::shared_ptr<HttpResponse> resp;
  OpenAiChunks chunks;
  std::optional<ProtocolChunks> protocol;  // set for the non-OpenAI paths
  bool chat = true;
  bool stream = true;
  bool include_usage = false;
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
  int64_t received_ns = 0;
  int64_t first_token_ns = 0;
  int64_t last_token_ns = 0;
  int64_t scheduled_ns = 0;  // from the first token's event
  int64_t tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens the engine found in its prefix cache
  std::string out;            // reused write buffer
  // Chat with `tools`: the reply is one tool call whose arguments JSON is streamed token by token
  // ({"query": "<words>"}), closing with the last token.
  bool tool_call = false;
  std::string tool_name;
};

struct SimServer::Impl {
  SimServer* owner = nullptr;
  EventLoop loop;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<RealtimeDriver> driver;
  ServingMetrics metrics;
  std::unordered_map<uint64_t, std::unique_ptr<Stream>> streams;
  uint64_t next_id = 1;
  int64_t tokens_emitted = 0;
  double loop_cpu_s = 0;
  bool prefix_hashes = true;
  int64_t block_size = 16;

  void handle(HttpRequest& req, std::shared_ptr<HttpResponse> resp);
  void generate(HttpRequest& req, std::shared_ptr<HttpResponse> resp, bool chat,
                std::optional<SimProtocol> protocol = std::nullopt);
  void tokenize(HttpRequest& req, HttpResponse& resp);
  void models(HttpResponse& resp);
  void on_event(Stream& s, const SeqEvent& ev);
  void error(HttpResponse& resp, int status, const std::string& message, const char* type);
};

void SimServer::Impl::error(HttpResponse& resp, int status, const std::string& message,
                            const char* type) {
  nlohmann::json j = {{"object", "error"}, {"message", message}, {"type", type}, {"code", status}};
  resp.reply_json(status, j.dump());
}

void SimServer::Impl::models(HttpResponse& resp) {
  const std::string& m = owner->served_model_;
  nlohmann::json model = {{"id", m},
                          {"object", "model"},
                          {"created", kCreatedUnixS},
                          {"owned_by", "tokperf-sim"},
                          {"root", m},
                          {"max_model_len", owner->max_model_len_}};
  nlohmann::json j = {{"object", "list"}, {"data", nlohmann::json::array({model})}};
  resp.reply_json(200, j.dump());
}

void SimServer::Impl::tokenize(HttpRequest& req, HttpResponse& resp) {
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return error(resp, 400, "body is not a JSON object", "BadRequestError");
  }
  std::string text;
  if (body.contains("prompt") && body["prompt"].is_string()) {
    text = body["prompt"].get<std::string>();
  } else if (body.contains("messages")) {
    text = prompt_text(body, true);
  } else if (body.contains("content") && body["content"].is_string()) {
    text = body["content"].get<std::string>();  // llama.cpp's shape
  } else {
    return error(resp, 400, "expected \"prompt\" (a string) or \"messages\"", "BadRequestError");
  }
  nlohmann::json j = {{"count", count_tokens(text)},
                      {"max_model_len", owner->max_model_len_},
                      {"tokens", sim::tokenize(text)}};
  resp.reply_json(200, j.dump());
}

void SimServer::Impl::generate(HttpRequest& req, std::shared_ptr<HttpResponse> resp, bool chat,
                               std::optional<SimProtocol> protocol) {
  auto reject = [&](int status, const std::string& message, const char* type) {
    owner->counters_.rejected.fetch_add(1, std::memory_order_relaxed);
    error(*resp, status, message, type);
  };
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return reject(400, "body is not a JSON object", "BadRequestError");
  }
  if (body.contains("model") && body["model"].is_string() &&
      body["model"].get<std::string>() != owner->served_model_) {
    return reject(404,
                  fmt::format("The model `{}` does not exist; this server serves `{}`.",
                              body["model"].get<std::string>(), owner->served_model_),
                  "NotFoundError");
  }
  if (protocol) {
    const bool ndjson =
        *protocol == SimProtocol::kOllamaChat || *protocol == SimProtocol::kOllamaGenerate;
    // Ollama streams unless told not to; TGI's /generate_stream always streams.
    const bool streams = *protocol == SimProtocol::kTgi || body.value("stream", ndjson);
    if (!streams) {
      return reject(400, "the simulator answers this path only as a stream; set \"stream\": true",
                    "BadRequestError");
    }
    const bool wants_messages =
        *protocol == SimProtocol::kAnthropic || *protocol == SimProtocol::kOllamaChat;
    if (wants_messages && (!body.contains("messages") || !body["messages"].is_array())) {
      return reject(400, "\"messages\" must be a list of messages", "BadRequestError");
    }
  } else {
    if (chat && (!body.contains("messages") || !body["messages"].is_array())) {
      return reject(400, "\"messages\" must be a list of messages", "BadRequestError");
    }
    if (!chat && !body.contains("prompt"))
      return reject(400, "\"prompt\" is required", "BadRequestError");
  }
  if (body.value("n", 1) != 1) return reject(400, "only n = 1 is simulated", "BadRequestError");

  const std::string text =
      protocol ? protocol_prompt_text(body, *protocol) : prompt_text(body, chat);
  // At least one token: a real chat template or BOS always gives the engine something to prefill.
  const int64_t prompt_tokens = std::max<int64_t>(1, count_tokens(text));
  const int64_t room = owner->max_model_len_ - prompt_tokens;
  int64_t max_tokens = room;
  if (protocol) {
    const nlohmann::json::json_pointer ptr(max_tokens_pointer(*protocol));
    if (body.contains(ptr) && body[ptr].is_number_integer()) max_tokens = body[ptr].get<int64_t>();
  } else {
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
      if (body.contains(key) && body[key].is_number_integer()) {
        max_tokens = body[key].get<int64_t>();
        break;
      }
    }
  }
  if (max_tokens < 1 && room >= 1) {
    return reject(400, "max_tokens must be at least 1", "BadRequestError");
  }
  if (max_tokens > room || room < 1) {
    return reject(
        400,
        fmt::format("This model's maximum context length is {} tokens. However, you "
                    "requested {} tokens ({} in the messages, {} in the completion).",
                    owner->max_model_len_, prompt_tokens + max_tokens, prompt_tokens, max_tokens),
        "BadRequestError");
  }

  const uint64_t id = next_id++;
  auto s = std::make_unique<Stream>(id, resp,
                                    OpenAiChunks(owner->served_model_, chat, id, kCreatedUnixS));
  s->chat = chat;
  s->stream = body.value("stream", false);
  if (protocol) {
    s->protocol.emplace(*protocol, owner->served_model_, id);
    s->stream = true;
  }
  s->include_usage = s->stream && body.contains("stream_options") &&
                     body["stream_options"].is_object() &&
                     body["stream_options"].value("include_usage", false);
  s->prompt_tokens = prompt_tokens;
  s->max_tokens = max_tokens;
  s->received_ns = req.received_ns;
  if (chat && !protocol && body.contains("tools") && body["tools"].is_array() &&
      !body["tools"].empty() && body.value("tool_choice", nlohmann::json("auto")) != "none") {
    const auto& tool = body["tools"][0];
    s->tool_call = true;
    s->tool_name = "tool";
    if (tool.is_object() && tool.contains("function") && tool["function"].is_object() &&
        tool["function"].contains("name") && tool["function"]["name"].is_string()) {
      s->tool_name = tool["function"]["name"].get<std::string>();
    }
    const auto& choice = body.value("tool_choice", nlohmann::json());
    if (choice.is_object() && choice.contains("function") && choice["function"].is_object() &&
        choice["function"].contains("name") && choice["function"]["name"].is_string()) {
      s->tool_name = choice["function"]["name"].get<std::string>();
    }
  }

  SimRequest r;
  r.id = id;
  r.prompt_tokens = prompt_tokens;
  r.max_tokens = max_tokens;
  r.ignore_eos = body.value("ignore_eos", false);
  r.arrival_ns = req.received_ns;
  if (prefix_hashes) r.prefix_block_hashes = prefix_block_hashes(text, block_size);
  Stream* raw = s.get();
  Status st = driver->submit(r, [this, raw](const SeqEvent& ev) { on_event(*raw, ev); });
  if (!st.ok()) return reject(400, st.error(), "BadRequestError");
  owner->counters_.generation_requests.fetch_add(1, std::memory_order_relaxed);
  if (s->protocol) {
    s->resp->start(200,
                   {{"Content-Type", s->protocol->content_type()}, {"Cache-Control", "no-cache"}},
                   HttpResponse::Mode::kChunked);
    s->out.clear();
    s->protocol->begin(s->out, prompt_tokens);
    s->resp->write(s->out);
  } else if (s->stream) {
    s->resp->start_sse();
  }
  resp->on_close([this, id] {
    auto it = streams.find(id);
    if (it == streams.end()) return;
    driver->abort(id);
    ++metrics.aborted;
    owner->counters_.aborted.fetch_add(1, std::memory_order_relaxed);
    streams.erase(it);
  });
  streams.emplace(id, std::move(s));
}

void SimServer::Impl::on_event(Stream& s, const SeqEvent& ev) {
  switch (ev.kind) {
    case SeqEventKind::kPreempted:
      return;
    case SeqEventKind::kFirstToken:
    case SeqEventKind::kToken: {
      if (ev.kind == SeqEventKind::kFirstToken) {
        metrics.ttft_s.observe(static_cast<double>(ev.t_ns - s.received_ns) / 1e9);
        s.first_token_ns = ev.t_ns;
        s.scheduled_ns = std::max(ev.scheduled_ns, s.received_ns);
        s.cached_tokens = ev.cached_tokens;
      } else {
        const double gap_s = static_cast<double>(ev.t_ns - s.last_token_ns) / 1e9;
        metrics.itl_s.observe(gap_s);
        metrics.tpot_s.observe(gap_s);
      }
      s.last_token_ns = ev.t_ns;
      ++metrics.generation_tokens_total;
      ++tokens_emitted;
      const int64_t index = s.tokens++;
      if (!s.stream) return;
      s.out.clear();
      if (s.protocol) {
        s.protocol->token(s.out, filler_token(index), index, s.prompt_tokens);
        s.resp->write(s.out);
        return;
      }
      if (s.tool_call) {
        // The arguments open with the first token and close with the last one max_tokens allows.
        std::string args = index == 0 ? "{\"query\": \"" : "";
        args += filler_token(index);
        if (index + 1 >= s.max_tokens) args += "\"}";
        if (index == 0) {
          s.chunks.tool_call_start(s.out, s.tool_name, args);
        } else {
          s.chunks.tool_call_arguments(s.out, args);
        }
        s.resp->write(s.out);
        return;
      }
      if (index == 0 && s.chat) s.chunks.role(s.out);
      s.chunks.token(s.out, filler_token(index));
      s.resp->write(s.out);  // a peer that is gone is noticed by on_close
      return;
    }
    case SeqEventKind::kFinished: {
      const std::string_view reason = ev.output_tokens >= s.max_tokens ? "length" : "stop";
      ++(reason == "length" ? metrics.success_length : metrics.success_stop);
      metrics.prompt_tokens_total += s.prompt_tokens;
      metrics.e2e_s.observe(static_cast<double>(ev.t_ns - s.received_ns) / 1e9);
      const double queue_ms = static_cast<double>(s.scheduled_ns - s.received_ns) / 1e6;
      const double prefill_ms = static_cast<double>(s.first_token_ns - s.scheduled_ns) / 1e6;
      const double decode_ms = static_cast<double>(ev.t_ns - s.first_token_ns) / 1e6;
      metrics.queue_s.observe(queue_ms / 1e3);
      metrics.prefill_s.observe(prefill_ms / 1e3);
      metrics.decode_s.observe(decode_ms / 1e3);
      metrics.inference_s.observe(static_cast<double>(ev.t_ns - s.scheduled_ns) / 1e9);
      if (s.protocol) {
        StreamTotals t;
        t.prompt_tokens = s.prompt_tokens;
        t.output_tokens = ev.output_tokens;
        t.length = reason == "length";
        if (s.first_token_ns > 0) {
          t.prompt_ms = prefill_ms;  // as llama.cpp and Ollama mean it: the prompt's evaluation
          t.decode_ms = static_cast<double>(s.last_token_ns - s.first_token_ns) / 1e6;
        }
        t.total_ms = static_cast<double>(ev.t_ns - s.received_ns) / 1e6;
        t.cached_tokens = s.cached_tokens;
        s.out.clear();
        s.protocol->end(s.out, t);
        s.resp->write(s.out);
        s.resp->finish();
      } else if (s.stream) {
        s.out.clear();
        // A reply that stopped before max_tokens closes its tool call's arguments now.
        if (s.tool_call && ev.output_tokens > 0 && ev.output_tokens < s.max_tokens) {
          s.chunks.tool_call_arguments(s.out, "\"}");
        }
        s.chunks.finish(s.out, s.tool_call ? "tool_calls" : reason);
        if (s.include_usage) {
          std::string timings;
          if (owner->options_.emit_timings) {
            // llama.cpp's fields (prompt_ms: prefill, predicted_ms: decode) plus queue_ms, which
            // llama.cpp does not report: the simulator's truth for decomposition tests.
            timings = fmt::format(
                R"({{"prompt_n":{},"prompt_ms":{:.3f},"predicted_n":{},"predicted_ms":{:.3f},"queue_ms":{:.3f}}})",
                s.prompt_tokens, prefill_ms, ev.output_tokens, decode_ms, queue_ms);
          }
          s.chunks.usage(s.out, s.prompt_tokens, ev.output_tokens, timings, s.cached_tokens);
        }
        OpenAiChunks::done(s.out);
        s.resp->write(s.out);
        s.resp->finish();
      } else {
        std::string text;
        for (int64_t i = 0; i < ev.output_tokens; ++i) text += filler_token(i);
        s.resp->reply_json(200, s.chunks.whole(text, reason, s.prompt_tokens, ev.output_tokens));
      }
      owner->counters_.finished.fetch_add(1, std::memory_order_relaxed);
      streams.erase(s.id);  // destroys s
      return;
    }
  }
}

void SimServer::Impl::handle(HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
  const std::string& p = req.path;
  if (req.method == "POST" && (p == "/v1/chat/completions" || p == "/chat/completions")) {
    return generate(req, std::move(resp), true);
  }
  if (req.method == "POST" && (p == "/v1/completions" || p == "/completions")) {
    return generate(req, std::move(resp), false);
  }
  if (req.method == "POST") {  // the other protocols, each on its own path
    std::optional<SimProtocol> proto;
    if (p == "/v1/messages" || p == "/messages") proto = SimProtocol::kAnthropic;
    if (p == "/v1/responses" || p == "/responses") proto = SimProtocol::kResponses;
    if (p == "/api/chat") proto = SimProtocol::kOllamaChat;
    if (p == "/api/generate") proto = SimProtocol::kOllamaGenerate;
    if (p == "/generate_stream") proto = SimProtocol::kTgi;
    if (p == "/completion") proto = SimProtocol::kLlamaCpp;
    if (proto) return generate(req, std::move(resp), false, proto);
  }
  if (req.method == "GET" && (p == "/v1/models" || p == "/models")) return models(*resp);
  if (req.method == "POST" && (p == "/tokenize" || p == "/v1/tokenize"))
    return tokenize(req, *resp);
  if (req.method == "GET" && p == "/health") {
    resp->start(200, {}, HttpResponse::Mode::kContentLength);
    return;
  }
  if (req.method == "GET" && p == "/metrics") {
    resp->start(200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                HttpResponse::Mode::kContentLength,
                render_prometheus(metrics, driver->engine_stats(), owner->served_model_));
    return;
  }
  error(*resp, 404, fmt::format("no route for {} {}", req.method, p), "NotFoundError");
}

// ---- SimServer ----

SimServer::SimServer(SimServerOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<SimServer>> SimServer::create(SimServerOptions options) {
  std::unique_ptr<SimServer> s(new SimServer(std::move(options)));
  s->cost_ = std::make_unique<CostModel>(s->options_.deployment, s->options_.knobs);
  const CostModel& cost = *s->cost_;
  if (!cost.fits()) {
    return Error{fmt::format(
        "{} in {} needs {:.1f} GB of weights per GPU; {} x {} cannot hold it (try --tp or --dtype)",
        cost.deployment().model.name, dtype_name(cost.deployment().weight_dtype),
        cost.weight_bytes_per_gpu() / 1e9, cost.deployment().tp, cost.deployment().gpu.name)};
  }
  s->served_model_ =
      s->options_.served_model.empty() ? cost.deployment().model.name : s->options_.served_model;
  const EngineConfig& e = s->options_.engine;
  const int64_t kv_tokens = e.num_blocks > 0
                                ? e.num_blocks * e.block_size
                                : cost.kv_capacity_tokens() / e.block_size * e.block_size;
  const int64_t ctx = cost.deployment().model.max_context;
  s->max_model_len_ = ctx > 0 ? std::min(ctx, kv_tokens) : kv_tokens;
  return s;
}

SimServer::~SimServer() { stop(); }

Status SimServer::start() {
  if (running_) return Error{"sim server: already started"};
  impl_ = std::make_unique<Impl>();
  Impl* impl = impl_.get();
  impl->owner = this;
  impl->prefix_hashes = options_.engine.enable_prefix_caching;
  impl->block_size = options_.engine.block_size;
  impl->driver = std::make_unique<RealtimeDriver>(impl->loop, *cost_, options_.engine);
  impl->http = std::make_unique<HttpServer>(
      impl->loop, [impl](HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
        impl->handle(req, std::move(resp));
      });
  Status st = impl->http->listen(options_.host, options_.port);
  if (!st.ok()) {
    impl_.reset();
    return st;
  }
  port_ = impl->http->port();
  running_ = true;
  thread_ = std::thread([impl] {
    impl->loop.run();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    impl->loop_cpu_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  });
  return Status::Ok();
}

void SimServer::stop() {
  if (!running_) return;
  running_ = false;
  Impl* impl = impl_.get();
  impl->loop.post([impl] {
    impl->http->close_all();
    impl->loop.stop();
  });
  thread_.join();
  // Connections closed by close_all() queue their on_close callbacks on the loop; run them so
  // every request is aborted in the engine (and counted) before the report is read.
  impl->loop.run_once(0);
}

SimServerReport SimServer::report() const {
  SimServerReport r;
  if (!impl_) return r;
  r.lag = impl_->driver->lag();
  r.engine = impl_->driver->engine_stats();
  r.tokens_emitted = impl_->tokens_emitted;
  r.loop_cpu_s = impl_->loop_cpu_s;
  return r;
}

std::string SimServer::base_url() const {
  return fmt::format("http://{}:{}/v1", options_.host, port_);
}

Result<std::unique_ptr<SimServer>> start_sim_target(const DeploymentFlags& flags,
                                                    const std::string& served_model) {
  auto d = resolve_deployment(flags);
  if (!d.ok()) {
    // bench names the model flag --sim-model (its --model is the served id).
    std::string message = d.error();
    if (message.rfind("--model ", 0) == 0) message.insert(2, "sim-");
    return Error{message};
  }
  auto preset = engine_preset(flags, d->gpu, d->tp);
  if (!preset.ok()) return Error{preset.error()};
  SimServerOptions o;
  o.deployment = std::move(d).value();
  o.knobs = preset->knobs;
  o.engine = preset->config;
  o.served_model = served_model;
  if (o.served_model.empty() && flags.model_config.empty()) o.served_model = flags.model;
  auto server = SimServer::create(std::move(o));
  if (!server.ok()) return Error{server.error()};
  Status st = (*server)->start();
  if (!st.ok()) return Error{"simulated target: " + st.error()};
  return std::move(server).value();
}

std::string describe_simulation(const SimServer& server) {
  const CostModel& c = server.cost();
  const Deployment& d = c.deployment();
  // The scheduler as configured (the --engine preset's, with --knob and the flags on top).
  const EngineConfig& e = server.engine_config();
  std::string engine = "engine: continuous batching";
  engine += e.enable_chunked_prefill ? ", chunked prefill" : ", whole prompts";
  if (!e.mixed_batches) engine += ", prefill and decode in separate steps";
  if (e.sglang_admission) engine += ", SGLang admission";
  if (e.overlap_schedule) engine += ", async (overlap) scheduling";
  engine += e.enable_prefix_caching ? ", prefix caching" : ", no prefix cache";
  return fmt::format("{} ({:.1f}B params) in {} on {} x {}, KV cache {} ({} tokens, "
                     "max_model_len {}); {}",
                     d.model.name, c.params().total / 1e9, dtype_name(d.weight_dtype), d.tp,
                     d.gpu.name, dtype_name(d.kv_dtype), c.kv_capacity_tokens(),
                     server.max_model_len(), engine);
}

}  // namespace tokperf::sim
