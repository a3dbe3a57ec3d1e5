#include "analysis/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.h"

namespace tokperf {
namespace {

bool finite(double v) { return std::isfinite(v); }

double first_text(const DistStats& ttfo, const DistStats& ttft, int p) {
  double o = p == 95 ? ttfo.p95 : ttfo.p50;
  return finite(o) ? o : (p == 95 ? ttft.p95 : ttft.p50);
}

double error_rate(const RunFigures& r) {
  return r.sent > 0 ? 100.0 * static_cast<double>(r.failed) / static_cast<double>(r.sent) : 0;
}

std::string delta(double base, double v, bool ms) {
  if (!finite(base) || !finite(v)) return "-";
  double d = v - base;
  std::string abs = ms ? (d >= 0 ? "+" : "-") + format_ms(std::fabs(d)) : fmt::format("{:+.1f}", d);
  if (base == 0) return abs;
  return fmt::format("{} ({:+.0f}%)", abs, 100 * d / base);
}

}  // namespace

Result<RunFigures> run_figures(const std::string& name, std::span<const LevelSummary> levels,
                               std::span<const RequestSample> requests,
                               const std::string& level_label, const PerceivedOptions& o) {
  return run_figures(
      name, levels,
      [&](PerceivedAccumulator& acc) {
        for (const RequestSample& r : requests) acc.add(r);
      },
      level_label, o);
}

Result<RunFigures> run_figures(const std::string& name, std::span<const LevelSummary> levels,
                               const std::function<void(PerceivedAccumulator&)>& feed,
                               const std::string& level_label, const PerceivedOptions& o) {
  if (levels.empty()) return Error{fmt::format("run '{}' has no load level to compare", name)};
  RunFigures f;
  f.name = name;
  const LevelSummary* pick = &levels.back();
  if (!level_label.empty()) {
    pick = nullptr;
    std::string labels;
    for (const LevelSummary& l : levels) {
      if (l.params.label == level_label) pick = &l;
      labels += (labels.empty() ? "" : ", ") + l.params.label;
    }
    if (pick == nullptr) {
      return Error{
          fmt::format("run '{}' has no level '{}'; its levels are: {}", name, level_label, labels)};
    }
  }
  f.level = *pick;
  PerceivedAccumulator acc(pick->params.level, o);
  feed(acc);
  f.perceived = std::move(acc).finish();
  for (const LevelSummary& l : levels) f.sent += l.sent, f.failed += l.failed;
  return f;
}

double perceived_wait_ms(const RunFigures& r, int p) {
  double stall = p == 95 ? r.perceived.reading_stall_ms.p95 : r.perceived.reading_stall_ms.p50;
  return first_text(r.level.ttfo, r.level.ttft, p) + (finite(stall) ? stall : 0);
}

Verdict perceived_verdict(std::span<const RunFigures> runs, const PerceivedOptions& o) {
  Verdict v;
  // Failures first: a request that errors is worse than any slow one.
  size_t best_err = 0;
  for (size_t i = 1; i < runs.size(); ++i)
    if (error_rate(runs[i]) < error_rate(runs[best_err])) best_err = i;
  size_t best = 0;
  for (size_t i = 1; i < runs.size(); ++i) {
    double w = perceived_wait_ms(runs[i], 50), b = perceived_wait_ms(runs[best], 50);
    if (finite(w) && (!finite(b) || w < b)) best = i;
  }
  if (error_rate(runs[best]) - error_rate(runs[best_err]) >= 1.0) {
    v.winner = static_cast<int>(best_err);
    v.explanation = fmt::format(
        "{} would feel better: {} failed {:.1f}% of requests against {:.1f}%; a failed answer is "
        "worse than a slow one.",
        runs[best_err].name, runs[best].name, error_rate(runs[best]), error_rate(runs[best_err]));
    return v;
  }
  // The runner-up: the run with the next-lowest wait, to explain the gap against.
  size_t second = best == 0 ? 1 : 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i == best) continue;
    if (perceived_wait_ms(runs[i], 50) < perceived_wait_ms(runs[second], 50)) second = i;
  }
  const RunFigures& a = runs[best];
  const RunFigures& b = runs[second];
  double wa = perceived_wait_ms(a, 50), wb = perceived_wait_ms(b, 50);
  double threshold = o.reader_tokens_per_s > 0 ? 1000.0 / o.reader_tokens_per_s : 0;
  if (!finite(wa) || !finite(wb) || (wb - wa < 100 && wb - wa < 0.1 * wa)) {
    v.explanation = fmt::format(
        "No difference users would notice: first text plus reading stall is {} vs {} (P50).",
        format_ms(wa), format_ms(wb));
    return v;
  }
  v.winner = static_cast<int>(best);
  double fa = first_text(a.level.ttfo, a.level.ttft, 50);
  double fb = first_text(b.level.ttfo, b.level.ttft, 50);
  v.explanation = fmt::format(
      "{} would feel faster: its first text appears at {} vs {} for {} "
      "(P50)",
      a.name, format_ms(fa), format_ms(fb), b.name);
  double sa = a.perceived.reading_stall_ms.p50, sb = b.perceived.reading_stall_ms.p50;
  double ta = a.level.tpot.p50, tb = b.level.tpot.p50;
  if (finite(sa) && finite(sb) && sa < 1 && sb < 1 && finite(ta) && finite(tb) && ta <= threshold &&
      tb <= threshold) {
    v.explanation += fmt::format(
        ", and after that neither makes a reader at {:g} tokens/s wait (TPOT {} vs {}, both "
        "under {} per token)",
        o.reader_tokens_per_s, format_ms(ta), format_ms(tb), format_ms(threshold));
  } else if (finite(sa) && finite(sb)) {
    v.explanation += fmt::format(
        "; once text appears, a reader at {:g} tokens/s waits {} vs {} "
        "for more (reading stall P50)",
        o.reader_tokens_per_s, format_ms(sa), format_ms(sb));
  }
  v.explanation += ".";
  double ea = a.level.e2e.p50, eb = b.level.e2e.p50;
  if (finite(ea) && finite(eb) && eb < ea) {
    v.explanation += fmt::format(
        " {} finishes sooner (E2E P50 {} vs {}), but total time hides "
        "the {} longer wait before anything appears.",
        b.name, format_ms(eb), format_ms(ea), format_ms(fb - fa));
  }
  return v;
}

std::vector<CompareRow> compare_rows(std::span<const RunFigures> runs, int first_chars) {
  struct Row {
    std::string name;
    bool ms;
    bool higher_is_better;
    double (*get)(const RunFigures&);
  };
  static const Row rows[] = {
      {"TTFT P50", true, false, [](const RunFigures& r) { return r.level.ttft.p50; }},
      {"TTFT P95", true, false, [](const RunFigures& r) { return r.level.ttft.p95; }},
      {"TTFO P50", true, false, [](const RunFigures& r) { return r.level.ttfo.p50; }},
      {"TPOT P50", true, false, [](const RunFigures& r) { return r.level.tpot.p50; }},
      {"TPOT P95", true, false, [](const RunFigures& r) { return r.level.tpot.p95; }},
      {"ITL P50", true, false, [](const RunFigures& r) { return r.level.itl.p50; }},
      {"ITL P99", true, false, [](const RunFigures& r) { return r.level.itl.p99; }},
      {"E2E P50", true, false, [](const RunFigures& r) { return r.level.e2e.p50; }},
      {"E2E P95", true, false, [](const RunFigures& r) { return r.level.e2e.p95; }},
      {"first chars P50", true, false,
       [](const RunFigures& r) { return r.perceived.first_chars_ms.p50; }},
      {"reading stall P50", true, false,
       [](const RunFigures& r) { return r.perceived.reading_stall_ms.p50; }},
      {"reading stall P95", true, false,
       [](const RunFigures& r) { return r.perceived.reading_stall_ms.p95; }},
      {"perceived wait P50", true, false,
       [](const RunFigures& r) { return perceived_wait_ms(r, 50); }},
      {"output tok/s", false, true,
       [](const RunFigures& r) { return r.level.output_token_throughput_tps; }},
      {"errors", false, false, [](const RunFigures& r) { return static_cast<double>(r.failed); }},
  };
  std::vector<CompareRow> out;
  for (const Row& row : rows) {
    CompareRow c;
    c.figure =
        row.name == "first chars P50" ? fmt::format("first {} chars P50", first_chars) : row.name;
    for (const RunFigures& r : runs) {
      double v = row.get(r);
      c.values.push_back(row.ms ? format_ms(v) : format_rate(v));
    }
    double base = runs.empty() ? 0 : row.get(runs[0]);
    for (size_t i = 1; i < runs.size(); ++i) {
      double v = row.get(runs[i]);
      c.deltas.push_back(delta(base, v, row.ms));
      int sign = !finite(base) || !finite(v) || v == base ? 0 : v > base ? 1 : -1;
      c.worse.push_back(row.higher_is_better ? -sign : sign);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string render_compare_table(std::span<const RunFigures> runs, int first_chars) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head{""};
  for (const RunFigures& r : runs) head.push_back(r.name + " [" + r.level.params.label + "]");
  for (size_t i = 1; i < runs.size(); ++i) head.push_back(runs[i].name + " vs " + runs[0].name);
  cells.push_back(head);
  for (const CompareRow& row : compare_rows(runs, first_chars)) {
    std::vector<std::string> line{row.figure};
    line.insert(line.end(), row.values.begin(), row.values.end());
    line.insert(line.end(), row.deltas.begin(), row.deltas.end());
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  std::string out;
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      out += c == 0 ? fmt::format("{:<{}}", line[c], width[c])
                    : fmt::format("  {:>{}}", line[c], width[c]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace tokperf
