// How commands name a saved run: a folder written by a run, or a history id ("12" or "#12") that
// the history store maps to its folder.
#pragma once

#include <string>

#include "core/result.h"

namespace tokperf {

// A folder that exists wins over an id of the same spelling. store_path "" : default_store_path().
// The error names the reference and what would be accepted.
Result<std::string> resolve_run_ref(const std::string& ref, const std::string& store_path);

}  // namespace tokperf
