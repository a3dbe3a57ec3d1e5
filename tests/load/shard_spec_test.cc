#include "load/shard_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tokperf {
namespace {

// A fake environment: only these variables are set.
EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(ShardSpec, ExplicitIndexOfCount) {
  auto s = resolve_shard("2/4", 0, env_of({}));
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  EXPECT_EQ(s->source, "--shard");
  EXPECT_TRUE(s->active());
  auto one = resolve_shard("0/1", 0, env_of({}));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->count, 1);
}

TEST(ShardSpec, ExplicitOutOfRangeOrMalformedIsRefusedWithWhatIsAccepted) {
  for (const char* bad : {"4/4", "-1/4", "1/0", "x/4", "3", "1/", "/2", "1/2/3", "auto2"}) {
    auto s = resolve_shard(bad, 0, env_of({}));
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().find("I/N"), std::string::npos) << s.error();
  }
  auto range = resolve_shard("4/4", 0, env_of({}));
  EXPECT_NE(range.error().find("out of range for 4 shards (0..3)"), std::string::npos)
      << range.error();
  auto disagree = resolve_shard("1/4", 3, env_of({}));
  ASSERT_FALSE(disagree);
  EXPECT_NE(disagree.error().find("disagree"), std::string::npos);
}

TEST(ShardSpec, AutoPrefersOpenMpiOverTheSlurmStepMpirunRunsIn) {
  // mpirun inside an allocation: SLURM_PROCID numbers mpirun's own launch step.
  auto s = resolve_shard("auto", 0,
                         env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                 {"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"PMIX_RANK", "3"},
                                 {"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->index, 3);
  EXPECT_EQ(s->count, 4);
  EXPECT_EQ(s->source, "OMPI_COMM_WORLD_RANK");
}

TEST(ShardSpec, AutoPmixTakesItsSizeFromPmixOmpiOrSlurm) {
  auto a = resolve_shard(
      "auto", 0, env_of({{"PMIX_RANK", "1"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}}));
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->source, "PMIX_RANK");
  EXPECT_EQ(a->count, 3);
  auto b = resolve_shard("auto", 0, env_of({{"PMIX_RANK", "0"}, {"PMIX_SIZE", "5"}}));
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(b->count, 5);
  auto c = resolve_shard("auto", 2, env_of({{"PMIX_RANK", "1"}}));
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->count, 2);
  auto none = resolve_shard("auto", 0, env_of({{"PMIX_RANK", "1"}}));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("--shards N"), std::string::npos) << none.error();
}

TEST(ShardSpec, AutoSrunAndArrays) {
  auto srun = resolve_shard("auto", 0, env_of({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}}));
  ASSERT_TRUE(srun) << srun.error();
  EXPECT_EQ(srun->source, "SLURM_PROCID");
  EXPECT_EQ(srun->index, 2);
  // An array task runs as a one-task step (SLURM_PROCID=0): the array index counts.
  auto array = resolve_shard("auto", 0,
                             env_of({{"SLURM_PROCID", "0"},
                                     {"SLURM_ARRAY_TASK_ID", "7"},
                                     {"SLURM_ARRAY_TASK_MIN", "5"},
                                     {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  ASSERT_TRUE(array) << array.error();
  EXPECT_EQ(array->source, "SLURM_ARRAY_TASK_ID");
  EXPECT_EQ(array->index, 2);
  EXPECT_EQ(array->count, 4);
  auto out = resolve_shard("auto", 0,
                           env_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().find("SLURM_ARRAY_TASK_ID"), std::string::npos) << out.error();
}

TEST(ShardSpec, AutoKubernetesIndexNeedsShards) {
  auto k = resolve_shard("auto", 4, env_of({{"JOB_COMPLETION_INDEX", "3"}}));
  ASSERT_TRUE(k) << k.error();
  EXPECT_EQ(k->index, 3);
  EXPECT_EQ(k->count, 4);
  EXPECT_EQ(k->source, "JOB_COMPLETION_INDEX");
  auto missing = resolve_shard("auto", 0, env_of({{"JOB_COMPLETION_INDEX", "3"}}));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("--shards N"), std::string::npos);
  auto range = resolve_shard("auto", 3, env_of({{"JOB_COMPLETION_INDEX", "3"}}));
  ASSERT_FALSE(range);
}

TEST(ShardSpec, AutoWithoutLauncherOrWithGarbageIsRefused) {
  auto none = resolve_shard("auto", 0, env_of({}));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no launcher environment"), std::string::npos) << none.error();
  auto garbage = resolve_shard(
      "auto", 0, env_of({{"OMPI_COMM_WORLD_RANK", "one"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().find("OMPI_COMM_WORLD_RANK='one'"), std::string::npos)
      << garbage.error();
  auto disagree = resolve_shard("auto", 3, env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
  ASSERT_FALSE(disagree);
}

TEST(StartAt, UnixSecondsAndRfc3339) {
  EXPECT_EQ(*parse_start_at("1764630000"), 1764630000LL * 1000000);
  EXPECT_EQ(*parse_start_at("1764630000.25"), 1764630000LL * 1000000 + 250000);
  // 2025-12-01T23:00:00Z = 1764630000.
  EXPECT_EQ(*parse_start_at("2025-12-01T23:00:00Z"), 1764630000LL * 1000000);
  EXPECT_EQ(*parse_start_at("2025-12-01T23:00:00.5Z"), 1764630000LL * 1000000 + 500000);
  EXPECT_EQ(*parse_start_at("2025-12-02T00:30:00+01:30"), 1764630000LL * 1000000);
  EXPECT_EQ(*parse_start_at("2025-12-01T22:00:00-01:00"), 1764630000LL * 1000000);
  for (const char* bad : {"", "soon", "2025-12-01", "2025-13-01T00:00:00Z", "2025-12-01T00:00:00",
                          "2025-12-01T00:00:00+0100", "12.3.4", "2025-12-01T00:00:00Zjunk"}) {
    auto r = parse_start_at(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("RFC 3339"), std::string::npos);
  }
}

}  // namespace
}  // namespace tokperf
