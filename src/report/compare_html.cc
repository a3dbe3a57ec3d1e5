#include "report/compare_html.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/diagnosis.h"
#include "report/html_page.h"

namespace tokperf {
namespace {

std::string table_html(const ComparePage& p, int first_chars) {
  std::string out = "<table><tr><th></th>";
  for (const RunFigures& f : p.figures)
    out += fmt::format("<th>{} [{}]</th>", html_escape(f.name), html_escape(f.level.params.label));
  for (size_t i = 1; i < p.figures.size(); ++i) {
    out += fmt::format("<th>{} vs {}</th>", html_escape(p.figures[i].name),
                       html_escape(p.figures[0].name));
  }
  out += "</tr>";
  for (const CompareRow& row : compare_rows(p.figures, first_chars)) {
    out += "<tr><td>" + html_escape(row.figure) + "</td>";
    for (const std::string& v : row.values) out += "<td>" + html_escape(v) + "</td>";
    for (size_t i = 0; i < row.deltas.size(); ++i) {
      const char* cls = row.worse[i] > 0 ? "worse" : row.worse[i] < 0 ? "better" : "same";
      out += fmt::format("<td class=\"{}\">{}</td>", cls, html_escape(row.deltas[i]));
    }
    out += "</tr>";
  }
  return out + "</table>";
}

std::string gate_html(const ComparePage& p) {
  if (p.gate.empty()) return "";
  if (p.gate_failures.empty()) {
    return "<div class=\"ok-box\" data-gate=\"passed\">CI gate passed: <code>" +
           html_escape(p.gate) + "</code></div>";
  }
  std::string out = "<div class=\"finding\" data-gate=\"failed\"><h3>CI gate failed: <code>" +
                    html_escape(p.gate) + "</code></h3><ul>";
  for (const std::string& f : p.gate_failures) out += "<li>" + html_escape(f) + "</li>";
  return out + "</ul></div>";
}

std::string diagnoses_html(const ComparePage& p, const ReportOptions& o) {
  std::string out = "<table><tr><th>run</th><th>findings</th></tr>";
  for (size_t i = 0; i < p.runs.size(); ++i) {
    const SavedRun& r = p.runs[i];
    std::string list;
    for (const Finding& f : diagnose({r.levels, r.requests, &r.health, r.server}, o.thresholds))
      list += (list.empty() ? "" : "<br>") + html_escape(f.title);
    out += fmt::format("<tr><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                       html_escape(p.figures[i].name), list.empty() ? "no finding" : list);
  }
  return out + "</table>";
}

}  // namespace

nlohmann::json compare_chart_data(const ComparePage& p, const ReportOptions& o) {
  const char* names[] = {"ttft", "ttfo", "tpot", "itl", "e2e"};
  std::vector<std::vector<double>> samples[5];
  std::vector<std::string> labels;
  for (size_t i = 0; i < p.runs.size(); ++i) {
    int level = p.figures[i].level.params.level;
    labels.push_back(p.figures[i].name);
    for (auto& s : samples) s.emplace_back();
    for (const RequestSample& r : p.runs[i].requests) {
      if (!r.measured || !r.ok || (level >= 0 && r.level != level)) continue;
      for (auto [k, v] : {std::pair{0, r.ttft_ms}, {1, r.ttfo_ms}, {2, r.tpot_ms}, {4, r.e2e_ms}})
        if (std::isfinite(v)) samples[k].back().push_back(v);
      for (double g : r.itl_ms)
        if (std::isfinite(g)) samples[3].back().push_back(g);
    }
  }
  nlohmann::json d = {{"load_axis", ""},
                      {"levels", nlohmann::json::array()},
                      {"timeseries", nullptr},
                      {"timeline", nlohmann::json::array()},
                      {"slo", nlohmann::json::array()},
                      {"cdf", nlohmann::json::object()}};
  for (int k = 0; k < 5; ++k) d["cdf"][names[k]] = cdf_chart_json(samples[k], labels, o.cdf_points);
  return d;
}

std::string render_compare_html(const ComparePage& p, const ReportOptions& o) {
  std::string names;
  for (const RunFigures& f : p.figures) names += (names.empty() ? "" : " vs ") + f.name;
  std::string title = o.title.empty() ? "tokperf compare: " + names : o.title;
  std::string html = html_page_open(title);
  html += fmt::format(
      "<p class=\"sub\">{} runs; deltas against {} (the baseline); a reader is assumed to read "
      "{:g} tokens/s. Folders: {}</p>\n",
      p.runs.size(), html_escape(p.figures[0].name), o.perceived.reader_tokens_per_s, [&] {
        std::string dirs;
        for (const SavedRun& r : p.runs) dirs += (dirs.empty() ? "" : ", ") + html_escape(r.dir);
        return dirs;
      }());
  for (size_t i = 0; i < p.runs.size(); ++i) {
    const SavedRun& r = p.runs[i];
    if (r.stride <= 1) continue;
    html += fmt::format(
        "<p class=\"sub\" data-sampled=\"{}\">{}: the distributions and diagnosis below come "
        "from one record in every {} of its {} ({} read) to bound memory; the table and the "
        "verdict use every record.</p>\n",
        html_escape(p.figures[i].name), html_escape(p.figures[i].name), r.stride, r.request_lines,
        r.requests.size());
  }
  html += fmt::format("<h2>Verdict</h2>\n<div class=\"{}\" data-verdict=\"{}\"><p>{}</p></div>\n",
                      p.verdict.winner >= 0 ? "finding info" : "ok-box",
                      p.verdict.winner >= 0 ? p.figures[p.verdict.winner].name : "",
                      html_escape(p.verdict.explanation));
  html += gate_html(p);
  html += "\n<h2>Side by side</h2>\n" + table_html(p, o.perceived.first_chars);
  html += "\n<h2>Diagnosis per run</h2>\n" + diagnoses_html(p, o);
  html += "\n<h2>Distributions</h2>\n<div id=\"charts\"></div>\n";
  html += html_page_close(compare_chart_data(p, o));
  return html;
}

}  // namespace tokperf
