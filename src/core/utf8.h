// UTF-8 validity: the text formats tokperf reads (Prometheus expositions, tokenizer input) are
// UTF-8 by definition, and JSON output cannot carry anything else.
#pragma once

#include <cstdint>
#include <string_view>

namespace tokperf {

// Byte offset of the first invalid UTF-8 sequence in `text`, or -1 when it is valid (overlong
// forms, surrogates and code points above U+10FFFF are invalid).
int64_t invalid_utf8_offset(std::string_view text);

}  // namespace tokperf
