// Writing a whole text file atomically (temporary file in the same folder, then rename), for
// outputs a reader may open at any moment: report.html, CSV exports.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace tokperf {

// The error names the path and the system's reason.
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace tokperf
