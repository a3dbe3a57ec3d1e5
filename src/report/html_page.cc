#include "report/html_page.h"

#include "report/report_assets.h"

namespace tokperf {
namespace {

// JSON inside <script>: "</" would end the element early.
std::string script_safe(std::string s) {
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 3) s.replace(p, 2, "<\\/");
  return s;
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_page_open(const std::string& title) {
  const ReportAssets& a = report_assets();
  std::string html;
  html.reserve(a.uplot_js.size() + 200000);
  html += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + html_escape(title) + "</title>\n";
  // Records script errors and failed loads on <html> so a headless check can read them.
  html +=
      "<script>window.__tokperfErrors=[];window.addEventListener('error',function(e){"
      "window.__tokperfErrors.push(String(e.message||e.type));document.documentElement."
      "setAttribute('data-errors',String(window.__tokperfErrors.length));},true);"
      "var ce=console.error;console.error=function(){window.__tokperfErrors.push('console');"
      "document.documentElement.setAttribute('data-errors',String(window.__tokperfErrors.length));"
      "ce.apply(console,arguments);};</script>\n";
  html += "<style>" + std::string(a.uplot_css) + "</style>\n";
  html += "<style>" + std::string(a.report_css) + "</style>\n";
  html += "</head><body data-report-state=\"loading\">\n";
  html += "<h1>" + html_escape(title) + "</h1>\n";
  return html;
}

std::string html_page_close(const nlohmann::json& chart_data) {
  const ReportAssets& a = report_assets();
  std::string html =
      "<script type=\"application/json\" id=\"tokperf-data\">" +
      script_safe(chart_data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
      "</script>\n";
  if (a.have_chart_library) html += "<script>" + std::string(a.uplot_js) + "</script>\n";
  html += "<script>" + std::string(a.report_js) + "</script>\n</body></html>\n";
  return html;
}

}  // namespace tokperf
