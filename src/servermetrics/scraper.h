// Scrapes engines' /metrics while a benchmark measures: a fixed interval on its own thread and its
// own connections, so the measured event loop never waits on a scrape (mark_level_end only queues a
// request and wakes the thread). A baseline before warm-up, a scrape right after each level ends,
// and a final one at stop(). A URL that is down, slow or answers something else (HTML) is recorded
// as failed scrapes with the reason; the benchmark goes on. Definitions: docs/SERVER-METRICS.md.
//
// Thread rules: construct, baseline(), start(), stop() and results from one controlling thread;
// mark_level_end() from any thread (the measured loop) — it never blocks on I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/http_fetch.h"
#include "core/result.h"
#include "servermetrics/server_window.h"

namespace tokperf::servermetrics {

struct ScraperOptions {
  std::vector<std::string> urls;
  int64_t interval_ns = 1'000'000'000;
  int64_t timeout_ns = 5'000'000'000;  // per scrape; a stalled URL only delays later scrapes
};

// One GET of a metrics URL (injectable so tests can stall or fail it).
using MetricsFetcher = std::function<Result<HttpReply>(const std::string& url, int64_t timeout_ns)>;
MetricsFetcher default_metrics_fetcher();

// Turns one reply into a scrape: fails (naming why) on an HTTP error, an HTML page, or a body with
// no readable sample.
Scrape scrape_from_reply(const Result<HttpReply>& reply, int64_t t_ns);

struct UrlSeries {
  std::string url;
  std::vector<Scrape> scrapes;      // in time order; [0] is the baseline
  std::map<int, size_t> level_end;  // level -> index of the scrape taken after it ended
  int64_t failed = 0;
  std::string first_error;
};

class ServerScraper {
 public:
  explicit ServerScraper(ScraperOptions options, MetricsFetcher fetch = default_metrics_fetcher());
  ~ServerScraper();  // stop()s
  ServerScraper(const ServerScraper&) = delete;
  ServerScraper& operator=(const ServerScraper&) = delete;

  // One scrape of every URL on the calling thread: the baseline. Call before start().
  void baseline();
  void start();
  // Any thread, never blocks on a scrape: the next scrape (as soon as the thread is free) is tagged
  // as the end of `level`.
  void mark_level_end(int level);
  // Takes the pending level-end scrape (if any) and a final one, then joins. Idempotent.
  void stop();

  // After stop().
  const std::vector<UrlSeries>& series() const { return series_; }
  // Scrapes attempted so far (any thread; for tests).
  int64_t attempts() const { return attempts_.load(); }

 private:
  void scrape_all(const std::vector<int>& levels);
  void run();

  ScraperOptions options_;
  MetricsFetcher fetch_;
  std::vector<UrlSeries> series_;  // scraper thread while running; controller otherwise
  std::thread thread_;
  std::mutex mu_;  // guards pending_levels_ and stopping_; never held across a fetch
  std::condition_variable cv_;
  std::vector<int> pending_levels_;
  bool stopping_ = false;
  bool running_ = false;
  std::atomic<int64_t> attempts_{0};
};

// The metrics URL next to an OpenAI base URL: scheme://host:port/metrics.
std::string default_metrics_url(const std::string& base_url);

}  // namespace tokperf::servermetrics
