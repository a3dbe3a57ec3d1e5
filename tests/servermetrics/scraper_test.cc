#include "servermetrics/scraper.h"

#include <chrono>
#include <future>
#include <mutex>

#include <gtest/gtest.h>

namespace tokperf::servermetrics {
namespace {

HttpReply text_reply(std::string body) {
  return HttpReply{200, "text/plain; version=0.0.4", std::move(body)};
}

TEST(Scraper, RepliesBecomeScrapesOrReasons) {
  Scrape ok = scrape_from_reply(text_reply("x_total 3\n"), 5);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.t_ns, 5);
  Scrape html = scrape_from_reply(HttpReply{200, "text/html", "<html>hi</html>"}, 1);
  EXPECT_FALSE(html.ok);
  EXPECT_NE(html.error.find("HTML"), std::string::npos) << html.error;
  Scrape html_untyped = scrape_from_reply(HttpReply{200, "", "\n <!doctype html>"}, 1);
  EXPECT_NE(html_untyped.error.find("HTML"), std::string::npos) << html_untyped.error;
  Scrape status = scrape_from_reply(HttpReply{404, "text/plain", "no route"}, 1);
  EXPECT_NE(status.error.find("HTTP 404"), std::string::npos) << status.error;
  Scrape down = scrape_from_reply(Result<HttpReply>(Error{"connect refused"}), 1);
  EXPECT_EQ(down.error, "connect refused");
  Scrape empty = scrape_from_reply(text_reply("# just a comment\n"), 1);
  EXPECT_NE(empty.error.find("no metric samples"), std::string::npos) << empty.error;
  Scrape junk = scrape_from_reply(text_reply("{\"json\": true}\n"), 1);
  EXPECT_NE(junk.error.find("not Prometheus text"), std::string::npos) << junk.error;
}

TEST(Scraper, DefaultUrlIsTheTargetsMetrics) {
  EXPECT_EQ(default_metrics_url("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(default_metrics_url("https://h.example/openai/v1"), "https://h.example/metrics");
  EXPECT_EQ(default_metrics_url("http://h:1"), "http://h:1/metrics");
}

// The measured loop's only contact with the scraper is mark_level_end(): it must return while a
// scrape is stalled (the fetch here blocks until the test releases it), and the stalled scrape is
// then tagged with the level that ended.
TEST(Scraper, MarkLevelEndNeverWaitsOnAStalledScrape) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  std::once_flag entered_once;
  int calls = 0;
  std::mutex mu;
  MetricsFetcher fetch = [&](const std::string&, int64_t) -> Result<HttpReply> {
    int n;
    {
      std::lock_guard<std::mutex> lock(mu);
      n = ++calls;
    }
    if (n == 2) {  // the first scrape on the thread stalls
      std::call_once(entered_once, [&] { entered.set_value(); });
      released.wait();
    }
    return text_reply("c_total " + std::to_string(n) + "\n");
  };
  ScraperOptions o;
  o.urls = {"http://127.0.0.1:1/metrics"};
  o.interval_ns = 1'000'000;  // 1 ms: the thread scrapes at once
  ServerScraper s(o, fetch);
  s.baseline();
  s.start();
  entered.get_future().wait();  // a scrape is now stuck inside fetch
  for (int level = 0; level < 100; ++level) s.mark_level_end(level);  // returns regardless
  EXPECT_EQ(s.attempts(), 2);  // still stuck: nothing else was scraped
  release.set_value();
  s.stop();
  const UrlSeries& u = s.series().front();
  ASSERT_GE(u.scrapes.size(), 3u);
  EXPECT_TRUE(u.scrapes.front().ok);
  // Every level end was taken by a scrape after the stall, never before the baseline.
  for (int level = 0; level < 100; ++level) {
    ASSERT_EQ(u.level_end.count(level), 1u) << level;
    EXPECT_GE(u.level_end.at(level), 2u);
  }
  for (size_t i = 1; i < u.scrapes.size(); ++i) {
    EXPECT_GE(u.scrapes[i].t_ns, u.scrapes[i - 1].t_ns);
  }
}

TEST(Scraper, AUrlThatIsDownIsRecordedWithItsReason) {
  ScraperOptions o;
  o.urls = {"http://127.0.0.1:1/metrics"};
  o.interval_ns = 3'600'000'000'000;  // never on its own: baseline, level end, final
  o.timeout_ns = 2'000'000'000;
  ServerScraper s(o);  // the real fetcher: port 1 refuses
  s.baseline();
  s.start();
  s.mark_level_end(0);
  s.stop();
  const UrlSeries& u = s.series().front();
  EXPECT_GE(u.scrapes.size(), 2u);
  EXPECT_EQ(u.failed, static_cast<int64_t>(u.scrapes.size()));
  EXPECT_FALSE(u.first_error.empty());
  EXPECT_EQ(u.level_end.count(0), 1u);
}

}  // namespace
}  // namespace tokperf::servermetrics
