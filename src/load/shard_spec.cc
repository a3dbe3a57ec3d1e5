#include "load/shard_spec.h"

#include <sys/timex.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <fmt/format.h>

namespace tokperf {
namespace {

constexpr std::string_view kAccepted =
    "accepted: --shard I/N with 0 <= I < N (e.g. --shard 0/4), or --shard auto under mpirun, "
    "srun, an sbatch --array or a Kubernetes Indexed Job (with --shards N)";

std::optional<int64_t> whole(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// A variable that must hold a whole number when set.
struct EnvInt {
  const char* name = nullptr;
  bool set = false;
  std::string raw;
  std::optional<int64_t> value;
};

EnvInt env_int(const EnvLookup& env, const char* name) {
  EnvInt e;
  e.name = name;
  const char* v = env(name);
  if (v == nullptr) return e;
  e.set = true;
  e.raw = v;
  e.value = whole(v);
  return e;
}

Result<ShardSpec> make(int64_t index, int64_t count, std::string source) {
  if (count < 1 || count > 100000) {
    return Error{fmt::format("{}: shard count {} is out of range; {}", source, count, kAccepted)};
  }
  if (index < 0 || index >= count) {
    return Error{fmt::format("{}: shard index {} is out of range for {} shards (0..{}); {}", source,
                             index, count, count - 1, kAccepted)};
  }
  ShardSpec s;
  s.index = static_cast<int>(index);
  s.count = static_cast<int>(count);
  s.source = std::move(source);
  return s;
}

Result<ShardSpec> from_env(const EnvInt& rank, const EnvInt& size, int64_t shards,
                           std::string source) {
  if (!rank.value) {
    return Error{fmt::format("--shard auto: {}='{}' is not a whole number", rank.name, rank.raw)};
  }
  if (size.set && !size.value) {
    return Error{fmt::format("--shard auto: {}='{}' is not a whole number", size.name, size.raw)};
  }
  int64_t count = size.value ? *size.value : shards;
  if (count <= 0) {
    return Error{
        fmt::format("--shard auto: {} gives the rank but nothing gives the shard count; "
                    "add --shards N",
                    rank.name)};
  }
  if (shards > 0 && count != shards) {
    return Error{
        fmt::format("--shard auto: {} says {} shards but --shards says {}; drop --shards "
                    "or make them agree",
                    size.name ? size.name : "the launcher", count, shards)};
  }
  return make(*rank.value, count, std::move(source));
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Result<ShardSpec> resolve_shard(std::string_view text, int64_t shards, const EnvLookup& env) {
  if (shards < 0) {
    return Error{fmt::format("--shards {}: expected a positive whole number", shards)};
  }
  if (text != "auto") {
    const size_t slash = text.find('/');
    auto i = slash == std::string_view::npos ? std::nullopt : whole(text.substr(0, slash));
    auto n = slash == std::string_view::npos ? std::nullopt : whole(text.substr(slash + 1));
    if (!i || !n) return Error{fmt::format("--shard '{}' is not I/N or auto; {}", text, kAccepted)};
    if (shards > 0 && shards != *n) {
      return Error{
          fmt::format("--shard {} and --shards {} disagree on the shard count", text, shards)};
    }
    return make(*i, *n, "--shard");
  }
  // Open MPI first: inside a Slurm allocation, mpirun's tasks inherit a SLURM_PROCID that numbers
  // mpirun's own launch step, not the ranks.
  EnvInt ompi_rank = env_int(env, "OMPI_COMM_WORLD_RANK");
  if (ompi_rank.set) {
    return from_env(ompi_rank, env_int(env, "OMPI_COMM_WORLD_SIZE"), shards,
                    "OMPI_COMM_WORLD_RANK");
  }
  EnvInt pmix_rank = env_int(env, "PMIX_RANK");
  if (pmix_rank.set) {
    EnvInt size = env_int(env, "PMIX_SIZE");
    if (!size.set) size = env_int(env, "OMPI_COMM_WORLD_SIZE");
    if (!size.set) size = env_int(env, "SLURM_NTASKS");
    return from_env(pmix_rank, size, shards, "PMIX_RANK");
  }
  // An array task also has SLURM_PROCID=0 (its own one-task step): the array comes first when
  // the step has a single task.
  EnvInt procid = env_int(env, "SLURM_PROCID");
  EnvInt ntasks = env_int(env, "SLURM_NTASKS");
  EnvInt array_id = env_int(env, "SLURM_ARRAY_TASK_ID");
  const bool one_task_step = !ntasks.set || (ntasks.value && *ntasks.value == 1);
  if (procid.set && !(array_id.set && one_task_step)) {
    return from_env(procid, ntasks, shards, "SLURM_PROCID");
  }
  if (array_id.set) {
    EnvInt count = env_int(env, "SLURM_ARRAY_TASK_COUNT");
    EnvInt min = env_int(env, "SLURM_ARRAY_TASK_MIN");
    EnvInt step = env_int(env, "SLURM_ARRAY_TASK_STEP");
    if (array_id.value && min.value) {
      const int64_t stride = step.value && *step.value > 0 ? *step.value : 1;
      array_id.value = (*array_id.value - *min.value) / stride;
    }
    return from_env(array_id, count, shards, "SLURM_ARRAY_TASK_ID");
  }
  EnvInt k8s = env_int(env, "JOB_COMPLETION_INDEX");
  if (k8s.set) {
    if (shards <= 0) {
      return Error{
          "--shard auto: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) names the index "
          "but not the count; add --shards N (the Job's completions)"};
    }
    return from_env(k8s, EnvInt{"--shards", true, "", shards}, shards, "JOB_COMPLETION_INDEX");
  }
  return Error{fmt::format(
      "--shard auto found no launcher environment (none of OMPI_COMM_WORLD_RANK, PMIX_RANK, "
      "SLURM_PROCID, SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX is set); {}",
      kAccepted)};
}

Result<int64_t> parse_start_at(std::string_view text) {
  const auto bad = [&] {
    return Error{
        fmt::format("--start-at '{}' is not a time; accepted: unix seconds (1764630000 "
                    "or 1764630000.5) or RFC 3339 (2026-12-01T23:00:00Z, "
                    "2026-12-01T23:00:00.250+01:00)",
                    text)};
  };
  if (text.empty()) return bad();
  // Unix seconds, optionally with a fraction.
  if (text.find_first_not_of("0123456789.") == std::string_view::npos) {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0) return bad();
    return static_cast<int64_t>(std::llround(v * 1e6));
  }
  // RFC 3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM); 't', 'z' and ' ' as the separator too.
  if (text.size() < 20) return bad();
  auto num = [&](size_t at, size_t n) { return whole(text.substr(at, n)); };
  auto Y = num(0, 4), M = num(5, 2), D = num(8, 2), h = num(11, 2), m = num(14, 2), s = num(17, 2);
  const char sep = text[10];
  if (!Y || !M || !D || !h || !m || !s || text[4] != '-' || text[7] != '-' ||
      !(sep == 'T' || sep == 't' || sep == ' ') || text[13] != ':' || text[16] != ':') {
    return bad();
  }
  if (*M < 1 || *M > 12 || *D < 1 || *D > 31 || *h > 23 || *m > 59 || *s > 60) return bad();
  size_t at = 19;
  int64_t frac_us = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    int64_t scale = 100000;
    const size_t first = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      frac_us += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first) return bad();
  }
  if (at >= text.size()) return bad();
  int64_t offset_s = 0;
  if (text[at] == 'Z' || text[at] == 'z') {
    ++at;
  } else if (text[at] == '+' || text[at] == '-') {
    auto oh = num(at + 1, 2), om = num(at + 4, 2);
    if (!oh || !om || at + 6 != text.size() || text[at + 3] != ':') return bad();
    offset_s = (*oh * 3600 + *om * 60) * (text[at] == '-' ? -1 : 1);
    at += 6;
  } else {
    return bad();
  }
  if (at != text.size()) return bad();
  std::tm tm{};
  tm.tm_year = static_cast<int>(*Y - 1900);
  tm.tm_mon = static_cast<int>(*M - 1);
  tm.tm_mday = static_cast<int>(*D);
  tm.tm_hour = static_cast<int>(*h);
  tm.tm_min = static_cast<int>(*m);
  tm.tm_sec = static_cast<int>(*s);
  const time_t t = timegm(&tm);
  if (t <= 0) return bad();
  return (static_cast<int64_t>(t) - offset_s) * 1'000'000 + frac_us;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

ClockStatus clock_status() {
  ClockStatus c;
  timex tx{};
  const int state = adjtimex(&tx);
  if (state < 0) return c;
  c.synchronised = state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
  c.estimated_error_ms = static_cast<double>(tx.esterror) / 1000.0;
  c.maximum_error_ms = static_cast<double>(tx.maxerror) / 1000.0;
  return c;
}

std::string ClockStatus::describe() const {
  if (!synchronised) {
    return fmt::format("{}, not synchronised (the kernel reports no NTP/PTP discipline)", source);
  }
  return fmt::format("{}, synchronised, estimated error {} ms (maximum {} ms)", source,
                     estimated_error_ms, maximum_error_ms);
}

}  // namespace tokperf
