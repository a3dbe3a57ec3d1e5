// How exact are tokperf's timestamps under many concurrent streams, and what does each stream event
// cost the client? N streams from a loopback scripted server, each sending one token event every
// --itl-ms; for every event, error = client arrival stamp − the server's send time (both
// CLOCK_MONOTONIC). Measured side by side with a minimal epoll reader that only timestamps reads
// (the floor: what any client on this machine could do). Prints one JSON object per (client, N).
// --rounds R > 1 measures churn: every stream is refilled the moment it ends (a closed loop whose
// streams all start in phase), R requests per slot, as closed-loop users run it; the floor refills
// its connections the same way (keep-alive). --threads T runs tokperf on T event loops (several
// values compare them in one run); the CPU figure is the loop threads' own. --server-cpu and
// --client-cpus pin the scripted server's loop thread and the client's threads (tokperf's loops,
// the floor) to given cores, so that client and server do not share a core. --server-threads K
// starts K scripted servers on one port (SO_REUSEPORT), server i on core --server-cpu + i, so that
// the server side keeps up when many client loops are measured (the N-loop scaling curve).
//
//   stream_timestamp_bench --streams 250,500,1000,2000 --itl-ms 20 --tokens 100
//   stream_timestamp_bench --streams 500,1000 --rounds 4 --threads 1,2
//   stream_timestamp_bench --streams 8000 --rounds 3 --threads 1,2,4,8 --server-threads 6
//       --server-cpu 0 --client-cpus 6-15
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "metrics/stats.h"
#include "support/scripted_server.h"

using namespace tokperf;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

namespace {

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Cores to pin to (empty / -1: leave the threads where the scheduler puts them).
int g_server_cpu = -1;           // the first server's core; server i runs on g_server_cpu + i
std::vector<int> g_client_cpus;  // the client's threads (tokperf's loops, the floor) share these
int g_server_threads = 1;        // scripted servers sharing the port (SO_REUSEPORT), one loop each

void pin_this_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    fmt::print(stderr, "cannot pin to cpus {} (sched_setaffinity failed)\n", fmt::join(cpus, ","));
    std::exit(2);
  }
}

// "3", "8-15" or "1,3,5-7" -> the cores.
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    int lo = std::stoi(part.substr(0, dash));
    int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

// g_server_threads scripted servers on one port (SO_REUSEPORT: the kernel spreads the client's
// connections over them), server i's loop thread on core g_server_cpu + i (threads inherit the
// creator's affinity); then the calling thread, and the client threads it creates, move to the
// client cores.
struct ServerSet {
  std::vector<std::unique_ptr<ScriptedServer>> servers;

  explicit ServerSet(const ScriptedServerOptions& options) {
    cpu_set_t before;
    sched_getaffinity(0, sizeof before, &before);
    uint16_t port = 0;
    for (int i = 0; i < g_server_threads; ++i) {
      ScriptedServerOptions o = options;
      o.reuse_port = g_server_threads > 1;
      servers.push_back(std::make_unique<ScriptedServer>(o));
      if (g_server_cpu >= 0) pin_this_thread({g_server_cpu + i});
      if (!servers.back()->start(port)) std::abort();
      port = servers.back()->port();
    }
    if (!g_client_cpus.empty()) {
      pin_this_thread(g_client_cpus);
    } else {
      sched_setaffinity(0, sizeof before, &before);
    }
  }
  uint16_t port() const { return servers.front()->port(); }
  std::string base_url() const { return servers.front()->base_url(); }
  std::vector<testing_support::ScriptedRecord> records() const {
    std::vector<testing_support::ScriptedRecord> all;
    for (const auto& s : servers) {
      std::vector<testing_support::ScriptedRecord> r = s->records();
      all.insert(all.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
    }
    return all;
  }
  void stop() {
    for (auto& s : servers) s->stop();
  }
};

struct Outcome {
  std::vector<double> err_ms;        // client stamp − server send, per token event
  std::vector<double> first_err_ms;  // the same for each stream's first token event
  // Server send − the script's due time, per matched event: a server that cannot keep up sends
  // late (and so slower than the script), which would make the client's work look lighter.
  std::vector<double> server_lag_ms;
  double cpu_s = 0;  // client thread CPU (tokperf: its loop threads')
  uint64_t events = 0;
  int64_t streams_ok = 0;
  int64_t requests = 0;  // sent (all rounds)
  int loops = 1;
};

ScriptedServerOptions server_options(int tokens, double itl_ms) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 50;
  o.script.itl_ms = itl_ms;
  o.script.tokens = tokens;
  o.tokenize_enabled = false;
  return o;
}

// tokperf's own client: BenchRunner (its HTTP client + SSE parser + classifier + timeline);
// http_client "auto" is the built-in HTTP/1.1 client, "curl" libcurl's multi interface.
Outcome run_tokperf(int streams, int tokens, double itl_ms, int rounds, int threads,
                    const std::string& http_client) {
  ServerSet server(server_options(tokens, itl_ms));
  BenchConfig c;
  c.target.base_url = server.base_url();
  c.target.api = "completions";
  c.target.model = "tokperf-test-model";
  c.target.include_usage = false;
  c.target.http_client = http_client;
  c.prompt.text = "hello";
  c.prompt.output_tokens = tokens;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, double(streams), double(streams), 0}};
  // Default warm-up: one per slot opens every connection; then `rounds` refills per slot.
  c.load.plan.measure = PhaseLimit{0, static_cast<int64_t>(streams) * rounds};
  c.load.progress = false;
  c.load.threads = threads;
  c.run_id = "bench";
  std::vector<RequestTimeline> measured;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt), [&](const RequestTimeline& t) {
    if (t.phase == Phase::kMeasure) measured.push_back(t);
  });
  runner.run();
  Outcome out;
  for (const LoopSelfMeasure& l : runner.self_measure().loops) out.cpu_s += l.cpu_s;
  out.events = runner.self_measure().stream_events;
  out.requests = static_cast<int64_t>(measured.size());
  out.loops = runner.loops();
  std::unordered_map<std::string, const RequestTimeline*> by_id;
  for (const auto& t : measured) by_id[t.request_id] = &t;
  for (const auto& rec : server.records()) {
    auto it = by_id.find(rec.request_id);
    if (it == by_id.end()) continue;
    const RequestTimeline& t = *it->second;
    if (!t.ok() || t.token_events.size() != rec.token_event_send_ns.size()) continue;
    out.streams_ok++;
    for (size_t i = 0; i < t.token_events.size(); ++i) {
      out.err_ms.push_back(ns_to_ms(t.token_events[i].t_ns - rec.token_event_send_ns[i]));
      out.server_lag_ms.push_back(ns_to_ms(rec.token_event_send_ns[i] - rec.token_event_due_ns[i]));
    }
    if (!t.token_events.empty())
      out.first_err_ms.push_back(out.err_ms[out.err_ms.size() - t.token_events.size()]);
  }
  server.stop();
  return out;
}

// The floor: raw sockets, one epoll loop, a timestamp per read and nothing else (counts "\n\n" to
// know which event a read completed). With rounds > 1 each connection sends its next request the
// moment a response ends (keep-alive), as tokperf's closed loop refills its slots.
Outcome run_floor(int streams, int tokens, double itl_ms, int rounds) {
  ServerSet server(server_options(tokens, itl_ms));
  int ep = epoll_create1(0);
  struct Conn {
    int fd;
    int index;
    int round = 0;
    std::string id;
    std::vector<int64_t> stamps;
    int newlines = 0;  // trailing '\n' count carried across reads
    bool in_body = false;
    std::string head;
  };
  std::vector<Conn> conns(streams);
  std::unordered_map<std::string, std::vector<int64_t>> stamps_by_id;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string body = fmt::format(
      R"({{"model":"tokperf-test-model","prompt":"hello","max_tokens":{},"stream":true}})", tokens);
  auto send_request = [&](Conn& c) {
    c.id = fmt::format("floor-{}-{}", c.index, c.round);
    c.stamps.clear();
    c.newlines = 0;
    c.in_body = false;
    c.head.clear();
    std::string req = fmt::format(
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "X-Request-Id: {}\r\nContent-Length: {}\r\n\r\n{}",
        c.id, body.size(), body);
    if (write(c.fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) std::abort();
  };
  double cpu0 = thread_cpu_s();
  for (int i = 0; i < streams; ++i) {
    Conn& c = conns[i];
    c.index = i;
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
    send_request(c);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  }
  int open = streams;
  int64_t requests = streams;
  char buf[65536];
  epoll_event evs[256];
  auto close_conn = [&](Conn& c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    open--;
  };
  while (open > 0) {
    int n = epoll_wait(ep, evs, 256, 5000);
    if (n <= 0) break;
    for (int k = 0; k < n; ++k) {
      Conn& c = conns[evs[k].data.u32];
      ssize_t r = read(c.fd, buf, sizeof buf);
      int64_t now = mono_ns();
      if (r <= 0) {
        close_conn(c);
        continue;
      }
      std::string_view data(buf, r);
      if (!c.in_body) {
        c.head.append(data);
        size_t e = c.head.find("\r\n\r\n");
        if (e == std::string::npos) continue;
        data = std::string_view(buf + r - (c.head.size() - e - 4), c.head.size() - e - 4);
        c.in_body = true;
      }
      for (char ch : data) {
        if (ch == '\n') {
          if (++c.newlines == 2) c.stamps.push_back(now);
        } else if (ch != '\r') {
          c.newlines = 0;
        }
      }
      // The server's terminating zero-length chunk ("0\r\n\r\n") ends the response.
      if (data.size() >= 5 && data.substr(data.size() - 5) == "0\r\n\r\n") {
        stamps_by_id[c.id] = std::move(c.stamps);
        if (++c.round < rounds) {
          send_request(c);
          requests++;
        } else {
          close_conn(c);
        }
      }
    }
  }
  Outcome out;
  out.cpu_s = thread_cpu_s() - cpu0;
  out.requests = requests;
  for (const auto& rec : server.records()) {
    auto it = stamps_by_id.find(rec.request_id);
    if (it == stamps_by_id.end()) continue;
    const std::vector<int64_t>& st = it->second;
    if (st.size() < rec.token_event_send_ns.size()) continue;
    out.streams_ok++;
    for (size_t i = 0; i < rec.token_event_send_ns.size(); ++i) {
      out.err_ms.push_back(ns_to_ms(st[i] - rec.token_event_send_ns[i]));
      out.server_lag_ms.push_back(ns_to_ms(rec.token_event_send_ns[i] - rec.token_event_due_ns[i]));
    }
    if (!rec.token_event_send_ns.empty()) {
      out.first_err_ms.push_back(ns_to_ms(st[0] - rec.token_event_send_ns[0]));
    }
  }
  out.events = 0;
  for (const auto& [id, st] : stamps_by_id) out.events += st.size();
  close(ep);
  server.stop();
  return out;
}

void report(const char* client, int streams, double itl_ms, int rounds, const Outcome& o) {
  DistStats s = compute_dist_stats(o.err_ms);
  DistStats f = compute_dist_stats(o.first_err_ms);
  DistStats lag = compute_dist_stats(o.server_lag_ms);
  nlohmann::json j = {{"client", client},
                      {"streams", streams},
                      {"rounds", rounds},
                      {"loops", o.loops},
                      {"requests", o.requests},
                      {"itl_ms", itl_ms},
                      {"streams_matched", o.streams_ok},
                      {"events", s.count},
                      {"err_p50_ms", s.p50},
                      {"err_p99_ms", s.p99},
                      {"err_max_ms", s.max},
                      {"first_err_p50_ms", f.p50},
                      {"first_err_p99_ms", f.p99},
                      {"cpu_s", o.cpu_s},
                      {"server_lag_p99_ms", lag.p99},
                      {"server_cpu", g_server_cpu},
                      {"server_threads", g_server_threads},
                      {"client_cpus", g_client_cpus},
                      {"cpu_us_per_event", o.events ? o.cpu_s * 1e6 / o.events : 0.0}};
  fmt::print("{}\n", j.dump());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"timestamp error and CPU per stream event: tokperf vs a minimal epoll reader"};
  std::vector<int> streams{250, 1000};
  double itl_ms = 20;
  int tokens = 100;
  std::string clients = "both";
  app.add_option("--streams", streams)->delimiter(',');
  app.add_option("--itl-ms", itl_ms);
  app.add_option("--tokens", tokens);
  app.add_option("--client", clients, "tokperf, floor or both");
  int rounds = 1;
  std::vector<int> threads{1};
  std::vector<std::string> http_clients{"auto"};
  app.add_option("--http-client", http_clients,
                 "tokperf's HTTP client: auto (built-in HTTP/1.1), curl, or a list to compare")
      ->delimiter(',');
  app.add_option("--rounds", rounds, "Requests per stream slot, each refilled as it ends (churn)");
  app.add_option("--threads", threads, "tokperf event loops; a list compares them")->delimiter(',');
  app.add_option("--server-cpu", g_server_cpu,
                 "Pin the scripted server's thread to this core (server i of --server-threads to "
                 "this core + i)");
  std::string client_cpus;
  app.add_option("--client-cpu,--client-cpus", client_cpus,
                 "Pin the client's threads to these cores: 3, 8-15 or 1,3,5-7");
  app.add_option("--server-threads", g_server_threads,
                 "Scripted servers sharing the port (SO_REUSEPORT), one loop thread each")
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  try {
    if (!client_cpus.empty()) g_client_cpus = parse_cpu_list(client_cpus);
  } catch (const std::exception&) {
    fmt::print(stderr, "--client-cpus: '{}' is not a core list (e.g. 3, 8-15 or 1,3,5-7)\n",
               client_cpus);
    return 2;
  }
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  for (int n : streams) {
    if (clients != "floor") {
      for (const std::string& hc : http_clients) {
        for (int t : threads) {
          report(hc == "curl" ? "tokperf-curl" : "tokperf", n, itl_ms, rounds,
                 run_tokperf(n, tokens, itl_ms, rounds, t, hc));
        }
      }
    }
    if (clients != "tokperf")
      report("floor", n, itl_ms, rounds, run_floor(n, tokens, itl_ms, rounds));
  }
  return 0;
}
