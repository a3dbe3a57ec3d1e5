#include "support/scripted_server.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <sstream>
#include <unordered_map>

#include "core/clock.h"
#include "net/event_loop.h"
#include "net/http_server.h"

namespace tokperf::testing_support {

namespace {

constexpr int64_t kNsPerMs = 1'000'000;

int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6); }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A deterministic uniform draw in [0, 1) for (seed, request, stream position).
double uniform(uint64_t seed, uint64_t request, uint64_t k) {
  uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ request) ^ k);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

int count_words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int n = 0;
  while (in >> w) ++n;
  return n;
}

// Words of the prompt: chat messages' string contents, or the completions prompt.
int prompt_tokens(const nlohmann::json& body) {
  int n = 0;
  if (body.contains("messages") && body["messages"].is_array()) {
    for (const auto& m : body["messages"]) {
      if (m.contains("content") && m["content"].is_string()) {
        n += count_words(m["content"].get<std::string>());
      }
    }
  } else if (body.contains("prompt")) {
    const auto& p = body["prompt"];
    if (p.is_string()) n = count_words(p.get<std::string>());
    if (p.is_array() && !p.empty() && p[0].is_string()) n = count_words(p[0].get<std::string>());
  }
  return n;
}

std::string token_text(int begin, int count) {
  std::string s;
  for (int i = begin; i < begin + count; ++i) s += "w" + std::to_string(i) + " ";
  return s;
}

}  // namespace

// One planned write of a streaming response.
struct Unit {
  enum Kind { kRole, kToken, kFinish, kUsage, kDone, kComment, kAbort };
  Kind kind;
  int64_t at_ns;
  int token_begin = 0;
  int token_count = 0;
  bool reasoning = false;
  bool malformed = false;
};

// A request being answered (loop thread only).
struct Stream {
  size_t rec = 0;
  uint64_t index = 0;
  int64_t received_ns = 0;
  bool queued = false;
  Script script;
  bool chat = true;
  bool stream = true;
  bool include_usage = false;
  int n_out = 0;
  int n_prompt = 0;
  std::string finish_reason;
  std::shared_ptr<HttpResponse> resp;
  bool holds_slot = false;
  bool done = false;
  uint64_t timer = 0;
  std::vector<Unit> units;
  size_t next_unit = 0;
  int piece = 0;
  std::string pending;
  size_t cuts[2] = {0, 0};
  bool first_tool_event = true;
};

struct ScriptedServer::Impl {
  ScriptedServerOptions opts;
  EventLoop* loop = nullptr;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  std::vector<ScriptedRecord> records;
  std::map<std::string, int> counts;
  size_t finished = 0;

  // Loop thread only.
  int busy_slots = 0;
  std::deque<std::shared_ptr<Stream>> queue;
  std::unordered_map<uint64_t, std::shared_ptr<Stream>> live;

  template <class F>
  void update(size_t rec, F&& f) {
    std::lock_guard<std::mutex> lock(mu);
    f(records[rec]);
  }
  void finish_record(size_t rec, const std::string& outcome, int status) {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto& r = records[rec];
      if (r.finished) return;
      r.finished = true;
      r.outcome = outcome;
      if (status != 0) r.http_status = status;
      counts[outcome]++;
      finished++;
    }
    cv.notify_all();
  }

  void handle(HttpRequest& req, std::shared_ptr<HttpResponse> resp);
  void handle_generate(HttpRequest& req, std::shared_ptr<HttpResponse> resp, size_t rec,
                       uint64_t index, bool chat);
  void begin(const std::shared_ptr<Stream>& s);
  void plan(Stream& s, int64_t start_ns);
  void fire(const std::shared_ptr<Stream>& s);
  void end(const std::shared_ptr<Stream>& s, const std::string& outcome);
  std::string render(const Stream& s, const Unit& u);
  std::string eol(const Stream& s) const;
};

std::string ScriptedServer::Impl::eol(const Stream& s) const {
  switch (s.script.line_ending) {
    case LineEnding::kCrlf:
      return "\r\n";
    case LineEnding::kCr:
      return "\r";
    default:
      return "\n";
  }
}

std::string ScriptedServer::Impl::render(const Stream& s, const Unit& u) {
  const std::string e = eol(s);
  if (u.kind == Unit::kComment) return ": keep-alive" + e;
  if (u.kind == Unit::kDone) return "data: [DONE]" + e + e;
  std::string id = (s.chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.index);
  std::string head = "{\"id\":\"" + id + "\",\"object\":\"" +
                     (s.chat ? "chat.completion.chunk" : "text_completion") +
                     "\",\"created\":1700000000,\"model\":\"" + opts.model_id + "\",\"choices\":";
  std::string json;
  if (u.malformed) {
    json = head + "[{\"index\":0,\"delta\":{\"content\":\"w" + std::to_string(u.token_begin);
  } else if (u.kind == Unit::kUsage) {
    json = head + "[],\"usage\":{\"prompt_tokens\":" + std::to_string(s.n_prompt) +
           ",\"completion_tokens\":" + std::to_string(s.n_out) +
           ",\"total_tokens\":" + std::to_string(s.n_prompt + s.n_out) + "}}";
  } else if (!s.chat) {
    std::string text = u.kind == Unit::kToken ? token_text(u.token_begin, u.token_count) : "";
    std::string fr = u.kind == Unit::kFinish ? "\"" + s.finish_reason + "\"" : "null";
    json = head + "[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":" + fr + "}]}";
  } else {
    std::string delta;
    std::string fr = "null";
    if (u.kind == Unit::kRole) {
      delta = "{\"role\":\"assistant\",\"content\":null}";
    } else if (u.kind == Unit::kFinish) {
      delta = "{}";
      fr = "\"" + s.finish_reason + "\"";
    } else if (u.reasoning) {
      delta = "{\"reasoning_content\":\"" + token_text(u.token_begin, u.token_count) + "\"}";
    } else if (s.script.tool_calls && s.script.tool_json_at >= 0 &&
               u.token_begin > s.script.tool_json_at) {
      delta = "{\"content\":\"" + token_text(u.token_begin, u.token_count) + "\"}";
    } else if (s.script.tool_calls) {
      std::string args = token_text(u.token_begin, u.token_count);
      const int j = s.script.tool_json_at;
      if (j >= 0) {  // {"q": "w0 w1 ... wj "}: opens with the first token, closes at token j
        if (u.token_begin == s.script.reasoning_tokens) args = "{\\\"q\\\": \\\"" + args;
        if (u.token_begin <= j && j < u.token_begin + u.token_count) {
          args += "\\\"}";
        }
      }
      delta =
          u.token_begin == s.script.reasoning_tokens
              ? "{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\",\"type\":\"function\","
                "\"function\":{\"name\":\"lookup\",\"arguments\":\"" +
                    args + "\"}}]}"
              : "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"" + args + "\"}}]}";
    } else {
      delta = "{\"content\":\"" + token_text(u.token_begin, u.token_count) + "\"}";
    }
    json = head + "[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":" + fr + "}]}";
  }
  return "data: " + json + e + e;
}

void ScriptedServer::Impl::plan(Stream& s, int64_t start_ns) {
  const Script& sc = s.script;
  int64_t first_ns = start_ns + ms_to_ns(sc.ttft_ms);
  int n_events = 0;
  std::vector<Unit> tokens;
  auto add_tokens = [&](int begin, int end, bool reasoning) {
    for (int t = begin; t < end; t += sc.tokens_per_chunk) {
      Unit u{Unit::kToken, 0};
      u.token_begin = t;
      u.token_count = std::min(sc.tokens_per_chunk, end - t);
      u.reasoning = reasoning;
      int k = n_events++;
      double jitter =
          sc.jitter_ms > 0 ? (2 * uniform(opts.seed, s.index, k) - 1) * sc.jitter_ms : 0;
      u.at_ns = first_ns + ms_to_ns(k * sc.itl_ms + jitter);
      if (sc.fault == Fault::kStall && k >= sc.fault_at_token) u.at_ns += ms_to_ns(sc.stall_ms);
      u.malformed = sc.fault == Fault::kMalformedJson && k == sc.fault_at_token;
      tokens.push_back(u);
    }
  };
  int n_reasoning = std::min(std::max(sc.reasoning_tokens, 0), s.n_out);
  add_tokens(0, n_reasoning, true);
  add_tokens(n_reasoning, s.n_out, false);

  std::vector<Unit> seq;
  if (s.chat && sc.role == RoleEvent::kEarly) seq.push_back({Unit::kRole, start_ns});
  int64_t last_ns = first_ns;
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (sc.fault == Fault::kDisconnect && static_cast<int>(k) == sc.fault_at_token) break;
    if (k == 0 && s.chat && sc.role == RoleEvent::kWithFirstToken) {
      seq.push_back({Unit::kRole, tokens[0].at_ns});
    }
    seq.push_back(tokens[k]);
    last_ns = tokens[k].at_ns;
  }
  if (sc.fault == Fault::kDisconnect) {
    // The cut comes when token k would have: earlier events had time to reach the client (a reset
    // can discard bytes the peer has not read yet).
    size_t k = static_cast<size_t>(std::max(sc.fault_at_token, 0));
    seq.push_back(
        {Unit::kAbort, k < tokens.size() ? tokens[k].at_ns : last_ns + ms_to_ns(sc.itl_ms)});
  } else {
    seq.push_back({Unit::kFinish, last_ns});
    if (s.include_usage) seq.push_back({Unit::kUsage, last_ns});
    if (sc.send_done) seq.push_back({Unit::kDone, last_ns});
  }
  // Comments before every k-th event; deadlines never go backwards (jitter could reorder them).
  int64_t prev = start_ns;
  int events = 0;
  for (auto& u : seq) {
    u.at_ns = std::max(u.at_ns, prev);
    prev = u.at_ns;
    if (u.kind != Unit::kAbort && sc.comment_every > 0 && ++events % sc.comment_every == 0) {
      s.units.push_back({Unit::kComment, u.at_ns});
    }
    s.units.push_back(u);
  }
}

void ScriptedServer::Impl::fire(const std::shared_ptr<Stream>& s) {
  s->timer = 0;
  const Script& sc = s->script;
  int64_t gap_ns = ms_to_ns(sc.split_gap_ms);
  while (!s->done && s->next_unit < s->units.size()) {
    const Unit& u = s->units[s->next_unit];
    bool split = sc.split_writes && u.kind != Unit::kComment && u.kind != Unit::kAbort;
    int64_t due = split ? u.at_ns - (2 - s->piece) * gap_ns : u.at_ns;
    int64_t now = mono_ns();
    if (due > now) {
      std::weak_ptr<Stream> weak = s;
      s->timer = loop->add_timer_at(due, [this, weak] {
        if (auto st = weak.lock()) fire(st);
      });
      return;
    }
    if (u.kind == Unit::kAbort) {
      s->resp->abort();
      end(s, fault_name(Fault::kDisconnect));
      return;
    }
    bool last_piece = true;
    std::string_view bytes;
    if (split) {
      if (s->piece == 0) {
        s->pending = render(*s, u);
        size_t n = s->pending.size();
        // Cut inside the field name, then inside the final line ending ("\r|\n" for CRLF).
        s->cuts[0] = 3;
        s->cuts[1] = sc.line_ending == LineEnding::kCrlf ? n - 3 : n - 1;
      }
      size_t from = s->piece == 0 ? 0 : s->cuts[s->piece - 1];
      size_t to = s->piece == 2 ? s->pending.size() : s->cuts[s->piece];
      bytes = std::string_view(s->pending).substr(from, to - from);
      last_piece = s->piece == 2;
    } else {
      s->pending = render(*s, u);
      bytes = s->pending;
    }
    int64_t send_ns = mono_ns();
    if (!s->resp->write(bytes)) return;  // peer gone: on_close cleans up
    if (last_piece && u.kind == Unit::kToken) {
      update(s->rec, [&](ScriptedRecord& r) {
        r.token_event_send_ns.push_back(send_ns);
        r.tokens_per_event.push_back(u.token_count);
        r.token_event_due_ns.push_back(u.at_ns);
      });
    }
    if (split && !last_piece) {
      s->piece++;
    } else {
      s->piece = 0;
      s->next_unit++;
    }
  }
  if (s->done) return;
  s->resp->finish();
  end(s, sc.fault == Fault::kNone ? "ok" : fault_name(sc.fault));
}

void ScriptedServer::Impl::end(const std::shared_ptr<Stream>& s, const std::string& outcome) {
  if (s->done) return;
  s->done = true;
  if (s->timer != 0) loop->cancel_timer(s->timer);
  finish_record(s->rec, outcome, 0);
  live.erase(s->index);
  if (s->holds_slot) {
    s->holds_slot = false;
    busy_slots--;
    while (!queue.empty()) {
      auto next = queue.front();
      queue.pop_front();
      if (next->done) continue;
      begin(next);
      break;
    }
  }
}

void ScriptedServer::Impl::begin(const std::shared_ptr<Stream>& s) {
  // Unqueued, the TTFT clock starts when the request was received, as a server's would.
  int64_t start_ns = s->queued ? mono_ns() : s->received_ns;
  s->holds_slot = true;
  busy_slots++;
  update(s->rec, [&](ScriptedRecord& r) { r.service_start_ns = start_ns; });
  if (!s->stream || s->script.fault == Fault::kNonStreaming) {
    // The whole answer at the time its last token would have gone out.
    int n_events = std::max(
        1, (s->n_out + s->script.tokens_per_chunk - 1) / std::max(1, s->script.tokens_per_chunk));
    int64_t at = start_ns + ms_to_ns(s->script.ttft_ms + (n_events - 1) * s->script.itl_ms);
    std::weak_ptr<Stream> weak = s;
    s->timer = loop->add_timer_at(at, [this, weak, at] {
      auto st = weak.lock();
      if (!st || st->done) return;
      st->timer = 0;
      std::string text = token_text(0, st->n_out);
      nlohmann::json choice = {{"index", 0}, {"finish_reason", st->finish_reason}};
      if (st->chat) {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
      } else {
        choice["text"] = text;
      }
      nlohmann::json j = {{"id", (st->chat ? "chatcmpl-" : "cmpl-") + std::to_string(st->index)},
                          {"object", st->chat ? "chat.completion" : "text_completion"},
                          {"created", 1700000000},
                          {"model", opts.model_id},
                          {"choices", nlohmann::json::array({choice})},
                          {"usage",
                           {{"prompt_tokens", st->n_prompt},
                            {"completion_tokens", st->n_out},
                            {"total_tokens", st->n_prompt + st->n_out}}}};
      int64_t send_ns = mono_ns();
      st->resp->reply_json(200, j.dump());
      update(st->rec, [&](ScriptedRecord& r) {
        r.token_event_send_ns.push_back(send_ns);
        r.tokens_per_event.push_back(st->n_out);
        r.token_event_due_ns.push_back(at);
      });
      end(st, st->stream ? fault_name(Fault::kNonStreaming) : "ok");
    });
    return;
  }
  s->resp->start_sse();
  plan(*s, start_ns);
  fire(s);
}

void ScriptedServer::Impl::handle_generate(HttpRequest& req, std::shared_ptr<HttpResponse> resp,
                                           size_t rec, uint64_t index, bool chat) {
  auto s = std::make_shared<Stream>();
  s->rec = rec;
  s->index = index;
  s->chat = chat;
  s->received_ns = req.received_ns;
  s->resp = resp;
  s->script = opts.script;
  s->script.ttft_ms += opts.ttft_growth_ms_per_request * static_cast<double>(index);
  if (auto f = opts.fault_by_index.find(index); f != opts.fault_by_index.end()) {
    s->script.fault = f->second;
  } else if (!opts.fault_fractions.empty()) {
    double u = uniform(opts.seed, index, 0xfa0175ULL), acc = 0;
    for (const auto& [fault, fraction] : opts.fault_fractions) {
      acc += fraction;
      if (u < acc) {
        s->script.fault = fault;
        break;
      }
    }
  }
  auto bad_request = [&](const std::string& message) {
    nlohmann::json err = {{"error", {{"message", message}, {"type", "invalid_request_error"}}}};
    resp->reply_json(400, err.dump());
    finish_record(rec, "bad_request", 400);
  };
  if (const std::string* h = req.header("x-test-script")) {
    auto j = nlohmann::json::parse(*h, nullptr, false);
    Status st =
        j.is_discarded() ? Status(Error{"X-Test-Script is not JSON"}) : s->script.apply_json(j);
    if (!st.ok()) return bad_request(st.error());
  }
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad_request("body is not a JSON object");
  s->stream = body.value("stream", false);
  s->include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                     body["stream_options"].value("include_usage", false);
  int max_tokens = -1;
  if (body.contains("max_tokens") && body["max_tokens"].is_number_integer()) {
    max_tokens = body["max_tokens"].get<int>();
  } else if (body.contains("max_completion_tokens") &&
             body["max_completion_tokens"].is_number_integer()) {
    max_tokens = body["max_completion_tokens"].get<int>();
  }
  bool ignore_eos = body.value("ignore_eos", false);
  s->n_out = s->script.tokens;
  if (max_tokens >= 0) s->n_out = ignore_eos ? max_tokens : std::min(s->script.tokens, max_tokens);
  s->n_prompt = prompt_tokens(body);
  s->finish_reason = s->script.tool_calls && chat                  ? "tool_calls"
                     : (max_tokens >= 0 && s->n_out == max_tokens) ? "length"
                                                                   : "stop";
  update(rec, [&](ScriptedRecord& r) {
    r.stream = s->stream;
    r.output_tokens = s->n_out;
    r.fault = s->script.fault;
  });

  auto error_reply = [&](int status, const char* message, HttpHeaders extra) {
    nlohmann::json err = {{"error", {{"message", message}, {"code", status}}}};
    resp->reply_json(status, err.dump(), extra);
    finish_record(rec, fault_name(s->script.fault), status);
  };
  switch (s->script.fault) {
    case Fault::kHttp500:
      return error_reply(500, "scripted internal error", {});
    case Fault::kHttp429:
      return error_reply(429, "scripted rate limit",
                         {{"Retry-After", std::to_string(s->script.retry_after_s)}});
    case Fault::kHttp401:
      return error_reply(401, "scripted: invalid API key", {});
    case Fault::kHang:
      // Kept until the client goes away; nothing is ever sent.
      live[index] = s;
      resp->on_close([this, index] { live.erase(index); });
      finish_record(rec, fault_name(Fault::kHang), 0);
      return;
    default:
      break;
  }
  update(rec, [&](ScriptedRecord& r) { r.http_status = 200; });
  live[index] = s;
  std::weak_ptr<Stream> weak = s;
  resp->on_close([this, weak] {
    if (auto st = weak.lock()) end(st, "peer_closed");
  });
  if (opts.queue_slots > 0 && busy_slots >= opts.queue_slots) {
    s->queued = true;
    queue.push_back(s);
  } else {
    begin(s);
  }
}

void ScriptedServer::Impl::handle(HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
  size_t rec;
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(mu);
    rec = records.size();
    index = rec;
    ScriptedRecord r;
    r.index = index;
    r.method = req.method;
    r.path = req.path;
    if (const auto* h = req.header("x-request-id")) r.request_id = *h;
    if (const auto* h = req.header("authorization")) r.authorization = *h;
    r.body = nlohmann::json::parse(req.body, nullptr, false);
    if (r.body.is_discarded()) r.body = nullptr;
    r.received_ns = req.received_ns;
    records.push_back(std::move(r));
  }
  const std::string& p = req.path;
  if (req.method == "POST" && (p == "/v1/chat/completions" || p == "/chat/completions")) {
    return handle_generate(req, std::move(resp), rec, index, true);
  }
  if (req.method == "POST" && (p == "/v1/completions" || p == "/completions")) {
    return handle_generate(req, std::move(resp), rec, index, false);
  }
  if (req.method == "GET" && (p == "/v1/models" || p == "/models")) {
    nlohmann::json model = {{"id", opts.model_id},
                            {"object", "model"},
                            {"created", 1700000000},
                            {"owned_by", "tokperf"},
                            {"max_model_len", opts.max_model_len}};
    nlohmann::json j = {{"object", "list"}, {"data", nlohmann::json::array({model})}};
    resp->reply_json(200, j.dump());
    return finish_record(rec, "ok", 200);
  }
  if (req.method == "GET" && p == "/health") {
    resp->start(200, {}, HttpResponse::Mode::kContentLength);
    return finish_record(rec, "ok", 200);
  }
  if (req.method == "POST" && p == "/tokenize" && opts.tokenize_enabled) {
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("prompt") ||
        !body["prompt"].is_string()) {
      resp->reply_json(400, R"({"error":{"message":"expected {\"prompt\": \"...\"}"}})");
      return finish_record(rec, "bad_request", 400);
    }
    std::istringstream in(body["prompt"].get<std::string>());
    std::vector<int> tokens;
    std::string w;
    while (in >> w) {
      uint32_t h = 2166136261u;  // FNV-1a: the same word always gets the same id
      for (unsigned char c : w) h = (h ^ c) * 16777619u;
      tokens.push_back(static_cast<int>(h % 32000));
    }
    nlohmann::json j = {
        {"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", opts.max_model_len}};
    resp->reply_json(200, j.dump());
    return finish_record(rec, "ok", 200);
  }
  resp->reply_json(404, R"({"error":{"message":"not found"}})");
  finish_record(rec, "not_found", 404);
}

// ---- ScriptedServer ----

ScriptedServer::ScriptedServer(ScriptedServerOptions options) : options_(std::move(options)) {}

ScriptedServer::~ScriptedServer() { stop(); }

Status ScriptedServer::start(uint16_t port) {
  if (running_) return Error{"scripted server: already started"};
  loop_ = std::make_unique<EventLoop>();
  impl_ = std::make_unique<Impl>();
  impl_->opts = options_;
  impl_->loop = loop_.get();
  Impl* impl = impl_.get();
  HttpServer::Options http_options;
  http_options.reuse_port = options_.reuse_port;
  http_ = std::make_unique<HttpServer>(
      *loop_,
      [impl](HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
        impl->handle(req, std::move(resp));
      },
      http_options);
  Status st = http_->listen("127.0.0.1", port);
  if (!st.ok()) return st;
  port_ = http_->port();
  running_ = true;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(),
                       "scripted-srv");  // tells profiles the server from the client
    loop_->run();
  });
  return Status::Ok();
}

void ScriptedServer::stop() {
  if (!running_) return;
  running_ = false;
  loop_->post([this] {
    http_->close_all();
    impl_->queue.clear();
    impl_->live.clear();
    loop_->stop();
  });
  thread_.join();
  http_.reset();
  loop_.reset();  // drops pending timers and their captures
}

std::string ScriptedServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::vector<ScriptedRecord> ScriptedServer::records() const {
  if (!impl_) return {};
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->records;
}

size_t ScriptedServer::request_count() const {
  if (!impl_) return 0;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->records.size();
}

std::map<std::string, int> ScriptedServer::counts() const {
  if (!impl_) return {};
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->counts;
}

bool ScriptedServer::wait_finished(size_t n, int64_t timeout_ms) const {
  if (!impl_) return false;
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return impl_->finished >= n; });
}

}  // namespace tokperf::testing_support
