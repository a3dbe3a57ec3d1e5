#include "servermetrics/exposition_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/utf8.h"

namespace tokperf::servermetrics {
namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

void skip_blanks(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

std::string_view read_name(std::string_view s, size_t& i) {
  const size_t start = i;
  if (i >= s.size() || !name_start(s[i])) return {};
  while (i < s.size() && name_char(s[i])) ++i;
  return s.substr(start, i - start);
}

std::string_view read_token(std::string_view s, size_t& i) {
  const size_t start = i;
  while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
  return s.substr(start, i - start);
}

// HELP text escapes: \\ and \n.
std::string unescape_help(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == 'n') {
        out += '\n';
        ++i;
        continue;
      }
      if (n == '\\' || n == '"') {
        out += n;
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// {name="value",...} starting at s[i] == '{'. Returns an error message or empty on success.
std::string read_labels(std::string_view s, size_t& i, Labels& labels) {
  ++i;  // '{'
  while (true) {
    skip_blanks(s, i);
    if (i >= s.size()) return "unterminated label set";
    if (s[i] == '}') {
      ++i;
      break;
    }
    std::string_view lname = read_name(s, i);
    if (lname.empty()) return "expected a label name";
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '=') return fmt::format("expected '=' after label {}", lname);
    ++i;
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '"') return fmt::format("label {} value is not quoted", lname);
    ++i;
    std::string value;
    bool closed = false;
    while (i < s.size()) {
      const char c = s[i++];
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\\') {
        if (i >= s.size()) break;
        const char n = s[i++];
        if (n == 'n') {
          value += '\n';
        } else if (n == '\\' || n == '"') {
          value += n;
        } else {
          value += '\\';  // unknown escape kept as written (Prometheus' own parser is as lenient)
          value += n;
        }
        continue;
      }
      value += c;
    }
    if (!closed) return fmt::format("label {} value is not terminated", lname);
    // The text format is UTF-8 (as Prometheus requires); anything else could not be carried into
    // summary.json either.
    if (const int64_t bad = invalid_utf8_offset(value); bad >= 0)
      return fmt::format("label {} value is not valid UTF-8 (byte {})", lname, bad);
    labels.emplace_back(std::string(lname), std::move(value));
    skip_blanks(s, i);
    if (i < s.size() && s[i] == ',')
      ++i;
    else if (i < s.size() && s[i] != '}')
      return "expected ',' or '}' between labels";
  }
  std::sort(labels.begin(), labels.end());
  for (size_t k = 1; k < labels.size(); ++k) {
    if (labels[k].first == labels[k - 1].first) {
      return fmt::format("label {} appears twice", labels[k].first);
    }
  }
  return {};
}

MetricType type_from(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "gaugehistogram") return MetricType::kGaugeHistogram;
  if (t == "info") return MetricType::kInfo;
  if (t == "stateset") return MetricType::kStateSet;
  return MetricType::kUntyped;
}

constexpr std::string_view kSuffixes[] = {"_bucket",  "_sum",    "_count", "_total",
                                          "_created", "_gcount", "_gsum",  "_info"};

}  // namespace

const char* metric_type_name(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kGaugeHistogram:
      return "gaugehistogram";
    case MetricType::kInfo:
      return "info";
    case MetricType::kStateSet:
      return "stateset";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

std::optional<double> parse_prom_float(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool neg = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  auto iequal = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return (x | 0x20) == (y | 0x20);
           });
  };
  if (iequal(body, "inf") || iequal(body, "infinity")) {
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (iequal(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (body.empty() || !((body[0] >= '0' && body[0] <= '9') || body[0] == '.')) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ptr != body.data() + body.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v untouched on overflow/underflow; the formats mean the nearest double.
    const bool tiny = body.find_first_of("eE") != std::string_view::npos &&
                      body.find("e-") != std::string_view::npos;
    v = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return neg ? -v : v;
}

std::string series_key(std::string_view name, const Labels& labels) {
  std::string k(name);
  if (labels.empty()) return k;
  k += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) k += ',';
    k += labels[i].first;
    k += "=\"";
    for (char c : labels[i].second) {
      if (c == '\\' || c == '"') k += '\\';
      if (c == '\n') {
        k += "\\n";
        continue;
      }
      k += c;
    }
    k += '"';
  }
  k += '}';
  return k;
}

std::string Exposition::family_of(std::string_view series) const {
  if (families.find(series) != families.end()) return std::string(series);
  for (std::string_view suffix : kSuffixes) {
    if (series.size() > suffix.size() && series.ends_with(suffix)) {
      std::string_view base = series.substr(0, series.size() - suffix.size());
      if (families.find(base) != families.end()) return std::string(base);
    }
  }
  return std::string(series);
}

MetricType Exposition::type_of(std::string_view series) const {
  auto it = families.find(family_of(series));
  return it == families.end() ? MetricType::kUntyped : it->second.type;
}

void ExpositionParser::feed(std::string_view bytes) {
  size_t start = 0;
  while (true) {
    const size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) break;
    if (pending_.empty()) {
      line(bytes.substr(start, nl - start));
    } else {
      pending_.append(bytes.substr(start, nl - start));
      std::string whole = std::move(pending_);
      pending_.clear();
      line(whole);
    }
    start = nl + 1;
  }
  pending_.append(bytes.substr(start));
}

Exposition ExpositionParser::finish() {
  if (!pending_.empty()) {
    std::string last = std::move(pending_);
    pending_.clear();
    line(last);
  }
  Exposition out = std::move(out_);
  out_ = Exposition{};
  line_no_ = 0;
  return out;
}

void ExpositionParser::line(std::string_view l) {
  ++line_no_;
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  auto bad = [&](std::string_view why) {
    if (out_.bad_lines++ == 0) out_.first_error = fmt::format("line {}: {}", line_no_, why);
  };
  size_t i = 0;
  skip_blanks(l, i);
  if (i == l.size()) return;  // blank
  if (out_.saw_eof) return bad("content after # EOF");
  if (l[i] == '#') {
    ++i;
    skip_blanks(l, i);
    std::string_view keyword = read_token(l, i);
    if (keyword == "EOF") {
      out_.saw_eof = true;
      return;
    }
    if (keyword != "HELP" && keyword != "TYPE" && keyword != "UNIT") return;  // a comment
    skip_blanks(l, i);
    std::string_view name = read_name(l, i);
    if (name.empty() || (i < l.size() && l[i] != ' ' && l[i] != '\t')) {
      return bad(fmt::format("# {} without a valid metric name", keyword));
    }
    if (i < l.size()) ++i;  // the single separator; the rest is the text
    std::string_view rest = l.substr(i);
    if (const int64_t bad_at = invalid_utf8_offset(rest); bad_at >= 0)
      return bad(fmt::format("# {} {}: text is not valid UTF-8 (byte {})", keyword, name, bad_at));
    Family& f = out_.families[std::string(name)];
    if (keyword == "HELP") {
      f.help = unescape_help(rest);
    } else if (keyword == "UNIT") {
      f.unit = std::string(rest);
    } else {
      while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
      f.type = type_from(rest);
    }
    return;
  }
  Sample s;
  std::string_view name = read_name(l, i);
  if (name.empty()) return bad("expected a metric name or '#'");
  s.name = std::string(name);
  if (i < l.size() && l[i] == '{') {
    std::string err = read_labels(l, i, s.labels);
    if (!err.empty()) return bad(fmt::format("{}: {}", name, err));
  }
  if (i >= l.size() || (l[i] != ' ' && l[i] != '\t')) return bad(fmt::format("{}: no value", name));
  skip_blanks(l, i);
  std::string_view value_text = read_token(l, i);
  auto value = parse_prom_float(value_text);
  if (!value) return bad(fmt::format("{}: value '{}' is not a number", name, value_text));
  s.value = *value;
  skip_blanks(l, i);
  if (i < l.size() && l[i] != '#') {
    std::string_view ts_text = read_token(l, i);
    auto ts = parse_prom_float(ts_text);
    if (!ts || !std::isfinite(*ts)) {
      return bad(fmt::format("{}: timestamp '{}' is not a number", name, ts_text));
    }
    s.timestamp = *ts;
    skip_blanks(l, i);
  }
  // What is left may only be an OpenMetrics exemplar (" # {...} value [ts]"), which is dropped.
  if (i < l.size() && l[i] != '#')
    return bad(fmt::format("{}: unexpected text after the value", name));
  out_.samples.push_back(std::move(s));
}

Exposition parse_exposition(std::string_view text) {
  ExpositionParser p;
  p.feed(text);
  return p.finish();
}

}  // namespace tokperf::servermetrics
