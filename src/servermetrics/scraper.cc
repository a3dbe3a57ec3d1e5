#include "servermetrics/scraper.h"

#include <fmt/format.h>

#include "core/clock.h"

namespace tokperf::servermetrics {

MetricsFetcher default_metrics_fetcher() {
  return [](const std::string& url, int64_t timeout_ns) {
    return http_fetch("GET", url,
                      {"Accept: text/plain;version=0.0.4;q=0.9,"
                       "application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"},
                      {}, timeout_ns);
  };
}

Scrape scrape_from_reply(const Result<HttpReply>& reply, int64_t t_ns) {
  Scrape s;
  s.t_ns = t_ns;
  if (!reply) {
    s.error = reply.error();
    return s;
  }
  const HttpReply& r = *reply;
  if (r.status != 200) {
    s.error = fmt::format("HTTP {} ({})", r.status, body_excerpt(r.body, 120));
    return s;
  }
  size_t first = r.body.find_first_not_of(" \t\r\n");
  const bool html = r.content_type.find("html") != std::string::npos ||
                    (first != std::string::npos && r.body[first] == '<');
  if (html) {
    s.error = fmt::format(
        "the URL answered HTML ({}), not Prometheus text; expected a /metrics "
        "page with lines like 'name{{label=\"v\"}} 1.0'",
        body_excerpt(r.body, 80));
    return s;
  }
  s.data = parse_exposition(r.body);
  if (s.data.samples.empty()) {
    s.error = s.data.bad_lines > 0
                  ? fmt::format("not Prometheus text: {}", s.data.first_error)
                  : std::string(
                        "the page holds no metric samples (is the engine started with "
                        "its metrics enabled, e.g. llama.cpp --metrics?)");
    return s;
  }
  s.ok = true;
  return s;
}

std::string default_metrics_url(const std::string& base_url) {
  const size_t scheme = base_url.find("://");
  const size_t path = base_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return (path == std::string::npos ? base_url : base_url.substr(0, path)) + "/metrics";
}

ServerScraper::ServerScraper(ScraperOptions options, MetricsFetcher fetch)
    : options_(std::move(options)), fetch_(std::move(fetch)) {
  for (const auto& u : options_.urls) series_.push_back(UrlSeries{u, {}, {}, 0, {}});
}

ServerScraper::~ServerScraper() { stop(); }

void ServerScraper::scrape_all(const std::vector<int>& levels) {
  for (UrlSeries& u : series_) {
    const int64_t before = mono_ns();
    attempts_.fetch_add(1);
    auto reply = fetch_(u.url, options_.timeout_ns);
    const int64_t after = mono_ns();
    Scrape s = scrape_from_reply(reply, before + (after - before) / 2);
    if (!s.ok && u.failed++ == 0) u.first_error = s.error;
    u.scrapes.push_back(std::move(s));
    for (int level : levels) u.level_end[level] = u.scrapes.size() - 1;
  }
}

void ServerScraper::baseline() { scrape_all({}); }

void ServerScraper::start() {
  if (running_) return;
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void ServerScraper::mark_level_end(int level) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_levels_.push_back(level);
  }
  cv_.notify_one();
}

void ServerScraper::run() {
  int64_t next = mono_ns() + options_.interval_ns;
  while (true) {
    std::vector<int> levels;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stopping_ && pending_levels_.empty()) {
        const int64_t wait = next - mono_ns();
        if (wait <= 0) break;
        cv_.wait_for(lock, std::chrono::nanoseconds(wait));
      }
      stop = stopping_;
      if (!stop) levels.swap(pending_levels_);  // on stop, stop() takes them with the last scrape
    }
    if (stop) return;  // stop() takes the last scrape on the controlling thread
    scrape_all(levels);
    const int64_t now = mono_ns();
    // A fixed grid; a scrape that overran skips the slots it missed instead of bunching up.
    while (next <= now) next += options_.interval_ns;
  }
}

void ServerScraper::stop() {
  if (!running_) return;
  std::vector<int> levels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
  running_ = false;
  levels.swap(pending_levels_);
  scrape_all(levels);  // the final scrape, tagged with any level end not yet taken
}

}  // namespace tokperf::servermetrics
