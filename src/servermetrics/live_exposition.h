// tokperf's own live metrics in Prometheus format (--metrics-port), so a long soak can be watched
// in Grafana: requests by outcome, TTFT/ITL/send-lag histograms, in flight, the current level.
// Built on prometheus-cpp's registry (Debian prometheus-cpp-dev), served by the project's HTTP
// server on its own loop thread (127.0.0.1:PORT/metrics). Names: docs/SERVER-METRICS.md.
//
// Thread rules: record()/progress() from the measured loop thread (one histogram lock per finished
// request, none per token); start()/stop() from the controlling thread; scrapes on the server's own
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "metrics/request_record.h"

namespace tokperf::servermetrics {

class LiveExposition {
 public:
  LiveExposition();
  ~LiveExposition();  // stop()s
  LiveExposition(const LiveExposition&) = delete;
  LiveExposition& operator=(const LiveExposition&) = delete;

  // Binds 127.0.0.1:port (0: ephemeral) and serves GET /metrics on a thread of its own.
  Status start(uint16_t port);
  void stop();
  uint16_t port() const { return port_; }

  // One finished request, with the metrics computed once for it by the caller.
  void record(const RequestTimeline& t, const RequestMetrics& m);
  void progress(int level, int64_t in_flight, int64_t queued);

  // The exposition text (what GET /metrics answers).
  std::string render() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace tokperf::servermetrics
