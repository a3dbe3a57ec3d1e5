// The shell every tokperf HTML page shares (report.html, the comparison page): escaping, the head
// with the inlined styles and the error hook the headless-browser test reads, and the tail that
// embeds the chart data and the inlined scripts (report_assets.h). Nothing is fetched at view time.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tokperf {

std::string html_escape(std::string_view s);

// "<!doctype html>..." through "<body ...>" and the <h1>.
std::string html_page_open(const std::string& title);

// The embedded chart data (id "tokperf-data"), uPlot and report.js, then "</body></html>".
std::string html_page_close(const nlohmann::json& chart_data);

}  // namespace tokperf
