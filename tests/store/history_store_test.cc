#include "store/history_store.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>

#include "report/run_fixture.h"
#include "store/run_ref.h"

namespace tokperf {
namespace {

using testing_fixture::FixtureLevel;

std::string fixture_run() {
  return testing_fixture::write_run(
      testing_fixture::fresh_dir("hist-run"),
      {FixtureLevel{1, 10, 200, 30, 10, 0}, FixtureLevel{4, 10, 300, 40, 10, 1}});
}

TEST(HistoryStore, RecordsAndListsRunsNewestFirst) {
  std::string db = testing_fixture::fresh_dir("hist") + "/sub/history.db";
  std::string run = fixture_run();
  auto id1 = record_run_in_history(run, db, "first");
  auto id2 = record_run_in_history(run, db, "second");
  ASSERT_TRUE(id1.ok()) << id1.error();
  ASSERT_TRUE(id2.ok()) << id2.error();
  EXPECT_EQ(*id2, *id1 + 1);
  auto store = HistoryStore::open(db);
  ASSERT_TRUE(store.ok()) << store.error();
  auto rows = (*store)->list();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  const HistoryEntry& e = (*rows)[0];
  EXPECT_EQ(e.id, *id2);
  EXPECT_EQ(e.label, "second");
  EXPECT_EQ(e.command, "bench");
  EXPECT_EQ(e.model, "fixture-model");
  EXPECT_EQ(e.dir, run);
  EXPECT_EQ(e.levels, 2);
  EXPECT_EQ(e.sent, 21);
  EXPECT_EQ(e.failed, 1);
  // Headline = the last level: TTFT 300 ms plus at most 0.8 ms of fixture jitter.
  EXPECT_NEAR(e.ttft_p50_ms, 300.4, 0.5);
  HistoryFilter only_first;
  only_first.contains = "first";
  auto filtered = (*store)->list(only_first);
  ASSERT_TRUE(filtered.ok());
  ASSERT_EQ(filtered->size(), 1u);
  EXPECT_EQ((*filtered)[0].id, *id1);
  auto summary = (*store)->summary(*id1);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ((*summary)["levels"].size(), 2u);
  auto missing = (*store)->get(999);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("no run with id 999"), std::string::npos);
}

TEST(HistoryStore, ConcurrentThreadsAllLand) {
  std::string db = testing_fixture::fresh_dir("hist-threads") + "/history.db";
  std::string run = fixture_run();
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i)
        if (!record_run_in_history(run, db).ok()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto store = HistoryStore::open(db);
  ASSERT_TRUE(store.ok());
  HistoryFilter all;
  all.limit = 1000;
  auto rows = (*store)->list(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), static_cast<size_t>(kThreads * kEach));
  std::set<int64_t> ids;
  for (const HistoryEntry& e : *rows) ids.insert(e.id);
  EXPECT_EQ(ids.size(), rows->size());
}

TEST(HistoryStore, ConcurrentProcessesAllLand) {
  std::string db = testing_fixture::fresh_dir("hist-procs") + "/history.db";
  std::string run = fixture_run();
  std::string cmd = "for p in 1 2 3 4; do (for i in 1 2 3 4 5; do " + std::string(TOKPERF_BINARY) +
                    " history --record " + run + " --store " + db +
                    " 2>&1 >/dev/null | sed 's/^/FAIL /'; done) & done; wait";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(::pclose(p), 0);
  EXPECT_EQ(out, "");
  auto store = HistoryStore::open(db);
  ASSERT_TRUE(store.ok());
  HistoryFilter all;
  all.limit = 1000;
  auto rows = (*store)->list(all);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 20u);
}

TEST(HistoryStore, DefaultPathFollowsXdgDataHome) {
  const char* old = std::getenv("XDG_DATA_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(default_store_path(), "/tmp/xdg-test/tokperf/history.db");
  ::unsetenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  EXPECT_EQ(default_store_path(),
            std::string(home ? home : ".") + "/.local/share/tokperf/history.db");
  if (old) ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
}

TEST(RunRef, FolderOrHistoryId) {
  std::string db = testing_fixture::fresh_dir("hist-ref") + "/history.db";
  std::string run = fixture_run();
  auto id = record_run_in_history(run, db);
  ASSERT_TRUE(id.ok());
  auto by_dir = resolve_run_ref(run, db);
  ASSERT_TRUE(by_dir.ok());
  EXPECT_EQ(*by_dir, run);
  auto by_id = resolve_run_ref("#" + std::to_string(*id), db);
  ASSERT_TRUE(by_id.ok()) << by_id.error();
  EXPECT_EQ(*by_id, run);
  auto bad = resolve_run_ref("/no/such/run", db);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("expected a folder written by a tokperf run"), std::string::npos);
  auto unknown = resolve_run_ref("4242", db);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("no run with id 4242"), std::string::npos) << unknown.error();
}

}  // namespace
}  // namespace tokperf
