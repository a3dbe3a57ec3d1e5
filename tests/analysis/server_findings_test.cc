// Diagnosis from the server's own metrics (ServerEvidence): KV-cache limit, admission queueing,
// time outside the engine; and nothing when the server looks healthy.
#include <gtest/gtest.h>

#include "analysis/diagnosis.h"

namespace tokperf {
namespace {

std::vector<FindingKind> kinds_of(std::span<const ServerEvidence> sv) {
  std::vector<FindingKind> out;
  for (const Finding& f : diagnose({{}, {}, nullptr, sv})) out.push_back(f.kind);
  return out;
}

ServerEvidence healthy(const char* label) {
  ServerEvidence e;
  e.label = label;
  e.engine = "vLLM";
  e.client_ttft_mean_ms = 60;
  e.server_ttft_mean_ms = 58;
  e.queue_mean_ms = 1;
  e.prefill_mean_ms = 55;
  e.outside_server_ms = 2;
  e.waiting_mean = 0;
  e.waiting_max = 0;
  e.kv_usage_max = 0.3;
  e.preemptions = 0;
  return e;
}

TEST(ServerFindings, HealthyServerGivesNone) {
  ServerEvidence sv[] = {healthy("c=1"), healthy("c=8")};
  EXPECT_TRUE(kinds_of(sv).empty());
}

TEST(ServerFindings, PreemptionsOrAFullCacheNameTheKvLimit) {
  ServerEvidence a = healthy("c=64");
  a.preemptions = 12;
  ServerEvidence b = healthy("c=128");
  b.kv_usage_max = 0.99;
  ServerEvidence sv[] = {healthy("c=1"), a, b};
  auto f = diagnose({{}, {}, nullptr, sv});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kKvCacheLimit);
  EXPECT_NE(f[0].evidence.find("c=64: 12 preemptions"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("c=128"), std::string::npos);
  EXPECT_NE(f[0].evidence.find("99%"), std::string::npos);
  EXPECT_FALSE(f[0].remedies.empty());
}

TEST(ServerFindings, WaitingAndQueueDominatingIsAdmission) {
  ServerEvidence e = healthy("c=32");
  e.client_ttft_mean_ms = 900;
  e.server_ttft_mean_ms = 897;
  e.queue_mean_ms = 800;
  e.prefill_mean_ms = 90;
  e.outside_server_ms = 3;
  e.waiting_mean = 12;
  e.waiting_max = 20;
  ServerEvidence sv[] = {e};
  EXPECT_EQ(kinds_of(sv), std::vector<FindingKind>{FindingKind::kAdmissionQueueing});
  // Without anything waiting in the engine, a long queue time alone is not admission queueing.
  e.waiting_mean = 0;
  e.waiting_max = 0;
  ServerEvidence none[] = {e};
  EXPECT_TRUE(kinds_of(none).empty());
}

TEST(ServerFindings, AGapBetweenClientAndServerIsOutsideTheEngine) {
  ServerEvidence e = healthy("c=4");
  e.client_ttft_mean_ms = 400;
  e.server_ttft_mean_ms = 60;
  e.outside_server_ms = 340;
  ServerEvidence sv[] = {e};
  auto f = diagnose({{}, {}, nullptr, sv});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kOutsideEngine);
  EXPECT_NE(f[0].title.find("between the client and the engine"), std::string::npos);
  // Server TTFT fine while the client's is not (above the 2 s objective).
  e.client_ttft_mean_ms = 3000;
  e.outside_server_ms = 2940;
  ServerEvidence slow[] = {e};
  auto g = diagnose({{}, {}, nullptr, slow});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].title.find("server's TTFT is fine"), std::string::npos);
  EXPECT_STREQ(finding_kind_name(g[0].kind), "outside_engine");
}

}  // namespace
}  // namespace tokperf
