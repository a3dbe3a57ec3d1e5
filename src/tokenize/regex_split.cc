#include "tokenize/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

namespace tokperf {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0)
    return fmt::format("PCRE2 error {}", code);
  return reinterpret_cast<const char*>(buf);
}

struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* md;
};

}  // namespace

Result<std::shared_ptr<const RegexSplitter>> RegexSplitter::create(const std::string& pattern,
                                                                   bool literal,
                                                                   SplitBehavior behavior,
                                                                   bool invert) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &err, &err_offset, nullptr);
  if (code == nullptr) {
    return Error{fmt::format("the pre-tokenizer pattern does not compile at offset {}: {}",
                             err_offset, pcre2_message(err))};
  }
  // JIT is only a speed-up; without it (a platform lacking it) the interpreter gives equal results.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<RegexSplitter> s(new RegexSplitter());
  s->code_ = code;
  s->behavior_ = behavior;
  s->invert_ = invert;
  return std::shared_ptr<const RegexSplitter>(std::move(s));
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status RegexSplitter::split(std::string_view text, std::vector<std::string>* out) const {
  const auto* code = static_cast<const pcre2_code*>(code_);
  MatchData m(code);
  if (m.md == nullptr) return Error{"out of memory for the pre-tokenizer's match data"};
  const bool keep_matches = behavior_ == SplitBehavior::kIsolated || invert_;
  const bool keep_gaps = behavior_ == SplitBehavior::kIsolated || !invert_;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gap_start = 0;
  while (pos < text.size()) {
    // The text was checked as UTF-8 once for the whole input: skip PCRE2's own check per call.
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, m.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      return Error{fmt::format("the pre-tokenizer pattern failed: {}", pcre2_message(rc))};
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.md);
    size_t start = ov[0], end = ov[1];
    if (end == start) {
      // An empty match cuts nothing; step over one whole character and search on.
      pos = start + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (keep_gaps && start > gap_start)
      out->emplace_back(text.substr(gap_start, start - gap_start));
    if (keep_matches) out->emplace_back(text.substr(start, end - start));
    gap_start = pos = end;
  }
  if (keep_gaps && gap_start < text.size()) out->emplace_back(text.substr(gap_start));
  return Status::Ok();
}

}  // namespace tokperf
