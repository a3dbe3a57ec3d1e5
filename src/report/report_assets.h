// The front-end assets inlined into report.html: the chart library (uPlot, from npm at build time:
// web/package.json, web/assets.cmake) and our own page script and style (web/report.js,
// web/report.css). The definition is generated at build time.
#pragma once

#include <string_view>

namespace tokperf {

struct ReportAssets {
  std::string_view uplot_js;
  std::string_view uplot_css;
  std::string_view report_js;
  std::string_view report_css;
  bool have_chart_library = false;  // false: built without npm; the page shows tables only
};

const ReportAssets& report_assets();

}  // namespace tokperf
