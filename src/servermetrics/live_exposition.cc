#include "servermetrics/live_exposition.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "net/event_loop.h"
#include "net/http_server.h"

namespace tokperf::servermetrics {
namespace {

// Seconds; fine enough for loopback TTFTs, wide enough for queued ones.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
const prometheus::Histogram::BucketBoundaries kItlBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5};
const prometheus::Histogram::BucketBoundaries kLagBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                             0.005,  0.01,    0.05,   0.1,   1};

}  // namespace

struct LiveExposition::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("tokperf_requests_total")
          .Help("Finished requests by outcome (ok, or the error kind)")
          .Register(*registry);
  prometheus::Counter& output_tokens = prometheus::BuildCounter()
                                           .Name("tokperf_output_tokens_total")
                                           .Help("Output tokens received")
                                           .Register(*registry)
                                           .Add({});
  prometheus::Histogram& ttft = prometheus::BuildHistogram()
                                    .Name("tokperf_ttft_seconds")
                                    .Help("Client-side time to first token (send to first token)")
                                    .Register(*registry)
                                    .Add({}, kLatencyBuckets);
  prometheus::Histogram& itl = prometheus::BuildHistogram()
                                   .Name("tokperf_itl_seconds")
                                   .Help("Gaps between consecutive token events")
                                   .Register(*registry)
                                   .Add({}, kItlBuckets);
  prometheus::Histogram& send_lag = prometheus::BuildHistogram()
                                        .Name("tokperf_send_lag_seconds")
                                        .Help("Send time minus intended start (open loop pacing)")
                                        .Register(*registry)
                                        .Add({}, kLagBuckets);
  prometheus::Gauge& in_flight = prometheus::BuildGauge()
                                     .Name("tokperf_in_flight_requests")
                                     .Help("Requests sent and not yet finished")
                                     .Register(*registry)
                                     .Add({});
  prometheus::Gauge& queued = prometheus::BuildGauge()
                                  .Name("tokperf_client_queue_requests")
                                  .Help("Arrivals due but waiting for a free slot")
                                  .Register(*registry)
                                  .Add({});
  prometheus::Gauge& level = prometheus::BuildGauge()
                                 .Name("tokperf_level")
                                 .Help("Index of the load level being run (0-based)")
                                 .Register(*registry)
                                 .Add({});
  EventLoop loop;
  std::unique_ptr<HttpServer> http;
  std::thread thread;
};

LiveExposition::LiveExposition() : impl_(std::make_unique<Impl>()) {}

LiveExposition::~LiveExposition() { stop(); }

std::string LiveExposition::render() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

Status LiveExposition::start(uint16_t port) {
  Impl& m = *impl_;
  m.http = std::make_unique<HttpServer>(
      m.loop, [this](HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
        if (req.method == "GET" && req.path == "/metrics") {
          resp->start(200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                      HttpResponse::Mode::kContentLength, render());
          return;
        }
        resp->start(404, {{"Content-Type", "text/plain"}}, HttpResponse::Mode::kContentLength,
                    "tokperf serves only GET /metrics here\n");
      });
  Status st = m.http->listen("127.0.0.1", port);
  if (!st) {
    m.http.reset();
    return Error{fmt::format("--metrics-port {}: {}", port, st.error())};
  }
  port_ = m.http->port();
  m.thread = std::thread([&m] { m.loop.run(); });
  return Status::Ok();
}

void LiveExposition::stop() {
  Impl& m = *impl_;
  if (!m.thread.joinable()) return;
  m.loop.post([&m] { m.http->close_all(); });
  m.loop.stop();
  m.thread.join();
  m.http.reset();
}

void LiveExposition::record(const RequestTimeline& t, const RequestMetrics& rm) {
  Impl& m = *impl_;
  m.requests.Add({{"outcome", t.ok() ? "ok" : error_kind_name(t.error.kind)}}).Increment();
  if (t.send_ns > 0 && t.intended_ns > 0) {
    m.send_lag.Observe(std::max<double>(0, static_cast<double>(t.send_ns - t.intended_ns) / 1e9));
  }
  if (t.token_events.empty()) return;
  if (t.ok() && std::isfinite(rm.ttft_ms)) m.ttft.Observe(rm.ttft_ms / 1e3);
  if (rm.output_tokens > 0) m.output_tokens.Increment(static_cast<double>(rm.output_tokens));
  // Every gap in one call: one lock per request, not per token.
  std::vector<double> increments(kItlBuckets.size() + 1, 0);
  double sum = 0;
  for (double gap_ms : rm.itl_ms) {
    const double gap = gap_ms / 1e3;
    sum += gap;
    auto it = std::lower_bound(kItlBuckets.begin(), kItlBuckets.end(), gap);
    increments[static_cast<size_t>(it - kItlBuckets.begin())] += 1;
  }
  if (!rm.itl_ms.empty()) m.itl.ObserveMultiple(increments, sum);
}

void LiveExposition::progress(int level, int64_t in_flight, int64_t queued) {
  impl_->level.Set(level);
  impl_->in_flight.Set(static_cast<double>(in_flight));
  impl_->queued.Set(static_cast<double>(queued));
}

}  // namespace tokperf::servermetrics
